// Host side of MLA decode: the split plan, parameter checks and dispatch to the instantiations.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "kvpatch/mla_decode_launch.h"
#include "mla_decode_kernel.cuh"
#include "mla_merge_kernel.cuh"
#include "mla_schedule.cuh"

namespace kvpatch::mla {
namespace {

using namespace tiling;

constexpr int kMaxHeads = 128;
// Per-block fixed cost in tile-times (pipeline fill, epilogue), and the merge pass's when split.
constexpr double kBlockOverheadTiles = 2.0;
constexpr double kMergeOverheadTiles = 2.0;
// A wide block's 64-token tile against a narrow block's (H200, B=32 H=32 16K: ~2.3 against ~1.39
// us per tile per SM), and its longer prologue (32 query rows, the second m-tile's operands).
constexpr double kWideTileCost = 1.65;
constexpr double kWidePrologueTiles = 1.0;

bool env_is(const char* name, std::string_view value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::string_view(set) == value;
}

// KVPATCH_SHALLOW_PIPELINE=1 runs SM120's pipeline (its depth, narrow blocks) on any GPU, so the
// H200's tests cover it; KVPATCH_HEAD_ROWS=16 keeps SM90's depth with narrow blocks (A/B runs).
bool shallow_pipeline_forced() {
  static const bool forced = env_is("KVPATCH_SHALLOW_PIPELINE", "1");
  return forced;
}
bool narrow_blocks_forced() {
  static const bool forced = shallow_pipeline_forced() || env_is("KVPATCH_HEAD_ROWS", "16");
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

// Heads beyond one block's rows go to adjacent blocks of the same split, which read the same KV
// bytes at about the same time (the second read mostly hits L2).
int head_groups(int num_heads, int rows) { return (num_heads + rows - 1) / rows; }

// The head rows a launch of `plan` runs, or 0 when the device cannot run them.
int plan_head_rows(const DecodePlan& plan, int num_heads) {
  const int most = decode_head_rows(num_heads);
  const int rows = plan.head_rows == 0 ? most : plan.head_rows;
  return rows == kMTileRows || rows == most ? rows : 0;
}

// A launch configuration. programmatic: the grid may start while the previous kernel in the stream
// drains (programmatic dependent launch) and waits for it at griddepcontrol.wait.
struct LaunchConfig {
  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute attribute = {};
  LaunchConfig(dim3 grid, int threads, size_t smem, cudaStream_t stream, bool programmatic) {
    config.gridDim = grid;
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = programmatic ? 1 : 0;
  }
  LaunchConfig(const LaunchConfig&) = delete;  // config.attrs points into this object
  LaunchConfig& operator=(const LaunchConfig&) = delete;
};

template <KvDtype kDtype, int kStages, int kMTiles>
cudaError_t launch_instance(const DecodeParams& p, dim3 grid, float* partial_out, float* partial_lse,
                            const int4* work_table, bool programmatic, cudaStream_t stream) {
  constexpr size_t smem = smem_layout(kDtype, kStages, kMTiles).total;
  auto* kernel = &device::mla_decode_kernel<kDtype, kStages, kMTiles>;
  static std::once_flag configured;
  static cudaError_t configure_error = cudaSuccess;
  std::call_once(configured, [&] {
    configure_error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  });
  if (configure_error != cudaSuccess) return configure_error;
  // programmatic (right after mla_schedule_kernel, or when the caller asks): its blocks launch while
  // the previous kernel drains and wait for it at griddepcontrol.wait.
  const LaunchConfig launch(grid, kBlockThreads, smem, stream, programmatic);
  return cudaLaunchKernelEx(&launch.config, kernel, p, partial_out, partial_lse, work_table);
}

// Wide blocks where the plan chose them (plan_head_rows checked the device's shared memory), else the
// deepest narrow pipeline the device's shared memory per block holds (SM90: 227 KB, SM120: 99 KB).
template <KvDtype kDtype>
cudaError_t launch_dtype(const DecodeParams& p, int head_rows, dim3 grid, float* partial_out, float* partial_lse,
                         const int4* work_table, bool programmatic, cudaStream_t stream) {
  if (head_rows == kMaxRows)
    return launch_instance<kDtype, max_stages(kDtype, 2), 2>(p, grid, partial_out, partial_lse, work_table,
                                                              programmatic, stream);
  size_t smem_optin = 0;
  if (const cudaError_t err = device_smem_optin(smem_optin); err != cudaSuccess) return err;
  constexpr int kDeep = max_stages(kDtype), kShallow = min_stages(kDtype);
  return stages_for(kDtype, smem_optin) == kDeep && !shallow_pipeline_forced()
             ? launch_instance<kDtype, kDeep, 1>(p, grid, partial_out, partial_lse, work_table, programmatic, stream)
             : launch_instance<kDtype, kShallow, 1>(p, grid, partial_out, partial_lse, work_table, programmatic, stream);
}

bool aligned16(const void* pointer, int64_t stride_bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0 && stride_bytes % 16 == 0;
}

// Workspace: partial outputs [parts][heads][512] and LSEs [parts][heads] (FP32); a length-aware
// plan adds its work table (mla_schedule.cuh: two int4 per block, then an int4 per request; 16-byte
// aligned) and (first partial, pieces) per request (int2). Its pieces number blocks + batch at most.
size_t lse_floats(int parts, int num_heads) { return (static_cast<size_t>(parts) * num_heads + 3) / 4 * 4; }

int length_aware_parts(int batch, int blocks) { return blocks + batch; }

size_t workspace_bytes(int parts, int num_heads, int batch_entries, int block_entries) {
  return (static_cast<size_t>(parts) * num_heads * kHeadDimCkv + lse_floats(parts, num_heads)) * sizeof(float) +
         (device::kWorkEntryInts / 4 * static_cast<size_t>(block_entries) + batch_entries) * sizeof(int4) +
         batch_entries * sizeof(int2);
}

struct Workspace {
  float* partial_out = nullptr;
  float* partial_lse = nullptr;
  int4* work_table = nullptr;     // length-aware plans
  int2* request_parts = nullptr;  // length-aware plans
};

Workspace carve(void* workspace, const DecodeParams& p, const DecodePlan& plan) {
  Workspace w;
  if (!workspace) return w;
  const bool length_aware = plan.num_splits == 0;
  const int parts = length_aware ? length_aware_parts(p.batch, plan.blocks) : p.batch * plan.num_splits;
  w.partial_out = static_cast<float*>(workspace);
  w.partial_lse = w.partial_out + static_cast<size_t>(parts) * p.num_heads * kHeadDimCkv;
  if (length_aware) {
    w.work_table = reinterpret_cast<int4*>(w.partial_lse + lse_floats(parts, p.num_heads));
    w.request_parts = reinterpret_cast<int2*>(w.work_table + device::kWorkEntryInts / 4 * plan.blocks + p.batch);
  }
  return w;
}

// Merge slices: enough (head, request, slice) blocks to reach every SM of a large GPU.
int merge_slices(int batch, int num_heads) {
  constexpr long long kMergeTargetBlocks = 256;
  int slices = 1;
  while (slices < kMergeMaxSlices && static_cast<long long>(batch) * num_heads * slices < kMergeTargetBlocks) slices *= 2;
  return slices;
}

}  // namespace

int decode_head_rows(int num_heads) {
  if (num_heads <= kMTileRows || narrow_blocks_forced()) return kMTileRows;
  size_t smem_optin = 0;
  if (device_smem_optin(smem_optin) != cudaSuccess) {
    (void)cudaGetLastError();  // no device: plan for narrow blocks (the launch will report the error)
    return kMTileRows;
  }
  return wide_blocks_fit(smem_optin) ? kMaxRows : kMTileRows;
}

DecodePlan uniform_plan(int batch, int num_heads, int num_splits, int head_rows) {
  DecodePlan plan;
  plan.num_splits = num_splits;
  plan.head_rows = head_rows;
  if (batch > 0 && num_heads > 0 && num_splits > 1) plan.workspace_bytes = workspace_bytes(batch * num_splits, num_heads, 0, 0);
  return plan;
}

DecodePlan length_aware_plan(int batch, int num_heads, int blocks, int head_rows) {
  DecodePlan plan;
  plan.num_splits = 0;
  plan.blocks = blocks;
  plan.head_rows = head_rows;
  if (batch > 0 && num_heads > 0 && blocks > 0)
    plan.workspace_bytes = workspace_bytes(length_aware_parts(batch, blocks), num_heads, batch, blocks);
  return plan;
}

LengthAwareSchedule length_aware_schedule(const std::vector<int>& kv_len, int blocks, LengthAwareMode mode) {
  LengthAwareSchedule schedule;
  const int batch = static_cast<int>(kv_len.size());
  long long total = 0;
  int most = 0;
  std::vector<long long> first_tile;
  for (const int len : kv_len) {
    first_tile.push_back(total);
    total += request_tiles(len), most = std::max(most, request_tiles(len));
  }
  // The one-piece plan's cap: the smallest whose splits fit the blocks (the device searches the same
  // monotone function).
  auto needed = [&](int cap) {
    long long sum = 0;
    for (const int len : kv_len) sum += capped_splits(request_tiles(len), cap);
    return sum;
  };
  int lo = static_cast<int>(std::max<long long>(1, (total + blocks - 1) / std::max(blocks, 1))), hi = std::max(1, most);
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (needed(mid) <= blocks) hi = mid;
    else lo = mid + 1;
  }
  schedule.one_piece_cap = hi;
  // Even shares: the blocks holding each request's tiles.
  std::vector<int> first_block(batch, 0), last_block(batch, 0);
  for (int b = 0; b < batch; ++b) {
    if (total > 0) {
      const long long tiles = request_tiles(kv_len[b]);
      first_block[b] = device::share_block(std::min(first_tile[b], total - 1), total, blocks);
      last_block[b] = tiles > 0 ? device::share_block(first_tile[b] + tiles - 1, total, blocks) : first_block[b];
    }
  }
  std::vector<int> share_first(blocks, 0), share_pieces(blocks, 0);
  int most_pieces = 0;
  for (int i = 0; i < blocks; ++i) {
    for (int b = batch - 1; b >= 0; --b)
      if (first_block[b] <= i && i <= last_block[b]) share_first[i] = b, ++share_pieces[i];
    most_pieces = std::max(most_pieces, share_pieces[i]);
  }
  const long long share_tiles = (total + blocks - 1) / blocks;
  schedule.even_shares = mode == LengthAwareMode::kEvenShares ||
                         (mode == LengthAwareMode::kEstimated &&
                          share_tiles + static_cast<long long>(kPieceSwitchTiles) * (most_pieces - 1) < hi);
  if (schedule.even_shares) {
    for (int b = 0; b < batch; ++b) {
      schedule.first_part.push_back(first_block[b] + b);
      schedule.pieces.push_back(last_block[b] - first_block[b] + 1);
    }
    for (int i = 0; i < blocks; ++i) {
      schedule.block_first_request.push_back(share_first[i]);
      schedule.block_pieces.push_back(share_pieces[i]);
      schedule.block_tile_begin.push_back(device::share_start(i, total, blocks));
      schedule.block_tile_end.push_back(device::share_start(i + 1, total, blocks));
    }
    return schedule;
  }
  // One piece per block: request b's splits on consecutive blocks, each split's tiles as split_range
  // cuts them (chunks of ceil(ceil(len / n) / 64) tiles).
  int block = 0;
  schedule.block_first_request.assign(blocks, 0);
  schedule.block_pieces.assign(blocks, 0);
  schedule.block_tile_begin.assign(blocks, 0);
  schedule.block_tile_end.assign(blocks, 0);
  for (int b = 0; b < batch; ++b) {
    const int len = kv_len[b], n = capped_splits(request_tiles(len), hi);
    schedule.first_part.push_back(block + b);
    schedule.pieces.push_back(n);
    const int chunk = request_tiles((len + n - 1) / n) * kTileTokens;
    for (int split = 0; split < n; ++split, ++block) {
      const int begin = std::min(len, split * chunk), end = std::min(len, begin + chunk);
      schedule.block_first_request[block] = b;
      schedule.block_pieces[block] = 1;
      schedule.block_tile_end[block] = request_tiles(end - begin);
    }
  }
  return schedule;
}

namespace {

// A plan for blocks of `rows` heads, with its estimated time in narrow tile-times.
struct CostedPlan {
  DecodePlan plan;
  double cost = 0.0;
};

double tile_cost(int rows) { return rows == kMaxRows ? kWideTileCost : 1.0; }
double block_overhead(int rows) { return kBlockOverheadTiles + (rows == kMaxRows ? kWidePrologueTiles : 0.0); }

// The split count that minimises (waves x per-block time), counting fixed costs.
CostedPlan uniform_for_rows(int batch, int num_heads, int max_kv_len, int sm_count, int rows) {
  const long long base_blocks = static_cast<long long>(batch) * head_groups(num_heads, rows);
  const long long slots = static_cast<long long>(sm_count) * kBlocksPerSm;
  const int tiles = request_tiles(max_kv_len);
  int best_splits = 1;
  double best_cost = 0.0;
  for (int splits = 1; splits <= std::min(tiles, kMaxSplits); ++splits) {
    const long long blocks = base_blocks * splits;
    const long long waves = (blocks + slots - 1) / slots;
    const double per_block = (tiles + splits - 1) / splits * tile_cost(rows) + block_overhead(rows) +
                             (splits > 1 ? kMergeOverheadTiles : 0.0);
    const double cost = static_cast<double>(waves) * per_block;
    if (splits == 1 || cost < best_cost) {
      best_cost = cost;
      best_splits = splits;
    }
  }
  return {uniform_plan(batch, num_heads, best_splits, rows), best_cost};
}

// A length-aware plan when two or more requests do not fill the GPU alone (one request: the uniform
// plan splits it as evenly, without the on-device search), else the uniform plan. Its cost counts
// every request as max_kv_len long (the lengths themselves are on the device).
CostedPlan plan_for_rows(int batch, int num_heads, int max_kv_len, int sm_count, int rows) {
  const long long per_group =
      std::min<long long>(static_cast<long long>(sm_count) * kBlocksPerSm / head_groups(num_heads, rows), kMaxSplits);
  const int tiles = request_tiles(max_kv_len);
  if (batch > 1 && tiles > 1 && batch < per_group && batch <= kMaxLengthAwareBatch) {
    const long long per_block = (static_cast<long long>(batch) * tiles + per_group - 1) / per_group;
    return {length_aware_plan(batch, num_heads, static_cast<int>(per_group), rows),
            static_cast<double>(per_block) * tile_cost(rows) + block_overhead(rows) + kMergeOverheadTiles};
  }
  return uniform_for_rows(batch, num_heads, max_kv_len, sm_count, rows);
}

// Narrow blocks, unless wide ones are possible and estimated faster.
template <class Planner>
DecodePlan cheaper_width(int num_heads, int max_head_rows, Planner plan_rows) {
  const CostedPlan narrow = plan_rows(kMTileRows);
  if (max_head_rows != kMaxRows || num_heads <= kMTileRows) return narrow.plan;
  const CostedPlan wide = plan_rows(kMaxRows);
  return wide.cost < narrow.cost ? wide.plan : narrow.plan;
}

}  // namespace

DecodePlan plan_decode_uniform(int batch, int num_heads, int max_kv_len, int sm_count, int max_head_rows) {
  if (batch <= 0 || num_heads <= 0 || max_kv_len <= 0 || sm_count <= 0) return {};
  return cheaper_width(num_heads, max_head_rows,
                       [&](int rows) { return uniform_for_rows(batch, num_heads, max_kv_len, sm_count, rows); });
}

DecodePlan plan_decode_uniform(int batch, int num_heads, int max_kv_len, int sm_count) {
  return plan_decode_uniform(batch, num_heads, max_kv_len, sm_count, decode_head_rows(num_heads));
}

DecodePlan plan_decode(int batch, int num_heads, int max_kv_len, int sm_count, int max_head_rows) {
  if (batch <= 0 || num_heads <= 0 || max_kv_len <= 0 || sm_count <= 0) return {};
  return cheaper_width(num_heads, max_head_rows,
                       [&](int rows) { return plan_for_rows(batch, num_heads, max_kv_len, sm_count, rows); });
}

DecodePlan plan_decode(int batch, int num_heads, int max_kv_len, int sm_count) {
  return plan_decode(batch, num_heads, max_kv_len, sm_count, decode_head_rows(num_heads));
}

namespace {

// The checks both launch functions share.
// `rows`: the head rows per block the launch runs (plan_head_rows), when the checks pass.
// `schedule_only`: the schedule kernel reads only kv_indptr and kv_len, so the query, KV and output
// may still be unknown (a plan made before the layers' tensors exist).
cudaError_t check_launch(const DecodeParams& p, const DecodePlan& plan, const void* workspace, int& rows,
                         bool schedule_only = false) {
  const bool length_aware = plan.num_splits == 0;
  rows = plan_head_rows(plan, p.num_heads);
  if (p.batch < 0 || p.num_heads < 1 || p.num_heads > kMaxHeads || !is_supported_page_size(p.page_size) ||
      plan.num_splits < 0 || plan.num_splits > kMaxSplits ||
      (length_aware && (plan.blocks < p.batch || plan.blocks > kMaxSplits || p.batch > kMaxLengthAwareBatch)) || rows == 0)
    return cudaErrorInvalidValue;
  if (p.batch == 0) return cudaSuccess;
  if (!p.kv_indptr || !p.kv_len) return cudaErrorInvalidValue;
  if (!schedule_only) {
    // kv_indices is left out: the kernel reads a page id only for a token it attends to, and a batch
    // whose requests are all empty has a zero-element index tensor, whose data pointer is null.
    if (!p.q_nope || !p.q_pe || !p.ckv || !p.kpe || !p.out) return cudaErrorInvalidValue;
    // cp.async moves 16-byte chunks of each slot: both views and their slot strides must allow it.
    const int elem = kv_elem_bytes(p.kv_dtype);
    if (!aligned16(p.ckv, p.ckv_stride_slot * elem) || !aligned16(p.kpe, p.kpe_stride_slot * elem))
      return cudaErrorInvalidValue;
  }
  const DecodePlan sized = length_aware ? length_aware_plan(p.batch, p.num_heads, plan.blocks)
                                        : uniform_plan(p.batch, p.num_heads, plan.num_splits);
  if (sized.workspace_bytes > 0 && (!workspace || plan.workspace_bytes < sized.workspace_bytes))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t launch_schedule(const DecodeParams& p, const DecodePlan& plan, const Workspace& w, cudaStream_t stream,
                            bool programmatic = false) {
  const LaunchConfig launch(dim3(1), kScheduleThreads, 0, stream, programmatic);
  return cudaLaunchKernelEx(&launch.config, device::mla_schedule_kernel, p, plan.blocks, w.work_table, w.request_parts);
}

}  // namespace

cudaError_t launch_decode_schedule(const DecodeParams& p, const DecodePlan& plan, void* workspace, cudaStream_t stream) {
  if (plan.num_splits != 0) return cudaErrorInvalidValue;
  int rows = 0;
  if (const cudaError_t err = check_launch(p, plan, workspace, rows, /*schedule_only=*/true);
      err != cudaSuccess || p.batch == 0)
    return err;
  return launch_schedule(p, plan, carve(workspace, p, plan), stream);
}

cudaError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, void* workspace, cudaStream_t stream,
                          bool schedule_ready) {
  LaunchOptions options;
  options.schedule_ready = schedule_ready;
  return launch_decode(p, plan, workspace, stream, options);
}

cudaError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, void* workspace, cudaStream_t stream,
                          const LaunchOptions& options) {
  int rows = 0;
  if (const cudaError_t err = check_launch(p, plan, workspace, rows); err != cudaSuccess || p.batch == 0) return err;
  const bool length_aware = plan.num_splits == 0;
  const Workspace w = carve(workspace, p, plan);
  const bool after_schedule = length_aware && !options.schedule_ready;
  if (after_schedule)
    if (const cudaError_t err = launch_schedule(p, plan, w, stream, options.programmatic); err != cudaSuccess) return err;
  // The decode grid is a programmatic dependent of the schedule kernel when one runs first, else of
  // the previous kernel in the stream when the caller asks for it.
  const bool programmatic = after_schedule || options.programmatic;
  const int groups = head_groups(p.num_heads, rows);
  const dim3 grid = length_aware ? dim3(groups, plan.blocks) : dim3(groups, plan.num_splits, p.batch);
  const cudaError_t err =
      p.kv_dtype == KvDtype::kFp8E4M3
          ? launch_dtype<KvDtype::kFp8E4M3>(p, rows, grid, w.partial_out, w.partial_lse, w.work_table, programmatic, stream)
          : launch_dtype<KvDtype::kBf16>(p, rows, grid, w.partial_out, w.partial_lse, w.work_table, programmatic, stream);
  if (err != cudaSuccess || plan.num_splits == 1) return err;
  // Programmatic dependent launch: the merge grid's launch overlaps the decode grid's tail.
  const LaunchConfig merge(dim3(p.num_heads, p.batch, merge_slices(p.batch, p.num_heads)), kMergeThreads, 0, stream,
                           /*programmatic=*/true);
  return cudaLaunchKernelEx(&merge.config, device::mla_merge_kernel, p, plan.num_splits,
                            static_cast<const int2*>(w.request_parts), static_cast<const float*>(w.partial_out),
                            static_cast<const float*>(w.partial_lse));
}

}  // namespace kvpatch::mla
