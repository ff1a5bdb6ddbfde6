// A random MLA decode problem on the host (pool, queries, page table) and its device mirror,
// shared by the GPU tests. Values are drawn N(0, 1) and rounded to E4M3 / BF16, so scores and
// outputs look like a real model's, not like uniform random codes.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "kvpatch/cuda_check.h"
#include "kvpatch/mla_decode.h"
#include "kvpatch/numeric.h"

namespace kvtest {

using kvpatch::mla::DecodeParams;
using kvpatch::mla::kHeadDimCkv;
using kvpatch::mla::kHeadDimKpe;
using kvpatch::mla::KvDtype;

// Nearest E4M3 code to x (finite codes only).
inline uint8_t nearest_e4m3(float x) {
  static const std::vector<std::pair<float, uint8_t>> table = [] {
    std::vector<std::pair<float, uint8_t>> t;
    for (int code = 0; code < 256; ++code) {
      const float v = kvpatch::mla::e4m3_to_float(static_cast<uint8_t>(code));
      if (!std::isnan(v)) t.emplace_back(v, static_cast<uint8_t>(code));
    }
    std::sort(t.begin(), t.end());
    return t;
  }();
  auto it = std::lower_bound(table.begin(), table.end(), std::make_pair(x, uint8_t{0}));
  if (it == table.end()) return std::prev(it)->second;
  if (it != table.begin() && std::fabs(std::prev(it)->first - x) < std::fabs(it->first - x)) --it;
  return it->second;
}

struct ProblemShape {
  int num_heads = 16;
  int page_size = 1;
  std::vector<int> lens;
  bool strided = false;  // q_nope/q_pe as views of one [B, H, 576] tensor, padded slot and out strides
  float ckv_scale = 1.f, kpe_scale = 1.f;
};

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceBuffer(size_t n = 0) { resize(n); }
  void resize(size_t n) {
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    count = n;
    if (n) KVPATCH_CUDA_CHECK(cudaMalloc(&ptr, n * sizeof(T)));
  }
  void upload(const std::vector<T>& host) { KVPATCH_CUDA_CHECK(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> download() const {
    std::vector<T> host(count);
    if (count) KVPATCH_CUDA_CHECK(cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  ~DeviceBuffer() { if (ptr) cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Problem {
  ProblemShape shape;
  int batch = 0;
  int64_t slot_stride = 0;  // elements (= bytes for FP8) between slots
  int64_t q_stride_h = 0, q_stride_b = 0, out_stride_h = 0, out_stride_b = 0;
  int64_t num_slots = 0;
  std::vector<uint8_t> pool;      // [num_slots, slot_stride] FP8 codes; latent at 0, rope at 512
  std::vector<uint16_t> q_nope;   // BF16 bits
  std::vector<uint16_t> q_pe;
  std::vector<int32_t> indptr, indices, lens;
  int max_len = 0;

  Problem(const ProblemShape& s, uint32_t seed) : shape(s), batch(static_cast<int>(s.lens.size())) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    const int h = s.num_heads;
    slot_stride = s.strided ? 640 : 576;
    if (s.strided) {
      q_stride_h = 576, q_stride_b = static_cast<int64_t>(h) * 576 + 64;
      out_stride_h = 512 + 32, out_stride_b = static_cast<int64_t>(h) * out_stride_h + 96;
    } else {
      q_stride_h = 512, q_stride_b = static_cast<int64_t>(h) * 512;
      out_stride_h = 512, out_stride_b = static_cast<int64_t>(h) * 512;
    }
    lens.assign(s.lens.begin(), s.lens.end());
    max_len = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
    indptr.assign(1, 0);
    int64_t total_pages = 0;
    for (int len : lens) {
      total_pages += (len + s.page_size - 1) / s.page_size;
      indptr.push_back(static_cast<int32_t>(total_pages));
    }
    // Pages are a random permutation of a pool with spare pages, so indirection matters.
    const int64_t pool_pages = total_pages + 7;
    std::vector<int32_t> perm(pool_pages);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    indices.assign(perm.begin(), perm.begin() + total_pages);
    num_slots = pool_pages * s.page_size;
    pool.resize(static_cast<size_t>(num_slots * slot_stride));
    for (auto& byte : pool) byte = nearest_e4m3(normal(rng));
    if (s.strided) {
      // A strided view of one [B, H, 576] query tensor (q_nope = q[..., :512], q_pe = q[..., 512:]).
      q_nope.resize(static_cast<size_t>(batch) * q_stride_b);
      for (auto& v : q_nope) v = kvpatch::mla::float_to_bf16_bits(normal(rng));
    } else {
      q_nope.resize(static_cast<size_t>(batch) * h * kHeadDimCkv);
      q_pe.resize(static_cast<size_t>(batch) * h * kHeadDimKpe);
      for (auto& v : q_nope) v = kvpatch::mla::float_to_bf16_bits(normal(rng));
      for (auto& v : q_pe) v = kvpatch::mla::float_to_bf16_bits(normal(rng));
    }
  }

  size_t out_elems() const { return static_cast<size_t>(std::max(batch, 1)) * out_stride_b; }

  // Params over the given base pointers (host or device); q_pe is a view into q_nope when strided.
  DecodeParams params(const void* q_nope_base, const void* q_pe_base, const void* pool_base, KvDtype dtype,
                      const int32_t* indptr_base, const int32_t* indices_base, const int32_t* lens_base, void* out,
                      float* lse) const {
    DecodeParams p;
    p.kv_indptr = indptr_base, p.kv_indices = indices_base, p.kv_len = lens_base;
    const int elem = dtype == KvDtype::kFp8E4M3 ? 1 : 2;
    p.q_nope = q_nope_base;
    p.q_nope_stride_b = q_stride_b, p.q_nope_stride_h = q_stride_h;
    if (shape.strided) {
      p.q_pe = static_cast<const uint16_t*>(q_nope_base) + kHeadDimCkv;
      p.q_pe_stride_b = q_stride_b, p.q_pe_stride_h = q_stride_h;
    } else {
      p.q_pe = q_pe_base;
      p.q_pe_stride_b = static_cast<int64_t>(shape.num_heads) * kHeadDimKpe, p.q_pe_stride_h = kHeadDimKpe;
    }
    p.ckv = pool_base;
    p.ckv_stride_slot = slot_stride;
    p.kpe = static_cast<const uint8_t*>(pool_base) + kHeadDimCkv * elem;
    p.kpe_stride_slot = slot_stride;
    p.kv_dtype = dtype;
    p.batch = batch;
    p.num_heads = shape.num_heads;
    p.page_size = shape.page_size;
    p.sm_scale = 1.f / std::sqrt(static_cast<float>(kHeadDimCkv + kHeadDimKpe));
    p.ckv_scale = shape.ckv_scale, p.kpe_scale = shape.kpe_scale;
    p.out = out;
    p.out_stride_b = out_stride_b, p.out_stride_h = out_stride_h;
    p.lse = lse;
    return p;
  }
};

}  // namespace kvtest
