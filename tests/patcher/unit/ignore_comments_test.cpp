// Ignore comments: how a line's directives are read, and which comments are reported as suppressing nothing.
#include <doctest/doctest.h>

#include "kvpatch/ignore_comments.h"
#include "kvpatch/rule_engine.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const char* kUpdater = R"PY(from flashinfer import BatchMLAPagedAttentionWrapper


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype

    def plan(self, wrapper: BatchMLAPagedAttentionWrapper):
        COMMENT_ABOVE
        wrapper.plan(1, 2, 3, 4, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)  COMMENT_ON
)PY";

// The updater with the two comments put in (either may be ""), judged as a run of one file.
std::vector<IgnoreProblem> problems(const std::string& above, const std::string& on, PlanSite* site = nullptr) {
  std::string code = kUpdater;
  code.replace(code.find("COMMENT_ABOVE"), 13, above.empty() ? "pass" : above);
  code.replace(code.find("COMMENT_ON"), 10, on);
  static const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
  Run run;
  run.files.push_back(analyze_file(rules, test::parse(code)));
  judge_ignore_comments(rules, run);
  if (site != nullptr) {
    REQUIRE(run.files[0].plan_sites.size() == 1);
    *site = run.files[0].plan_sites[0];
  }
  return run.files[0].ignore_problems;
}
}  // namespace

TEST_SUITE("ignore_comments") {
  TEST_CASE("a directive: ids trimmed and comma-separated, the reason after the bracket") {
    const auto d = ignore_directives("x = 1  # kvpatch: ignore[ a-b , c ] because");
    REQUIRE(d.size() == 1);
    REQUIRE(d[0].ids.size() == 2);
    CHECK(d[0].ids[0].id == "a-b");
    CHECK(d[0].ids[0].offset == 26);
    CHECK(d[0].ids[1].id == "c");
    CHECK(d[0].reason == "because");
  }

  TEST_CASE("blanks around the colon are read, a # inside other text starts nothing, an open bracket is no directive") {
    CHECK(ignore_directives("#kvpatch :ignore[a]").size() == 1);
    CHECK(ignore_directives("# noqa # kvpatch: ignore[a]").size() == 1);
    CHECK(ignore_directives("# write `# kvpatch: ignore[a] reason` on the line").empty());
    CHECK(ignore_directives("# kvpatch: ignore[a").empty());
    CHECK(ignore_directives("# kvpatch ignore[a]").empty());
    CHECK(ignore_directives("# KVPATCH: ignore[a]").empty());
    const auto empty = ignore_directives("# kvpatch: ignore[]");
    REQUIRE(empty.size() == 1);
    CHECK(empty[0].ids.empty());
  }

  TEST_CASE("a comment on the finding's line suppresses it and is not reported") {
    PlanSite site;
    CHECK(problems("", "# kvpatch: ignore[flashinfer-mla-plan-kv-dtype] on purpose", &site).empty());
    CHECK(site.status == SiteStatus::Ignored);
    CHECK(site.reason == "on purpose");
  }

  TEST_CASE("the comment on the line above: unused, naming the line to move it onto, and the site stays missing") {
    PlanSite site;
    const auto p = problems("# kvpatch: ignore[flashinfer-mla-plan-kv-dtype] on purpose", "", &site);
    CHECK(site.status == SiteStatus::Missing);
    REQUIRE(p.size() == 1);
    CHECK(p[0].problem == "unused");
    CHECK(p[0].rule == "flashinfer-mla-plan-kv-dtype");
    CHECK(p[0].line == 9);
    CHECK(p[0].column == 27);  // the id, after 8 blanks and "# kvpatch: ignore["
    CHECK(p[0].message.find("move it onto line 10") != std::string::npos);
  }

  TEST_CASE("another rule's id on a plan line is unused: that rule looks at nothing there") {
    const auto p = problems("", "# kvpatch: ignore[flashinfer-mla-kv-cast, flashinfer-mla-plan-kv-dtype]");
    REQUIRE(p.size() == 1);
    CHECK(p[0].problem == "unused");
    CHECK(p[0].rule == "flashinfer-mla-kv-cast");
    CHECK(p[0].message.find("remove it") != std::string::npos);
  }

  TEST_CASE("a mistyped id: unknown-rule, with the id it most likely meant") {
    PlanSite site;
    const auto p = problems("", "# kvpatch: ignore[flashinfer-mla-plan-kv-dtyp]", &site);
    CHECK(site.status == SiteStatus::Missing);
    REQUIRE(p.size() == 1);
    CHECK(p[0].problem == "unknown-rule");
    CHECK(p[0].message.find("did you mean flashinfer-mla-plan-kv-dtype?") != std::string::npos);
    const auto far = problems("", "# kvpatch: ignore[E501]");
    REQUIRE(far.size() == 1);
    CHECK(far[0].message.find("did you mean") == std::string::npos);
  }

  TEST_CASE("other forms are malformed; prose that mentions kvpatch is not") {
    for (const char* comment : {"# KVPATCH: ignore[flashinfer-mla-plan-kv-dtype]", "# kvpatch: ignore",
                                "# kvpatch: ignore[flashinfer-mla-plan-kv-dtype", "# kvpatch: ignore[]"}) {
      CAPTURE(comment);
      const auto p = problems(comment, "");
      REQUIRE(p.size() == 1);
      CHECK(p[0].problem == "malformed");
      CHECK(p[0].rule.empty());
    }
    CHECK(problems("# kvpatch ignores the calibration path", "").empty());
    CHECK(problems("# see `# kvpatch: ignore[flashinfer-mla-plan-kv-dtype] reason` in the docs", "").empty());
  }
}
