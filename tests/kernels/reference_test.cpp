// The CPU reference against an independent naive computation in double (dense K/V gathered per
// request, natural-base softmax, LSE converted to base 2) on small shapes: strided views, pages of
// 1/16/64, ragged and zero-length requests, BF16 and FP8 KV, non-unit scales, NaN codes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "kvpatch/mla_reference.h"
#include "kvpatch/numeric.h"

namespace {

using namespace kvpatch::mla;

double decode_e4m3(uint8_t code) {
  const int exponent = (code >> 3) & 15, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude = exponent == 0 ? std::ldexp(mantissa / 8.0, -6) : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}

double decode_bf16(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &word, sizeof f);
  return f;
}

// Everything the reference reads, laid out with deliberately awkward strides.
struct Fixture {
  int batch, heads, page_size;
  KvDtype dtype;
  std::vector<int32_t> lens, indptr, indices;
  int64_t q_stride_b, q_stride_h, slot_stride, kpe_offset;
  std::vector<uint16_t> q;          // q_nope at [b, h, 0:512], q_pe at [b, h, 512:576] of a wider row
  std::vector<uint8_t> pool_bytes;  // slots of slot_stride elements; latent at 0, rope at kpe_offset
  float sm_scale = 0.07f, ckv_scale = 1.f, kpe_scale = 1.f;

  Fixture(int b, int h, int page, KvDtype dt, std::vector<int32_t> request_lens, uint32_t seed)
      : batch(b), heads(h), page_size(page), dtype(dt), lens(std::move(request_lens)) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    q_stride_h = 576 + 8;  // padded rows
    q_stride_b = heads * q_stride_h + 24;
    slot_stride = 600 + 16 * (page % 3);
    kpe_offset = 520;  // rope not adjacent to the latent part
    indptr.push_back(0);
    int pages_total = 0;
    for (int len : lens) {
      pages_total += (len + page - 1) / page;
      indptr.push_back(pages_total);
    }
    const int pool_pages = pages_total + 3;
    std::vector<int32_t> perm(pool_pages);
    for (int i = 0; i < pool_pages; ++i) perm[i] = (i * 7 + 3) % pool_pages;  // 7 coprime unless pool_pages % 7 == 0
    if (pool_pages % 7 == 0) std::reverse(perm.begin(), perm.end());
    indices.assign(perm.begin(), perm.begin() + pages_total);
    q.resize(static_cast<size_t>(batch) * q_stride_b);
    for (auto& v : q) v = float_to_bf16_bits(normal(rng));
    const size_t elem = dtype == KvDtype::kFp8E4M3 ? 1 : 2;
    pool_bytes.resize(static_cast<size_t>(pool_pages) * page * slot_stride * elem);
    if (dtype == KvDtype::kFp8E4M3) {
      std::uniform_int_distribution<int> code(0, 255);
      for (auto& byte : pool_bytes) {
        int c = code(rng);
        if ((c & 0x7F) == 0x7F) c ^= 1;  // no NaN unless a test plants one
        if (((c >> 3) & 15) > 9) c &= ~0x40;  // keep magnitudes moderate so softmax is not one-hot
        byte = static_cast<uint8_t>(c);
      }
    } else {
      auto* bf = reinterpret_cast<uint16_t*>(pool_bytes.data());
      for (size_t i = 0; i < pool_bytes.size() / 2; ++i) bf[i] = float_to_bf16_bits(normal(rng));
    }
  }

  DecodeParams params() const {
    DecodeParams p;
    p.q_nope = q.data(), p.q_nope_stride_b = q_stride_b, p.q_nope_stride_h = q_stride_h;
    p.q_pe = q.data() + 512, p.q_pe_stride_b = q_stride_b, p.q_pe_stride_h = q_stride_h;
    const size_t elem = dtype == KvDtype::kFp8E4M3 ? 1 : 2;
    p.ckv = pool_bytes.data(), p.ckv_stride_slot = slot_stride;
    p.kpe = pool_bytes.data() + kpe_offset * elem, p.kpe_stride_slot = slot_stride;
    p.kv_dtype = dtype;
    p.kv_indptr = indptr.data(), p.kv_indices = indices.data(), p.kv_len = lens.data();
    p.batch = batch, p.num_heads = heads, p.page_size = page_size;
    p.sm_scale = sm_scale, p.ckv_scale = ckv_scale, p.kpe_scale = kpe_scale;
    return p;
  }

  double kv_value(int64_t slot, int64_t offset) const {
    const int64_t index = slot * slot_stride + offset;
    if (dtype == KvDtype::kFp8E4M3) return decode_e4m3(pool_bytes[index]);
    return decode_bf16(reinterpret_cast<const uint16_t*>(pool_bytes.data())[index]);
  }

  // Independent double-precision decode for (b, h): output and base-2 LSE.
  std::pair<std::vector<double>, double> expected(int b, int h) const {
    const int len = lens[b];
    std::vector<double> out(512, 0.0);
    if (len == 0) return {out, -std::numeric_limits<double>::infinity()};
    std::vector<int64_t> slots(len);
    for (int t = 0; t < len; ++t) slots[t] = int64_t{indices[indptr[b] + t / page_size]} * page_size + t % page_size;
    std::vector<double> logits(len);
    double max_logit = -std::numeric_limits<double>::infinity();
    bool nan_seen = false;
    for (int t = 0; t < len; ++t) {
      double latent = 0, rope = 0;
      for (int d = 0; d < 512; ++d) latent += decode_bf16(q[b * q_stride_b + h * q_stride_h + d]) * kv_value(slots[t], d);
      for (int d = 0; d < 64; ++d) rope += decode_bf16(q[b * q_stride_b + h * q_stride_h + 512 + d]) * kv_value(slots[t], kpe_offset + d);
      logits[t] = sm_scale * (ckv_scale * latent + kpe_scale * rope);
      if (std::isnan(logits[t])) nan_seen = true; else max_logit = std::max(max_logit, logits[t]);
    }
    if (nan_seen) return {std::vector<double>(512, NAN), NAN};
    double denom = 0;
    for (int t = 0; t < len; ++t) {
      const double w = std::exp(logits[t] - max_logit);
      denom += w;
      for (int d = 0; d < 512; ++d) out[d] += w * ckv_scale * kv_value(slots[t], d);
    }
    for (auto& v : out) v /= denom;
    return {out, (max_logit + std::log(denom)) / std::log(2.0)};
  }
};

