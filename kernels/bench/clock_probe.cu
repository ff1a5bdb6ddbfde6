// Which SM clock the GPU grants each kind of work: every SM runs 16 warps of one loop (FP32 FMA,
// FP16 or BF16 mma.sync with FP32 accumulation, one mma per 28 FMA, E4M3 -> FP16 conversions,
// mma with conversions, mma in half the warps while the other half read DRAM, a DRAM read, or
// nanosleep), and thread 0 of each block reads %clock64 and %globaltimer at its start and end. Cycles
// over nanoseconds is the clock that block ran at; the median over blocks is printed per launch, for
// a short launch (~100 us, like one decode layer) and a long one (200 times as many iterations),
// each after 200 ms idle.
// Then the clock's course within one launch of mma work, from three starting states.
// Why: timeline.cu showed the decode kernel's blocks running at ~1.72 GHz in single launches from
// an idle H200 whose maximum is 1.98 GHz, so the question is which work brings the clock down.
// Build and run (GPU machine): nvcc -O3 -arch=sm_90a -Ikernels/include -Ikernels/src kernels/bench/clock_probe.cu -o /tmp/cp && /tmp/cp
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "kvpatch/cuda_check.h"
#include "device_primitives.cuh"

using namespace kvpatch::mla::device;

constexpr int kThreads = 512, kChains = 8;

enum class Work { kFfma, kMma, kMmaBf16, kMmaSparse, kConvert, kMmaConvert, kMmaWhileReading, kRead, kSleep };
const char* kNames[] = {"FP32 FMA",         "mma.sync f16 -> f32",   "mma.sync bf16 -> f32",  "1 mma per 28 FMA",
                        "E4M3 -> FP16 cvt", "mma.sync + 2 cvt each", "mma, 8 warps reading", "DRAM read",
                        "nanosleep"};

__device__ unsigned long long g_read_bytes;  // what kMmaWhileReading's reading warps loaded

struct Stamp {
  unsigned long long cycles0, cycles1, ns0, ns1;
};

__device__ __forceinline__ void stamp(unsigned long long& cycles, unsigned long long& ns) {
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles));
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
}

