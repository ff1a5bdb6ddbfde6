// Independent host evaluation of MLA decode in double precision. It gives what the contract's
// reference_decode does not: the per-element magnitude a = sum_j p_j |v_j| / sum_j p_j that the
// tolerance scales with; and in --cpu mode it is the second implementation reference_decode is
// checked against.
#pragma once

#include <vector>

#include "kvpatch/mla_decode.h"

namespace kvverify {

struct AttentionEvaluation {
  std::vector<float> out;        // [batch, heads, 512]
  std::vector<float> magnitude;  // [batch, heads, 512]: a per element
  std::vector<float> lse;        // [batch, heads], base 2; -inf for empty requests
};

// Reads host pointers, with the same meaning as kvpatch::mla::reference_decode.
AttentionEvaluation evaluate_attention_host(const kvpatch::mla::DecodeParams& host_params);

}  // namespace kvverify
