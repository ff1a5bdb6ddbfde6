// Host side of MLA decode: the split plan, parameter checks and dispatch to the instantiations.
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "kvpatch/mla_decode_launch.h"
#include "mla_decode_kernel.cuh"
#include "mla_merge_kernel.cuh"

namespace kvpatch::mla {
namespace {

using namespace tiling;

constexpr int kMaxHeads = 128;
// Per-block fixed cost in tile-times (pipeline fill, epilogue), and the merge pass's when split.
constexpr double kBlockOverheadTiles = 2.0;
constexpr double kMergeOverheadTiles = 2.0;

// Heads beyond one block's 16 rows go to adjacent blocks of the same split, which read the same
// KV bytes at about the same time (the second read mostly hits L2).
int head_groups(int num_heads) { return (num_heads + kRows - 1) / kRows; }

template <KvDtype kDtype, int kStages>
cudaError_t launch_instance(const DecodeParams& p, int num_splits, float* partial_out, float* partial_lse,
                            cudaStream_t stream) {
  constexpr size_t smem = smem_layout(kDtype, kStages).total;
  auto* kernel = &device::mla_decode_kernel<kDtype, kStages>;
  static std::once_flag configured;
  static cudaError_t configure_error = cudaSuccess;
  std::call_once(configured, [&] {
    configure_error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  });
  if (configure_error != cudaSuccess) return configure_error;
  kernel<<<dim3(head_groups(p.num_heads), num_splits, p.batch), kBlockThreads, smem, stream>>>(p, num_splits, partial_out,
                                                                                               partial_lse);
  return cudaGetLastError();
}

// KVPATCH_SHALLOW_PIPELINE=1 runs SM120's pipeline depth on any GPU, so the H200's tests cover it.
bool shallow_pipeline_forced() {
  static const bool forced = [] {
    const char* value = std::getenv("KVPATCH_SHALLOW_PIPELINE");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return forced;
}

// The current device's opt-in shared memory per block, asked once per device (a launch runs once per
// layer per decode step; the attribute does not change).
cudaError_t device_smem_optin(size_t& bytes) {
  constexpr int kCachedDevices = 64;
  static std::array<std::atomic<int>, kCachedDevices> cached{};  // 0: not asked yet
  int device = 0;
  if (const cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) return err;
  int value = device < kCachedDevices ? cached[device].load(std::memory_order_relaxed) : 0;
  if (value == 0) {
    if (const cudaError_t err = cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
        err != cudaSuccess)
      return err;
    if (device < kCachedDevices) cached[device].store(value, std::memory_order_relaxed);
  }
  bytes = static_cast<size_t>(value);
  return cudaSuccess;
}

// The deepest pipeline the current device's shared memory per block holds (SM90: 227 KB, SM120: 99 KB).
template <KvDtype kDtype>
cudaError_t launch_dtype(const DecodeParams& p, int num_splits, float* partial_out, float* partial_lse,
                         cudaStream_t stream) {
  size_t smem_optin = 0;
  if (const cudaError_t err = device_smem_optin(smem_optin); err != cudaSuccess) return err;
  constexpr int kDeep = max_stages(kDtype), kShallow = min_stages(kDtype);
  return stages_for(kDtype, smem_optin) == kDeep && !shallow_pipeline_forced()
             ? launch_instance<kDtype, kDeep>(p, num_splits, partial_out, partial_lse, stream)
             : launch_instance<kDtype, kShallow>(p, num_splits, partial_out, partial_lse, stream);
}

bool aligned16(const void* pointer, int64_t stride_bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0 && stride_bytes % 16 == 0;
}

}  // namespace

size_t decode_workspace_bytes(int batch, int num_heads, int num_splits) {
  if (batch <= 0 || num_heads <= 0 || num_splits <= 1) return 0;
  return static_cast<size_t>(batch) * num_heads * num_splits * (kHeadDimCkv + 1) * sizeof(float);
}

DecodePlan plan_decode(int batch, int num_heads, int max_kv_len, int sm_count) {
  DecodePlan plan;
  if (batch <= 0 || num_heads <= 0 || max_kv_len <= 0 || sm_count <= 0) return plan;
  const long long base_blocks = static_cast<long long>(batch) * head_groups(num_heads);
  const long long slots = static_cast<long long>(sm_count) * kBlocksPerSm;
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
  plan.workspace_bytes = decode_workspace_bytes(batch, num_heads, plan.num_splits);
  return plan;
}

cudaError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, void* workspace, cudaStream_t stream) {
  if (p.batch < 0 || p.num_heads < 1 || p.num_heads > kMaxHeads || !is_supported_page_size(p.page_size) ||
      plan.num_splits < 1 || plan.num_splits > kMaxSplits)
    return cudaErrorInvalidValue;
  if (p.batch == 0) return cudaSuccess;
  if (!p.q_nope || !p.q_pe || !p.ckv || !p.kpe || !p.kv_indptr || !p.kv_indices || !p.kv_len || !p.out)
    return cudaErrorInvalidValue;
  // cp.async moves 16-byte chunks of each slot: both views and their slot strides must allow it.
  const int elem = kv_elem_bytes(p.kv_dtype);
  if (!aligned16(p.ckv, p.ckv_stride_slot * elem) || !aligned16(p.kpe, p.kpe_stride_slot * elem))
    return cudaErrorInvalidValue;
  const size_t needed = decode_workspace_bytes(p.batch, p.num_heads, plan.num_splits);
  if (needed > 0 && (!workspace || plan.workspace_bytes < needed)) return cudaErrorInvalidValue;

  float* partial_out = static_cast<float*>(workspace);
  float* partial_lse =
      partial_out ? partial_out + static_cast<size_t>(p.batch) * p.num_heads * plan.num_splits * kHeadDimCkv : nullptr;
  const cudaError_t err = p.kv_dtype == KvDtype::kFp8E4M3
                              ? launch_dtype<KvDtype::kFp8E4M3>(p, plan.num_splits, partial_out, partial_lse, stream)
                              : launch_dtype<KvDtype::kBf16>(p, plan.num_splits, partial_out, partial_lse, stream);
  if (err != cudaSuccess || plan.num_splits == 1) return err;
  // Programmatic dependent launch: the merge grid's launch overlaps the decode grid's tail.
  const bool few = plan.num_splits <= kMergeFewSplits;
  cudaLaunchConfig_t config = {};
  config.gridDim = few ? dim3(p.num_heads, p.batch) : dim3(p.num_heads, p.batch, kHeadDimCkv / kMergeDimsPerBlock);
  config.blockDim = dim3(few ? kMergeFewThreads : kMergeThreads);
  config.stream = stream;
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, few ? device::mla_merge_few_kernel : device::mla_merge_kernel, p, plan.num_splits,
                            static_cast<const float*>(partial_out), static_cast<const float*>(partial_lse));
}

}  // namespace kvpatch::mla
