#include "shape_matrix.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "flag_parser.h"
#include "model_presets.h"
#include "random_values.h"

namespace kvverify {
namespace {

// GPU matrix per TP: an edge batch (empty and one-token requests, a short context), one request
// just past a page boundary, one 128K request, and two ragged batches; each at both page sizes.
const std::vector<std::pair<int, int>> kGpuBatchContext = {{4, 100}, {1, 4097}, {1, 131072}, {16, 32768}, {64, 4096}};
// CPU matrix: small enough for the host reference on a 2-core CI machine.
const std::vector<std::pair<int, int>> kCpuBatchContext = {{1, 1}, {1, 37}, {4, 45}, {4, 300}};

uint64_t shape_seed(uint64_t seed, int tp, int batch, int context, int page, Dtype kv) {
  uint64_t h = mix64(seed + 0x5EED);
  for (const uint64_t part : {uint64_t(tp), uint64_t(batch), uint64_t(context), uint64_t(page), uint64_t(kv)}) {
    h = mix64(h ^ part);
  }
  return h;
}

std::string format_scale(double scale) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", scale);
  return buffer;
}

}  // namespace

std::string ShapeSpec::label() const {
  std::string text = model + " tp" + std::to_string(tp) + " h" + std::to_string(heads) + " b" +
                     std::to_string(batch) + " L" + std::to_string(context_len) + " p" + std::to_string(page_size) +
                     " " + dtype_name(kv_dtype);
  if (!unit_scales()) text += " s" + format_scale(ckv_scale) + "/" + format_scale(kpe_scale);
  return text;
}

ModelConfig resolve_model(const Options& options) {
  ModelConfig model;
  int qk_nope_head_dim = 128;  // DeepSeek's, for a custom model without --sm-scale
  if (!options.preset.empty()) {
    const auto preset = find_preset(options.preset);
    if (!preset) {
      throw UsageError("--preset: unknown preset '" + options.preset + "' (deepseek-v3, kimi-k2, glm-5)");
    }
    model.name = preset->name;
    model.heads = preset->heads;
    model.layers = preset->layers;
    model.pool_tokens = preset->pool_tokens;
    model.source = preset->source;
    qk_nope_head_dim = preset->qk_nope_head_dim;
  } else {
    model.name = "custom";
    model.layers = 1;
    model.pool_tokens = kSeedPoolTokens;
    model.source = "command-line flags";
  }
  if (options.heads) model.heads = *options.heads;
  if (options.layers) model.layers = *options.layers;
  if (options.pool_tokens) model.pool_tokens = *options.pool_tokens;
  model.sm_scale = options.sm_scale ? *options.sm_scale : 1.0 / std::sqrt(static_cast<double>(qk_nope_head_dim + 64));
  return model;
}

std::vector<ShapeSpec> build_matrix(const Options& options, const ModelConfig& model, Dtype kv_dtype) {
  const std::vector<int> tps = options.tp.empty() ? std::vector<int>{1, 2, 4, 8} : options.tp;
  std::vector<int> pages = options.page_sizes;
  if (pages.empty()) pages = options.cpu ? std::vector<int>{1, 16} : std::vector<int>{1, 64};

  std::vector<std::pair<int, int>> batch_context;
  if (options.batch_sizes.empty() && options.context_lengths.empty()) {
    batch_context = options.cpu ? kCpuBatchContext : kGpuBatchContext;
  } else {
    const std::vector<int> batches = options.batch_sizes.empty() ? std::vector<int>{1, 16} : options.batch_sizes;
    const std::vector<int> contexts = options.context_lengths.empty() ? std::vector<int>{100, 4097} : options.context_lengths;
    for (const int b : batches) {
      for (const int c : contexts) batch_context.emplace_back(b, c);
    }
  }

  std::vector<ShapeSpec> shapes;
  for (const int tp : tps) {
    if (model.heads % tp != 0) {
      throw UsageError("--tp " + std::to_string(tp) + ": " + std::to_string(model.heads) +
                       " heads are not divisible by tp " + std::to_string(tp) + " (choose a divisor)");
    }
    const int local_heads = model.heads / tp;
    if (local_heads > kMaxLocalHeads) {
      throw UsageError("--tp " + std::to_string(tp) + ": " + std::to_string(local_heads) +
                       " local heads exceed the kernel's limit of " + std::to_string(kMaxLocalHeads) +
                       " (raise --tp or lower --heads)");
    }
    for (const auto& [batch, context] : batch_context) {
      if (context > kMaxContextLen) {
        throw UsageError("--context-lengths: " + std::to_string(context) + " tokens exceed the kernel's " +
                         std::to_string(kMaxContextLen) + "-token limit");
      }
      for (const int page : pages) {
        const int64_t pages_per_request = (static_cast<int64_t>(context) + page - 1) / page;
        if (pages_per_request * batch > INT32_MAX) {
          throw UsageError("batch " + std::to_string(batch) + " x context " + std::to_string(context) +
                           " needs more pages than int32 kv_indices can address (lower the batch or context)");
        }
        ShapeSpec shape;
        shape.model = model.name;
        shape.tp = tp;
        shape.heads = local_heads;
        shape.batch = batch;
        shape.context_len = context;
        shape.page_size = page;
        shape.ckv_scale = options.ckv_scale;
        shape.kpe_scale = options.kpe_scale;
        shape.sm_scale = model.sm_scale;
        shape.kv_dtype = kv_dtype;
        shape.seed = shape_seed(options.seed, tp, batch, context, page, kv_dtype);
        shapes.push_back(shape);
      }
    }
  }
  return shapes;
}

}  // namespace kvverify
