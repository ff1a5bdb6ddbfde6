// Naive GPU reference for MLA decode, for shapes too large for the CPU reference: FP32-or-exact
// products, FP64 accumulation, three plain passes (scores, softmax, weighted values). Validated
// against reference_decode and the host evaluation by tests/verifier/gpu_reference_test.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kvpatch/mla_decode.h"

namespace kvverify {

struct GpuReferenceArgs {
  kvpatch::mla::DecodeParams params;  // device pointers; out/lse fields unused
  const int64_t* token_offset = nullptr;  // [batch + 1] prefix sums of kv_len (device)
  int64_t total_tokens = 0;
  double* scores = nullptr;    // scratch: heads x total_tokens doubles
  float* out = nullptr;        // [batch, heads, 512]
  float* magnitude = nullptr;  // [batch, heads, 512]: sum_j p_j |v_j| / sum_j p_j
  float* lse = nullptr;        // [batch, heads], base 2; -inf for empty requests
};

// Launches the three passes on `stream`; returns the first launch error.
cudaError_t launch_gpu_reference(const GpuReferenceArgs& args, cudaStream_t stream);

}  // namespace kvverify
