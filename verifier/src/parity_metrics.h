// Parity metrics of a tested output against a reference, and bitwise parity of two outputs.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tolerance.h"

namespace kvverify {

// Arrays are dense: out-like [batch, heads, 512], lse-like [batch, heads].
struct ParityInput {
  std::span<const float> tested, reference, magnitude;  // magnitude: a per element (tolerance.h)
  std::span<const float> tested_lse, reference_lse;
  std::span<const int32_t> kv_len;  // [batch]
  int heads = 0;
};

struct ParityMetrics {
  int64_t elements = 0;
  int64_t beyond = 0;            // elements outside their bound (non-finite mismatches included)
  int64_t nonfinite = 0;         // tested NaN/Inf where the reference is finite
  int64_t lost_nan = 0;          // reference NaN (a NaN input) where the tested value is finite
  double max_abs_err = 0;        // over elements finite in both
  double max_rel_err = 0;        // |d| / max(|ref|, u a): relative where the value is not a cancellation
  double max_bound_ratio = 0;    // max |d| / bound: how much of its tolerance the worst element uses
  double cosine = 1;             // over elements finite in both; 1 for two zero vectors
  double beyond_share = 0;
  double scale_fit = 1;          // least-squares k in tested ~ k x reference
  double lse_max_abs_err = 0;
  int64_t lse_beyond = 0;
  int requests_beyond = 0;       // requests with at least one element or LSE outside its bound
  int first_request_beyond = -1;
  bool pass = false;
  std::string diagnosis;         // why it failed, in words; empty on PASS
};

ParityMetrics compare_to_reference(const ParityInput& input, const Tolerance& tolerance);

struct BitParity {
  int64_t elements = 0;
  int64_t differing = 0;      // output elements whose bits differ
  int64_t lse_differing = 0;  // LSE values whose bits differ
  double max_abs_diff = 0;
  bool identical() const { return differing == 0 && lse_differing == 0; }
};

// Bit-for-bit comparison (NaNs with equal bits are equal; +0 and -0 differ).
BitParity compare_bits(std::span<const float> a, std::span<const float> b, std::span<const float> lse_a,
                       std::span<const float> lse_b);

}  // namespace kvverify
