// Device-side generation of a shape's inputs, byte for byte what host_inputs.cpp generates.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvverify {

void fill_query_bf16(uint16_t* q, int64_t count, uint64_t seed, cudaStream_t stream);
void fill_kv_fp8(uint8_t* kv, int64_t count, uint64_t seed, cudaStream_t stream);
void fill_kv_bf16(uint16_t* kv, int64_t count, uint64_t seed, cudaStream_t stream);

}  // namespace kvverify
