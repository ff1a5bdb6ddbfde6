// The upstream form's cast guard: the KV dtype form a plan names, casts already guarded, and the guard edits.
#include <doctest/doctest.h>

#include "kvpatch/cast_guard.h"
#include "kvpatch/edit_operations.h"
#include "kvpatch/rule_engine.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
std::string edited(const ParsedFile& file, const std::vector<Edit>& edits) {
  EditSet set;
  for (const Edit& e : edits) set.add(e);
  std::string out = set.apply(file.source.text());
  PythonTree tree(out);
  CHECK_MESSAGE(!first_syntax_error(tree.root()), "guarded code does not parse:\n" << out);
  return out;
}

// The forms of every plan site in a module, under the real rules (fields as the field rule finds them).
std::vector<KvPlanForm> forms_of(const std::string& code, const std::map<std::string, std::string>& parameters = {}) {
  const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR, parameters);
  auto file = test::parse(code);
  const ModuleFacts facts(*file);
  const PlanSiteRule& rule = *rules.plan_site_rule("flashinfer-mla-plan-kv-dtype");
  std::vector<PlanSite> sites = find_plan_sites(rule, facts);
  const FieldRule& field_rule = *rules.field_rule(rule.field_rule);
  const std::vector<FieldFinding> fields = check_fields(field_rule, rule, facts, sites);
  plan_site_fixes(rule, field_rule.anchor, facts, fields, sites);
  std::vector<KvPlanForm> out;
  out.reserve(sites.size());
  for (const PlanSite& s : sites) out.push_back(kv_plan_form(s, rule, rules, facts, fields));
  return out;
}

const char* kUpdater = R"PY(
import torch
from flashinfer import BatchMLAPagedAttentionWrapper


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype
        FIELD

    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, qo, kv, idx, lens):
        plan_kv = self.kv_data_type
        wrapper.plan(qo, kv, idx, lens, 16, 512, 64, 1, False, 0.1, self.data_type, KV)
)PY";

std::string updater(const std::string& field, const std::string& kv) {
  std::string code = kUpdater;
  code.replace(code.find("FIELD"), 5, field);
  code.replace(code.find("KV)"), 2, kv);
  return code;
}
}  // namespace

