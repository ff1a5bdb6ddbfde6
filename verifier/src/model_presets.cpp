#include "model_presets.h"

namespace kvverify {

const std::vector<ModelPreset>& model_presets() {
  // kv_lora_rank 512 and qk_rope_head_dim 64 for all three. DeepSeek-V3 and Kimi-K2 have no
  // measured pool: they use the seed's 495,552 slots unless --pool-tokens says otherwise.
  static const std::vector<ModelPreset> presets = {
      {"deepseek-v3", 128, 61, 128, kSeedPoolTokens,
       "DeepSeek-V3/R1 config.json: num_attention_heads 128, num_hidden_layers 61, qk_nope_head_dim 128; "
       "pool size assumed equal to the GLM-5 seed measurement"},
      {"kimi-k2", 64, 61, 128, kSeedPoolTokens,
       "Kimi-K2 config.json: num_attention_heads 64, num_hidden_layers 61, qk_nope_head_dim 128; "
       "pool size assumed equal to the GLM-5 seed measurement"},
      // Heads: huggingface.co/zai-org/GLM-5-FP8/blob/main/config.json ("num_attention_heads": 64,
      // "num_hidden_layers": 78, "qk_nope_head_dim": 192); the GLM-5 technical report's architecture
      // table (quoted at glennklockwood.com/garden/GLM-5) also lists 64 attention heads.
      {"glm-5", 64, 78, 192, kSeedPoolTokens,
       "zai-org/GLM-5 config.json: num_attention_heads 64, num_hidden_layers 78, qk_nope_head_dim 192; "
       "pool 495,552 tokens from the seed measurement"},
  };
  return presets;
}

std::optional<ModelPreset> find_preset(std::string_view name) {
  for (const ModelPreset& preset : model_presets()) {
    if (preset.name == name) return preset;
  }
  return std::nullopt;
}

}  // namespace kvverify
