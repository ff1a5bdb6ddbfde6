// Where one decode launch's fixed costs go: builds the decode and merge kernels with per-block
// %globaltimer marks (kernels/src/timeline.cuh), runs one shape on random FP8 data (every token its
// own slot, L2 flushed by a 256 MB read before each run) and prints, for the last of RUNS runs,
// each mark's earliest / median / latest time over the blocks, in microseconds from the first
// block's entry, next to the launch's CUDA-event time; then intervals within a block (the steady
// tiles, and what a piece switch costs each warp group, where an even-shares plan has switches).
// Each run's line also gives the SM clock the median block ran its tiles at (%clock64 cycles over
// %globaltimer nanoseconds between the same two marks).
// Build and run (repo root, GPU machine):
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -DKVPATCH_TIMELINE -Ikernels/include \
//     -Ikernels/src kernels/bench/timeline.cu -o /tmp/timeline && /tmp/timeline 32 16 32768 [RUNS] [SPLITS]
// SPLITS forces a uniform plan; without it, plan_decode's plan (a length-aware plan's split table is
// made once before the runs, as once per decode step). KVPATCH_SUSTAIN_S=N adds ~N seconds of
// back-to-back launches at the end (for sampling clocks and power; kernels/bench/power_sample.sh).
// KVPATCH_NO_FLUSH=1 skips the L2 flush before each run; KVPATCH_WARM_DATA=1 reads the query and the
// page ids back into L2 after it (does the prologue wait on its data, or on something else?);
// KVPATCH_WARM_CODE=1 launches the same kernels on a two-split 128-token request of other data after
// the flush, so that their code, and only their code, is in the L2 (does it wait on instruction fetch?);
// KVPATCH_SLOT_POOL=N maps every token to one of N slots (the KV mostly from the L2).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "kvpatch/cuda_check.h"
#include "mla_decode_launch.cu"  // one translation unit: the marks' __device__ buffer lives here

