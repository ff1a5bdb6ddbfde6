// Is the benchmark's timing floor additive? bench_decode.py times a launch with CUDA events after an
// L2 flush, and a one-element kernel timed that way takes ~3 us (its "timing floor"). targets.py's
// ceiling for the 1.8x checks adds that floor to both instances' bounds. This probe times kernels
// that spin for a known time X (on %globaltimer) the same way, and prints measured - X: if that
// stays at the floor for every X, a launch's fixed cost adds to its work rather than hiding under it.
// Cases: one warp; a decode-shaped grid (one 512-thread block per SM); that grid followed by a
// second, merge-shaped grid in stream order and as a programmatic dependent (as launch_decode does).
//
// nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Ikernels/include \
//   kernels/bench/timing_floor.cu -o /tmp/tf && /tmp/tf
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kvpatch/cuda_check.h"

namespace {

constexpr size_t kFlushBytes = size_t{256} << 20;  // as bench_decode.py's L2 flush
constexpr int kIters = 50;

__device__ inline uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Reads the whole buffer (no dirty lines left behind, as the benchmark's flush by a sum).
__global__ void flush_read(const int4* p, size_t n, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    const int4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;  // never true for the zero-filled buffer: keeps the loads
}

// Thread 0 of each block spins for `ns` from the block's start; the block waits for it. With
// `trigger`, the grid lets a programmatic dependent launch at once (as the decode grid lets the
// merge grid).
__global__ void spin(uint64_t ns, bool trigger) {
  if (trigger) asm volatile("griddepcontrol.launch_dependents;");
  if (threadIdx.x == 0 && ns > 0) {
    const uint64_t start = global_ns();
    while (global_ns() - start < ns) {
    }
  }
  __syncthreads();
}

// A merge-shaped grid that does nothing but wait for the grid before it when launched
// programmatically (griddepcontrol.wait returns at once otherwise).
__global__ void second_grid() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

struct Shape {
  const char* name;
  int blocks, threads;
  int second;  // 0: none; 1: stream order; 2: programmatic dependent
};

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void launch_second(int mode, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(128);
  config.blockDim = dim3(128);
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (mode == 2) {
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  KVPATCH_CUDA_CHECK(cudaLaunchKernelEx(&config, second_grid));
}

}  // namespace

int main() {
  int device = 0, sms = 0;
  KVPATCH_CUDA_CHECK(cudaGetDevice(&device));
  KVPATCH_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cudaDeviceProp prop{};
  KVPATCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int4* buffer;
  int* sink;
  KVPATCH_CUDA_CHECK(cudaMalloc(&buffer, kFlushBytes));
  KVPATCH_CUDA_CHECK(cudaMemset(buffer, 0, kFlushBytes));
  KVPATCH_CUDA_CHECK(cudaMalloc(&sink, sizeof(int)));
  cudaStream_t stream;
  KVPATCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, end;
  KVPATCH_CUDA_CHECK(cudaEventCreate(&start));
  KVPATCH_CUDA_CHECK(cudaEventCreate(&end));

  const Shape shapes[] = {{"one warp", 1, 32, 0},
                          {"grid (1 x 512 threads per SM)", sms, 512, 0},
                          {"grid, then a 128-block grid in stream order", sms, 512, 1},
                          {"grid, then a 128-block grid as a programmatic dependent", sms, 512, 2}};
  const uint64_t spins_us[] = {0, 1, 2, 5, 10, 20, 50};
  std::printf("%s, %d SMs: CUDA events around each launch after a 256 MB L2 flush, median of %d\n", prop.name, sms,
              kIters);
  std::printf("%-58s %8s %12s %12s\n", "launch", "spin us", "measured us", "overhead us");
  for (const Shape& shape : shapes) {
    for (const uint64_t spin_us : spins_us) {
      std::vector<float> ms;
      for (int i = 0; i < kIters + 3; ++i) {  // the first 3 warm up
        flush_read<<<4 * sms, 512, 0, stream>>>(buffer, kFlushBytes / sizeof(int4), sink);
        KVPATCH_CUDA_CHECK(cudaEventRecord(start, stream));
        spin<<<shape.blocks, shape.threads, 0, stream>>>(spin_us * 1000, shape.second == 2);
        if (shape.second != 0) launch_second(shape.second, stream);
        KVPATCH_CUDA_CHECK(cudaEventRecord(end, stream));
        KVPATCH_CUDA_CHECK(cudaEventSynchronize(end));
        float elapsed = 0;
        KVPATCH_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start, end));
        if (i >= 3) ms.push_back(elapsed);
      }
      const float us = 1000 * median(ms);
      std::printf("%-58s %8llu %12.2f %12.2f\n", shape.name, static_cast<unsigned long long>(spin_us), us,
                  us - static_cast<float>(spin_us));
    }
  }
  KVPATCH_CUDA_CHECK(cudaGetLastError());
  cudaFree(buffer);
  cudaFree(sink);
  return 0;
}
