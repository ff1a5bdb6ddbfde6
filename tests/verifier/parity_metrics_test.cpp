// Metrics and tolerance on crafted vectors: each criterion can fail, and its bound is where it says.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "src/parity_metrics.h"

using namespace kvverify;

namespace {

constexpr int kDim = 512;
const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// One request of `len` tokens, one head: 512 elements.
struct Case {
  std::vector<float> tested, reference, magnitude, tested_lse{0.f}, reference_lse{0.f};
  std::vector<int32_t> kv_len;
  explicit Case(int len = 10) : tested(kDim), reference(kDim), magnitude(kDim, 1.f), kv_len{len} {
    for (int i = 0; i < kDim; ++i) reference[i] = tested[i] = std::sin(0.1f * static_cast<float>(i));
  }
  ParityMetrics run(const Tolerance& t = Tolerance{}) const {
    return compare_to_reference({tested, reference, magnitude, tested_lse, reference_lse, kv_len, 1}, t);
  }
};

}  // namespace

TEST_SUITE("metrics") {
  TEST_CASE("identical outputs pass with zero error and cosine 1") {
    const ParityMetrics m = Case().run();
    CHECK(m.pass);
    CHECK(m.max_abs_err == 0);
    CHECK(m.max_rel_err == 0);
    CHECK(m.cosine == doctest::Approx(1.0));
    CHECK(m.beyond == 0);
    CHECK(m.diagnosis.empty());
  }

  TEST_CASE("the element bound is 2^-8 |ref| + (2^-6 + L 2^-24) a") {
    Case c(0);
    c.reference.assign(kDim, 1.f);
    c.tested.assign(kDim, 1.f);
    const double bound = std::ldexp(1.0, -8) + std::ldexp(1.0, -6);  // 0.01953125
    c.tested[3] = static_cast<float>(1 + bound * 0.999);
    CHECK(c.run().pass);
    CHECK(c.run().max_bound_ratio == doctest::Approx(0.999).epsilon(1e-4));
    c.tested[3] = static_cast<float>(1 + bound * 1.001);
    const ParityMetrics m = c.run();
    CHECK_FALSE(m.pass);
    CHECK(m.beyond == 1);
    CHECK(m.beyond_share == doctest::Approx(1.0 / kDim));
    CHECK(m.max_abs_err == doctest::Approx(bound * 1.001).epsilon(1e-5));
    CHECK(m.requests_beyond == 1);
    CHECK(m.first_request_beyond == 0);
  }

  TEST_CASE("long requests widen the bound by the accumulation term") {
    Case c(1 << 20);  // L x 2^-24 = 2^-4
    c.reference.assign(kDim, 1.f);
    c.tested.assign(kDim, 1.f);
    c.tested[0] = 1.07f;  // beyond 2^-8 + 2^-6, inside 2^-8 + 2^-6 + 2^-4
    CHECK(c.run().pass);
    c.kv_len = {10};
    CHECK_FALSE(c.run().pass);
  }

  TEST_CASE("relative error is measured against max(|ref|, 2^-8 a)") {
    Case c;
    c.reference[0] = 0.f;
    c.tested[0] = 1e-3f;  // a = 1: the floor is 2^-8
    const ParityMetrics m = c.run();
    CHECK(m.max_rel_err == doctest::Approx(1e-3 * 256).epsilon(1e-4));
  }

  TEST_CASE("a uniformly scaled output fails and is named as a scale error") {
    Case c;
    for (float& x : c.tested) x *= 1.5f;
    const ParityMetrics m = c.run();
    CHECK_FALSE(m.pass);
    CHECK(m.scale_fit == doctest::Approx(1.5));
    CHECK(m.diagnosis.find("scaled by 1.5") != std::string::npos);
  }

  TEST_CASE("NaN in the output where the reference is finite fails; matching NaNs pass") {
    Case c;
    c.tested[7] = kNan;
    ParityMetrics m = c.run();
    CHECK_FALSE(m.pass);
    CHECK(m.nonfinite == 1);
    CHECK(m.diagnosis.find("NaN/Inf") != std::string::npos);
    c.reference[7] = kNan;
    CHECK(c.run().pass);
    c.tested[7] = 0.f;
    m = c.run();
    CHECK_FALSE(m.pass);
    CHECK(m.lost_nan == 1);
  }

  TEST_CASE("cosine below the minimum fails even inside the element bounds") {
    Case c;
    c.magnitude.assign(kDim, 1000.f);  // every element bound is huge
    for (int i = 0; i < kDim; ++i) c.tested[i] = std::cos(0.1f * static_cast<float>(i));
    const ParityMetrics m = c.run();
    CHECK(m.beyond == 0);
    CHECK(m.cosine < 0.9999);
    CHECK_FALSE(m.pass);
    CHECK(m.diagnosis.find("cosine") != std::string::npos);
  }

  TEST_CASE("orthogonal and zero vectors") {
    Case c;
    c.magnitude.assign(kDim, 1000.f);
    c.reference.assign(kDim, 0.f);
    c.reference[0] = 1.f;
    c.tested.assign(kDim, 0.f);
    c.tested[1] = 1.f;
    CHECK(c.run().cosine == 0);
    c.reference.assign(kDim, 0.f);
    c.tested.assign(kDim, 0.f);
    CHECK(c.run().cosine == 1);
    CHECK(c.run().pass);
  }

  TEST_CASE("LSE: bounded in log2 units; -inf must match exactly") {
    Case c;
    c.reference_lse = {3.f};
    c.tested_lse = {3.f + 0.0009f};  // inside 2^-10 + 10 x 2^-23
    CHECK(c.run().pass);
    c.tested_lse = {3.f + 0.002f};
    ParityMetrics m = c.run();
    CHECK_FALSE(m.pass);
    CHECK(m.lse_beyond == 1);
    c.reference_lse = {-kInf};
    c.tested_lse = {-kInf};
    CHECK(c.run().pass);
    c.tested_lse = {0.f};
    CHECK_FALSE(c.run().pass);
  }

  TEST_CASE("failures are attributed to requests") {
    constexpr size_t kRows = size_t{3} * kDim;
    std::vector<float> ref(kRows, 1.f), tested(kRows, 1.f), magnitude(kRows, 1.f), lse(3, 0.f);
    const std::vector<int32_t> lens{5, 5, 5};
    tested[2 * kDim + 4] = 2.f;
    const ParityMetrics m = compare_to_reference({tested, ref, magnitude, lse, lse, lens, 1}, Tolerance{});
    CHECK(m.requests_beyond == 1);
    CHECK(m.first_request_beyond == 2);
    CHECK(m.diagnosis.find("in 1 of 3 requests (first: request 2)") != std::string::npos);
  }

  TEST_CASE("bitwise parity: any bit counts, equal NaN bits are equal") {
    const std::vector<float> a{1.f, 0.f, kNan, 2.f}, lse{1.f};
    std::vector<float> b = a;
    CHECK(compare_bits(a, b, lse, lse).identical());
    b[1] = -0.f;
    b[3] = std::nextafter(2.f, 3.f);
    const BitParity p = compare_bits(a, b, lse, std::vector<float>{1.5f});
    CHECK(p.differing == 2);
    CHECK(p.lse_differing == 1);
    CHECK(p.max_abs_diff == doctest::Approx(std::nextafter(2.f, 3.f) - 2.f));
    CHECK_FALSE(p.identical());
  }
}
