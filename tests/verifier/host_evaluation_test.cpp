// The double-precision host evaluation agrees with the contract's reference_decode, and its
// magnitude a bounds every output element.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "kvpatch/mla_reference.h"
#include "kvpatch/numeric.h"
#include "src/host_attention.h"
#include "src/host_inputs.h"

using namespace kvverify;
namespace mla = kvpatch::mla;

namespace {

ShapeSpec small_shape(int batch, int context, int page, Dtype kv) {
  ShapeSpec shape;
  shape.heads = 3;
  shape.batch = batch;
  shape.context_len = context;
  shape.page_size = page;
  shape.sm_scale = 0.0625;
  shape.ckv_scale = 0.75;
  shape.kpe_scale = 1.5;
  shape.kv_dtype = kv;
  shape.seed = 1234 + batch * 7 + context + page;
  return shape;
}

}  // namespace

TEST_SUITE("host_evaluation") {
  TEST_CASE("matches reference_decode within FP32 accumulation error") {
    for (const Dtype kv : {Dtype::kFp8E4M3, Dtype::kBf16}) {
      for (const int page : {1, 16}) {
        const ShapeSpec shape = small_shape(5, 70, page, kv);
        CAPTURE(shape.label());
        const HostInputs inputs = make_host_inputs(shape);
        const mla::DecodeParams params =
            host_params(shape, inputs, kv == Dtype::kFp8E4M3 ? mla::KvDtype::kFp8E4M3 : mla::KvDtype::kBf16);
        const mla::ReferenceOutput reference = mla::reference_decode(params);
        const AttentionEvaluation exact = evaluate_attention_host(params);
        REQUIRE(exact.out.size() == reference.out.size());
        for (size_t i = 0; i < exact.out.size(); ++i) {
          CHECK(std::fabs(exact.out[i] - reference.out[i]) <= 1e-5 * exact.magnitude[i] + 1e-30);
          CHECK(std::fabs(exact.out[i]) <= exact.magnitude[i] * (1 + 1e-6));
        }
        for (size_t i = 0; i < exact.lse.size(); ++i) {
          if (std::isinf(reference.lse[i])) {
            CHECK(exact.lse[i] == reference.lse[i]);
          } else {
            CHECK(exact.lse[i] == doctest::Approx(reference.lse[i]).epsilon(1e-5));
          }
        }
      }
    }
  }

  TEST_CASE("empty requests give zeros and -inf; one-token requests give that token's value") {
    const ShapeSpec shape = small_shape(4, 9, 4, Dtype::kFp8E4M3);
    const HostInputs inputs = make_host_inputs(shape);
    const AttentionEvaluation exact = evaluate_attention_host(host_params(shape, inputs, mla::KvDtype::kFp8E4M3));
    const auto empty_row = static_cast<size_t>(shape.heads);  // request 1 is empty (request_layout.h)
    CHECK(exact.lse[empty_row] == -std::numeric_limits<float>::infinity());
    CHECK(exact.out[empty_row * 512 + 5] == 0.f);
    const size_t one_row = size_t{2} * shape.heads;  // request 2 holds one token
    const int64_t slot = inputs.layout.slot(2, 0);
    const float value = mla::e4m3_to_float(inputs.kv_fp8[static_cast<size_t>(slot) * 576 + 5]) * 0.75f;
    CHECK(exact.out[one_row * 512 + 5] == doctest::Approx(value));
  }

  TEST_CASE("a NaN in the cache poisons its request only") {
    const ShapeSpec shape = small_shape(2, 5, 1, Dtype::kFp8E4M3);
    HostInputs inputs = make_host_inputs(shape);
    inputs.kv_fp8[static_cast<size_t>(inputs.layout.slot(0, 2)) * 576 + 100] = 0x7F;
    const AttentionEvaluation exact = evaluate_attention_host(host_params(shape, inputs, mla::KvDtype::kFp8E4M3));
    CHECK(std::isnan(exact.out[0]));
    CHECK(std::isnan(exact.lse[0]));
    CHECK_FALSE(std::isnan(exact.out[static_cast<size_t>(shape.heads) * 512]));
  }
}
