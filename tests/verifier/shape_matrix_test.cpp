// Presets, the shape matrix, impossible shapes, request layouts and the savings arithmetic.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "src/flag_parser.h"
#include "src/host_inputs.h"
#include "src/patch_savings.h"
#include "src/request_layout.h"
#include "src/shape_matrix.h"

using namespace kvverify;

namespace {

std::string usage_error(const Options& options) {
  try {
    build_matrix(options, resolve_model(options), Dtype::kFp8E4M3);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace

TEST_SUITE("shapes") {
  TEST_CASE("presets: heads, layers, softmax scale") {
    Options options;
    options.preset = "deepseek-v3";
    ModelConfig m = resolve_model(options);
    CHECK(m.heads == 128);
    CHECK(m.layers == 61);
    CHECK(m.sm_scale == doctest::Approx(1 / std::sqrt(192.0)));
    options.preset = "kimi-k2";
    m = resolve_model(options);
    CHECK(m.heads == 64);
    CHECK(m.layers == 61);
    options.preset = "glm-5";
    m = resolve_model(options);
    CHECK(m.heads == 64);
    CHECK(m.layers == 78);
    CHECK(m.pool_tokens == 495552);
    CHECK(m.sm_scale == doctest::Approx(0.0625));
    options.preset = "llama";
    CHECK_THROWS_AS(resolve_model(options), UsageError);
  }

  TEST_CASE("local heads = heads / tp over the four TP sizes; default GPU and CPU matrices") {
    Options options;
    options.preset = "deepseek-v3";
    const std::vector<ShapeSpec> gpu = build_matrix(options, resolve_model(options), Dtype::kFp8E4M3);
    CHECK(gpu.size() == 4 * 5 * 2);
    CHECK(gpu.front().heads == 128);
    CHECK(gpu.back().heads == 16);
    CHECK(std::any_of(gpu.begin(), gpu.end(), [](const ShapeSpec& s) { return s.context_len == 131072; }));
    options.cpu = true;
    const std::vector<ShapeSpec> cpu = build_matrix(options, resolve_model(options), Dtype::kFp8E4M3);
    CHECK(std::all_of(cpu.begin(), cpu.end(), [](const ShapeSpec& s) { return s.context_len <= 300; }));
    CHECK(std::any_of(cpu.begin(), cpu.end(), [](const ShapeSpec& s) { return s.page_size == 16; }));
  }

  TEST_CASE("custom shapes are the product of the given lists; seeds do not depend on position") {
    Options options = parse_flags({"--heads", "32", "--tp", "2,4", "--batch-sizes", "1,3", "--context-lengths", "7,9",
                                   "--page-sizes", "1,4"});
    const ModelConfig model = resolve_model(options);
    CHECK(model.name == "custom");
    const std::vector<ShapeSpec> shapes = build_matrix(options, model, Dtype::kFp8E4M3);
    CHECK(shapes.size() == 2 * 2 * 2 * 2);
    Options one = parse_flags({"--heads", "32", "--tp", "4", "--batch-sizes", "3", "--context-lengths", "9",
                               "--page-sizes", "4"});
    const ShapeSpec alone = build_matrix(one, resolve_model(one), Dtype::kFp8E4M3).front();
    const auto same = std::find_if(shapes.begin(), shapes.end(), [&](const ShapeSpec& s) { return s.label() == alone.label(); });
    REQUIRE(same != shapes.end());
    CHECK(same->seed == alone.seed);
  }

  TEST_CASE("impossible shapes are usage errors that name the fix") {
    CHECK(usage_error(parse_flags({"--heads", "78", "--tp", "8"})).find("78 heads are not divisible by tp 8") !=
          std::string::npos);
    CHECK(usage_error(parse_flags({"--heads", "256", "--tp", "1"})).find("exceed the kernel's limit of 128") !=
          std::string::npos);
    CHECK(usage_error(parse_flags({"--context-lengths", "300000"})).find("262144-token limit") != std::string::npos);
    CHECK(usage_error(parse_flags({"--batch-sizes", "65536", "--context-lengths", "262144", "--page-sizes", "1"}))
              .find("int32") != std::string::npos);
  }

  TEST_CASE("request layout: ragged lengths, empty and one-token requests, permuted pages") {
    ShapeSpec shape;
    shape.batch = 6;
    shape.context_len = 100;
    shape.page_size = 16;
    shape.heads = 2;
    shape.seed = 42;
    const RequestLayout layout = make_request_layout(shape);
    REQUIRE(layout.kv_len.size() == 6);
    CHECK(layout.kv_len[0] == 100);
    CHECK(layout.kv_len[1] == 0);
    CHECK(layout.kv_len[2] == 1);
    for (int b = 3; b < 6; ++b) {
      CHECK(layout.kv_len[b] >= 50);
      CHECK(layout.kv_len[b] <= 100);
    }
    CHECK(layout.kv_indptr[1] - layout.kv_indptr[0] == 7);
    std::vector<int32_t> sorted = layout.kv_indices;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int32_t> expected(sorted.size());
    std::iota(expected.begin(), expected.end(), 0);
    CHECK(sorted == expected);
    CHECK(sorted != layout.kv_indices);  // permuted, not the identity
    CHECK(layout.num_slots == static_cast<int64_t>(sorted.size()) * 16);
    CHECK(layout.total_tokens() == std::accumulate(layout.kv_len.begin(), layout.kv_len.end(), int64_t{0}));

    const std::vector<int32_t> dropped = lengths_without_last_page(layout);
    CHECK(dropped[0] == 96);
    CHECK(dropped[1] == 0);
    CHECK(dropped[2] == 0);
  }

  TEST_CASE("an all-empty batch still has a pool, so no pointer is null") {
    ShapeSpec shape;
    shape.batch = 2;
    shape.context_len = 0;
    shape.page_size = 4;
    shape.heads = 1;
    const HostInputs inputs = make_host_inputs(shape);
    CHECK(inputs.layout.num_slots == 4);
    CHECK_FALSE(inputs.layout.kv_indices.empty());
    CHECK_FALSE(inputs.kv_fp8.empty());
  }

  TEST_CASE("host inputs: no FP8 NaN codes; the BF16 copy is the exact cast") {
    ShapeSpec shape;
    shape.batch = 2;
    shape.context_len = 50;
    shape.heads = 3;
    shape.seed = 9;
    const HostInputs inputs = make_host_inputs(shape);
    CHECK(inputs.q.size() == 2 * 3 * 576);
    for (size_t i = 0; i < inputs.kv_fp8.size(); ++i) {
      CHECK((inputs.kv_fp8[i] & 0x7F) != 0x7F);
    }
    CHECK(inputs.kv_bf16.size() == inputs.kv_fp8.size());
  }

  TEST_CASE("savings: the seed's GLM-5 numbers") {
    Options options;
    const CastBytes bytes = cast_bytes(resolve_model(options));
    CHECK(bytes.read_per_layer == 495552LL * 576);
    CHECK(bytes.written_per_layer == 495552LL * 1152);
    CHECK(bytes.moved_per_step() == 495552LL * 1728 * 78);
    CHECK(static_cast<double>(bytes.moved_per_step()) / 1e9 == doctest::Approx(66.79).epsilon(1e-3));
  }
}
