#include "host_inputs.h"

#include "kvpatch/numeric.h"
#include "random_values.h"

namespace kvverify {

namespace mla = kvpatch::mla;

HostInputs make_host_inputs(const ShapeSpec& shape) {
  HostInputs inputs;
  inputs.layout = make_request_layout(shape);
  const size_t q_count = static_cast<size_t>(shape.batch) * shape.heads * kSlotWidth;
  inputs.q.resize(q_count);
  for (size_t i = 0; i < q_count; ++i) inputs.q[i] = random_query_bf16(random_bits(shape.seed, RandomStream::kQuery, i));

  const size_t kv_count = static_cast<size_t>(inputs.layout.num_slots) * kSlotWidth;
  inputs.kv_bf16.resize(kv_count);
  if (shape.kv_dtype == Dtype::kFp8E4M3) {
    inputs.kv_fp8.resize(kv_count);
    for (size_t i = 0; i < kv_count; ++i) {
      inputs.kv_fp8[i] = random_fp8_code(random_bits(shape.seed, RandomStream::kKvFp8, i));
      inputs.kv_bf16[i] = mla::float_to_bf16_bits(mla::e4m3_to_float(inputs.kv_fp8[i]));  // exact
    }
  } else {
    for (size_t i = 0; i < kv_count; ++i) {
      inputs.kv_bf16[i] = random_kv_bf16(random_bits(shape.seed, RandomStream::kKvBf16, i));
    }
  }
  return inputs;
}

mla::DecodeParams layout_params(const ShapeSpec& shape, const void* q, const void* cache, mla::KvDtype kv,
                                const int32_t* kv_indptr, const int32_t* kv_indices, const int32_t* kv_len) {
  mla::DecodeParams p;
  p.q_nope = q;
  p.q_nope_stride_b = static_cast<int64_t>(shape.heads) * kSlotWidth;
  p.q_nope_stride_h = kSlotWidth;
  p.q_pe = static_cast<const uint16_t*>(q) + mla::kHeadDimCkv;
  p.q_pe_stride_b = p.q_nope_stride_b;
  p.q_pe_stride_h = kSlotWidth;
  const size_t element = kv == mla::KvDtype::kFp8E4M3 ? 1 : 2;
  p.ckv = cache;
  p.kpe = static_cast<const char*>(cache) + mla::kHeadDimCkv * element;
  p.ckv_stride_slot = kSlotWidth;
  p.kpe_stride_slot = kSlotWidth;
  p.kv_dtype = kv;
  p.kv_indptr = kv_indptr;
  p.kv_indices = kv_indices;
  p.kv_len = kv_len;
  p.batch = shape.batch;
  p.num_heads = shape.heads;
  p.page_size = shape.page_size;
  p.sm_scale = static_cast<float>(shape.sm_scale);
  p.ckv_scale = static_cast<float>(shape.ckv_scale);
  p.kpe_scale = static_cast<float>(shape.kpe_scale);
  return p;
}

mla::DecodeParams host_params(const ShapeSpec& shape, const HostInputs& inputs, mla::KvDtype kv) {
  const void* cache = kv == mla::KvDtype::kFp8E4M3 ? static_cast<const void*>(inputs.kv_fp8.data())
                                                   : static_cast<const void*>(inputs.kv_bf16.data());
  return layout_params(shape, inputs.q.data(), cache, kv, inputs.layout.kv_indptr.data(),
                       inputs.layout.kv_indices.data(), inputs.layout.kv_len.data());
}

}  // namespace kvverify
