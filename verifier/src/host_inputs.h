// A shape's inputs in host memory, generated exactly as the GPU generates them.
#pragma once

#include <cstdint>
#include <vector>

#include "kvpatch/mla_decode.h"
#include "request_layout.h"
#include "shape_matrix.h"

namespace kvverify {

inline constexpr int kSlotWidth = kvpatch::mla::kHeadDimCkv + kvpatch::mla::kHeadDimKpe;  // 576

struct HostInputs {
  RequestLayout layout;
  std::vector<uint16_t> q;        // [batch, heads, 576] BF16: q_nope then q_pe, as SGLang splits q
  std::vector<uint8_t> kv_fp8;    // [slots, 576] FP8 E4M3 codes (FP8 pair only)
  std::vector<uint16_t> kv_bf16;  // [slots, 576] BF16: the exact cast of kv_fp8, or the BF16 cache
};

HostInputs make_host_inputs(const ShapeSpec& shape);

// DecodeParams in SGLang's layout over any pointers (host or device): q_nope/q_pe are strided views
// of one [batch, heads, 576] BF16 tensor, ckv/kpe of one [slots, 576] cache of dtype `kv`.
kvpatch::mla::DecodeParams layout_params(const ShapeSpec& shape, const void* q, const void* cache,
                                         kvpatch::mla::KvDtype kv, const int32_t* kv_indptr,
                                         const int32_t* kv_indices, const int32_t* kv_len);

// DecodeParams over `inputs` (host pointers).
kvpatch::mla::DecodeParams host_params(const ShapeSpec& shape, const HostInputs& inputs, kvpatch::mla::KvDtype kv);

}  // namespace kvverify
