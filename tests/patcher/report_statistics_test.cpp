// `kvpatch check --statistics` over the fixture named by KVPATCH_FIXTURE: its rows count exactly the JSON report's
// findings by rule and status, text and JSON agree, and what each row calls fixable is what `apply` then fixes: a
// check after apply finds, per rule and status, the count less the fixable ones, and nothing else.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <utility>

#include "support/files.h"
#include "support/fixture.h"
#include "support/json_expectations.h"
#include "support/kvpatch_cli.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;
using nlohmann::json;

namespace {
using Key = std::pair<std::string, std::string>;  // rule, status
struct Counts {
  int count = 0;
  int fixable = 0;
  bool operator==(const Counts&) const = default;
};

// Findings per rule and status, from `check --format json`: what makes check exit 1, ignore comments included
// when they are errors.
std::map<Key, int> grouped_findings(const json& report) {
  std::map<Key, int> out;
  for (const auto& [line, column, rule, status] : json_findings(report)) ++out[{rule, status}];
  for (const auto& [line, column, level, problem] : ignore_comments(report)) {
    if (level == "error") ++out[{"kvpatch-ignore-comment", problem}];
  }
  return out;
}

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("--statistics counts the findings by rule and status, and apply fixes exactly those it calls fixable") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    TempDir scratch("kvpatch-statistics-" + fixture.name);
    const fs::path pkg = stage_in_repository(fixture, scratch.path());

    const ProcessResult as_json = run_kvpatch(fixture.command("check", {"--format", "json", "."}), pkg);
    const ProcessResult text = run_kvpatch(fixture.command("check", {"--statistics", "."}), pkg);
    const ProcessResult rows_json = run_kvpatch(fixture.command("check", {"--statistics", "--format", "json", "."}), pkg);
    const ProcessResult plain = run_kvpatch(fixture.command("check", {"."}), pkg);
    for (const ProcessResult* r : {&as_json, &text, &rows_json}) {
      CHECK_MESSAGE(r->exit_code == fixture.check_exit, describe({"kvpatch", "check"}, *r));
    }
    if (fixture.refused()) {
      CHECK_MESSAGE(json::parse(rows_json.out) == json::array(), rows_json.out);
      return;
    }
    const std::map<Key, int> expected = grouped_findings(json::parse(as_json.out));

    // Text: `COUNT  RULE  STATUS  [*]|[ ]|[*] K of N` rows, the fixable total, then check's summary line.
    static const std::regex row(R"(^ *(\d+)  ([a-z0-9-]+) +([a-z-]+) +(\[\*\]|\[ \]|\[\*\] (\d+) of (\d+))$)");
    static const std::regex total(R"(^\[\*\] (\d+) findings? fixable with `kvpatch apply`$)");
    std::map<Key, Counts> from_text;
    int fixable_total = 0;
    const std::vector<std::string> lines = lines_of(text.out);
    REQUIRE(!lines.empty());
    CHECK_MESSAGE(lines.back() == lines_of(plain.out).back(), "the summary line, as check prints it");
    int previous_count = -1;
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
      std::smatch m;
      if (std::regex_match(lines[i], m, total)) {
        fixable_total = std::stoi(m[1]);
        CHECK_MESSAGE(i + 2 == lines.size(), "the fixable total comes last before the summary: ", text.out);
        continue;
      }
      REQUIRE_MESSAGE(std::regex_match(lines[i], m, row), "not a statistics row: ", lines[i]);
      const int count = std::stoi(m[1]);
      const int fixable = m[4] == "[*]" ? count : m[4] == "[ ]" ? 0 : std::stoi(m[5]);
      if (m[6].matched) {
        CHECK(std::stoi(m[6]) == count);
        CHECK((fixable > 0 && fixable < count));
      }
      CHECK_MESSAGE((previous_count < 0 || count <= previous_count), "rows go from the most findings down");
      previous_count = count;
      CHECK_MESSAGE(from_text.count({m[2], m[3]}) == 0, "one row per rule and status: ", lines[i]);
      from_text[{m[2], m[3]}] = {count, fixable};
    }

    std::map<Key, Counts> from_json;
    for (const json& r : json::parse(rows_json.out)) {
      from_json[{r["rule"], r["status"]}] = {r["count"].get<int>(), r["fixable"].get<int>()};
    }
    CHECK(from_json == from_text);

    std::map<Key, int> counted;
    int fixable_sum = 0;
    for (const auto& [key, c] : from_text) {
      counted[key] = c.count;
      fixable_sum += c.fixable;
    }
    CHECK(counted == expected);
    CHECK(fixable_sum == fixable_total);

    SUBCASE("the CI formats are refused with --statistics: exit 2, nothing on stdout") {
      const ProcessResult sarif = run_kvpatch(fixture.command("check", {"--statistics", "--format", "sarif", "."}), pkg);
      CHECK(sarif.exit_code == 2);
      CHECK(sarif.out.empty());
      CHECK_MESSAGE(sarif.err.find("--statistics prints text or JSON, not --format sarif") != std::string::npos,
                    sarif.err);
    }
    SUBCASE("pre-commit --statistics prints what check --statistics does for the staged file") {
      // pre-commit takes the dtype form as a rule parameter, not as --kv-dtype-form.
      std::vector<std::string> args = {"pre-commit", "--statistics"};
      for (std::size_t i = 0; i < fixture.options.size(); ++i) {
        if (fixture.options[i] == "--kv-dtype-form" && i + 1 < fixture.options.size()) {
          args.insert(args.end(), {"--set", "kv_dtype_form=" + fixture.options[++i]});
        } else {
          args.push_back(fixture.options[i]);
        }
      }
      REQUIRE(run_process({required_env("KVPATCH_GIT"), "-C", scratch.path().string(), "add", "pkg"}).exit_code == 0);
      const ProcessResult hook = run_kvpatch(args, scratch.path());
      CHECK_MESSAGE(hook.exit_code == fixture.check_exit, describe(args, hook));
      CHECK(hook.out == text.out);
    }

    // apply, then check again: per rule and status, what was not fixable is all that is left.
    const ProcessResult apply = run_kvpatch(fixture.command("apply", {"."}), pkg);
    REQUIRE_MESSAGE(apply.exit_code == fixture.apply_exit, describe({"kvpatch", "apply"}, apply));
    const ProcessResult after = run_kvpatch(fixture.command("check", {"--format", "json", "."}), pkg);
    std::map<Key, int> left;
    for (const auto& [key, c] : from_text) {
      if (c.count > c.fixable) left[key] = c.count - c.fixable;
    }
    CHECK(grouped_findings(json::parse(after.out)) == left);
  }
}
