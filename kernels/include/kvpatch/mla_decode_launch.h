// Host launch API of the MLA decode kernel (CUDA runtime). The split-KV plan is chosen on the host
// from the device's SM count, the batch, the head count and the longest request; a length-aware
// plan then splits each request by its own length on the device.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "kvpatch/mla_decode.h"

namespace kvpatch::mla {

// A block computes a group of 16 heads (one mma m16 tile), or of 32 ("wide" blocks: two m16 tiles,
// so each KV byte is converted once for 32 heads). decode_head_rows is the most the current device
// runs for num_heads: 32 when num_heads > 16 and its shared memory per block holds the wide
// pipeline (SM90), else 16 (SM120, or 16 heads or fewer).
int decode_head_rows(int num_heads);

// Two kinds of plan:
//  - uniform (num_splits >= 1): every request's KV is cut into num_splits pieces, one block each
//    per head group (1: no merge pass);
//  - length-aware (num_splits == 0, blocks > 0): `blocks` blocks per head group share the batch's
//    KV by its lengths, either one piece per block (each request split in proportion to its length)
//    or even shares of the batch's tiles laid end to end (a block may finish one request and start
//    the next), whichever is estimated faster. The kernel works this out on the device from kv_len,
//    so a plan stays valid for any lengths of the same batch size (a captured CUDA graph can replay it).
struct DecodePlan {
  int num_splits = 1;
  int blocks = 0;
  size_t workspace_bytes = 0;  // device scratch for partial outputs, LSEs (and the split table)
  int head_rows = 0;           // heads per block: 16, 32, or 0 for decode_head_rows(num_heads)
};

// plan_decode picks a length-aware plan when two or more requests do not fill the GPU alone
// (batch x head groups < SMs, batch <= 256) and requests are longer than one 64-token tile, else a
// uniform plan. max_kv_len: the longest request in tokens (an upper bound is fine). Where wide
// blocks are possible it plans both widths and keeps the one its cost estimate finds faster: wide
// blocks do ~1.65x a narrow block's work per tile for twice the heads, but halve the blocks, so
// short contexts (a tile or two per block) stay narrow.
DecodePlan plan_decode(int batch, int num_heads, int max_kv_len, int sm_count);
// The same for a device whose widest block is max_head_rows (16 or 32) instead of the current one's.
DecodePlan plan_decode(int batch, int num_heads, int max_kv_len, int sm_count, int max_head_rows);

// The uniform plan for a batch whose longest request has max_kv_len tokens: the split count that
// minimises waves x tiles per block (what plan_decode returns once the batch fills the GPU).
DecodePlan plan_decode_uniform(int batch, int num_heads, int max_kv_len, int sm_count);
DecodePlan plan_decode_uniform(int batch, int num_heads, int max_kv_len, int sm_count, int max_head_rows);

// A uniform plan with another split count (1-256) than plan_decode's, with its workspace size.
DecodePlan uniform_plan(int batch, int num_heads, int num_splits, int head_rows = 0);

// A length-aware plan over `blocks` blocks per head group (batch <= blocks <= 256, batch <= 256).
DecodePlan length_aware_plan(int batch, int num_heads, int blocks, int head_rows = 0);

// What a length-aware plan's schedule kernel works out on the device, computed on the host (tests).
// Block i reads tiles [block_tile_begin[i], block_tile_end[i]) (even shares: of the batch's tiles
// laid end to end; one piece: of its split) of requests block_first_request[i] .. + block_pieces[i]
// - 1. Request b's partial outputs are first_part[b] .. + pieces[b] - 1 (one piece: no partial, the
// block writes the output).
enum class LengthAwareMode { kEstimated, kOnePiece, kEvenShares };
struct LengthAwareSchedule {
  bool even_shares = false;
  int one_piece_cap = 0;  // the one-piece plan's tile cap (computed in every mode)
  std::vector<int> block_first_request, block_pieces, block_tile_begin, block_tile_end;  // [blocks]
  std::vector<int> first_part, pieces;                                                   // [batch]
};
LengthAwareSchedule length_aware_schedule(const std::vector<int>& kv_len, int blocks,
                                          LengthAwareMode mode = LengthAwareMode::kEstimated);

// Launches decode (and the merge pass when the plan splits) on `stream`. `workspace` must hold
// plan.workspace_bytes. Returns the first CUDA error met; checks params and returns
// cudaErrorInvalidValue for unsupported shapes (num_heads > 128, page_size < 1, ...) and for
// plan.head_rows other than 0, 16 or decode_head_rows(num_heads).
// The KV views are copied in 16-byte chunks: ckv and kpe, and their slot strides in bytes, must be
// multiples of 16 (true for SGLang's [slots, 1, 576] FP8 and BF16 buffers).
// A length-aware plan first works out the split table for the current kv_len (a one-block kernel,
// ~2-3 us on the critical path). The lengths are the same for every layer of a decode step: call
// launch_decode_schedule once per step and pass schedule_ready = true to that step's launches,
// which then read the table it left in `workspace` (valid until kv_len or the batch changes).
cudaError_t launch_decode(const DecodeParams& device_params, const DecodePlan& plan, void* workspace,
                          cudaStream_t stream, bool schedule_ready = false);
// How a launch meets the work before it in the stream.
struct LaunchOptions {
  bool schedule_ready = false;  // as above
  // Programmatic dependent launch (SM90 and SM120; FlashInfer calls it enable_pdl): the launch's
  // first grid may be scheduled while the kernel before it in the stream drains. Each of our grids
  // waits at griddepcontrol.wait, before it reads any input or writes anything, until that kernel
  // has completed and its writes are visible, so the previous kernel may write the query or the KV
  // cache. What it hides is our first grid's launch, and only when the previous kernel lets its
  // dependents launch early (griddepcontrol.launch_dependents): 0.6-1.5 us per launch between
  // back-to-back decode launches in a CUDA graph on the H200, nothing measurable after PyTorch's
  // copy kernel, which does not (kernels/bench/NOTES.md, v17).
  // One caveat, as with any PDL kernel: if the previous kernel was itself launched programmatically
  // and never waits for its own predecessor, that predecessor may still be running.
  // The merge grid lets the next kernel launch as soon as all its blocks are running; a next kernel
  // launched programmatically must wait (griddepcontrol.wait) before it reads the output.
  bool programmatic = false;
};
cudaError_t launch_decode(const DecodeParams& device_params, const DecodePlan& plan, void* workspace,
                          cudaStream_t stream, const LaunchOptions& options);

// The split table of a length-aware plan (num_splits == 0) for the current kv_len, in `workspace`.
// It reads only kv_indptr, kv_len, batch and num_heads of device_params (the other pointers may be
// null), so a caller can make it when it plans, before the layers' tensors are known.
cudaError_t launch_decode_schedule(const DecodeParams& device_params, const DecodePlan& plan, void* workspace,
                                   cudaStream_t stream);

// The cast path of the original bug, as a baseline: converts n FP8 E4M3 values to BF16 exactly
// (no scale), like `pool.to(torch.bfloat16)`.
cudaError_t launch_cast_fp8_to_bf16(const void* src_fp8, void* dst_bf16, size_t n, cudaStream_t stream);

}  // namespace kvpatch::mla
