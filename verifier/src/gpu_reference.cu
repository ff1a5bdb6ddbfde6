#include "gpu_reference.cuh"

#include <cmath>

#include "kvpatch/numeric.h"

namespace kvverify {

namespace mla = kvpatch::mla;

namespace {

constexpr int kCkv = mla::kHeadDimCkv, kKpe = mla::kHeadDimKpe;
constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = 256;

__device__ double kv_real(const mla::DecodeParams& p, const void* base, int64_t index, double scale) {
  if (p.kv_dtype == mla::KvDtype::kFp8E4M3) {
    return double(mla::e4m3_to_float(static_cast<const uint8_t*>(base)[index])) * scale;
  }
  return double(mla::bf16_bits_to_float(static_cast<const uint16_t*>(base)[index])) * scale;
}

__device__ double q_real(const void* base, int64_t index) {
  return mla::bf16_bits_to_float(static_cast<const uint16_t*>(base)[index]);
}

__device__ int64_t slot_of(const mla::DecodeParams& p, int b, int64_t t) {
  return static_cast<int64_t>(p.kv_indices[p.kv_indptr[b] + t / p.page_size]) * p.page_size + t % p.page_size;
}

// Request of flattened token g: the last b with token_offset[b] <= g.
__device__ int request_of(const int64_t* token_offset, int batch, int64_t g) {
  int lo = 0, hi = batch - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (token_offset[mid] <= g) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Scores row of (b, h) starts at heads x token_offset[b] + h x kv_len[b].
__device__ int64_t score_base(const GpuReferenceArgs& a, int b, int h) {
  return a.token_offset[b] * a.params.num_heads + int64_t{h} * a.params.kv_len[b];
}

// Pass 1: one warp per token; the key is read once and dotted with every head's query.
__global__ void scores_kernel(GpuReferenceArgs a) {
  const mla::DecodeParams& p = a.params;
  const int lane = threadIdx.x % 32;
  const int64_t g = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32;
  if (g >= a.total_tokens) return;
  const int b = request_of(a.token_offset, p.batch, g);
  const int64_t t = g - a.token_offset[b];
  const int64_t slot = slot_of(p, b, t);
  double key[kCkv / 32 + kKpe / 32];
  for (int i = 0; i < kCkv / 32; ++i) key[i] = kv_real(p, p.ckv, slot * p.ckv_stride_slot + lane + 32 * i, p.ckv_scale);
  for (int i = 0; i < kKpe / 32; ++i) {
    key[kCkv / 32 + i] = kv_real(p, p.kpe, slot * p.kpe_stride_slot + lane + 32 * i, p.kpe_scale);
  }
  for (int h = 0; h < p.num_heads; ++h) {
    double dot = 0;
    for (int i = 0; i < kCkv / 32; ++i) {
      dot += q_real(p.q_nope, b * p.q_nope_stride_b + h * p.q_nope_stride_h + lane + 32 * i) * key[i];
    }
    for (int i = 0; i < kKpe / 32; ++i) {
      dot += q_real(p.q_pe, b * p.q_pe_stride_b + h * p.q_pe_stride_h + lane + 32 * i) * key[kCkv / 32 + i];
    }
    for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xFFFFFFFFu, dot, offset);
    if (lane == 0) a.scores[score_base(a, b, h) + t] = dot * p.sm_scale;
  }
}

// Block-wide reduction of one double (max or sum), NaN-propagating.
template <bool kMax>
__device__ double block_reduce(double value, double* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const double other = __shfl_xor_sync(0xFFFFFFFFu, value, offset);
    value = kMax ? (isnan(other) || other > value ? other : value) : value + other;
  }
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = value;
  __syncthreads();
  value = shared[0];
  for (int w = 1; w < kThreads / 32; ++w) {
    const double other = shared[w];
    value = kMax ? (isnan(other) || other > value ? other : value) : value + other;
  }
  __syncthreads();
  return value;
}

// Pass 2: per (b, h) row, softmax in place (scores become probabilities) and the base-2 LSE.
__global__ void softmax_kernel(GpuReferenceArgs a) {
  __shared__ double shared[kThreads / 32];
  const int b = blockIdx.x / a.params.num_heads, h = blockIdx.x % a.params.num_heads;
  const int len = a.params.kv_len[b];
  if (len == 0) {
    if (threadIdx.x == 0) a.lse[blockIdx.x] = -INFINITY;
    return;
  }
  double* row = a.scores + score_base(a, b, h);
  double local_max = -INFINITY;
  for (int t = threadIdx.x; t < len; t += kThreads) {
    const double s = row[t];
    local_max = isnan(s) || s > local_max ? s : local_max;
  }
  const double max_score = block_reduce<true>(local_max, shared);
  double local_sum = 0;
  for (int t = threadIdx.x; t < len; t += kThreads) local_sum += exp(row[t] - max_score);
  const double sum = block_reduce<false>(local_sum, shared);
  for (int t = threadIdx.x; t < len; t += kThreads) row[t] = exp(row[t] - max_score) / sum;
  if (threadIdx.x == 0) a.lse[blockIdx.x] = static_cast<float>((max_score + log(sum)) / log(2.0));
}

// Pass 3: per (b, h) row, each thread owns two latent columns and sums p_j v_j and p_j |v_j|.
__global__ void values_kernel(GpuReferenceArgs a) {
  const mla::DecodeParams& p = a.params;
  const int b = blockIdx.x / p.num_heads, h = blockIdx.x % p.num_heads;
  const int len = p.kv_len[b];
  const double* probabilities = a.scores + score_base(a, b, h);
  double acc[kCkv / kThreads] = {}, magnitude[kCkv / kThreads] = {};
#pragma unroll 4
  for (int t = 0; t < len; ++t) {
    const double weight = probabilities[t];
    const int64_t slot = slot_of(p, b, t);
    for (int i = 0; i < kCkv / kThreads; ++i) {
      const double v = kv_real(p, p.ckv, slot * p.ckv_stride_slot + threadIdx.x + kThreads * i, p.ckv_scale);
      acc[i] += weight * v;
      magnitude[i] += weight * fabs(v);
    }
  }
  for (int i = 0; i < kCkv / kThreads; ++i) {
    const int64_t index = int64_t{blockIdx.x} * kCkv + threadIdx.x + kThreads * i;
    a.out[index] = static_cast<float>(acc[i]);
    a.magnitude[index] = static_cast<float>(magnitude[i]);
  }
}

}  // namespace

cudaError_t launch_gpu_reference(const GpuReferenceArgs& args, cudaStream_t stream) {
  const int64_t rows = int64_t{args.params.batch} * args.params.num_heads;
  if (rows == 0) return cudaSuccess;
  if (args.total_tokens > 0) {
    const int64_t blocks = (args.total_tokens + kWarpsPerBlock - 1) / kWarpsPerBlock;
    scores_kernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(args);
    if (const cudaError_t error = cudaGetLastError(); error != cudaSuccess) return error;
  }
  softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(args);
  if (const cudaError_t error = cudaGetLastError(); error != cudaSuccess) return error;
  values_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace kvverify