void check_against_double(const Fixture& fx) {
  const ReferenceOutput got = reference_decode(fx.params());
  REQUIRE(got.out.size() == static_cast<size_t>(fx.batch) * fx.heads * 512);
  for (int b = 0; b < fx.batch; ++b)
    for (int h = 0; h < fx.heads; ++h) {
      CAPTURE(b);
      CAPTURE(h);
      const auto [want, want_lse] = fx.expected(b, h);
      const float* row = got.out.data() + (static_cast<size_t>(b) * fx.heads + h) * 512;
      const float lse = got.lse[b * fx.heads + h];
      if (std::isnan(want_lse)) {
        CHECK(std::isnan(lse));
        for (int d = 0; d < 512; ++d) CHECK(std::isnan(row[d]));
        continue;
      }
      if (std::isinf(want_lse)) {
        CHECK((std::isinf(lse) && lse < 0));
        for (int d = 0; d < 512; ++d) CHECK(row[d] == 0.0f);
        continue;
      }
      double diff2 = 0, ref2 = 0;
      for (int d = 0; d < 512; ++d) {
        diff2 += (row[d] - want[d]) * (row[d] - want[d]);
        ref2 += want[d] * want[d];
      }
      CHECK(std::sqrt(diff2 / ref2) < 1e-5);
      CHECK(std::fabs(lse - want_lse) < 1e-4 * std::max(1.0, std::fabs(want_lse)));
    }
}

}  // namespace

TEST_CASE("reference matches a double-precision decode: pages, strides, ragged and empty requests") {
  uint32_t seed = 1;
  for (KvDtype dtype : {KvDtype::kFp8E4M3, KvDtype::kBf16})
    for (int page : {1, 16, 64})
      for (int heads : {1, 3, 16}) {
        CAPTURE(page);
        CAPTURE(heads);
        Fixture fx(4, heads, page, dtype, {0, 1, 17, 130}, ++seed);
        check_against_double(fx);
      }
}

TEST_CASE("reference applies ckv_scale and kpe_scale as real = stored x scale") {
  Fixture fx(2, 4, 16, KvDtype::kFp8E4M3, {40, 7}, 77);
  fx.ckv_scale = 0.25f, fx.kpe_scale = 3.0f, fx.sm_scale = 0.11f;
  check_against_double(fx);
}

TEST_CASE("an E4M3 NaN code in a referenced slot makes exactly that request NaN") {
  for (uint8_t code : {uint8_t{0x7F}, uint8_t{0xFF}}) {
    Fixture fx(3, 2, 16, KvDtype::kFp8E4M3, {20, 20, 20}, 5);
    const int64_t slot = int64_t{fx.indices[fx.indptr[1] + 0]} * 16 + 9;
    fx.pool_bytes[slot * fx.slot_stride + 300] = code;
    check_against_double(fx);
    const ReferenceOutput got = reference_decode(fx.params());
    CHECK(std::isnan(got.lse[2]));  // request 1, head 0 (2 heads)
    CHECK(std::isfinite(got.lse[0]));
    CHECK(std::isfinite(got.lse[4]));  // request 2, head 0
  }
}

TEST_CASE("reference rejects a page table too short for kv_len") {
  Fixture fx(2, 2, 16, KvDtype::kFp8E4M3, {20, 20}, 9);
  DecodeParams p = fx.params();
  std::vector<int32_t> longer = {20, 40};
  p.kv_len = longer.data();
  CHECK_THROWS_AS(reference_decode(p), std::invalid_argument);
  p = fx.params();
  p.page_size = 0;
  CHECK_THROWS_AS(reference_decode(p), std::invalid_argument);
}

TEST_CASE("batch of zero requests gives empty outputs") {
  DecodeParams p;
  p.batch = 0, p.num_heads = 8;
  const ReferenceOutput got = reference_decode(p);
  CHECK(got.out.empty());
  CHECK(got.lse.empty());
}
