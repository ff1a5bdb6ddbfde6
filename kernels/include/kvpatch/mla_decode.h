// Absorbed-MLA paged decode: BF16 query x (FP8 E4M3 | BF16) latent KV cache, in the layout that
// SGLang's FlashInfer MLA backend hands to BatchMLAPagedAttentionWrapper::run().
//
// This header is the contract between kernels/, verifier/ and tests/: plain C++ (no CUDA types), so
// host-only code can include it. Launch functions live in mla_decode_launch.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvpatch::mla {

inline constexpr int kHeadDimCkv = 512;  // kv_lora_rank: latent part, also the value
inline constexpr int kHeadDimKpe = 64;   // qk_rope_head_dim: rope part, keys only

enum class KvDtype : int { kFp8E4M3 = 0, kBf16 = 1 };

// Page sizes the decode kernel takes: powers of two (it pages by shift and mask; SGLang uses 1).
constexpr bool is_supported_page_size(int page_size) { return page_size >= 1 && (page_size & (page_size - 1)) == 0; }

// All strides are in elements of the pointed-to type (BF16 for q/out, the KV dtype for ckv/kpe).
// Pointers are device pointers for the GPU launch and host pointers for the CPU reference.
struct DecodeParams {
  const void* q_nope = nullptr;  // [batch, num_heads, 512] BF16
  int64_t q_nope_stride_b = 0, q_nope_stride_h = 0;
  const void* q_pe = nullptr;    // [batch, num_heads, 64] BF16
  int64_t q_pe_stride_b = 0, q_pe_stride_h = 0;

  // KV pool: slot s's latent part starts at ckv + s * ckv_stride_slot, its rope part at
  // kpe + s * kpe_stride_slot (the two may be strided views of one [slots, 1, 576] buffer).
  // Page p holds slots [p * page_size, (p + 1) * page_size).
  const void* ckv = nullptr;
  int64_t ckv_stride_slot = 0;
  const void* kpe = nullptr;
  int64_t kpe_stride_slot = 0;
  KvDtype kv_dtype = KvDtype::kFp8E4M3;

  const int32_t* kv_indptr = nullptr;   // [batch + 1], offsets into kv_indices (in pages)
  const int32_t* kv_indices = nullptr;  // page ids; may be null when every request is empty (as a
                                        // zero-element tensor's data pointer is): none is read then
  const int32_t* kv_len = nullptr;      // [batch], tokens per request (last page may be partial)

  int batch = 0;
  int num_heads = 0;
  int page_size = 1;     // is_supported_page_size: a power of two
  float sm_scale = 0.f;   // applied to (q_nope . ckv + q_pe . kpe)
  float ckv_scale = 1.f;  // real latent = stored x ckv_scale
  float kpe_scale = 1.f;  // real rope   = stored x kpe_scale

  void* out = nullptr;    // [batch, num_heads, 512] BF16
  int64_t out_stride_b = 0, out_stride_h = 0;
  float* lse = nullptr;   // optional [batch, num_heads]; base-2 log-sum-exp of the scaled scores
                          // (FlashInfer's convention); -inf for a request of length 0
};

}  // namespace kvpatch::mla
