// Rule files: a valid set loads; a malformed one is refused naming the file, the line and the field.
#include <doctest/doctest.h>

#include <map>

#include "kvpatch/input_error.h"
#include "kvpatch/parameters.h"
#include "kvpatch/rule_set.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const char* kParameters =
    "kind: parameters\n"
    "parameters:\n"
    "  kv_field: self.kv_data_type\n"
    "  form: a\n"
    "  expr.a: model_runner.kv_cache_dtype\n"
    "  expr.b: getattr(model_runner, \"kv_cache_dtype\")\n"
    "  kv_dtype_expr: ${expr.${form}}\n"
    "choices:\n"
    "  form: [a, b]\n";

const char* kPlanSite =
    "id: plan\n"
    "kind: plan-site\n"
    "files:\n"
    "  content_contains: [Wrapper]\n"
    "callee:\n"
    "  class: Wrapper\n"
    "  method: plan\n"
    "  parameters: q_data_type, kv_data_type\n"
    "arguments:\n"
    "  q_dtype: q_data_type\n"
    "  kv_dtype: kv_data_type\n"
    "dtype_roles:\n"
    "  kv_cache: [kv_data_type]\n"
    "  model: [dtype]\n"
    "fix:\n"
    "  field_rule: field\n";

const char* kField =
    "id: field\n"
    "kind: field\n"
    "scope:\n"
    "  init_assigns: self.data_type\n"
    "  sites_rule: plan\n"
    "anchor: self.data_type\n"
    "field: ${kv_field}\n"
    "value: ${kv_dtype_expr}\n";

const char* kCast =
    "id: cast\n"
    "kind: cast\n"
    "functions: [forward_decode]\n"
    "kv_sources:\n"
    "  calls: [get_key_buffer]\n"
    "fp8_consumers:\n"
    "  - method: run\n"
    "    sites_rule: plan\n";

struct RuleDir {
  test::ScratchDir dir;
  explicit RuleDir(const std::map<std::string, std::string>& files) {
    std::map<std::string, std::string> all = {
        {"parameters.yaml", kParameters}, {"plan.yaml", kPlanSite}, {"field.yaml", kField}, {"cast.yaml", kCast}};
    for (auto& [name, text] : files) all[name] = text;
    for (auto& [name, text] : all) {
      if (!text.empty()) dir.write(name, text);
    }
  }
};

// The error loading the directory gives, as "file-name:line: message; remedy".
std::string load_error(const RuleDir& rules, const std::map<std::string, std::string>& overrides = {}) {
  try {
    load_rule_set(rules.dir.path(), overrides);
  } catch (const InputError& e) {
    const std::string formatted = e.formatted();
    const std::string prefix = rules.dir.path().string() + "/";
    return formatted.rfind(prefix, 0) == 0 ? formatted.substr(prefix.size()) : formatted;
  }
  return "no error";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}
}  // namespace

