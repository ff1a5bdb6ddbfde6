// The cast path of the original bug: the whole FP8 pool converted to BF16, like pool.to(bf16).
#include <cuda_bf16.h>

#include "kvpatch/mla_decode_launch.h"
#include "kvpatch/numeric.h"
#include "mla_decode_config.h"

namespace kvpatch::mla {
namespace {

// Each thread converts 16 bytes -> 32 bytes when both ends are 16-byte aligned; the tail and
// unaligned buffers take the scalar loop.
__global__ void cast_fp8_to_bf16_vec16(const uint4* src, uint4* dst, size_t n16) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n16;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 in = src[i];
    const uint32_t words[4] = {in.x, in.y, in.z, in.w};
    uint32_t out[8];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const uint32_t lo = (words[w] >> (16 * half)) & 0xFFu, hi = (words[w] >> (16 * half + 8)) & 0xFFu;
        out[2 * w + half] = float_to_bf16_bits(e4m3_to_float(static_cast<uint8_t>(lo))) |
                            (static_cast<uint32_t>(float_to_bf16_bits(e4m3_to_float(static_cast<uint8_t>(hi)))) << 16);
      }
    }
    dst[2 * i] = make_uint4(out[0], out[1], out[2], out[3]);
    dst[2 * i + 1] = make_uint4(out[4], out[5], out[6], out[7]);
  }
}

__global__ void cast_fp8_to_bf16_scalar(const uint8_t* src, uint16_t* dst, size_t begin, size_t n) {
  for (size_t i = begin + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = float_to_bf16_bits(e4m3_to_float(src[i]));
}

}  // namespace

cudaError_t launch_cast_fp8_to_bf16(const void* src_fp8, void* dst_bf16, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!src_fp8 || !dst_bf16) return cudaErrorInvalidValue;
  int device = 0, sm_count = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  const int threads = tiling::kCastThreads, blocks = sm_count * 8;
  const bool aligned = reinterpret_cast<uintptr_t>(src_fp8) % 16 == 0 && reinterpret_cast<uintptr_t>(dst_bf16) % 16 == 0;
  size_t done = 0;
  if (aligned && n >= 16) {
    cast_fp8_to_bf16_vec16<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(src_fp8),
                                                          static_cast<uint4*>(dst_bf16), n / 16);
    done = n / 16 * 16;
  }
  if (done < n)
    cast_fp8_to_bf16_scalar<<<blocks, threads, 0, stream>>>(static_cast<const uint8_t*>(src_fp8),
                                                           static_cast<uint16_t*>(dst_bf16), done, n);
  return cudaGetLastError();
}

}  // namespace kvpatch::mla
