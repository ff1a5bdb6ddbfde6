// Host launch API of the MLA decode kernel (CUDA runtime). The split-KV plan is chosen on the host
// from the device's SM count, the batch, the head count and the longest request.
#pragma once

#include <cuda_runtime.h>

#include "kvpatch/mla_decode.h"

namespace kvpatch::mla {

struct DecodePlan {
  int num_splits = 1;          // KV-length splits per request (flash-decoding); 1 = no merge pass
  size_t workspace_bytes = 0;  // device scratch for partial outputs and LSEs
};

// max_kv_len: the longest request in tokens (an upper bound is fine).
DecodePlan plan_decode(int batch, int num_heads, int max_kv_len, int sm_count);

// Device scratch that `num_splits` splits need: an FP32 partial output and LSE per (request, head,
// split); 0 for one split (no merge pass). For a plan with another split count than plan_decode's.
size_t decode_workspace_bytes(int batch, int num_heads, int num_splits);

// Launches decode (and the merge pass when plan.num_splits > 1) on `stream`. `workspace` must hold
// plan.workspace_bytes. Returns the first CUDA error met; checks params and returns
// cudaErrorInvalidValue for unsupported shapes (num_heads > 128, page_size < 1, ...).
// The KV views are copied in 16-byte chunks: ckv and kpe, and their slot strides in bytes, must be
// multiples of 16 (true for SGLang's [slots, 1, 576] FP8 and BF16 buffers); num_splits <= 256.
cudaError_t launch_decode(const DecodeParams& device_params, const DecodePlan& plan,
                          void* workspace, cudaStream_t stream);

// The cast path of the original bug, as a baseline: converts n FP8 E4M3 values to BF16 exactly
// (no scale), like `pool.to(torch.bfloat16)`.
cudaError_t launch_cast_fp8_to_bf16(const void* src_fp8, void* dst_bf16, size_t n, cudaStream_t stream);

}  // namespace kvpatch::mla
