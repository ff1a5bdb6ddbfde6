// The GitHub-annotation, SARIF and JUnit reports: what only they do (escaping, UTF-16 columns, rule metadata,
// input errors as notifications, bytes XML cannot hold). tests/patcher/report_formats_test.cpp and
// report_junit_test.cpp hold them to the JSON report over every fixture.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include "kvpatch/analyze.h"
#include "kvpatch/input_paths.h"
#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"
#include "test_support.h"

using namespace kvpatch;
namespace fs = std::filesystem;

namespace {
// One decode plan() bound to the model dtype, written after a statement of non-ASCII text on the same
// line: "é" is 2 bytes and 1 UTF-16 unit, "😀" 4 bytes and 2 units, so the call's byte column is 3
// more than its UTF-16 column.
const char* kBackend =
    "from flashinfer import BatchMLAPagedAttentionWrapper\n"
    "\n"
    "\n"
    "class FlashInferMLAIndicesUpdaterDecode:\n"
    "    def __init__(self, model_runner):\n"
    "        self.data_type = model_runner.dtype\n"
    "\n"
    "    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, a, b, c, d):\n"
    "        s = \"\xC3\xA9\xF0\x9F\x98\x80\"; wrapper.plan(a, b, c, d, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)\n";

Run analyse(const test::ScratchDir& dir, const RuleSet& rules) {
  return analyze_inputs(rules, collect_inputs({dir.path().string()}, dir.path(), true));
}
}  // namespace

TEST_SUITE("report_formats") {
  TEST_CASE("SARIF columns count UTF-16 code units; rules carry their files' descriptions") {
    test::ScratchDir dir;
    dir.write("pkg/flashinfer_mla_backend.py", kBackend);
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    const Run run = analyse(dir, rules);
    const auto site = std::find_if(run.files.at(0).plan_sites.begin(), run.files.at(0).plan_sites.end(),
                                   [](const PlanSite& s) { return s.status == SiteStatus::Missing; });
    REQUIRE(site != run.files.at(0).plan_sites.end());
    const auto log = nlohmann::json::parse(sarif_report(run, rules, "9.9.9"));
    CHECK(log["version"] == "2.1.0");
    const auto& sarif_run = log["runs"].at(0);
    CHECK(sarif_run["tool"]["driver"]["version"] == "9.9.9");
    CHECK(sarif_run["columnKind"] == "utf16CodeUnits");
    bool found = false;
    for (const auto& result : sarif_run["results"]) {
      if (result["ruleId"] != site->rule) continue;
      found = true;
      const auto& where = result["locations"].at(0)["physicalLocation"];
      CHECK(where["artifactLocation"]["uri"] == "pkg/flashinfer_mla_backend.py");
      CHECK(where["region"]["startLine"] == site->line);
      CHECK(where["region"]["startColumn"] == site->column - 3);
      const auto& rule = sarif_run["tool"]["driver"]["rules"].at(result["ruleIndex"].get<std::size_t>());
      CHECK(rule["id"] == site->rule);
      CHECK(rule["fullDescription"]["text"].get<std::string>().find("kv_data_type") != std::string::npos);
    }
    CHECK(found);
  }

  TEST_CASE("input errors: GitHub commands escape their text; SARIF notes them and marks the run failed") {
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    Run run;
    run.root = "/work tree/x";
    run.errors.push_back({"dir,a:b/f.py", 7, 3, "100% bad\nsecond line", "fix it"});
    const std::string github = github_report(run);
    CHECK(github.rfind("::error file=dir%2Ca%3Ab/f.py,line=7,col=3,title=kvpatch input error::100%25 bad%0Asecond "
                       "line; fix it\n", 0) == 0);
    const auto log = nlohmann::json::parse(sarif_report(run, rules, "1"));
    const auto& invocation = log["runs"].at(0)["invocations"].at(0);
    CHECK(invocation["executionSuccessful"] == false);
    const auto& note = invocation["toolExecutionNotifications"].at(0);
    CHECK(note["message"]["text"] == "100% bad\nsecond line; fix it");
    CHECK(note["locations"].at(0)["physicalLocation"]["artifactLocation"]["uri"] == "dir%2Ca%3Ab/f.py");
    CHECK(note["locations"].at(0)["physicalLocation"]["region"]["startLine"] == 7);
    CHECK(log["runs"].at(0)["originalUriBaseIds"]["SRCROOT"]["uri"] == "file:///work%20tree/x/");
    CHECK(log["runs"].at(0)["results"].empty());
  }

  TEST_CASE("junit: any bytes in a path or message still give well-formed XML, each odd one as U+FFFD") {
    Run run;
    run.root = "/x";
    // A C0 control, a lone continuation byte, an overlong '/', a UTF-16 surrogate, a truncated sequence; then
    // the characters XML escapes, and valid 2- and 4-byte UTF-8, which stay as they are.
    run.errors.push_back({std::string("d\x01/\x80" "f.py"), 3, 1,
                          std::string("bad \xC0\xAF \xED\xA0\x80 <&\"'> \xC3\xA9\xF0\x9F\x98\x80 \xE2\x82"), ""});
    const std::string xml = junit_report(run);
    pugi::xml_document doc;
    REQUIRE(doc.load_string(xml.c_str()));
    const pugi::xml_node suite = doc.child("testsuites").child("testsuite");
    const std::string kReplacement = "\xEF\xBF\xBD";
    CHECK(std::string(suite.attribute("name").value()) == "d" + kReplacement + "/" + kReplacement + "f.py");
    const pugi::xml_node error = suite.child("testcase").child("error");
    CHECK(std::string(error.attribute("message").value()) ==
          "bad " + kReplacement + kReplacement + " " + kReplacement + kReplacement + kReplacement +
              " <&\"'> \xC3\xA9\xF0\x9F\x98\x80 " + kReplacement + kReplacement);
    CHECK(std::string(suite.child("testcase").attribute("classname").value()) ==
          "d" + kReplacement + "." + kReplacement + "f");
    CHECK(doc.child("testsuites").attribute("errors").as_int() == 1);
  }

  TEST_CASE("repository paths: a single directory argument is reported from the git work tree holding it") {
    test::ScratchDir dir;
    dir.write("pkg/flashinfer_mla_backend.py", kBackend);
    REQUIRE(std::system(("git init -q '" + dir.path().string() + "'").c_str()) == 0);
    const std::string pkg = (dir.path() / "pkg").string();
    CHECK(collect_inputs({pkg}, std::nullopt).files.at(0).display_path == "flashinfer_mla_backend.py");
    CHECK(collect_inputs({pkg}, std::nullopt, true).files.at(0).display_path == "pkg/flashinfer_mla_backend.py");
  }
}
