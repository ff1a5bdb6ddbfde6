// Plain CPU reference for MLA decode: FP32 accumulation in natural order, exact E4M3 decoding.
#include "kvpatch/mla_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kvpatch/numeric.h"

namespace kvpatch::mla {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("reference_decode: " + what);
}

float load_bf16(const void* base, int64_t index) {
  return bf16_bits_to_float(static_cast<const uint16_t*>(base)[index]);
}

// One KV element (latent or rope) by element index, decoded exactly from its stored dtype.
float load_kv(const void* base, int64_t index, KvDtype dtype) {
  if (dtype == KvDtype::kFp8E4M3) return e4m3_to_float(static_cast<const uint8_t*>(base)[index]);
  return load_bf16(base, index);
}

void check_params(const DecodeParams& p) {
  require(p.batch >= 0, "batch must be >= 0");
  require(p.num_heads >= 1, "num_heads must be >= 1");
  require(p.page_size >= 1, "page_size must be >= 1");
  require(p.kv_dtype == KvDtype::kFp8E4M3 || p.kv_dtype == KvDtype::kBf16, "unknown kv_dtype");
  if (p.batch == 0) return;
  require(p.q_nope && p.q_pe && p.ckv && p.kpe, "q_nope, q_pe, ckv and kpe must be set");
  require(p.kv_indptr && p.kv_len, "kv_indptr and kv_len must be set");
  for (int b = 0; b < p.batch; ++b) {
    const int64_t len = p.kv_len[b];
    const int64_t pages = static_cast<int64_t>(p.kv_indptr[b + 1]) - p.kv_indptr[b];
    require(len >= 0, "kv_len[" + std::to_string(b) + "] is negative");
    require(pages * p.page_size >= len,
            "request " + std::to_string(b) + " has " + std::to_string(pages) + " pages of " +
                std::to_string(p.page_size) + " for " + std::to_string(len) + " tokens");
    require(len == 0 || p.kv_indices, "kv_indices must be set when a request has tokens");
  }
}

}  // namespace

ReferenceOutput reference_decode(const DecodeParams& p) {
  check_params(p);
  ReferenceOutput result;
  result.out.assign(static_cast<size_t>(p.batch) * p.num_heads * kHeadDimCkv, 0.f);
  result.lse.assign(static_cast<size_t>(p.batch) * p.num_heads, -std::numeric_limits<float>::infinity());
  const float log2e = 1.4426950408889634f;

  std::vector<float> ckv, kpe, scores, acc(kHeadDimCkv);
  for (int b = 0; b < p.batch; ++b) {
    const int len = p.kv_len[b];
    if (len == 0) continue;
    // Decode the request's KV rows once; every head reads the same rows.
    ckv.assign(static_cast<size_t>(len) * kHeadDimCkv, 0.f);
    kpe.assign(static_cast<size_t>(len) * kHeadDimKpe, 0.f);
    for (int t = 0; t < len; ++t) {
      const int64_t page = p.kv_indices[p.kv_indptr[b] + t / p.page_size];
      const int64_t slot = page * p.page_size + t % p.page_size;
      for (int d = 0; d < kHeadDimCkv; ++d)
        ckv[static_cast<size_t>(t) * kHeadDimCkv + d] = load_kv(p.ckv, slot * p.ckv_stride_slot + d, p.kv_dtype);
      for (int d = 0; d < kHeadDimKpe; ++d)
        kpe[static_cast<size_t>(t) * kHeadDimKpe + d] = load_kv(p.kpe, slot * p.kpe_stride_slot + d, p.kv_dtype);
    }
    scores.resize(len);
    for (int h = 0; h < p.num_heads; ++h) {
      const int64_t qn = b * p.q_nope_stride_b + h * p.q_nope_stride_h;
      const int64_t qp = b * p.q_pe_stride_b + h * p.q_pe_stride_h;
      // Base-2 scores: s * log2(e), so that exp2 below is exp of the scaled score.
      float max_score = -std::numeric_limits<float>::infinity();
      for (int t = 0; t < len; ++t) {
        float dot_ckv = 0.f, dot_kpe = 0.f;
        for (int d = 0; d < kHeadDimCkv; ++d)
          dot_ckv += load_bf16(p.q_nope, qn + d) * ckv[static_cast<size_t>(t) * kHeadDimCkv + d];
        for (int d = 0; d < kHeadDimKpe; ++d)
          dot_kpe += load_bf16(p.q_pe, qp + d) * kpe[static_cast<size_t>(t) * kHeadDimKpe + d];
        scores[t] = (p.ckv_scale * dot_ckv + p.kpe_scale * dot_kpe) * (p.sm_scale * log2e);
        max_score = std::fmax(max_score, scores[t]);  // fmax skips NaN; NaN reaches the sum below
      }
      if (max_score == -std::numeric_limits<float>::infinity()) max_score = 0.f;
      float sum = 0.f;
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int t = 0; t < len; ++t) {
        const float weight = std::exp2(scores[t] - max_score);
        sum += weight;
        for (int d = 0; d < kHeadDimCkv; ++d) acc[d] += weight * ckv[static_cast<size_t>(t) * kHeadDimCkv + d];
      }
      float* out = result.out.data() + (static_cast<size_t>(b) * p.num_heads + h) * kHeadDimCkv;
      const float inv_sum = sum == 0.f ? 0.f : 1.f / sum;
      for (int d = 0; d < kHeadDimCkv; ++d) out[d] = acc[d] * inv_sum * p.ckv_scale;
      result.lse[static_cast<size_t>(b) * p.num_heads + h] = max_score + std::log2(sum);
    }
  }
  return result;
}

}  // namespace kvpatch::mla
