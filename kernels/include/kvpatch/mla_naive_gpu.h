// A plain FP32 GPU MLA decode: one block per (request, head), no tensor cores, no tiling.
// Tests use it as a fast stand-in for the CPU reference on shapes too big for the CPU; it is
// itself checked against reference_decode() on small shapes. Not a baseline for timings.
#pragma once

#include <cuda_runtime.h>

#include "kvpatch/mla_decode.h"

namespace kvpatch::mla {

inline constexpr int kNaiveDecodeThreads = 256;  // 8 warps per (request, head) block

// Writes FP32 results: out_f32 [batch, num_heads, 512] dense, lse_f32 [batch, num_heads] (base 2).
// Ignores device_params.out and device_params.lse.
cudaError_t launch_naive_decode(const DecodeParams& device_params, float* out_f32, float* lse_f32,
                                cudaStream_t stream);

}  // namespace kvpatch::mla
