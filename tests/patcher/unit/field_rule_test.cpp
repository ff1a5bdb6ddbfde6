// The field rule: an ignore comment on the anchor line suppresses the field for that updater.
#include <doctest/doctest.h>

#include "kvpatch/rule_engine.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const char* kUpdaters = R"PY(from flashinfer import BatchMLAPagedAttentionWrapper


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype  # kvpatch: ignore[flashinfer-mla-kv-field] BF16 on purpose
        EXTRA

    def plan(self, wrapper: BatchMLAPagedAttentionWrapper):
        wrapper.plan(1, 2, 3, 4, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)
)PY";

FileReport analyse(const std::string& extra) {
  std::string code = kUpdaters;
  code.replace(code.find("EXTRA"), 5, extra);
  static const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
  return analyze_file(rules, test::parse(code));
}
}  // namespace

TEST_SUITE("field_rule") {
  TEST_CASE("ignored on the self.data_type line: no field, and the plan site says why it has no fix") {
    const FileReport r = analyse("pass");
    REQUIRE(r.fields.size() == 1);
    CHECK(r.fields[0].ignored);
    CHECK_FALSE(r.fields[0].present);
    CHECK_FALSE(r.fields[0].fix.has_value());
    CHECK(r.fields[0].reason == "BF16 on purpose");
    CHECK(r.fields[0].line == 6);
    REQUIRE(r.plan_sites.size() == 1);
    CHECK(r.plan_sites[0].status == SiteStatus::Missing);
    CHECK_FALSE(r.plan_sites[0].fix.has_value());
    CHECK(r.plan_sites[0].reason ==
          "rule flashinfer-mla-kv-field is suppressed for FlashInferMLAIndicesUpdaterDecode (BF16 on purpose), so no "
          "KV dtype field is added; pass the KV dtype by hand");
    CHECK(r.edits.empty());
  }

  TEST_CASE("ignored while the field exists: reported ignored, and the field still serves the plan sites") {
    const FileReport r = analyse("self.kv_data_type = model_runner.kv_cache_dtype");
    REQUIRE(r.fields.size() == 1);
    CHECK(r.fields[0].ignored);
    CHECK(r.fields[0].field_text == "self.kv_data_type");
    REQUIRE(r.plan_sites.size() == 1);
    REQUIRE(r.plan_sites[0].fix.has_value());
    CHECK(r.plan_sites[0].fix_text == "self.kv_data_type");
  }

  TEST_CASE("a comment naming another rule does not suppress the field") {
    std::string code = kUpdaters;
    code.replace(code.find("ignore[flashinfer-mla-kv-field]"), 31, "ignore[flashinfer-mla-kv-cast]");
    code.replace(code.find("EXTRA"), 5, "pass");
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    const FileReport r = analyze_file(rules, test::parse(code));
    REQUIRE(r.fields.size() == 1);
    CHECK_FALSE(r.fields[0].ignored);
    CHECK(r.fields[0].fix.has_value());
  }

  TEST_CASE("an anchor assigned only by unpacking a call's result gets its own reason, not the branch one") {
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    const std::string code = R"PY(from flashinfer import BatchMLAPagedAttentionWrapper


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type, self.heads = model_runner.dtypes()

    def plan(self, wrapper: BatchMLAPagedAttentionWrapper):
        wrapper.plan(1, 2, 3, 4, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)
)PY";
    const FileReport r = analyze_file(rules, test::parse(code));
    REQUIRE(r.fields.size() == 1);
    CHECK_FALSE(r.fields[0].fix.has_value());
    CHECK(r.fields[0].reason ==
          "self.data_type is assigned in FlashInferMLAIndicesUpdaterDecode.__init__ only by unpacking "
          "(`self.data_type, self.heads = model_runner.dtypes()`), which kvpatch does not extend; add "
          "self.kv_data_type by hand");

    // Element by element (`a, b = x, y`) it is a plain assignment: the field goes after it.
    std::string pairwise = code;
    pairwise.replace(pairwise.find("model_runner.dtypes()"), 21, "model_runner.dtype, 16");
    const FileReport p = analyze_file(rules, test::parse(pairwise));
    REQUIRE(p.fields.size() == 1);
    CHECK(p.fields[0].fix.has_value());
  }
}