template <Work kWork>
__global__ void __launch_bounds__(kThreads, 1) probe(int iters, const int4* data, size_t n, float* sink, Stamp* stamps) {
  unsigned long long c0 = 0, t0 = 0;
  if (threadIdx.x == 0) stamp(c0, t0);
  float acc[kChains][4] = {};
  uint32_t a[4] = {0x3c003c00u ^ threadIdx.x, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u ^ blockIdx.x};
  uint32_t b = 0x38383838u ^ threadIdx.x;
  __shared__ volatile int mma_done;
  if constexpr (kWork == Work::kMmaWhileReading) {
    // Warps 0-7 read the buffer over and over (DRAM at about the decode kernel's rate) until warps
    // 8-15 have done their mma: both at once, as in the decode kernel.
    if (threadIdx.x == 0) mma_done = 0;
    __syncthreads();
    if (threadIdx.x < kThreads / 2) {
      int x = 0;
      unsigned long long loads = 0;
      const size_t stride = static_cast<size_t>(gridDim.x) * (kThreads / 2);
      size_t i = blockIdx.x * static_cast<size_t>(kThreads / 2) + threadIdx.x;
      while (!mma_done) {
#pragma unroll 8
        for (int k = 0; k < 16; ++k, i += stride) {
          if (i >= n) i -= n;
          x ^= data[i].x ^ data[i].w;
        }
        loads += 16;
      }
      acc[0][0] = static_cast<float>(x);
      atomicAdd(&g_read_bytes, loads * sizeof(int4));
    } else {
      for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < kChains; ++c) {
          b = b * 1664525u + 1013904223u;
          mma_f16_m16n8k16(acc[c], a, b & 0x3bff3bffu, (b >> 1) & 0x3bff3bffu);
        }
      asm volatile("bar.sync 1, 256;" ::: "memory");  // all mma warps are done
      if (threadIdx.x == kThreads / 2) mma_done = 1;
    }
  } else if constexpr (kWork == Work::kRead) {
    int x = 0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
      x ^= data[i].x ^ data[i].w;
    acc[0][0] = static_cast<float>(x);
  } else {
    for (int it = 0; it < iters; ++it) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) {
        if constexpr (kWork == Work::kFfma) {
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[c][e] = fmaf(acc[c][e], 0.999f, 1.0f);
        } else if constexpr (kWork == Work::kMma) {
          b = b * 1664525u + 1013904223u;  // a new B operand each mma (finite FP16 after the mask)
          const uint32_t b0 = b & 0x3bff3bffu, b1 = (b >> 1) & 0x3bff3bffu;
          mma_f16_m16n8k16(acc[c], a, b0, b1);
        } else if constexpr (kWork == Work::kMmaBf16) {
          b = b * 1664525u + 1013904223u;
          mma_bf16_m16n8k16(acc[c], a, b & 0x3f7f3f7fu, (b >> 1) & 0x3f7f3f7fu);
        } else if constexpr (kWork == Work::kMmaSparse) {  // one chain of mma, the other 7 FP32 FMA
          if (c == 0) {
            b = b * 1664525u + 1013904223u;
            mma_f16_m16n8k16(acc[c], a, b & 0x3bff3bffu, (b >> 1) & 0x3bff3bffu);
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[c][e] = fmaf(acc[c][e], 0.999f, 1.0f);
          }
        } else if constexpr (kWork == Work::kConvert) {
          uint32_t lo, hi;
          e4m3x4_to_f16x2x2(b ^ static_cast<uint32_t>(c), lo, hi);
          b += lo ^ hi;
        } else if constexpr (kWork == Work::kMmaConvert) {
          b = b * 1664525u + 1013904223u;
          uint32_t b0, b1;
          e4m3x4_to_f16x2x2(b & 0x77777777u, b0, b1);
          mma_f16_m16n8k16(acc[c], a, b0, b1);
        } else if constexpr (kWork == Work::kSleep) {
          __nanosleep(1000);
        }
      }
    }
  }
  float total = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) total += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if ((__float_as_uint(total) ^ b) == 0x12345678u) *sink = total;  // keeps the work (never true in practice)
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long c1, t1;
    stamp(c1, t1);
    stamps[blockIdx.x] = {c0, c1, t0, t1};
  }
}

// The clock over time within one launch of mma.sync work: thread 0 of each block reads %clock64 and
// %globaltimer every `iters` iterations, `samples` times.
constexpr int kRampSamples = 400;
__global__ void __launch_bounds__(kThreads, 1) ramp(int iters, float* sink, unsigned long long* out) {
  float acc[kChains][4] = {};
  const uint32_t a[4] = {0x3c003c00u ^ threadIdx.x, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u ^ blockIdx.x};
  uint32_t b = 0x38383838u ^ threadIdx.x;
  for (int sample = 0; sample < kRampSamples; ++sample) {
    if (threadIdx.x == 0) {
      unsigned long long cycles, ns;
      stamp(cycles, ns);
      out[(static_cast<size_t>(blockIdx.x) * kRampSamples + sample) * 2] = cycles;
      out[(static_cast<size_t>(blockIdx.x) * kRampSamples + sample) * 2 + 1] = ns;
    }
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int c = 0; c < kChains; ++c) {
        b = b * 1664525u + 1013904223u;
        mma_f16_m16n8k16(acc[c], a, b & 0x3bff3bffu, (b >> 1) & 0x3bff3bffu);
      }
  }
  float total = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) total += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if ((__float_as_uint(total) ^ b) == 0x12345678u) *sink = total;
}

using Kernel = void (*)(int, const int4*, size_t, float*, Stamp*);
Kernel kernel_for(Work w) {
  switch (w) {
    case Work::kFfma: return probe<Work::kFfma>;
    case Work::kMma: return probe<Work::kMma>;
    case Work::kMmaBf16: return probe<Work::kMmaBf16>;
    case Work::kMmaSparse: return probe<Work::kMmaSparse>;
    case Work::kMmaWhileReading: return probe<Work::kMmaWhileReading>;
    case Work::kConvert: return probe<Work::kConvert>;
    case Work::kMmaConvert: return probe<Work::kMmaConvert>;
    case Work::kRead: return probe<Work::kRead>;
    default: return probe<Work::kSleep>;
  }
}

