// Flag parsing: values, defaults and the errors that make kvverify exit 2.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "src/flag_parser.h"

using kvverify::Dtype;
using kvverify::Options;
using kvverify::parse_flags;
using kvverify::UsageError;

TEST_SUITE("flags") {
  TEST_CASE("defaults: glm-5, text, fp8 KV cache, bf16 model") {
    const Options o = parse_flags({});
    CHECK(o.preset == "glm-5");
    CHECK(o.tp.empty());
    CHECK(o.format == kvverify::OutputFormat::kText);
    CHECK(o.model_dtype == Dtype::kBf16);
    CHECK(o.kv_cache_dtype == Dtype::kFp8E4M3);
    CHECK_FALSE(o.cpu);
  }

  TEST_CASE("values in both spellings and lists") {
    const Options o = parse_flags({"--preset", "kimi-k2", "--tp=2,8", "--batch-sizes", "1,4,16", "--context-lengths=0,4097",
                                   "--page-sizes", "1,64", "--ckv-scale", "0.5", "--kpe-scale=2", "--seed", "7", "--cpu",
                                   "--format", "json", "--memory-limit", "2G", "--kv-cache-dtype", "torch.float8_e4m3fn"});
    CHECK(o.preset == "kimi-k2");
    CHECK(o.tp == std::vector<int>{2, 8});
    CHECK(o.batch_sizes == std::vector<int>{1, 4, 16});
    CHECK(o.context_lengths == std::vector<int>{0, 4097});
    CHECK(o.page_sizes == std::vector<int>{1, 64});
    CHECK(o.ckv_scale == 0.5);
    CHECK(o.kpe_scale == 2.0);
    CHECK(o.seed == 7);
    CHECK(o.cpu);
    CHECK(o.format == kvverify::OutputFormat::kJson);
    CHECK(*o.memory_limit == (int64_t{2} << 30));
    CHECK(o.kv_cache_dtype == Dtype::kFp8E4M3);
  }

  TEST_CASE("--heads alone is a custom model; with --preset it overrides the preset's heads") {
    CHECK(parse_flags({"--heads", "32"}).preset.empty());
    CHECK(parse_flags({"--preset", "glm-5", "--heads", "32"}).preset == "glm-5");
  }

  TEST_CASE("errors name the flag") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--bogus"}, "unknown argument '--bogus'"},
        {{"--tp"}, "--tp needs a value"},
        {{"--tp", "2,,4"}, "--tp: empty item"},
        {{"--tp", "0"}, "--tp: 0 is out of range"},
        {{"--batch-sizes", "four"}, "--batch-sizes: 'four' is not an integer"},
        {{"--context-lengths", "-1"}, "--context-lengths: -1 is out of range"},
        {{"--ckv-scale", "0"}, "--ckv-scale: must be greater than 0"},
        {{"--kpe-scale", "nan"}, "--kpe-scale: 'nan' is not a finite number"},
        {{"--format", "xml"}, "--format: 'xml' is not a format"},
        {{"--model-dtype", "int8"}, "--model-dtype: unknown dtype 'int8'"},
        {{"--memory-limit", "12Q"}, "--memory-limit: '12Q' is not an integer"},
        {{"--cpu=yes"}, "--cpu takes no value"},
        {{"--self-test", "--from", "r.json"}, "--self-test and --from are separate runs"},
    };
    for (const auto& c : cases) {
      // References, not a structured binding: CAPTURE's lambda cannot take a binding before clang 16 (clang-tidy).
      const std::vector<std::string>& args = c.first;
      const std::string& message = c.second;
      CAPTURE(message);
      try {
        parse_flags(args);
        FAIL("no error for " << message);
      } catch (const UsageError& error) {
        CHECK(std::string(error.what()).find(message) != std::string::npos);
      }
    }
  }

  TEST_CASE("help documents every exit code") {
    const std::string help = kvverify::help_text();
    for (const char* code : {"  0  ", "  1  ", "  2  ", "  3  "}) CHECK(help.find(code) != std::string::npos);
  }
}
