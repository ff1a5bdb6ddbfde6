#include "gpu_inputs.cuh"

#include "random_values.h"

namespace kvverify {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 * 4 ? (blocks > 0 ? blocks : 1) : 65536 * 4);  // grid-stride beyond
}

__global__ void query_kernel(uint16_t* q, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    q[i] = random_query_bf16(random_bits(seed, RandomStream::kQuery, static_cast<uint64_t>(i)));
  }
}

__global__ void kv_fp8_kernel(uint8_t* kv, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    kv[i] = random_fp8_code(random_bits(seed, RandomStream::kKvFp8, static_cast<uint64_t>(i)));
  }
}

__global__ void kv_bf16_kernel(uint16_t* kv, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    kv[i] = random_kv_bf16(random_bits(seed, RandomStream::kKvBf16, static_cast<uint64_t>(i)));
  }
}

}  // namespace

void fill_query_bf16(uint16_t* q, int64_t count, uint64_t seed, cudaStream_t stream) {
  query_kernel<<<grid_for(count), kThreads, 0, stream>>>(q, count, seed);
}

void fill_kv_fp8(uint8_t* kv, int64_t count, uint64_t seed, cudaStream_t stream) {
  kv_fp8_kernel<<<grid_for(count), kThreads, 0, stream>>>(kv, count, seed);
}

void fill_kv_bf16(uint16_t* kv, int64_t count, uint64_t seed, cudaStream_t stream) {
  kv_bf16_kernel<<<grid_for(count), kThreads, 0, stream>>>(kv, count, seed);
}

}  // namespace kvverify
