// Host side of MLA decode: the split plan, parameter checks and dispatch to the instantiations.
#include <mutex>

#include "kvpatch/mla_decode_launch.h"
#include "mla_decode_kernel.cuh"
#include "mla_merge_kernel.cuh"

namespace kvpatch::mla {
namespace {

using namespace tiling;

constexpr int kMaxHeads = 128;
// Per-block fixed cost in tile-times (pipeline fill, epilogue), and the merge pass's when split.
constexpr double kBlockOverheadTiles = 6.0;
constexpr double kMergeOverheadTiles = 4.0;

struct HeadGroups {
  int groups = 1;          // blocks per (request, split), adjacent in the grid so they share L2
  int rows_per_group = 1;  // heads per block
  int m_tiles = 1;
};

HeadGroups head_groups(int num_heads) {
  HeadGroups hg;
  const int max_rows = kMaxMTiles * kRowsPerMTile;
  hg.groups = (num_heads + max_rows - 1) / max_rows;
  hg.rows_per_group = (num_heads + hg.groups - 1) / hg.groups;
  hg.m_tiles = (hg.rows_per_group + kRowsPerMTile - 1) / kRowsPerMTile;
  return hg;
}

template <KvDtype kDtype, int kMTiles>
cudaError_t launch_instance(const DecodeParams& p, int groups, int num_splits, float* partial_out, float* partial_lse,
                            cudaStream_t stream) {
  constexpr size_t smem = smem_layout(kDtype, kMTiles).total;
  auto* kernel = &device::mla_decode_kernel<kDtype, kMTiles>;
  static std::once_flag configured;
  static cudaError_t configure_error = cudaSuccess;
  std::call_once(configured, [&] {
    configure_error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  });
  if (configure_error != cudaSuccess) return configure_error;
  kernel<<<dim3(groups, num_splits, p.batch), kThreads, smem, stream>>>(p, num_splits, partial_out, partial_lse);
  return cudaGetLastError();
}

template <KvDtype kDtype>
cudaError_t launch_dtype(const DecodeParams& p, const HeadGroups& hg, int num_splits, float* partial_out,
                         float* partial_lse, cudaStream_t stream) {
  if (hg.m_tiles == 1) return launch_instance<kDtype, 1>(p, hg.groups, num_splits, partial_out, partial_lse, stream);
  return launch_instance<kDtype, 2>(p, hg.groups, num_splits, partial_out, partial_lse, stream);
}

bool aligned16(const void* pointer, int64_t stride_bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0 && stride_bytes % 16 == 0;
}

}  // namespace

DecodePlan plan_decode(int batch, int num_heads, int max_kv_len, int sm_count) {
  DecodePlan plan;
  if (batch <= 0 || num_heads <= 0 || max_kv_len <= 0 || sm_count <= 0) return plan;
  const HeadGroups hg = head_groups(num_heads);
  const long long base_blocks = static_cast<long long>(batch) * hg.groups;
  // Resident blocks per SM of the FP8 instantiation (the plan is shared with BF16 for parity).
  const int resident = device::kMinBlocksPerSm<KvDtype::kFp8E4M3, 1> * (hg.m_tiles == 1) + (hg.m_tiles != 1);
  const long long slots = static_cast<long long>(sm_count) * resident;
  const int tiles = (max_kv_len + kTileTokens - 1) / kTileTokens;
  // Choose the split count that minimises (waves x per-block tile time), counting fixed costs.
  double best_cost = 0.0;
  for (int splits = 1; splits <= std::min(tiles, kMaxSplits); ++splits) {
    const long long blocks = base_blocks * splits;
    const long long waves = (blocks + slots - 1) / slots;
    const double per_block = (tiles + splits - 1) / splits + kBlockOverheadTiles + (splits > 1 ? kMergeOverheadTiles : 0.0);
    const double cost = static_cast<double>(waves) * per_block;
    if (splits == 1 || cost < best_cost) {
      best_cost = cost;
      plan.num_splits = splits;
    }
  }
  if (plan.num_splits > 1)
    plan.workspace_bytes = static_cast<size_t>(batch) * num_heads * plan.num_splits * (kHeadDimCkv + 1) * sizeof(float);
  return plan;
}

cudaError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, void* workspace, cudaStream_t stream) {
  if (p.batch < 0 || p.num_heads < 1 || p.num_heads > kMaxHeads || p.page_size < 1 || plan.num_splits < 1 ||
      plan.num_splits > kMaxSplits)
    return cudaErrorInvalidValue;
  if (p.batch == 0) return cudaSuccess;
  if (!p.q_nope || !p.q_pe || !p.ckv || !p.kpe || !p.kv_indptr || !p.kv_indices || !p.kv_len || !p.out)
    return cudaErrorInvalidValue;
  // cp.async moves 16-byte chunks of each slot: both views and their slot strides must allow it.
  const int elem = kv_elem_bytes(p.kv_dtype);
  if (!aligned16(p.ckv, p.ckv_stride_slot * elem) || !aligned16(p.kpe, p.kpe_stride_slot * elem))
    return cudaErrorInvalidValue;
  const size_t needed = plan.num_splits > 1 ? static_cast<size_t>(p.batch) * p.num_heads * plan.num_splits *
                                                  (kHeadDimCkv + 1) * sizeof(float)
                                            : 0;
  if (needed > 0 && (!workspace || plan.workspace_bytes < needed)) return cudaErrorInvalidValue;

  float* partial_out = static_cast<float*>(workspace);
  float* partial_lse =
      partial_out ? partial_out + static_cast<size_t>(p.batch) * p.num_heads * plan.num_splits * kHeadDimCkv : nullptr;
  const HeadGroups hg = head_groups(p.num_heads);
  const cudaError_t err = p.kv_dtype == KvDtype::kFp8E4M3
                              ? launch_dtype<KvDtype::kFp8E4M3>(p, hg, plan.num_splits, partial_out, partial_lse, stream)
                              : launch_dtype<KvDtype::kBf16>(p, hg, plan.num_splits, partial_out, partial_lse, stream);
  if (err != cudaSuccess || plan.num_splits == 1) return err;
  device::mla_merge_kernel<<<dim3(p.num_heads, p.batch, kHeadDimCkv / kMergeDimsPerBlock), kMergeThreads, 0, stream>>>(
      p, plan.num_splits, partial_out, partial_lse);
  return cudaGetLastError();
}

}  // namespace kvpatch::mla