namespace timeline {

using namespace kvpatch::mla;

__global__ void read_all(const int4* data, size_t n, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    acc ^= data[i].x ^ data[i].w;
  if (acc == 0x7fffffff) *sink = acc;  // keeps the loads
}

const char* kDecodeMarks[] = {"entry", "query and first page ids landed", "first tile issued", "first tile landed",
                              "last tile done", "outputs stored", "request and split known",
                              "piece 1: score warps want its query", "piece 1: its query loaded",
                              "piece 1: its first tile landed", "piece 0: last PV done", "piece 0: output stored",
                              "piece 1: first probabilities in", "barriers initialized", "score: registers moved",
                              "score: query in shared memory", "score: slice maxima published",
                              "value: registers moved", "value: first page ids landed",
                              "piece 0: row sums read"};
constexpr int kDecodeMarkCount = sizeof(kDecodeMarks) / sizeof(kDecodeMarks[0]);
// Intervals within one block (blocks holding both marks): what a piece switch costs each warp group.
constexpr int kIntervals[][2] = {{3, 4}, {7, 8}, {8, 9}, {10, 19}, {19, 11}, {10, 12}};
const char* kMergeMarks[] = {"entry", "decode grid complete", "stored", "splits known", "LSEs in", "partials summed"};
constexpr int kMergeMarkCount = sizeof(kMergeMarks) / sizeof(kMergeMarks[0]);

void print_marks(const char* kernel, const std::vector<uint64_t>& host, int blocks, int marks, const char* const* names,
                 uint64_t origin) {
  for (int m = 0; m < marks; ++m) {
    std::vector<double> t;
    for (int blk = 0; blk < blocks; ++blk) {
      const uint64_t v = host[static_cast<size_t>(blk) * device::kTimelineMarks + m];
      if (v != 0) t.push_back(static_cast<double>(v - origin) / 1000.0);
    }
    if (t.empty()) continue;
    std::sort(t.begin(), t.end());
    std::printf("  %-6s %-32s min %7.2f  median %7.2f  max %7.2f us  (%zu blocks)\n", kernel, names[m], t.front(),
                t[t.size() / 2], t.back(), t.size());
  }
}

// The median over decode blocks of the SM clock (GHz) between the score warps' "first tile landed"
// and "last tile done" marks (one thread, one SM: cycles over nanoseconds). 0 when no block has both.
constexpr int kFirstTileLanded = 3, kLastTileDone = 4;  // indices into kDecodeMarks
double steady_clock_ghz(const std::vector<uint64_t>& times, const std::vector<uint64_t>& cycles, int blocks) {
  std::vector<double> ghz;
  for (int blk = 0; blk < blocks; ++blk) {
    const size_t first = static_cast<size_t>(blk) * device::kTimelineMarks + kFirstTileLanded;
    const size_t last = static_cast<size_t>(blk) * device::kTimelineMarks + kLastTileDone;
    if (times[first] == 0 || times[last] <= times[first]) continue;
    ghz.push_back(static_cast<double>(cycles[last] - cycles[first]) / static_cast<double>(times[last] - times[first]));
  }
  if (ghz.empty()) return 0.0;
  std::sort(ghz.begin(), ghz.end());
  return ghz[ghz.size() / 2];
}

template <class T>
T* upload(const T* host, size_t count) {
  T* device = nullptr;
  KVPATCH_CUDA_CHECK(cudaMalloc(&device, count * sizeof(T)));
  KVPATCH_CUDA_CHECK(cudaMemcpy(device, host, count * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

// KVPATCH_WARM_CODE: the timed launch's kernels on a 128-token, two-split request whose query, page
// ids, slots and workspace no timed token uses, so that running it after the flush puts their code,
// and next to nothing else, in the L2.
struct CodeWarmer {
  DecodeParams params;
  DecodePlan plan;
  void* workspace = nullptr;  // its own: a length-aware plan's table lives in the timed workspace
};

CodeWarmer make_code_warmer(const DecodeParams& timed, int head_rows, const std::vector<uint16_t>& q,
                            const std::vector<uint8_t>& kv) {
  constexpr int kTokens = 128, kRow = kHeadDimCkv + kHeadDimKpe;
  const int heads = timed.num_heads;
  const int32_t indptr[] = {0, kTokens}, lens[] = {kTokens};
  std::vector<int32_t> indices(kTokens);
  std::iota(indices.begin(), indices.end(), 0);
  const uint16_t* query = upload(q.data(), static_cast<size_t>(heads) * kRow);  // its own copy of request 0's
  const uint8_t* slots = upload(kv.data(), static_cast<size_t>(kTokens) * kRow);
  CodeWarmer w;
  w.params = timed;
  w.params.q_nope = query, w.params.q_nope_stride_b = int64_t{heads} * kRow;
  w.params.q_pe = query + kHeadDimCkv, w.params.q_pe_stride_b = int64_t{heads} * kRow;
  w.params.ckv = slots, w.params.kpe = slots + kHeadDimCkv;
  w.params.kv_indptr = upload(indptr, 2), w.params.kv_len = upload(lens, 1);
  w.params.kv_indices = upload(indices.data(), indices.size());
  w.params.batch = 1;
  w.plan = uniform_plan(1, heads, 2, head_rows);
  KVPATCH_CUDA_CHECK(cudaMalloc(&w.workspace, std::max<size_t>(w.plan.workspace_bytes, 16)));
  return w;
}

}  // namespace timeline

int main(int argc, char** argv) {
  using namespace timeline;
  const int batch = argc > 1 ? std::atoi(argv[1]) : 32;
  const int heads = argc > 2 ? std::atoi(argv[2]) : 16;
  const int ctx = argc > 3 ? std::atoi(argv[3]) : 32768;
  const int runs = argc > 4 ? std::atoi(argv[4]) : 5;
  if (batch < 1 || heads < 1 || heads > 128 || ctx < 1 || runs < 1 || (argc > 5 && std::atoi(argv[5]) < 1)) {
    std::fprintf(stderr, "usage: %s [BATCH=32] [HEADS=16 (1-128)] [CONTEXT=32768] [RUNS=5] [SPLITS=planner's]\n", argv[0]);
    return 2;
  }
  constexpr int kRow = kHeadDimCkv + kHeadDimKpe;
  const int64_t tokens = int64_t{batch} * ctx;
  const int64_t slots = std::max<int64_t>(tokens, 495552);

  std::mt19937_64 rng(42);
  std::vector<uint8_t> kv(static_cast<size_t>(slots * kRow));
  for (auto& byte : kv) byte = static_cast<uint8_t>(rng()) & 0x77;  // finite E4M3 codes
  std::vector<int32_t> indices(static_cast<size_t>(slots));
  std::iota(indices.begin(), indices.end(), 0);
  std::shuffle(indices.begin(), indices.end(), rng);
  indices.resize(static_cast<size_t>(tokens));
  // KVPATCH_SLOT_POOL=N: every token reads one of N slots instead (N x 576 B small enough for the
  // L2, the KV then comes mostly from the L2): the same instructions without DRAM's latency and power.
  if (const char* pool = std::getenv("KVPATCH_SLOT_POOL")) {
    const int64_t n = std::atoll(pool);
    if (n < 1 || n > slots) {
      std::fprintf(stderr, "KVPATCH_SLOT_POOL=%s: give a slot count from 1 to %lld\n", pool, static_cast<long long>(slots));
      return 2;
    }
    for (auto& index : indices) index = static_cast<int32_t>(rng() % static_cast<uint64_t>(n));
  }
  std::vector<int32_t> indptr(batch + 1), lens(batch, ctx);
  for (int b = 0; b <= batch; ++b) indptr[b] = b * ctx;
  std::vector<uint16_t> q(static_cast<size_t>(batch) * heads * kRow);
  for (auto& v : q) v = static_cast<uint16_t>(0x3c00 + (rng() & 0x3ff) - 0x200);  // BF16 in ~[0.5, 2)

  int device = 0, sms = 0;
  KVPATCH_CUDA_CHECK(cudaGetDevice(&device));
  KVPATCH_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  DecodePlan plan = plan_decode(batch, heads, ctx, sms);
  if (argc > 5) plan = uniform_plan(batch, heads, std::atoi(argv[5]));  // another split count than the planner's

  const uint8_t* d_kv = upload(kv.data(), kv.size());
  const int32_t* d_indices = upload(indices.data(), indices.size());
  const int32_t* d_indptr = upload(indptr.data(), indptr.size());
  const int32_t* d_lens = upload(lens.data(), lens.size());
  const uint16_t* d_q = upload(q.data(), q.size());
  uint16_t* d_out = nullptr;
  float* d_lse = nullptr;
  void* d_ws = nullptr;
  int4* d_flush = nullptr;
  int* d_sink = nullptr;
  constexpr size_t kFlushBytes = size_t{256} << 20;
  KVPATCH_CUDA_CHECK(cudaMalloc(&d_out, static_cast<size_t>(batch) * heads * kHeadDimCkv * 2));
  KVPATCH_CUDA_CHECK(cudaMalloc(&d_lse, static_cast<size_t>(batch) * heads * 4));
  KVPATCH_CUDA_CHECK(cudaMalloc(&d_ws, std::max<size_t>(plan.workspace_bytes, 16)));
  KVPATCH_CUDA_CHECK(cudaMalloc(&d_flush, kFlushBytes));
  KVPATCH_CUDA_CHECK(cudaMalloc(&d_sink, 4));
  KVPATCH_CUDA_CHECK(cudaMemset(d_flush, 1, kFlushBytes));

  DecodeParams p;
  p.q_nope = d_q, p.q_nope_stride_b = int64_t{heads} * kRow, p.q_nope_stride_h = kRow;
  p.q_pe = d_q + kHeadDimCkv, p.q_pe_stride_b = int64_t{heads} * kRow, p.q_pe_stride_h = kRow;
  p.ckv = d_kv, p.ckv_stride_slot = kRow, p.kpe = d_kv + kHeadDimCkv, p.kpe_stride_slot = kRow;
  p.kv_dtype = KvDtype::kFp8E4M3;
  p.kv_indptr = d_indptr, p.kv_indices = d_indices, p.kv_len = d_lens;
  p.batch = batch, p.num_heads = heads, p.page_size = 1;
  p.sm_scale = 0.0416f, p.ckv_scale = 1.f, p.kpe_scale = 1.f;
  p.out = d_out, p.out_stride_b = int64_t{heads} * kHeadDimCkv, p.out_stride_h = kHeadDimCkv, p.lse = d_lse;

  std::optional<CodeWarmer> warmer;
  if (std::getenv("KVPATCH_WARM_CODE")) warmer = make_code_warmer(p, plan_head_rows(plan, heads), q, kv);

  const bool length_aware = plan.num_splits == 0;
  const int decode_blocks = head_groups(heads, plan_head_rows(plan, heads)) * (length_aware ? plan.blocks : plan.num_splits * batch);
  const int merge_blocks = plan.num_splits == 1 ? 0 : heads * batch * merge_slices(batch, heads);
  if (decode_blocks > device::kTimelineBlocks || merge_blocks > device::kTimelineBlocks) {
    std::fprintf(stderr, "too many blocks for the timeline buffer (%d, %d > %d)\n", decode_blocks, merge_blocks,
                 device::kTimelineBlocks);
    return 2;
  }
  cudaEvent_t start, stop;
  KVPATCH_CUDA_CHECK(cudaEventCreate(&start));
  KVPATCH_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<uint64_t> timeline(2 * static_cast<size_t>(device::kTimelineBlocks) * device::kTimelineMarks);
  std::vector<uint64_t> cycles(timeline.size());
  std::vector<double> run_ms, run_clock;
  float ms = 0.f;
  // A length-aware plan's split table once, as a decode step would before its layers; the runs
  // time the layers' launches (decode + merge).
  if (length_aware) KVPATCH_CUDA_CHECK(launch_decode_schedule(p, plan, d_ws, nullptr));
  for (int run = 0; run < runs; ++run) {
    std::vector<uint64_t> zeros(timeline.size(), 0);
    KVPATCH_CUDA_CHECK(cudaMemcpyToSymbol(device::kvpatch_timeline, zeros.data(), zeros.size() * 8));
    if (!std::getenv("KVPATCH_NO_FLUSH")) read_all<<<4 * sms, 512>>>(d_flush, kFlushBytes / sizeof(int4), d_sink);
    if (warmer) {  // then its marks are cleared again
      KVPATCH_CUDA_CHECK(launch_decode(warmer->params, warmer->plan, warmer->workspace, nullptr));
      KVPATCH_CUDA_CHECK(cudaMemcpyToSymbol(device::kvpatch_timeline, zeros.data(), zeros.size() * 8));
    }
    if (std::getenv("KVPATCH_WARM_DATA")) {  // the query and page ids read back into L2 (the flush evicted them)
      read_all<<<sms, 512>>>(reinterpret_cast<const int4*>(d_q), q.size() * 2 / sizeof(int4), d_sink);
      read_all<<<sms, 512>>>(reinterpret_cast<const int4*>(d_indices), indices.size() * 4 / sizeof(int4), d_sink);
    }
    KVPATCH_CUDA_CHECK(cudaEventRecord(start));
    KVPATCH_CUDA_CHECK(launch_decode(p, plan, d_ws, nullptr, /*schedule_ready=*/length_aware));
    KVPATCH_CUDA_CHECK(cudaEventRecord(stop));
    KVPATCH_CUDA_CHECK(cudaEventSynchronize(stop));
    KVPATCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    KVPATCH_CUDA_CHECK(cudaMemcpyFromSymbol(timeline.data(), device::kvpatch_timeline, timeline.size() * 8));
    KVPATCH_CUDA_CHECK(cudaMemcpyFromSymbol(cycles.data(), device::kvpatch_cycles, cycles.size() * 8));
    run_ms.push_back(ms * 1000.f);
    run_clock.push_back(steady_clock_ghz(timeline, cycles, decode_blocks));
  }
  std::printf("per run: CUDA events (us) and the median decode block's SM clock from its first tile landed to its "
              "last tile done (GHz):");
  for (size_t i = 0; i < run_ms.size(); ++i) std::printf(" %.1f/%.3f", run_ms[i], run_clock[i]);
  std::printf("\n");
  const uint64_t* decode = timeline.data();
  const uint64_t* merge = decode + static_cast<size_t>(device::kTimelineBlocks) * device::kTimelineMarks;
  uint64_t origin = UINT64_MAX;
  for (int blk = 0; blk < decode_blocks; ++blk) origin = std::min(origin, decode[static_cast<size_t>(blk) * device::kTimelineMarks]);
  std::printf("B=%d H=%d ctx=%d: %s %d, %d decode blocks, %d merge blocks; CUDA events %.1f us (last of %d runs)\n",
              batch, heads, ctx, length_aware ? "length-aware, blocks per head group" : "uniform, splits",
              length_aware ? plan.blocks : plan.num_splits, decode_blocks, merge_blocks, ms * 1000.f, runs);
  print_marks("decode", std::vector<uint64_t>(decode, decode + static_cast<size_t>(decode_blocks) * device::kTimelineMarks),
              decode_blocks, kDecodeMarkCount, kDecodeMarks, origin);
  for (const auto& [from, to] : kIntervals) {
    std::vector<double> d;
    for (int blk = 0; blk < decode_blocks; ++blk) {
      const uint64_t* marks = decode + static_cast<size_t>(blk) * device::kTimelineMarks;
      if (marks[from] != 0 && marks[to] != 0) d.push_back((static_cast<double>(marks[to]) - static_cast<double>(marks[from])) / 1000.0);
    }
    if (d.empty()) continue;
    std::sort(d.begin(), d.end());
    std::printf("  block  %-32s -> %-32s min %7.2f  median %7.2f  max %7.2f us  (%zu blocks)\n", kDecodeMarks[from],
                kDecodeMarks[to], d.front(), d[d.size() / 2], d.back(), d.size());
  }
  print_marks("merge", std::vector<uint64_t>(merge, merge + static_cast<size_t>(merge_blocks) * device::kTimelineMarks),
              merge_blocks, kMergeMarkCount, kMergeMarks, origin);
  // Per SM: when its first and its last decode block finished the last tile. A wide first-to-last
  // gap on one SM is the two co-resident blocks progressing unevenly; a wide spread of the last
  // finishes across SMs is SM-level imbalance.
  std::vector<std::vector<double>> per_sm(1024);
  for (int blk = 0; blk < decode_blocks; ++blk) {
    const uint64_t* marks = decode + static_cast<size_t>(blk) * device::kTimelineMarks;
    const uint64_t sm = marks[device::kTimelineMarks - 1];
    if (sm == 0 || sm > per_sm.size() || marks[4] == 0) continue;
    per_sm[sm - 1].push_back(static_cast<double>(marks[4] - origin) / 1000.0);
  }
  std::vector<double> last, gap, alone;
  for (auto& t : per_sm) {
    if (t.empty()) continue;
    std::sort(t.begin(), t.end());
    last.push_back(t.back());
    if (t.size() > 1) gap.push_back(t.back() - t.front());
    else alone.push_back(t.back());
  }
  auto summary = [](const char* what, std::vector<double> v) {
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    std::printf("  per SM %-40s min %7.2f  median %7.2f  max %7.2f us  (%zu SMs)\n", what, v.front(), v[v.size() / 2],
                v.back(), v.size());
  };
  summary("last block's last tile done", last);
  summary("gap between its first and last block", gap);
  summary("last tile done, SMs with one block", alone);

  // KVPATCH_SUSTAIN_S=N: then launch back to back (no flush) for ~N seconds, so that the GPU's
  // clocks, power and throttle reasons can be sampled under a steady load (nvidia-smi -lms). With
  // KVPATCH_SUSTAIN_READ=1 the launches are the 256 MB flush read instead: DRAM at full speed with
  // little SM work, for comparison.
  if (const char* sustain = std::getenv("KVPATCH_SUSTAIN_S")) {
    const bool read_only = std::getenv("KVPATCH_SUSTAIN_READ") != nullptr;
    const double seconds = std::atof(sustain);
    if (!(seconds > 0.0)) {
      std::fprintf(stderr, "KVPATCH_SUSTAIN_S=%s: give the seconds to run back to back, e.g. 4\n", sustain);
      return 2;
    }
    constexpr int kBatchLaunches = 200;
    int launches = 0;
    float total_ms = 0.f;
    while (total_ms < seconds * 1000.0) {
      KVPATCH_CUDA_CHECK(cudaEventRecord(start));
      for (int i = 0; i < kBatchLaunches; ++i) {
        if (read_only) read_all<<<4 * sms, 512>>>(d_flush, kFlushBytes / sizeof(int4), d_sink);
        else KVPATCH_CUDA_CHECK(launch_decode(p, plan, d_ws, nullptr, length_aware));
      }
      KVPATCH_CUDA_CHECK(cudaGetLastError());
      KVPATCH_CUDA_CHECK(cudaEventRecord(stop));
      KVPATCH_CUDA_CHECK(cudaEventSynchronize(stop));
      KVPATCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      total_ms += ms, launches += kBatchLaunches;
    }
    std::printf("sustained %s: %d launches back to back in %.2f s, %.1f us each\n",
                read_only ? "256 MB read" : "decode", launches, total_ms / 1000.f, 1000.f * total_ms / launches);
  }
  return 0;
}
