// Exact E4M3 decoding, checked against all 256 codes with values computed independently in double
// from the OCP definition: (-1)^s * 2^(e-7) * (1 + m/8), subnormal 2^-6 * m/8, e=15 m=7 is NaN.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "kvpatch/numeric.h"

namespace {

double e4m3_by_definition(int code) {
  const int sign = code >> 7, exponent = (code >> 3) & 15, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return NAN;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa / 8.0, -6) : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
  return sign ? -magnitude : magnitude;
}

}  // namespace

TEST_CASE("e4m3_to_float matches the OCP definition for all 256 codes") {
  int nan_codes = 0;
  for (int code = 0; code < 256; ++code) {
    CAPTURE(code);
    const double expected = e4m3_by_definition(code);
    const float got = kvpatch::mla::e4m3_to_float(static_cast<uint8_t>(code));
    if (std::isnan(expected)) {
      CHECK(std::isnan(got));
      ++nan_codes;
    } else {
      CHECK(static_cast<double>(got) == expected);
      CHECK(std::signbit(got) == ((code & 0x80) != 0));
    }
  }
  CHECK(nan_codes == 2);
}

TEST_CASE("known E4M3 landmarks") {
  using kvpatch::mla::e4m3_to_float;
  CHECK(e4m3_to_float(0x38) == 1.0f);
  CHECK(e4m3_to_float(0x7E) == 448.0f);               // largest finite
  CHECK(e4m3_to_float(0xFE) == -448.0f);
  CHECK(e4m3_to_float(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(e4m3_to_float(0x08) == std::ldexp(1.0f, -6));  // smallest normal
  CHECK(std::isnan(e4m3_to_float(0x7F)));
  CHECK(std::isnan(e4m3_to_float(0xFF)));
}

TEST_CASE("every E4M3 value survives BF16 exactly") {
  using namespace kvpatch::mla;
  for (int code = 0; code < 256; ++code) {
    CAPTURE(code);
    const float v = e4m3_to_float(static_cast<uint8_t>(code));
    const float round_trip = bf16_bits_to_float(float_to_bf16_bits(v));
    if (std::isnan(v)) {
      CHECK(std::isnan(round_trip));
    } else {
      CHECK(round_trip == v);
    }
  }
}
