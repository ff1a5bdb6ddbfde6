// The tensor-core rate the decode kernel can reach with the instructions issue 3 allows on both SM90
// and SM120: mma.sync m16n8k16 with FP32 accumulation, BF16 and FP16 operands, operands in
// registers (no memory traffic), 8 independent accumulators per warp, 16 warps per SM. Prints
// TFLOP/s over the whole GPU (4,096 FLOP per mma) from CUDA events, best of 5 runs.
// What it is for: at H = 32 the kernel runs 544 mma per 64-token tile per 16-head group (QK 288,
// PV 256), so a shape's mma count over a target time is the mma rate it needs (NOTES.md).
// Build and run (GPU machine): nvcc -O3 -arch=sm_90a -Ikernels/src kernels/bench/mma_peak.cu -o /tmp/mp && /tmp/mp
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "device_primitives.cuh"

using namespace kvpatch::mla::device;

constexpr int kChains = 8, kIters = 4096, kThreads = 512;

template <bool kBf16>
__global__ void __launch_bounds__(kThreads) mma_loop(float* sink, uint32_t seed) {
  uint32_t a[4] = {seed, seed ^ 0x3c003c00u, seed + 1, seed ^ 0x38003800u};
  const uint32_t b0 = seed * 3u, b1 = seed ^ 0x34003400u;
  float acc[kChains][4] = {};
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if constexpr (kBf16) mma_bf16_m16n8k16(acc[c], a, b0, b1);
      else mma_f16_m16n8k16(acc[c], a, b0, b1);
    }
  }
  float total = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) total += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (total == 1234.5f) *sink = total;  // keeps the mma chains
}

#define CHECK(call)                                                                        \
  do {                                                                                     \
    const cudaError_t err_ = (call);                                                       \
    if (err_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));  \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

template <bool kBf16>
double tflops(int sms, float* sink) {
  const int blocks = sms;  // one 16-warp block per SM, as the decode kernel runs
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  mma_loop<kBf16><<<blocks, kThreads>>>(sink, 1);  // warm-up
  float best = 1e30f;
  for (int run = 0; run < 5; ++run) {
    CHECK(cudaEventRecord(start));
    mma_loop<kBf16><<<blocks, kThreads>>>(sink, 7u + run);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, ms);
  }
  const double mmas = static_cast<double>(blocks) * (kThreads / 32) * kIters * kChains;
  return mmas * 4096.0 / (best * 1e-3) / 1e12;
}

int main() {
  int device = 0, sms = 0, clock_khz = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  float* sink = nullptr;
  CHECK(cudaMalloc(&sink, sizeof(float)));
  const double bf16 = tflops<true>(sms, sink), f16 = tflops<false>(sms, sink);
  std::printf("%d SMs, max clock %.0f MHz: mma.sync m16n8k16 FP32-accumulate: BF16 %.1f TFLOP/s, FP16 %.1f TFLOP/s\n",
              sms, clock_khz / 1e3, bf16, f16);
  return 0;
}
