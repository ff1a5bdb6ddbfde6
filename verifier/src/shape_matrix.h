// The shapes one kvverify run checks: the model (preset or flags) x TP x batch x context x page.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtype.h"
#include "options.h"

namespace kvverify {

// The model after flags are applied to the preset.
struct ModelConfig {
  std::string name;       // preset name, or "custom"
  int heads = 0;          // total heads
  int layers = 0;
  int64_t pool_tokens = 0;
  double sm_scale = 0;
  std::string source;     // where heads/layers come from
};

struct ShapeSpec {
  std::string model;
  int tp = 1;
  int heads = 0;          // local heads = total / tp
  int batch = 0;
  int context_len = 0;    // the longest request; see request_layout.h for the ragged rest
  int page_size = 1;
  double ckv_scale = 1, kpe_scale = 1, sm_scale = 0;
  uint64_t seed = 0;      // derived from --seed and the shape, so a shape's inputs do not depend
                          // on its position in the matrix
  Dtype q_dtype = Dtype::kBf16;
  Dtype kv_dtype = Dtype::kFp8E4M3;

  std::string label() const;
  bool unit_scales() const { return ckv_scale == 1.0 && kpe_scale == 1.0; }
};

inline constexpr int kMaxLocalHeads = 128;       // launch_decode's limit
inline constexpr int kMaxContextLen = 262'144;   // the kernel's contract: 0..256K tokens

// Resolves --preset / --heads / --layers / --pool-tokens / --sm-scale; throws UsageError.
ModelConfig resolve_model(const Options& options);

// The shape matrix for one KV dtype; throws UsageError for impossible shapes (heads not divisible
// by tp, more than 128 local heads, contexts over 256K, more pages than int32 can index).
std::vector<ShapeSpec> build_matrix(const Options& options, const ModelConfig& model, Dtype kv_dtype);

}  // namespace kvverify
