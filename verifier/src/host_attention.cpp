#include "host_attention.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "kvpatch/numeric.h"

namespace kvverify {

namespace mla = kvpatch::mla;

namespace {

double kv_value(const mla::DecodeParams& p, const void* base, int64_t slot, int64_t stride, int e, double scale) {
  const int64_t index = slot * stride + e;
  if (p.kv_dtype == mla::KvDtype::kFp8E4M3) {
    return double(mla::e4m3_to_float(static_cast<const uint8_t*>(base)[index])) * scale;
  }
  return double(mla::bf16_bits_to_float(static_cast<const uint16_t*>(base)[index])) * scale;
}

double query_value(const void* base, int64_t offset) {
  return mla::bf16_bits_to_float(static_cast<const uint16_t*>(base)[offset]);
}

}  // namespace

AttentionEvaluation evaluate_attention_host(const mla::DecodeParams& p) {
  constexpr int kCkv = mla::kHeadDimCkv, kKpe = mla::kHeadDimKpe;
  const size_t rows = static_cast<size_t>(p.batch) * static_cast<size_t>(p.num_heads);
  AttentionEvaluation result;
  result.out.assign(rows * kCkv, 0.f);
  result.magnitude.assign(rows * kCkv, 0.f);
  result.lse.assign(rows, -std::numeric_limits<float>::infinity());

  std::vector<double> scores, values;
  for (int b = 0; b < p.batch; ++b) {
    const int len = p.kv_len[b];
    if (len == 0) continue;
    std::vector<int64_t> slots(static_cast<size_t>(len));
    for (int t = 0; t < len; ++t) {
      slots[static_cast<size_t>(t)] =
          static_cast<int64_t>(p.kv_indices[p.kv_indptr[b] + t / p.page_size]) * p.page_size + t % p.page_size;
    }
    // The request's real latent values, read once and shared by all heads.
    values.resize(static_cast<size_t>(len) * kCkv);
    for (int t = 0; t < len; ++t) {
      for (int e = 0; e < kCkv; ++e) {
        values[static_cast<size_t>(t) * kCkv + e] = kv_value(p, p.ckv, slots[t], p.ckv_stride_slot, e, p.ckv_scale);
      }
    }
    for (int h = 0; h < p.num_heads; ++h) {
      const size_t row = static_cast<size_t>(b) * p.num_heads + h;
      scores.resize(static_cast<size_t>(len));
      double max_score = -std::numeric_limits<double>::infinity();
      bool nan_seen = false;
      for (int t = 0; t < len; ++t) {
        double dot = 0;
        for (int e = 0; e < kCkv; ++e) {
          dot += query_value(p.q_nope, b * p.q_nope_stride_b + h * p.q_nope_stride_h + e) *
                 values[static_cast<size_t>(t) * kCkv + e];
        }
        for (int e = 0; e < kKpe; ++e) {
          dot += query_value(p.q_pe, b * p.q_pe_stride_b + h * p.q_pe_stride_h + e) *
                 kv_value(p, p.kpe, slots[t], p.kpe_stride_slot, e, p.kpe_scale);
        }
        const double s = dot * p.sm_scale;
        scores[static_cast<size_t>(t)] = s;
        nan_seen = nan_seen || std::isnan(s);
        if (s > max_score) max_score = s;
      }
      if (nan_seen) max_score = std::numeric_limits<double>::quiet_NaN();  // NaN inputs poison the row
      double sum = 0;
      for (double& s : scores) {
        s = std::exp(s - max_score);
        sum += s;
      }
      result.lse[row] = static_cast<float>((max_score + std::log(sum)) / std::log(2.0));
      std::vector<double> acc(kCkv, 0.0), magnitude(kCkv, 0.0);
      for (int t = 0; t < len; ++t) {
        const double weight = scores[static_cast<size_t>(t)];
        const double* v = &values[static_cast<size_t>(t) * kCkv];
        for (int e = 0; e < kCkv; ++e) {
          acc[e] += weight * v[e];
          magnitude[e] += weight * std::fabs(v[e]);
        }
      }
      for (int e = 0; e < kCkv; ++e) {
        result.out[row * kCkv + e] = static_cast<float>(acc[e] / sum);
        result.magnitude[row * kCkv + e] = static_cast<float>(magnitude[e] / sum);
      }
    }
  }
  return result;
}

}  // namespace kvverify
