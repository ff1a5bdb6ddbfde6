// Which SM clock the GPU grants each kind of work: every SM runs 16 warps of one loop (FP32 FMA,
// FP16 or BF16 mma.sync with FP32 accumulation, one mma per 28 FMA, E4M3 -> FP16 conversions,
// mma with conversions, a DRAM read, or nanosleep), and thread 0 of each block reads %clock64 and %globaltimer at its start and end. Cycles
// over nanoseconds is the clock that block ran at; the median over blocks is printed per launch, for
// a short launch (~100 us, like one decode layer) and a long one (~20 ms), each after 200 ms idle.
// Why: timeline.cu showed the decode kernel's blocks running at ~1.72 GHz in single launches from
// an idle H200 whose maximum is 1.98 GHz, so the question is which work brings the clock down.
// Build and run (GPU machine): nvcc -O3 -arch=sm_90a -Ikernels/src kernels/bench/clock_probe.cu -o /tmp/cp && /tmp/cp
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "device_primitives.cuh"

using namespace kvpatch::mla::device;

#define CHECK(call)                                                                               \
  do {                                                                                            \
    const cudaError_t err_ = (call);                                                              \
    if (err_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

constexpr int kThreads = 512, kChains = 8;

enum class Work { kFfma, kMma, kMmaBf16, kMmaSparse, kConvert, kMmaConvert, kRead, kSleep };
const char* kNames[] = {"FP32 FMA",         "mma.sync f16 -> f32",   "mma.sync bf16 -> f32", "1 mma per 28 FMA",
                        "E4M3 -> FP16 cvt", "mma.sync + 2 cvt each", "DRAM read",            "nanosleep"};

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
  if constexpr (kWork == Work::kRead) {
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

using Kernel = void (*)(int, const int4*, size_t, float*, Stamp*);
Kernel kernel_for(Work w) {
  switch (w) {
    case Work::kFfma: return probe<Work::kFfma>;
    case Work::kMma: return probe<Work::kMma>;
    case Work::kMmaBf16: return probe<Work::kMmaBf16>;
    case Work::kMmaSparse: return probe<Work::kMmaSparse>;
    case Work::kConvert: return probe<Work::kConvert>;
    case Work::kMmaConvert: return probe<Work::kMmaConvert>;
    case Work::kRead: return probe<Work::kRead>;
    default: return probe<Work::kSleep>;
  }
}

int main() {
  int device = 0, sms = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  constexpr size_t kReadBytes = size_t{256} << 20;
  int4* data = nullptr;
  float* sink = nullptr;
  Stamp* stamps = nullptr;
  CHECK(cudaMalloc(&data, kReadBytes));
  CHECK(cudaMemset(data, 1, kReadBytes));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMalloc(&stamps, sms * sizeof(Stamp)));
  std::vector<Stamp> host(sms);
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::printf("%-24s %-6s %10s %10s   (median SM clock over %d blocks, one block per SM)\n", "work", "launch", "time us",
              "SM GHz", sms);
  for (int w = 0; w <= static_cast<int>(Work::kSleep); ++w) {
    const Work work = static_cast<Work>(w);
    // An untimed launch first (the module loads lazily), then iterations for ~100 us, scaled from a
    // calibration launch; the long launch is 200 times that.
    int iters = 256;
    float ms = 0.f;
    kernel_for(work)<<<sms, kThreads>>>(1, data, 0, sink, stamps);
    CHECK(cudaDeviceSynchronize());
    for (int pass = 0; pass < 3; ++pass) {
      const bool is_long = pass == 2;
      const int launch_iters = is_long ? iters * 200 : iters;
      const size_t reads = kReadBytes / sizeof(int4) * (is_long ? 200 : 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // back to idle clocks and power
      CHECK(cudaEventRecord(start));
      if (work == Work::kRead && is_long) {
        for (int r = 0; r < 200; ++r) kernel_for(work)<<<sms, kThreads>>>(launch_iters, data, reads / 200, sink, stamps);
      } else {
        kernel_for(work)<<<sms, kThreads>>>(launch_iters, data, work == Work::kRead ? kReadBytes / sizeof(int4) : 0, sink,
                                            stamps);
      }
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (pass == 0) {  // calibration: scale the iterations to ~100 us
        if (work != Work::kRead) iters = std::max(1, static_cast<int>(iters * 0.1f / std::max(ms, 1e-3f)));
        continue;
      }
      CHECK(cudaMemcpy(host.data(), stamps, sms * sizeof(Stamp), cudaMemcpyDeviceToHost));
      std::vector<double> ghz;
      for (const Stamp& s : host)
        if (s.ns1 > s.ns0) ghz.push_back(static_cast<double>(s.cycles1 - s.cycles0) / static_cast<double>(s.ns1 - s.ns0));
      std::sort(ghz.begin(), ghz.end());
      std::printf("%-24s %-6s %10.1f %10.3f%s\n", kNames[w], is_long ? "long" : "short", ms * 1000.f,
                  ghz.empty() ? 0.0 : ghz[ghz.size() / 2],
                  work == Work::kRead && is_long ? "   (the last of 200 reads)" : "");
    }
  }
  return 0;
}