TEST_SUITE("cast_guard") {
  TEST_CASE("the plan form follows the KV field, through locals, as it is or as the field rule adds it") {
    const std::string upstream =
        "self.kv_data_type = (\n            model_runner.kv_cache_dtype\n            if model_runner.kv_cache_dtype == torch.float8_e4m3fn\n"
        "            else model_runner.dtype\n        )";
    std::vector<KvPlanForm> f = forms_of(updater(upstream, "plan_kv"));
    REQUIRE(f.size() == 1);
    CHECK(f[0].kind == KvPlanForm::Kind::CacheDtypeOnlyFor);
    CHECK(f[0].only_for == "torch.float8_e4m3fn");

    // Reversed test: `model if kv != D else kv` names the same plan.
    f = forms_of(updater("self.kv_data_type = model_runner.dtype if torch.float8_e5m2 != model_runner.kv_cache_dtype "
                         "else model_runner.kv_cache_dtype", "self.kv_data_type"));
    CHECK(f[0].kind == KvPlanForm::Kind::CacheDtypeOnlyFor);
    CHECK(f[0].only_for == "torch.float8_e5m2");

    f = forms_of(updater("self.kv_data_type = model_runner.kv_cache_dtype", "self.kv_data_type"));
    CHECK(f[0].kind == KvPlanForm::Kind::CacheDtype);

    // Missing site, field added by the rule: the form is the parameter's.
    f = forms_of(updater("pass", "self.data_type"));
    CHECK(f[0].kind == KvPlanForm::Kind::CacheDtype);
    f = forms_of(updater("pass", "self.data_type"), {{"kv_dtype_form", "upstream"}});
    CHECK(f[0].kind == KvPlanForm::Kind::CacheDtypeOnlyFor);
    CHECK(f[0].only_for == "torch.float8_e4m3fn");

    // A field assigned both ways is no single form.
    f = forms_of(updater("self.kv_data_type = model_runner.kv_cache_dtype\n        if x:\n            self.kv_data_type = "
                         "(model_runner.kv_cache_dtype if model_runner.kv_cache_dtype == torch.float8_e4m3fn else model_runner.dtype)",
                         "self.kv_data_type"));
    CHECK(f[0].kind == KvPlanForm::Kind::Unclear);
  }

  TEST_CASE("upstream's gate written as statements is upstream's form; a gate on anything else is no form a guard can repeat") {
    const std::string kv = "model_runner.kv_cache_dtype";
    const std::string model = "model_runner.dtype";
    const std::string fp8 = "model_runner.kv_cache_dtype == torch.float8_e4m3fn";
    auto form = [](const std::string& field, const std::string& passed) {
      const std::vector<KvPlanForm> f = forms_of(updater(field, passed));
      REQUIRE(f.size() == 1);
      return f[0];
    };
    auto expect_only_for = [&](const std::string& field) {
      for (const char* passed : {"self.kv_data_type", "plan_kv"}) {
        CAPTURE(field);
        CAPTURE(passed);
        const KvPlanForm f = form(field, passed);
        CHECK(f.kind == KvPlanForm::Kind::CacheDtypeOnlyFor);
        CHECK(f.only_for == "torch.float8_e4m3fn");
      }
    };
    // if / else, either way round, and the model dtype overridden for the one dtype.
    expect_only_for("if " + fp8 + ":\n            self.kv_data_type = " + kv + "\n        else:\n            self.kv_data_type = " + model);
    expect_only_for("if " + kv + " != torch.float8_e4m3fn:\n            self.kv_data_type = " + model +
                    "\n        else:\n            self.kv_data_type = " + kv);
    expect_only_for("self.kv_data_type = " + model + "\n        if " + fp8 + ":\n            self.kv_data_type = " + kv);
    // Through a local of __init__.
    expect_only_for("d = " + model + "\n        if " + fp8 + ":\n            d = " + kv + "\n        self.kv_data_type = d");

    // A gate on the GPU, as an expression or as statements: the plan's KV dtype is no test of the cache's dtype.
    KvPlanForm f = form("self.kv_data_type = " + kv + " if torch.cuda.get_device_capability()[0] == 9 else " + model,
                        "self.kv_data_type");
    CHECK(f.kind == KvPlanForm::Kind::Unclear);
    CHECK(f.why.find("torch.cuda.get_device_capability()[0] == 9") != std::string::npos);
    f = form("self.kv_data_type = " + model + "\n        if torch.cuda.get_device_capability()[0] == 9:\n"
             "            self.kv_data_type = " + kv, "plan_kv");
    CHECK(f.kind == KvPlanForm::Kind::Unclear);
    // An elif chain whose first test is upstream's: the other branches differ from it, so no single form.
    f = form("if " + fp8 + ":\n            self.kv_data_type = " + kv + "\n        elif model_runner.sm90:\n"
             "            self.kv_data_type = " + kv + "\n        else:\n            self.kv_data_type = " + model,
             "self.kv_data_type");
    CHECK(f.kind == KvPlanForm::Kind::Unclear);
    // The same test on a branch's own value (no else, nothing before): kvpatch cannot tell, and pools both.
    f = form("if " + fp8 + ":\n            self.kv_data_type = " + kv + "\n        if not " + fp8 +
             ":\n            self.kv_data_type = " + model, "self.kv_data_type");
    CHECK(f.kind == KvPlanForm::Kind::Unclear);
    // The model dtype where the override is made in another method than __init__: both values are pooled.
    f = form("self.kv_data_type = " + kv + "\n\n    def reset(self, model_runner):\n        self.kv_data_type = " + model,
             "self.kv_data_type");
    CHECK(f.kind == KvPlanForm::Kind::Unclear);
  }

  TEST_CASE("combined forms: all alike, else unclear") {
    KvPlanForm a;
    KvPlanForm b;
    b.kind = KvPlanForm::Kind::CacheDtypeOnlyFor;
    b.only_for = "torch.float8_e4m3fn";
    KvPlanForm c = b;
    c.only_for = "( torch.float8_e4m3fn )";
    CHECK(combined_plan_form({}).kind == KvPlanForm::Kind::CacheDtype);
    CHECK(combined_plan_form({a, a}).kind == KvPlanForm::Kind::CacheDtype);
    CHECK(combined_plan_form({b, c}).kind == KvPlanForm::Kind::CacheDtypeOnlyFor);
    CHECK(combined_plan_form({a, b}).kind == KvPlanForm::Kind::Unclear);
    // The model dtype stays the model dtype only where every site plans it; beside the KV-cache dtype it is unclear,
    // and the message keeps why.
    KvPlanForm m;
    m.kind = KvPlanForm::Kind::ModelDtype;
    m.why = "model_runner.dtype is the model dtype";
    CHECK(combined_plan_form({m, m}).kind == KvPlanForm::Kind::ModelDtype);
    const KvPlanForm mixed = combined_plan_form({a, m});
    CHECK(mixed.kind == KvPlanForm::Kind::Unclear);
    CHECK(mixed.why.find(m.why) != std::string::npos);
  }

  TEST_CASE("a cast is guarded when only other dtypes reach it") {
    auto guarded = [](const std::string& body) {
      auto file = test::parse("def f(k, q, other):\n" + body);
      const ModuleFacts facts(*file);
      return cast_guarded_against(facts, test::find_node(*file, "call", "k.to"), "torch.float8_e4m3fn");
    };
    CHECK(guarded("    if k.dtype != torch.float8_e4m3fn:\n        k = k.to(q.dtype)\n"));
    CHECK(guarded("    if torch.float8_e4m3fn != k.dtype:\n        k = k.to(q.dtype)\n"));
    CHECK(guarded("    if k.dtype != q.dtype and (k.dtype != torch.float8_e4m3fn):\n        k = k.to(q.dtype)\n"));
    CHECK(guarded("    if k.dtype == torch.float8_e4m3fn:\n        pass\n    elif k.dtype != q.dtype:\n        k = k.to(q.dtype)\n"));
    CHECK(guarded("    if k.dtype == torch.float8_e4m3fn:\n        pass\n    else:\n        k = k.to(q.dtype)\n"));
    CHECK(guarded("    return (k if k.dtype == torch.float8_e4m3fn else k.to(q.dtype))\n"));
    CHECK(guarded("    if ready:\n        if k.dtype != torch.float8_e4m3fn:\n            k = k.to(q.dtype)\n"));
    CHECK_FALSE(guarded("    k = k.to(q.dtype)\n"));
    CHECK_FALSE(guarded("    if k.dtype != q.dtype:\n        k = k.to(q.dtype)\n"));
    CHECK_FALSE(guarded("    if k.dtype != q.dtype or k.dtype != torch.float8_e4m3fn:\n        k = k.to(q.dtype)\n"));
    CHECK_FALSE(guarded("    if other.dtype != torch.float8_e4m3fn:\n        k = k.to(q.dtype)\n"));
    CHECK_FALSE(guarded("    if k.dtype == torch.float8_e4m3fn:\n        k = k.to(q.dtype)\n"));
    CHECK_FALSE(guarded("    if k.dtype != torch.float8_e5m2:\n        k = k.to(q.dtype)\n"));
  }

  TEST_CASE("guard edits for each shape of cast, and what stays by hand") {
    const std::string d = "torch.float8_e4m3fn";
    auto guard = [&](const std::string& code) {
      auto file = test::parse(code);
      const ModuleFacts facts(*file);
      TSNode cast{};
      auto is_to = [](const ModuleFacts& in, TSNode c) {
        TSNode callee = syntax::field(c, "function");
        return syntax::is(callee, "attribute") && in.text(syntax::field(callee, "attribute")) == "to";
      };
      for (TSNode c : facts.calls()) {
        if (is_to(facts, c)) cast = c;
      }
      REQUIRE(!syntax::is_null(cast));
      std::string out = edited(*file, guard_cast(facts, cast, d, "r"));
      // Guarded once, the cast is recognised as guarded: a second run would not edit it again.
      auto again = test::parse(out);
      const ModuleFacts again_facts(*again);
      for (TSNode c : again_facts.calls()) {
        if (is_to(again_facts, c)) CHECK(cast_guarded_against(again_facts, c, d));
      }
      return out;
    };
    CHECK(guard("import torch\ndef f(pool, q):\n    k = pool.get_key_buffer(0).to(\n        q.dtype\n    )\n    return k\n") ==
          "import torch\ndef f(pool, q):\n    k = pool.get_key_buffer(0)\n    if k.dtype != torch.float8_e4m3fn:\n"
          "        k = k.to(q.dtype)\n    return k\n");
    CHECK(guard("import torch\ndef f(k, q):\n    log(k)\n    k = k.to(q.dtype)\n    return k\n") ==
          "import torch\ndef f(k, q):\n    log(k)\n    if k.dtype != torch.float8_e4m3fn:\n        k = k.to(q.dtype)\n    return k\n");
    CHECK(guard("import torch\ndef f(k, q):\n    if k.dtype != q.dtype:\n        k = k.to(q.dtype)\n    return k\n") ==
          "import torch\ndef f(k, q):\n    if k.dtype != q.dtype and k.dtype != torch.float8_e4m3fn:\n        k = k.to(q.dtype)\n    return k\n");
    CHECK(guard("import torch\ndef f(k, q):\n    if a:\n        pass\n    elif k.dtype != q.dtype or slow:\n        k = k.to(q.dtype)\n") ==
          "import torch\ndef f(k, q):\n    if a:\n        pass\n    elif (k.dtype != q.dtype or slow) and k.dtype != torch.float8_e4m3fn:\n"
          "        k = k.to(q.dtype)\n");
    CHECK(guard("import torch\ndef f(k, q):\n    return run(k.to(q.dtype)[:, :, :512])\n") ==
          "import torch\ndef f(k, q):\n    return run((k if k.dtype == torch.float8_e4m3fn else k.to(q.dtype))[:, :, :512])\n");

    auto refused = [&](const std::string& code) {
      auto file = test::parse(code);
      const ModuleFacts facts(*file);
      CHECK_THROWS_AS(guard_cast(facts, test::find_node(*file, "call", "pool.get_key_buffer(0).to"), d, "r"), EditNotPossible);
    };
    refused("import torch\ndef f(pool, q):\n    return run(pool.get_key_buffer(0).to(q.dtype))\n");
    refused("def f(pool, q):\n    k = pool.get_key_buffer(0).to(q.dtype)\n");  // torch is not imported
  }
}
