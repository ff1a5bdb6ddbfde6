#include "flag_parser.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <string_view>

#include "kvpatch/mla_decode.h"

namespace kvverify {
namespace {

// Parses a whole decimal integer (no sign games, no trailing text).
int64_t parse_integer(const std::string& flag, std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw UsageError(flag + ": '" + std::string(text) + "' is not an integer");
  }
  if (value < min || value > max) {
    throw UsageError(flag + ": " + std::string(text) + " is out of range [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  }
  return value;
}

double parse_positive_real(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    throw UsageError(flag + ": '" + text + "' is not a finite number");
  }
  if (value <= 0) throw UsageError(flag + ": must be greater than 0 (got " + text + ")");
  return value;
}

std::vector<int> parse_int_list(const std::string& flag, const std::string& text, int min, int max) {
  std::vector<int> values;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw UsageError(flag + ": empty item in list '" + text + "' (write e.g. 1,4,16)");
    values.push_back(static_cast<int>(parse_integer(flag, item, min, max)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

// Accepts plain bytes or a K/M/G/T suffix (powers of 1024).
int64_t parse_bytes(const std::string& flag, const std::string& text) {
  if (text.empty()) throw UsageError(flag + ": empty value");
  int64_t unit = 1;
  std::string digits = text;
  const char suffix = text.back();
  const std::string_view suffixes = "KMGT";
  if (const size_t at = suffixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(suffix))));
      at != std::string_view::npos) {
    unit = int64_t{1} << (10 * (at + 1));
    digits.pop_back();
  }
  const int64_t count = parse_integer(flag, digits, 0, (int64_t{1} << 50) / unit);
  return count * unit;
}

Dtype parse_dtype_flag(const std::string& flag, const std::string& text) {
  const auto dtype = parse_dtype(text);
  if (!dtype) throw UsageError(flag + ": unknown dtype '" + text + "' (bf16, fp16, fp32, fp8_e4m3, fp8_e5m2)");
  return *dtype;
}

}  // namespace

Options parse_flags(const std::vector<std::string>& args) {
  Options options;
  bool preset_given = false;
  using Setter = std::function<void(const std::string& flag, const std::string& value)>;
  // Flags that take a value.
  const std::map<std::string, Setter, std::less<>> with_value = {
      {"--preset", [&](auto&, auto& v) { options.preset = v; preset_given = true; }},
      {"--heads", [&](auto& f, auto& v) { options.heads = static_cast<int>(parse_integer(f, v, 1, 1024)); }},
      {"--layers", [&](auto& f, auto& v) { options.layers = static_cast<int>(parse_integer(f, v, 1, 1000)); }},
      {"--pool-tokens", [&](auto& f, auto& v) { options.pool_tokens = parse_integer(f, v, 1, int64_t{1} << 31); }},
      {"--tp", [&](auto& f, auto& v) { options.tp = parse_int_list(f, v, 1, 1024); }},
      {"--batch-sizes", [&](auto& f, auto& v) { options.batch_sizes = parse_int_list(f, v, 1, 1 << 16); }},
      {"--context-lengths", [&](auto& f, auto& v) { options.context_lengths = parse_int_list(f, v, 0, 1 << 30); }},
      {"--page-sizes", [&](auto& f, auto& v) {
         options.page_sizes = parse_int_list(f, v, 1, 1 << 20);
         for (const int size : options.page_sizes)
           if (!kvpatch::mla::is_supported_page_size(size))
             throw UsageError(f + ": " + std::to_string(size) + " is not a power of two (write e.g. 1,16,64)");
       }},
      {"--ckv-scale", [&](auto& f, auto& v) { options.ckv_scale = parse_positive_real(f, v); }},
      {"--kpe-scale", [&](auto& f, auto& v) { options.kpe_scale = parse_positive_real(f, v); }},
      {"--sm-scale", [&](auto& f, auto& v) { options.sm_scale = parse_positive_real(f, v); }},
      {"--seed", [&](auto& f, auto& v) { options.seed = static_cast<uint64_t>(parse_integer(f, v, 0, INT64_MAX)); }},
      {"--from", [&](auto& f, auto& v) {
         if (v.empty()) throw UsageError(f + ": needs a report path");
         options.from_report = v;
       }},
      {"--model-dtype", [&](auto& f, auto& v) { options.model_dtype = parse_dtype_flag(f, v); }},
      {"--kv-cache-dtype", [&](auto& f, auto& v) { options.kv_cache_dtype = parse_dtype_flag(f, v); }},
      {"--format", [&](auto& f, auto& v) {
         if (v == "text") options.format = OutputFormat::kText;
         else if (v == "json") options.format = OutputFormat::kJson;
         else throw UsageError(f + ": '" + v + "' is not a format (text or json)");
       }},
      {"--json", [&](auto& f, auto& v) {
         if (v.empty()) throw UsageError(f + ": needs a file path");
         options.json_path = v;
       }},
      {"--memory-limit", [&](auto& f, auto& v) { options.memory_limit = parse_bytes(f, v); }},
      {"--timing-iters", [&](auto& f, auto& v) { options.timing_iters = static_cast<int>(parse_integer(f, v, 0, 10000)); }},
      {"--device", [&](auto& f, auto& v) { options.device = static_cast<int>(parse_integer(f, v, 0, 1023)); }},
  };
  const std::map<std::string, bool*, std::less<>> switches = {
      {"--cpu", &options.cpu},         {"--self-test", &options.self_test}, {"--probe-gpu", &options.probe_gpu},
      {"--help", &options.show_help},  {"-h", &options.show_help},          {"--version", &options.show_version},
  };

  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (const size_t eq = flag.find('='); flag.starts_with("--") && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (const auto it = switches.find(flag); it != switches.end()) {
      if (inline_value) throw UsageError(flag + " takes no value");
      *it->second = true;
      continue;
    }
    const auto it = with_value.find(flag);
    if (it == with_value.end()) {
      throw UsageError("unknown argument '" + args[i] + "' (see kvverify --help)");
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value (see kvverify --help)");
      inline_value = args[++i];
    }
    it->second(flag, *inline_value);
  }

  if (options.heads && !preset_given) options.preset.clear();  // a custom model: no preset defaults
  if (options.self_test && !options.from_report.empty()) {
    throw UsageError("--self-test and --from are separate runs; give one of them");
  }
  return options;
}

std::string help_text() {
  return R"(kvverify: numerical parity of the BF16-query x FP8-KV MLA decode kernel

Usage: kvverify [--preset NAME] [--tp LIST] [shape flags] [--cpu] [--format text|json]
       kvverify --self-test [--cpu]
       kvverify --from REPORT [--model-dtype D] [--kv-cache-dtype D]
       kvverify --probe-gpu

Model and shape matrix:
  --preset NAME          deepseek-v3 (128 heads, 61 layers), kimi-k2 (64 heads, 61 layers),
                         glm-5 (64 heads, 78 layers, pool 495,552 tokens); default glm-5
  --heads N              total attention heads (a custom model; replaces the preset's)
  --tp LIST              tensor-parallel sizes; local heads = heads / tp (default 1,2,4,8)
  --batch-sizes LIST     e.g. 1,16,64 (default: the preset matrix)
  --context-lengths LIST tokens per request, 0..262144 (default: the preset matrix)
  --page-sizes LIST      tokens per KV page, powers of two (default 1,64; 1,16 with --cpu)
  --ckv-scale F          real latent = stored FP8 x F (default 1)
  --kpe-scale F          real rope = stored FP8 x F (default 1)
  --sm-scale F           softmax scale (default 1/sqrt(qk_nope_head_dim + 64) of the preset)
  --seed N               input seed (default 1)
  --layers N             layers, for the savings figures (default: the preset's)
  --pool-tokens N        KV pool slots per layer, for the savings figures (default 495552)

Modes:
  --cpu                  no GPU: reference-level checks on small shapes; the kernel is not launched
  --self-test            negative controls; each must FAIL naming its fault, the clean ones PASS
  --from REPORT          verify the (q dtype, kv dtype) pairs and head dims that the plan sites of a
                         `kvpatch check --format json` report request (- reads standard input);
                         take the report after `kvpatch apply`; a site still missing
                         kv_data_type, a patch gap (a KV cast left, run() without FP8 scales, the
                         KV dtype field missing) or a file kvpatch could not read fails the run,
                         as in `kvpatch check`
  --model-dtype D        dtype of role "model" in the report (default bf16)
  --kv-cache-dtype D     dtype of role "kv_cache" in the report (default fp8_e4m3)
  --probe-gpu            say whether a CUDA GPU is usable (exit 0) or not (exit 3)

Output and limits:
  --format text|json     report format on stdout (default text); progress goes to stderr on a terminal
  --json FILE            also write the JSON report to FILE
  --memory-limit BYTES   skip shapes needing more (suffix K, M, G, T allowed)
  --timing-iters N       timed runs for the cast-path comparison (default 20; 0 skips it)
  --device N             CUDA device index (default 0)
  -h, --help             this text
  --version              version

Exit codes:
  0  every shape passed (for --self-test: every control behaved as expected)
  1  a shape failed or could not be verified (out of memory, launch error, unsupported or
     unverifiable dtype pair, a site missing kv_data_type or of unknown status, a site kvpatch
     found unbuildable with the project's FlashInfer, empty report), or a self-test control did
     not behave as expected
  2  usage or input error (bad flag, impossible shape, unreadable or malformed report)
  3  no usable CUDA GPU (use --cpu for the reference-level checks)
)";
}

}  // namespace kvverify