TEST_SUITE("rule_loading") {
  TEST_CASE("a valid set loads, with parameters expanded in rule fields") {
    RuleDir rules({});
    const RuleSet set = load_rule_set(rules.dir.path());
    REQUIRE(set.plan_site_rules.size() == 1);
    REQUIRE(set.field_rules.size() == 1);
    REQUIRE(set.cast_rules.size() == 1);
    CHECK(set.field_rules[0].value == "model_runner.kv_cache_dtype");
    CHECK(set.plan_site_rules[0].signature.parameters.size() == 2);
    CHECK(set.parameters.at("kv_dtype_expr") == "model_runner.kv_cache_dtype");
    const RuleSet other = load_rule_set(rules.dir.path(), {{"form", "b"}});
    CHECK(other.field_rules[0].value == "getattr(model_runner, \"kv_cache_dtype\")");
  }

  TEST_CASE("parameter references expand innermost first and report unknown names") {
    const std::map<std::string, std::string> p = {{"form", "x"}, {"e.x", "one"}, {"dict", "{}"}};
    CHECK(expand_parameters("${e.${form}} and {} and ${dict}", p) == "one and {} and {}");
    CHECK_THROWS_AS(expand_parameters("${nope}", p), ParameterError);
    CHECK_THROWS_AS(expand_parameters("${self}", {{"self", "${self}"}}), ParameterError);
  }

  TEST_CASE("malformed YAML names the line") {
    RuleDir rules({{"plan.yaml", replaced(kPlanSite, "  method: plan\n", "  method: plan: x\n")}});
    CHECK(load_error(rules) == "plan.yaml:7: malformed YAML: illegal map value; fix the YAML syntax");
  }

  TEST_CASE("an unknown field names its line and the known fields") {
    RuleDir rules({{"plan.yaml", replaced(kPlanSite, "  method: plan\n", "  method: plan\n  mehtod: plan\n")}});
    const std::string error = load_error(rules);
    CHECK(error.rfind("plan.yaml:8: field 'callee.mehtod': unknown field; known fields here: class, module, other_classes, method, parameters", 0) == 0);
  }

  TEST_CASE("a missing field names its parent's line and the field") {
    RuleDir rules({{"field.yaml", replaced(kField, "anchor: self.data_type\n", "")}});
    CHECK(load_error(rules) == "field.yaml:1: field 'anchor': missing; add it");
  }

  TEST_CASE("a callee signature that is not Python is refused at its line") {
    RuleDir rules({{"plan.yaml", replaced(kPlanSite, "q_data_type, kv_data_type", "q_data_type, (kv")}});
    CHECK(load_error(rules).rfind("plan.yaml:8: field 'callee.parameters': not a valid Python parameter list", 0) == 0);
  }

  TEST_CASE("argument names must be parameters of the callee") {
    RuleDir rules({{"plan.yaml", replaced(kPlanSite, "  kv_dtype: kv_data_type", "  kv_dtype: kv_dtype")}});
    CHECK(load_error(rules).rfind("plan.yaml:10: field 'arguments': 'kv_dtype' is not a parameter", 0) == 0);
  }

  TEST_CASE("wrong types, kinds, ids and cross-references are refused") {
    CHECK(load_error(RuleDir({{"cast.yaml", replaced(kCast, "functions: [forward_decode]", "functions: forward_decode")}})) ==
          "cast.yaml:3: field 'functions': expected a list of strings; write [a, b] or a - list");
    CHECK(load_error(RuleDir({{"cast.yaml", replaced(kCast, "kind: cast", "kind: casts")}})) ==
          "cast.yaml:2: field 'kind': 'casts' is not a rule kind; use parameters, plan-site, field or cast");
    CHECK(load_error(RuleDir({{"cast.yaml", replaced(kCast, "id: cast", "id: plan")}})) ==
          "plan.yaml:1: field 'id': rule id 'plan' is used twice; give each rule its own id");
    CHECK(load_error(RuleDir({{"field.yaml", replaced(kField, "sites_rule: plan", "sites_rule: plans")}})) ==
          "field.yaml:5: field 'scope.sites_rule': no plan-site rule has id 'plans'; name the id of a kind: plan-site rule");
    CHECK(load_error(RuleDir({{"cast.yaml", replaced(kCast, "  calls: [get_key_buffer]\n", "  calls: []\n")}})).rfind(
              "cast.yaml:5: field 'kv_sources': names no call and no attribute", 0) == 0);
  }

  TEST_CASE("a consumer's traced KV inputs and the kv_path are checked") {
    const std::string consumer = "    kv_parameters: [ckv]\n    parameters: q, ckv, out=None\n";
    const std::string path = "kv_path:\n  keeps_dtype: [view]\n  dtype_overloads: [view]\n  converts: [to]\n";
    const RuleSet set = load_rule_set(RuleDir({{"cast.yaml", std::string(kCast) + consumer + path}}).dir.path());
    REQUIRE(set.cast_rules.size() == 1);
    CHECK(set.cast_rules[0].fp8_consumers[0].kv_parameters == std::vector<std::string>{"ckv"});
    CHECK(set.cast_rules[0].fp8_consumers[0].signature.index_of("ckv") == 1);
    CHECK(set.cast_rules[0].kv_path.converts == std::vector<std::string>{"to"});
    CHECK(set.cast_rules[0].guard_operation == "guard-cast");

    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + "    kv_parameters: [kv]\n    parameters: q, ckv\n" + path}}))
              .rfind("cast.yaml:9: field 'fp8_consumers.kv_parameters': 'kv' is not one of its parameters", 0) == 0);
    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + "    kv_parameters: [ckv]\n" + path}})) ==
          "cast.yaml:7: field 'fp8_consumers.parameters': missing; add it");
    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + consumer}}))
              .rfind("cast.yaml:9: field 'fp8_consumers.kv_parameters': KV inputs are traced but the rule has no kv_path", 0) == 0);
    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + consumer + replaced(path, "keeps_dtype: [view]", "keeps_dtype: []")}}))
              .rfind("cast.yaml:13: field 'kv_path.dtype_overloads': 'view' is not listed in kv_path.keeps_dtype", 0) == 0);
    // KV parameter forms: one form of all kv_parameters unless given; each name must be a kv_parameter.
    CHECK(set.cast_rules[0].fp8_consumers[0].kv_parameter_forms == std::vector<std::vector<std::string>>{{"ckv"}});
    const std::string forms = "    kv_parameters: [ckv, kpe, kv]\n    kv_parameter_forms: [\"ckv kpe\", kv]\n"
                              "    parameters: q, ckv=None, kpe=None, *, kv=None\n";
    const RuleSet with_forms = load_rule_set(RuleDir({{"cast.yaml", std::string(kCast) + forms + path}}).dir.path());
    CHECK(with_forms.cast_rules[0].fp8_consumers[0].kv_parameter_forms ==
          std::vector<std::vector<std::string>>{{"ckv", "kpe"}, {"kv"}});
    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + replaced(forms, "\"ckv kpe\"", "\"ckv q\"") + path}}))
              .rfind("cast.yaml:10: field 'fp8_consumers.kv_parameter_forms': 'q' is not in kv_parameters", 0) == 0);
    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + "guard_operation: remove\n"}})) ==
          "cast.yaml:9: field 'guard_operation': 'remove' is not an edit operation of this rule kind; use one of guard-cast, none");
  }

  TEST_CASE("device moves and device values load; a bad kind, shape or a device nothing names is refused at its line") {
    const std::string consumer = "    kv_parameters: [ckv]\n    parameters: q, ckv, out=None\n";
    const std::string path = "kv_path:\n  converts: [to]\n  device_moves:\n"
                             "    - {method: to, positional: [device], keywords: {device: device, non_blocking: any}}\n"
                             "    - {method: cuda}\n"
                             "  device_values: {strings: [\"cuda:*\"], attributes: [device], integers: true}\n";
    const RuleSet set = load_rule_set(RuleDir({{"cast.yaml", std::string(kCast) + consumer + path}}).dir.path());
    REQUIRE(set.cast_rules.size() == 1);
    const KvPath& kv = set.cast_rules[0].kv_path;
    REQUIRE(kv.device_moves.size() == 2);
    CHECK(kv.device_moves[0].method == "to");
    CHECK(kv.device_moves[0].positional == std::vector<DeviceArgumentKind>{DeviceArgumentKind::Device});
    CHECK(kv.device_moves[0].keywords.at("non_blocking") == DeviceArgumentKind::Any);
    CHECK(kv.device_moves[1].positional.empty());
    CHECK(kv.device_moves[1].keywords.empty());
    CHECK(kv.device_values.strings == std::vector<std::string>{"cuda:*"});
    CHECK(kv.device_values.integers);
    CHECK(set.cast_rules[0].run_input_id == "cast");  // no run_input_id: the rule's own id

    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + consumer + replaced(path, "positional: [device]", "positional: [tensor]")}}))
              .rfind("cast.yaml:14: field 'kv_path.device_moves.positional': 'tensor' is not an argument kind", 0) == 0);
    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + consumer + replaced(path, "{method: cuda}", "{method: cuda, keywords: [device]}")}}))
              .rfind("cast.yaml:15: field 'kv_path.device_moves.keywords': expected a mapping", 0) == 0);
    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + consumer + replaced(path, "{method: cuda}", "{method: cuda, args: []}")}}))
              .rfind("cast.yaml:15: field 'kv_path.device_moves.args': unknown field", 0) == 0);
    const std::string unnamed = path.substr(0, path.find("  device_values"));
    CHECK(load_error(RuleDir({{"cast.yaml", std::string(kCast) + consumer + unnamed}}))
              .rfind("cast.yaml:14: field 'kv_path.device_moves': an argument is of kind device but kv_path.device_values names none", 0) == 0);
    CHECK(load_rule_set(RuleDir({{"cast.yaml", std::string(kCast) + "run_input_id: cast-run-input\n"}}).dir.path())
              .cast_rules[0].run_input_id == "cast-run-input");
  }

  TEST_CASE("an edit operation the rule kind cannot perform is refused by name") {
    RuleDir rules({{"field.yaml", std::string(kField) + "operation: unwrap-call\n"}});
    CHECK(load_error(rules) ==
          "field.yaml:9: field 'operation': 'unwrap-call' is not an edit operation of this rule kind; use one of insert-after-anchor");
  }

  TEST_CASE("a field rule whose statement is not one Python assignment is refused") {
    RuleDir rules({{"field.yaml", replaced(kField, "value: ${kv_dtype_expr}", "value: (unbalanced")}});
    CHECK(load_error(rules).rfind("field.yaml:8: field 'value': `self.kv_data_type = (unbalanced` is not one Python assignment", 0) == 0);
    RuleDir ok({});
    // A parameter given outside the rules that breaks the statement is blamed where it was given.
    CHECK(load_error(ok, {{"kv_field", "self.kv_dtype ="}})
              .rfind("--set kv_field: parameter 'kv_field' = 'self.kv_dtype =' makes the field rule's statement", 0) == 0);
    // ... and only the one that breaks it, even when the value of another given one is in the statement
    // (the broken `self.kv[ = model_runner.dtype` holds expr.a's value too).
    CHECK(load_error(ok, {{"kv_field", "self.kv["}, {"expr.a", "model_runner.dtype"}})
              .rfind("--set kv_field: parameter 'kv_field' = 'self.kv['", 0) == 0);
    // A selector given beside a broken expression: putting the selector back also fixes the statement (it
    // picks another expression), but the broken expression is the one to blame.
    CHECK(load_error(ok, {{"form", "b"}, {"expr.b", "getattr(model_runner"}})
              .rfind("--set expr.b: parameter 'expr.b' = 'getattr(model_runner'", 0) == 0);
    // Both broken: one of them is named, and fixing it names the other.
    CHECK(load_error(ok, {{"kv_field", "self.kv["}, {"expr.a", "f("}}).rfind("--set expr.a: ", 0) == 0);
    CHECK(load_error(ok, {{"kv_field", "self.kv["}}).rfind("--set kv_field: ", 0) == 0);
  }

  TEST_CASE("unknown parameters in rules and on the command line are errors") {
    CHECK(load_error(RuleDir({{"field.yaml", replaced(kField, "${kv_field}", "${kv_fields}")}})).rfind(
              "field.yaml:7: field 'field': unknown parameter 'kv_fields'", 0) == 0);
    RuleDir rules({});
    CHECK(load_error(rules, {{"kv_fields", "x"}}).rfind("--set kv_fields: unknown rule parameter 'kv_fields'; known parameters: ", 0) == 0);
    CHECK(load_error(rules, {{"form", "c"}}) == "--set form: 'c' is not a value of parameter 'form'; use one of a, b");
  }

  TEST_CASE("a test case with a status the rule kind does not have is refused") {
    RuleDir rules({{"cast.yaml", std::string(kCast) +
                                     "tests:\n  - name: t\n    code: |\n      x = 1\n    expect:\n      - {line: 1, status: threaded}\n"}});
    CHECK(load_error(rules).rfind("cast.yaml:14: field 'tests.expect.status': 'threaded' is not a status of a cast rule", 0) == 0);
  }

  TEST_CASE("a missing rules directory or one without rule files is refused") {
    test::ScratchDir empty;
    CHECK_THROWS_AS(load_rule_set(empty.path() / "nope"), InputError);
    CHECK_THROWS_AS(load_rule_set(empty.path()), InputError);
  }

  TEST_CASE("a rule file that is a link loop is refused by name, not with an escaping filesystem error") {
    RuleDir rules({});
    std::filesystem::create_symlink("extra.yaml", rules.dir.path() / "extra.yaml");
    const std::string error = load_error(rules);
    CHECK(error.rfind("extra.yaml: cannot read the rule file: ", 0) == 0);
  }

  TEST_CASE("globs match class names") {
    CHECK(glob_match("*IndicesUpdaterDecode", "FlashInferMLAIndicesUpdaterDecode"));
    CHECK_FALSE(glob_match("*IndicesUpdaterDecode", "FlashInferMLAIndicesUpdaterPrefill"));
    CHECK(glob_match("Flash?nfer*", "FlashInfer"));
    CHECK_FALSE(glob_match("a*b", "ac"));
  }
}