TEST_SUITE("field_rule") {
  TEST_CASE("an anchor in a with block runs whenever __init__ does: the field goes beside it; in an if it does not") {
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    const std::string code = R"PY(from flashinfer import BatchMLAPagedAttentionWrapper


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        with model_runner.device_context():
            self.data_type = model_runner.dtype

    def plan(self, wrapper: BatchMLAPagedAttentionWrapper):
        wrapper.plan(1, 2, 3, 4, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)
)PY";
    const FileReport r = analyze_file(rules, test::parse(code));
    REQUIRE(r.fields.size() == 1);
    REQUIRE(r.fields[0].fix.has_value());
    CHECK(r.fields[0].line == 7);
    REQUIRE(r.plan_sites.size() == 1);
    CHECK(r.plan_sites[0].fix_text == "self.kv_data_type");
    const std::string patched = r.edits.apply(code);
    CHECK(patched.find("            self.data_type = model_runner.dtype\n            self.kv_data_type = ") !=
          std::string::npos);

    std::string branch = code;
    branch.replace(branch.find("with model_runner.device_context():"), 35, "if model_runner.ready:");
    const FileReport b = analyze_file(rules, test::parse(branch));
    REQUIRE(b.fields.size() == 1);
    CHECK_FALSE(b.fields[0].fix.has_value());
    CHECK(b.fields[0].reason.find("only assigned inside a branch") != std::string::npos);
  }
}

TEST_SUITE("field_rule") {
  // The anchor's lines in __init__, and whether the field goes beside it: only where the anchor runs whenever
  // __init__ runs to its end.
  struct TryCase {
    const char* what;
    const char* init;
    bool fixed;
  };
  TEST_CASE("an anchor in a try runs whenever __init__ does only when no handler and no finally swallows an error") {
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    const TryCase cases[] = {
        {"try-finally", "try:\n    ANCHOR\nfinally:\n    model_runner.done()", true},
        {"handler that re-raises", "try:\n    ANCHOR\nexcept Exception:\n    raise", true},
        {"handler that logs, then raises", "try:\n    ANCHOR\nexcept ValueError as e:\n    print(e)\n    raise", true},
        {"in the finally", "try:\n    model_runner.warm()\nfinally:\n    ANCHOR", true},
        {"in the else of a re-raising try", "try:\n    model_runner.warm()\nexcept OSError:\n    raise\nelse:\n    ANCHOR",
         true},
        {"try in a with", "with model_runner.ctx():\n    try:\n        ANCHOR\n    finally:\n        pass", true},
        {"handler that swallows", "try:\n    ANCHOR\nexcept Exception:\n    pass", false},
        {"one of two handlers swallows", "try:\n    ANCHOR\nexcept KeyError:\n    raise\nexcept Exception:\n    pass",
         false},
        {"finally that returns", "try:\n    ANCHOR\nfinally:\n    return", false},
        {"finally that returns in an if", "try:\n    ANCHOR\nfinally:\n    if model_runner.x:\n        return", false},
        {"in the else of a swallowing try", "try:\n    model_runner.warm()\nexcept OSError:\n    pass\nelse:\n    ANCHOR",
         false},
        {"in a handler", "try:\n    model_runner.warm()\nexcept OSError:\n    ANCHOR\n    raise", false},
    };
    for (const TryCase& c : cases) {
      CAPTURE(c.what);
      std::string init = c.init;
      init.replace(init.find("ANCHOR"), 6, "self.data_type = model_runner.dtype");
      std::string body;
      for (std::size_t start = 0; start < init.size();) {
        const std::size_t end = std::min(init.find('\n', start), init.size());
        body += "        " + init.substr(start, end - start) + "\n";
        start = end + 1;
      }
      const std::string code = "from flashinfer import BatchMLAPagedAttentionWrapper\n\n\n"
                               "class FlashInferMLAIndicesUpdaterDecode:\n"
                               "    def __init__(self, model_runner):\n" +
                               body +
                               "\n    def plan(self, wrapper: BatchMLAPagedAttentionWrapper):\n"
                               "        wrapper.plan(1, 2, 3, 4, 16, 512, 64, 1, False, 0.1, self.data_type, "
                               "self.data_type)\n";
      const FileReport r = analyze_file(rules, test::parse(code));
      REQUIRE(r.fields.size() == 1);
      CHECK(r.fields[0].fix.has_value() == c.fixed);
      REQUIRE(r.plan_sites.size() == 1);
      CHECK((r.plan_sites[0].fix_text == "self.kv_data_type") == c.fixed);
      if (c.fixed) {
        // The field goes on the line after the anchor, at its indentation: inside the try, the finally or the else.
        const std::string patched = r.edits.apply(code);
        const std::size_t anchor = patched.find("self.data_type = model_runner.dtype\n");
        REQUIRE(anchor != std::string::npos);
        const std::size_t line_start = patched.rfind('\n', anchor) + 1;
        const std::string indent = patched.substr(line_start, anchor - line_start);
        CHECK(patched.compare(anchor + 36, indent.size() + 22, indent + "self.kv_data_type = ge") == 0);
      }
    }
  }
}
