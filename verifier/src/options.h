// Everything kvverify's command line can set, with the documented defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dtype.h"

namespace kvverify {

enum class OutputFormat { kText, kJson };

struct Options {
  std::string preset = "glm-5";                // --preset; "" when --heads alone defines the model
  std::optional<int> heads;                    // --heads: total attention heads (custom model)
  std::optional<int> layers;                   // --layers: for the savings figures
  std::optional<int64_t> pool_tokens;          // --pool-tokens: KV pool slots per layer (savings)
  std::vector<int> tp;                         // --tp; empty = 1,2,4,8
  std::vector<int> batch_sizes;                // --batch-sizes; empty = the preset matrix
  std::vector<int> context_lengths;            // --context-lengths; empty = the preset matrix
  std::vector<int> page_sizes;                 // --page-sizes; empty = 1,64 (GPU) or 1,16 (CPU)
  double ckv_scale = 1.0;                      // --ckv-scale: real latent = stored x scale
  double kpe_scale = 1.0;                      // --kpe-scale: real rope = stored x scale
  std::optional<double> sm_scale;              // --sm-scale; default 1/sqrt(preset qk head dim)
  uint64_t seed = 1;                           // --seed
  bool cpu = false;                            // --cpu: reference-level checks only, no kernel
  bool self_test = false;                      // --self-test: negative controls
  bool probe_gpu = false;                      // --probe-gpu: report whether a GPU is usable
  std::string from_report;                     // --from: a `kvpatch check --format json` report
  Dtype model_dtype = Dtype::kBf16;            // --model-dtype: what role "model" means
  Dtype kv_cache_dtype = Dtype::kFp8E4M3;      // --kv-cache-dtype: what role "kv_cache" means
  OutputFormat format = OutputFormat::kText;   // --format text|json
  std::string json_path;                       // --json FILE: the JSON report, besides stdout
  std::optional<int64_t> memory_limit;         // --memory-limit BYTES: shapes above it are skipped
  int timing_iters = 20;                       // --timing-iters; 0 = no cast-path timing
  int device = 0;                              // --device: CUDA device index
  bool show_help = false;
  bool show_version = false;
};

}  // namespace kvverify
