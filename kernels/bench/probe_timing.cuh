// Timing harness shared by the micro-probes in kernels/bench (convert_throughput.cu, wgmma_rate.cu):
// each block times its loop with clock64() between two barriers, and the host keeps the slowest
// block of a second launch (the first warms up the code and the clocks).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kvpatch/cuda_check.h"

namespace kvpatch::probe {

// Each thread's chain inputs, different per thread and chain.
template <int kChains>
__device__ inline void seed_chains(uint32_t (&x)[kChains]) {
  for (int i = 0; i < kChains; ++i) x[i] = threadIdx.x * 0x01030507u + i;
}

// Runs body() between two block barriers and stores the cycles it took (thread 0, per block).
template <typename Body>
__device__ __forceinline__ void timed(long long* cycles, Body body) {
  __syncthreads();
  const long long start = clock64();
  body();
  __syncthreads();
  const long long end = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = end - start;
}

// Runs `launch(sink, cycles)` twice (the first warms up) and returns the most cycles any of its
// `blocks` blocks took in the second run.
template <typename Launch>
long long worst_block_cycles(int blocks, Launch launch) {
  uint32_t* sink;
  long long* cycles;
  KVPATCH_CUDA_CHECK(cudaMalloc(&sink, 4));
  KVPATCH_CUDA_CHECK(cudaMalloc(&cycles, blocks * sizeof(long long)));
  launch(sink, cycles);
  launch(sink, cycles);
  KVPATCH_CUDA_CHECK(cudaGetLastError());
  KVPATCH_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<long long> host(blocks);
  KVPATCH_CUDA_CHECK(cudaMemcpy(host.data(), cycles, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
  cudaFree(sink);
  cudaFree(cycles);
  return *std::max_element(host.begin(), host.end());
}

}  // namespace kvpatch::probe
