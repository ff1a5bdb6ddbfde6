#include "parity_metrics.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kvpatch/mla_decode.h"

namespace kvverify {
namespace {

constexpr int kDim = kvpatch::mla::kHeadDimCkv;

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, pattern, a, b, c);
  return buffer;
}

// Words for a failure, from the most specific symptom to the most general.
std::string diagnose(const ParityMetrics& m, int batch) {
  if (m.nonfinite > 0) {
    return format("%.0f output elements are NaN/Inf where the reference is finite", double(m.nonfinite));
  }
  if (m.lost_nan > 0) {
    return format("%.0f elements are finite where the reference is NaN (a NaN input was not propagated)",
                  double(m.lost_nan));
  }
  std::string where = m.requests_beyond > 0
                          ? format(" in %.0f of %.0f requests (first: request %.0f)", m.requests_beyond, batch,
                                   m.first_request_beyond)
                          : std::string();
  if (m.cosine > 0.999 && std::fabs(m.scale_fit - 1) > 0.01) {
    return format("output is the reference scaled by %.4g (a scale applied wrongly)", m.scale_fit) + where;
  }
  if (m.beyond > 0) {
    return format("%.0f elements (%.3g%%) beyond tolerance, max abs err %.3g", double(m.beyond),
                  100 * m.beyond_share, m.max_abs_err) + where;
  }
  if (m.lse_beyond > 0) {
    return format("%.0f LSE values beyond tolerance, max abs err %.3g", double(m.lse_beyond), m.lse_max_abs_err) + where;
  }
  return format("cosine similarity %.6f below the minimum", m.cosine);
}

}  // namespace

ParityMetrics compare_to_reference(const ParityInput& in, const Tolerance& tolerance) {
  ParityMetrics m;
  m.elements = static_cast<int64_t>(in.tested.size());
  const int batch = static_cast<int>(in.kv_len.size());
  std::vector<bool> request_beyond(static_cast<size_t>(batch), false);
  double dot = 0, tested_sq = 0, reference_sq = 0;

  for (int64_t i = 0; i < m.elements; ++i) {
    const int b = static_cast<int>(i / (static_cast<int64_t>(in.heads) * kDim));
    const double t = in.tested[static_cast<size_t>(i)];
    const double r = in.reference[static_cast<size_t>(i)];
    const double a = in.magnitude[static_cast<size_t>(i)];
    bool outside = false;
    if (std::isnan(r)) {
      if (!std::isnan(t)) {
        ++m.lost_nan;
        outside = true;
      }
    } else if (!std::isfinite(t)) {
      ++m.nonfinite;
      outside = true;
    } else {
      const double d = std::fabs(t - r);
      m.max_abs_err = std::max(m.max_abs_err, d);
      if (d > 0) {
        const double floor = std::max({std::fabs(r), std::ldexp(a, -8), double(FLT_MIN)});
        m.max_rel_err = std::max(m.max_rel_err, d / floor);
      }
      const double bound = tolerance.output_bound(r, a, in.kv_len[static_cast<size_t>(b)]);
      if (d > 0) m.max_bound_ratio = std::max(m.max_bound_ratio, bound > 0 ? d / bound : HUGE_VAL);
      outside = d > bound;
      dot += t * r;
      tested_sq += t * t;
      reference_sq += r * r;
    }
    if (outside) {
      ++m.beyond;
      request_beyond[static_cast<size_t>(b)] = true;
    }
  }

  for (size_t i = 0; i < in.tested_lse.size(); ++i) {
    const int b = static_cast<int>(i / static_cast<size_t>(in.heads));
    const double t = in.tested_lse[i], r = in.reference_lse[i];
    bool outside;
    if (std::isnan(r)) {
      outside = !std::isnan(t);
    } else if (std::isinf(r) || std::isinf(t) || std::isnan(t)) {
      outside = !(t == r);  // -inf (empty request) must be matched exactly
    } else {
      const double d = std::fabs(t - r);
      m.lse_max_abs_err = std::max(m.lse_max_abs_err, d);
      outside = d > tolerance.lse_bound(in.kv_len[static_cast<size_t>(b)]);
    }
    if (outside) {
      ++m.lse_beyond;
      request_beyond[static_cast<size_t>(b)] = true;
    }
  }

  if (tested_sq == 0 && reference_sq == 0) {
    m.cosine = 1;
  } else if (tested_sq == 0 || reference_sq == 0) {
    m.cosine = 0;
  } else {
    m.cosine = dot / std::sqrt(tested_sq * reference_sq);
  }
  m.scale_fit = reference_sq > 0 ? dot / reference_sq : 1;
  m.beyond_share = m.elements > 0 ? static_cast<double>(m.beyond) / static_cast<double>(m.elements) : 0;
  for (int b = 0; b < batch; ++b) {
    if (!request_beyond[static_cast<size_t>(b)]) continue;
    if (m.requests_beyond++ == 0) m.first_request_beyond = b;
  }
  m.pass = m.beyond == 0 && m.lse_beyond == 0 && m.cosine >= tolerance.min_cosine;
  if (!m.pass) m.diagnosis = diagnose(m, batch);
  return m;
}

BitParity compare_bits(std::span<const float> a, std::span<const float> b, std::span<const float> lse_a,
                       std::span<const float> lse_b) {
  BitParity parity;
  parity.elements = static_cast<int64_t>(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i])) continue;  // bits, so NaN == same NaN
    ++parity.differing;
    if (std::isfinite(a[i]) && std::isfinite(b[i])) {
      parity.max_abs_diff = std::max(parity.max_abs_diff, std::fabs(double(a[i]) - double(b[i])));
    }
  }
  for (size_t i = 0; i < lse_a.size(); ++i) {
    if (std::bit_cast<uint32_t>(lse_a[i]) != std::bit_cast<uint32_t>(lse_b[i])) ++parity.lse_differing;
  }
  return parity;
}

}  // namespace kvverify
