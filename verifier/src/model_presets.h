// Model presets: the MLA shapes of the models whose FlashInfer MLA decode the patch changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvverify {

struct ModelPreset {
  std::string name;
  int heads;              // total attention heads (num_attention_heads)
  int layers;             // num_hidden_layers: one KV pool per layer
  int qk_nope_head_dim;   // the softmax scale is 1/sqrt(qk_nope_head_dim + qk_rope_head_dim)
  int64_t pool_tokens;    // KV pool slots per layer used for the savings figures
  std::string source;     // where the numbers come from
};

// Pool size of the seed measurement (GLM-5-NVFP4 on an RTX PRO 6000): ../shared/DESIGN.md §1.
inline constexpr int64_t kSeedPoolTokens = 495'552;

const std::vector<ModelPreset>& model_presets();
std::optional<ModelPreset> find_preset(std::string_view name);

}  // namespace kvverify