int main() {
  int device = 0, sms = 0;
  KVPATCH_CUDA_CHECK(cudaGetDevice(&device));
  KVPATCH_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  constexpr size_t kReadBytes = size_t{256} << 20;
  int4* data = nullptr;
  float* sink = nullptr;
  Stamp* stamps = nullptr;
  KVPATCH_CUDA_CHECK(cudaMalloc(&data, kReadBytes));
  KVPATCH_CUDA_CHECK(cudaMemset(data, 1, kReadBytes));
  KVPATCH_CUDA_CHECK(cudaMalloc(&sink, 4));
  KVPATCH_CUDA_CHECK(cudaMalloc(&stamps, sms * sizeof(Stamp)));
  std::vector<Stamp> host(sms);
  cudaEvent_t start, stop;
  KVPATCH_CUDA_CHECK(cudaEventCreate(&start));
  KVPATCH_CUDA_CHECK(cudaEventCreate(&stop));
  std::printf("%-24s %-6s %10s %10s   (median SM clock over %d blocks, one block per SM)\n", "work", "launch", "time us",
              "SM GHz", sms);
  for (int w = 0; w <= static_cast<int>(Work::kSleep); ++w) {
    const Work work = static_cast<Work>(w);
    // An untimed launch first (the module loads lazily), then iterations for ~100 us, scaled from a
    // calibration launch; the long launch is 200 times that.
    int iters = 256;
    float ms = 0.f;
    kernel_for(work)<<<sms, kThreads>>>(1, data, kReadBytes / sizeof(int4), sink, stamps);
    KVPATCH_CUDA_CHECK(cudaDeviceSynchronize());
    for (int pass = 0; pass < 3; ++pass) {
      const bool is_long = pass == 2;
      const int launch_iters = is_long ? iters * 200 : iters;
      const size_t reads = kReadBytes / sizeof(int4) * (is_long ? 200 : 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // back to idle clocks and power
      const unsigned long long zero = 0;
      KVPATCH_CUDA_CHECK(cudaMemcpyToSymbol(g_read_bytes, &zero, sizeof(zero)));
      KVPATCH_CUDA_CHECK(cudaEventRecord(start));
      if (work == Work::kRead && is_long) {
        for (int r = 0; r < 200; ++r) kernel_for(work)<<<sms, kThreads>>>(launch_iters, data, reads / 200, sink, stamps);
      } else {
        const bool reads = work == Work::kRead || work == Work::kMmaWhileReading;
        kernel_for(work)<<<sms, kThreads>>>(launch_iters, data, reads ? kReadBytes / sizeof(int4) : 0, sink, stamps);
      }
      KVPATCH_CUDA_CHECK(cudaEventRecord(stop));
      KVPATCH_CUDA_CHECK(cudaEventSynchronize(stop));
      KVPATCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (pass == 0) {  // calibration: scale the iterations to ~100 us
        if (work != Work::kRead) iters = std::max(1, static_cast<int>(iters * 0.1f / std::max(ms, 1e-3f)));
        continue;
      }
      KVPATCH_CUDA_CHECK(cudaMemcpy(host.data(), stamps, sms * sizeof(Stamp), cudaMemcpyDeviceToHost));
      std::vector<double> ghz;
      for (const Stamp& s : host)
        if (s.ns1 > s.ns0) ghz.push_back(static_cast<double>(s.cycles1 - s.cycles0) / static_cast<double>(s.ns1 - s.ns0));
      std::sort(ghz.begin(), ghz.end());
      unsigned long long read_bytes = 0;
      KVPATCH_CUDA_CHECK(cudaMemcpyFromSymbol(&read_bytes, g_read_bytes, sizeof(read_bytes)));
      char note[64] = "";
      if (work == Work::kRead && is_long) std::snprintf(note, sizeof(note), "   (the last of 200 reads)");
      if (work == Work::kMmaWhileReading) std::snprintf(note, sizeof(note), "   (read %.0f GB/s)", read_bytes / (ms * 1e6));
      std::printf("%-24s %-6s %10.1f %10.3f%s\n", kNames[w], is_long ? "long" : "short", ms * 1000.f,
                  ghz.empty() ? 0.0 : ghz[ghz.size() / 2], note);
    }
  }

  // The clock's course within a ~2 ms launch of mma.sync work, started three ways: after 200 ms idle,
  // right after a 256 MB read (what the decode benchmark's L2 flush does before each timed launch),
  // and right after another mma launch (as a layer's GEMMs would leave the GPU in a server).
  unsigned long long* ramp_out = nullptr;
  const size_t ramp_words = static_cast<size_t>(sms) * kRampSamples * 2;
  KVPATCH_CUDA_CHECK(cudaMalloc(&ramp_out, ramp_words * 8));
  std::vector<unsigned long long> ramp_host(ramp_words);
  constexpr int kRampIters = 16;  // ~2.5 us per sample at 16 warps per SM, ~1 ms in all
  ramp<<<sms, kThreads>>>(1, sink, ramp_out);  // module load
  KVPATCH_CUDA_CHECK(cudaDeviceSynchronize());
  const char* starts[] = {"after 200 ms idle", "right after a 256 MB read", "right after an mma launch"};
  for (int start_kind = 0; start_kind < 3; ++start_kind) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (start_kind == 1) kernel_for(Work::kRead)<<<sms, kThreads>>>(0, data, kReadBytes / sizeof(int4), sink, stamps);
    if (start_kind == 2) ramp<<<sms, kThreads>>>(kRampIters, sink, ramp_out);
    ramp<<<sms, kThreads>>>(kRampIters, sink, ramp_out);
    KVPATCH_CUDA_CHECK(cudaDeviceSynchronize());
    KVPATCH_CUDA_CHECK(cudaMemcpy(ramp_host.data(), ramp_out, ramp_words * 8, cudaMemcpyDeviceToHost));
    // Per block, the clock between consecutive samples, bucketed by the time since that block's
    // first sample; the median over blocks per bucket.
    const double edges_us[] = {0, 10, 20, 40, 80, 160, 320, 640, 1280, 1e9};
    constexpr int kBuckets = sizeof(edges_us) / sizeof(edges_us[0]) - 1;
    std::vector<std::vector<double>> bucket(kBuckets);
    for (int blk = 0; blk < sms; ++blk) {
      const unsigned long long* w = ramp_host.data() + static_cast<size_t>(blk) * kRampSamples * 2;
      // Per block: cycles and nanoseconds summed within each bucket, so that the timer's coarse
      // ticks average out.
      std::vector<double> cycles(kBuckets, 0.0), ns(kBuckets, 0.0);
      for (int i = 1; i < kRampSamples; ++i) {
        const double since = static_cast<double>(w[2 * i] == 0 ? 0 : w[2 * i + 1] - w[1]) / 1000.0;
        int k = 0;
        while (k + 1 < kBuckets && since >= edges_us[k + 1]) ++k;
        cycles[k] += static_cast<double>(w[2 * i] - w[2 * (i - 1)]);
        ns[k] += static_cast<double>(w[2 * i + 1] - w[2 * (i - 1) + 1]);
      }
      for (int k = 0; k < kBuckets; ++k)
        if (ns[k] > 0) bucket[k].push_back(cycles[k] / ns[k]);
    }
    std::printf("mma.sync launch %s: SM GHz by time since the block's start (median over blocks)\n", starts[start_kind]);
    for (int k = 0; k < kBuckets; ++k) {
      if (bucket[k].empty()) continue;
      std::sort(bucket[k].begin(), bucket[k].end());
      if (edges_us[k + 1] < 1e8) std::printf("  %6.0f-%-6.0f us  %.3f\n", edges_us[k], edges_us[k + 1], bucket[k][bucket[k].size() / 2]);
      else std::printf("  %6.0f us on     %.3f\n", edges_us[k], bucket[k][bucket[k].size() / 2]);
    }
  }
  return 0;
}
