// Plain CPU reference for MLA decode: FP32 accumulation, exact E4M3 decoding. It reads the same
// DecodeParams as the GPU kernel (host pointers), so strided views and pages mean the same thing.
#pragma once

#include <vector>

#include "kvpatch/mla_decode.h"

namespace kvpatch::mla {

struct ReferenceOutput {
  std::vector<float> out;  // [batch, num_heads, 512], dense, FP32 (not rounded to BF16)
  std::vector<float> lse;  // [batch, num_heads], base 2; -inf for empty requests
};

// Host-side precondition failures (bad shapes, null pointers) throw std::invalid_argument.
ReferenceOutput reference_decode(const DecodeParams& host_params);

}  // namespace kvpatch::mla
