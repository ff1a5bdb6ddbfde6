// Data types a plan() call can request, by the names SGLang and PyTorch use for them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvverify {

enum class Dtype { kBf16, kFp16, kFp32, kFp8E4M3, kFp8E5M2 };

// Accepts the canonical names (bf16, fp16, fp32, fp8_e4m3, fp8_e5m2) and the torch spellings
// (bfloat16, float16, half, float32, float, float8_e4m3fn, float8_e5m2), with or without "torch.".
std::optional<Dtype> parse_dtype(std::string_view name);

// Canonical name, as --model-dtype / --kv-cache-dtype accept it.
std::string dtype_name(Dtype dtype);

}  // namespace kvverify
