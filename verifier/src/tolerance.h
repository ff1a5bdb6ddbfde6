// How far the kernel's BF16 output may lie from an FP32-or-better reference, and why
// (verifier/README.md derives each term). u = 2^-8 is BF16's unit roundoff (8 significant bits).
#pragma once

#include <cmath>

namespace kvverify {

struct Tolerance {
  // Final rounding of each output element to BF16: at most u relative.
  double output_rtol = std::ldexp(1.0, -8);
  // Times a = sum_j p_j |v_j| / sum_j p_j, the element's softmax-weighted value magnitude: BF16
  // rounding of the probabilities fed to the P.V product (<= 2u a, numerator and denominator),
  // BF16 partial outputs of split-KV (<= u a) and FP32 score error (< u a): 4u in all.
  double output_atol = std::ldexp(1.0, -6);
  // Times L x a: FP32 summation over L tokens (a sequential sum's worst case, L x 2^-24).
  double output_per_token = std::ldexp(1.0, -24);
  // LSE in log2 units: score error of a 576-term FP32 dot product (< 2^-10 for these inputs)
  // plus FP32 summation of L exponentials (L x 2^-24 relative, x log2(e) < 2 in log2 units).
  double lse_atol = std::ldexp(1.0, -10);
  double lse_per_token = std::ldexp(1.0, -23);
  // Cosine similarity below this fails even when every element is inside its bound.
  double min_cosine = 0.9999;

  double output_bound(double reference, double magnitude, int kv_len) const {
    return output_rtol * std::fabs(reference) + (output_atol + output_per_token * kv_len) * magnitude;
  }
  double lse_bound(int kv_len) const { return lse_atol + lse_per_token * kv_len; }
};

}  // namespace kvverify
