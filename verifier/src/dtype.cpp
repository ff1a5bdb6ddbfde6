#include "dtype.h"

#include <array>
#include <utility>

namespace kvverify {

std::optional<Dtype> parse_dtype(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  static constexpr std::array<std::pair<std::string_view, Dtype>, 13> kNames{{
      {"bf16", Dtype::kBf16},         {"bfloat16", Dtype::kBf16},
      {"fp16", Dtype::kFp16},         {"float16", Dtype::kFp16},
      {"half", Dtype::kFp16},         {"fp32", Dtype::kFp32},
      {"float32", Dtype::kFp32},      {"float", Dtype::kFp32},
      {"fp8_e4m3", Dtype::kFp8E4M3},  {"float8_e4m3fn", Dtype::kFp8E4M3},
      {"fp8_e5m2", Dtype::kFp8E5M2},  {"float8_e5m2", Dtype::kFp8E5M2},
      {"fp8", Dtype::kFp8E4M3},
  }};
  for (const auto& [spelling, dtype] : kNames) {
    if (spelling == name) return dtype;
  }
  return std::nullopt;
}

std::string dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16: return "bf16";
    case Dtype::kFp16: return "fp16";
    case Dtype::kFp32: return "fp32";
    case Dtype::kFp8E4M3: return "fp8_e4m3";
    case Dtype::kFp8E5M2: return "fp8_e5m2";
  }
  return "unknown";
}

}  // namespace kvverify
