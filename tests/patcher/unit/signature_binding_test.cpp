// Python argument binding against a declared signature.
#include <doctest/doctest.h>

#include "kvpatch/signature.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const char* kPlanParameters =
    "qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads, head_dim_ckv, head_dim_kpe, "
    "page_size, causal, sm_scale, q_data_type, kv_data_type, use_profiler=False";

// The arguments of the first call in `code`.
std::vector<CallArgument> arguments_of(const std::string& code) {
  auto file = test::parse(code);
  TSNode call = test::find_node(*file, "call");
  return call_arguments(file->source.text(), syntax::field(call, "arguments"));
}
}  // namespace

TEST_SUITE("signature_binding") {
  TEST_CASE("backslash continuations and comments among the arguments and parameters are not items") {
    // tree-sitter keeps both as named children wherever they stand (mutation seed 302339).
    const std::vector<CallArgument> args = arguments_of("w.plan(  \\\n    a, \\\n    b,  # c\n    # d\n    e)\n");
    REQUIRE(args.size() == 3);
    CHECK(args[0].text == "a");
    CHECK(args[1].text == "b");
    CHECK(args[2].text == "e");
    auto file = test::parse("class C:\n    def f(\\\n        self, a, \\\n        b,  # c\n    ):\n        pass\n");
    const Signature s = signature_from_parameters(file->source.text(),
                                                  syntax::field(test::find_node(*file, "function_definition"), "parameters"));
    REQUIRE(s.parameters.size() == 3);
    CHECK(s.parameters[0].name == "self");
    CHECK(s.parameters[2].name == "b");
  }

  TEST_CASE("a declared parameter list parses into kinds and defaults") {
    const Signature s = parse_parameter_list("a, b=1, /, c=None, *rest, d, e=2, **extra");
    REQUIRE(s.parameters.size() == 7);
    CHECK(s.parameters[0].kind == ParameterKind::PositionalOnly);
    CHECK(s.parameters[1].kind == ParameterKind::PositionalOnly);
    CHECK(s.parameters[1].default_text == "1");
    CHECK(s.parameters[2].kind == ParameterKind::PositionalOrKeyword);
    CHECK(s.parameters[3].kind == ParameterKind::VarPositional);
    CHECK(s.parameters[3].name == "rest");
    CHECK(s.parameters[4].kind == ParameterKind::KeywordOnly);
    CHECK_FALSE(s.parameters[4].default_text.has_value());
    CHECK(s.parameters[6].kind == ParameterKind::VarKeyword);
    CHECK(s.positional_count() == 3);
    CHECK_THROWS_AS(parse_parameter_list("a, (b"), std::invalid_argument);
  }

  TEST_CASE("annotations are kept for typing receivers") {
    auto file = test::parse("def f(self, wrapper: BatchMLAPagedAttentionWrapper, n: int = 3, *a: int, **k):\n    pass\n");
    TSNode params = syntax::field(test::find_node(*file, "function_definition"), "parameters");
    const Signature s = signature_from_parameters(file->source.text(), params);
    REQUIRE(s.parameters.size() == 5);
    CHECK(s.parameters[1].annotation == "BatchMLAPagedAttentionWrapper");
    CHECK(s.parameters[2].default_text == "3");
    CHECK(s.parameters[3].kind == ParameterKind::VarPositional);
    CHECK(s.parameters[3].name == "a");
  }

  TEST_CASE("twelve positional arguments bind kv_data_type to the 12th and use_profiler to its default") {
    const Signature plan = parse_parameter_list(kPlanParameters);
    const Binding b = bind_arguments(plan, arguments_of("w.plan(a, b, c, d, h, 512, 64, 1, False, s, self.q_data_type, self.data_type)\n"));
    REQUIRE(b.complete);
    CHECK(b.find("kv_data_type")->text == "self.data_type");
    CHECK(b.find("kv_data_type")->argument == 11);
    CHECK(b.find("q_data_type")->text == "self.q_data_type");
    CHECK(b.find("use_profiler")->from_default());
    CHECK(b.find("use_profiler")->text == "False");
  }

  TEST_CASE("keyword arguments bind by name in any order") {
    const Signature plan = parse_parameter_list(kPlanParameters);
    const Binding b = bind_arguments(plan, arguments_of(
        "w.plan(a, b, c, d, kv_data_type=kv, q_data_type=q, num_heads=h, head_dim_ckv=512, head_dim_kpe=64,\n"
        "       page_size=1, causal=False, sm_scale=s, use_profiler=True)\n"));
    REQUIRE(b.complete);
    CHECK(b.find("kv_data_type")->text == "kv");
    CHECK(b.find("kv_data_type")->argument == 4);
    CHECK(b.find("use_profiler")->text == "True");
    CHECK_FALSE(b.find("use_profiler")->from_default());
  }

  TEST_CASE("unpacked *args or **kwargs make the binding unknown") {
    const Signature plan = parse_parameter_list(kPlanParameters);
    const Binding star = bind_arguments(plan, arguments_of("w.plan(*args)\n"));
    CHECK_FALSE(star.complete);
    CHECK(star.failure.find("*args") != std::string::npos);
    const Binding kwargs = bind_arguments(plan, arguments_of("w.plan(a, b, c, d, h, 512, 64, 1, False, s, **dtypes)\n"));
    CHECK_FALSE(kwargs.complete);
    CHECK(kwargs.failure.find("**dtypes") != std::string::npos);
  }

  TEST_CASE("binding errors are reported, not guessed") {
    const Signature plan = parse_parameter_list(kPlanParameters);
    const Binding too_many = bind_arguments(plan, arguments_of("w.plan(1,2,3,4,5,6,7,8,9,10,11,12,13,14)\n"));
    CHECK_FALSE(too_many.complete);
    CHECK(too_many.failure.find("too many positional arguments") != std::string::npos);
    const Binding missing = bind_arguments(plan, arguments_of("w.plan(1,2,3)\n"));
    CHECK_FALSE(missing.complete);
    CHECK(missing.failure.find("missing argument for parameter 'kv_len_arr'") != std::string::npos);
    const Binding twice = bind_arguments(plan, arguments_of("w.plan(1,2,3,4,5,6,7,8,9,10,11,12, kv_data_type=x)\n"));
    CHECK_FALSE(twice.complete);
    CHECK(twice.failure.find("multiple values") != std::string::npos);
    const Binding unexpected = bind_arguments(plan, arguments_of("w.plan(1,2,3,4,5,6,7,8,9,10,11,12, dtype=x)\n"));
    CHECK_FALSE(unexpected.complete);
    CHECK(unexpected.failure.find("unexpected keyword argument 'dtype'") != std::string::npos);
  }

  TEST_CASE("*args and **kwargs in the signature absorb extra arguments") {
    const Signature s = parse_parameter_list("a, *rest, key=None, **extra");
    const Binding b = bind_arguments(s, arguments_of("f(1, 2, 3, key=4, other=5)\n"));
    REQUIRE(b.complete);
    CHECK(b.find("a")->text == "1");
    CHECK(b.find("key")->text == "4");
    CHECK(b.find("rest") == nullptr);
    const Binding positional_only = bind_arguments(parse_parameter_list("a, /, b"), arguments_of("f(a=1, b=2)\n"));
    CHECK_FALSE(positional_only.complete);
  }

  TEST_CASE("keyword-only parameters cannot be filled by position") {
    const Signature s = parse_parameter_list("a, *, kv_data_type");
    CHECK_FALSE(bind_arguments(s, arguments_of("f(1, 2)\n")).complete);
    const Binding b = bind_arguments(s, arguments_of("f(1, kv_data_type=torch.float8_e4m3fn)\n"));
    REQUIRE(b.complete);
    CHECK(b.find("kv_data_type")->text == "torch.float8_e4m3fn");
  }

  TEST_CASE("argument spans cover the value, and for keywords the whole item too") {
    auto file = test::parse("f(x,\n  kv_data_type = self.data_type)\n");
    TSNode call = test::find_node(*file, "call");
    const auto args = call_arguments(file->source.text(), syntax::field(call, "arguments"));
    REQUIRE(args.size() == 2);
    CHECK(args[1].kind == ArgumentKind::Keyword);
    CHECK(args[1].keyword == "kv_data_type");
    CHECK(file->source.text().substr(args[1].value_begin, args[1].value_end - args[1].value_begin) == "self.data_type");
    CHECK(file->source.text().substr(args[1].item_begin, args[1].item_end - args[1].item_begin) ==
          "kv_data_type = self.data_type");
  }
}
