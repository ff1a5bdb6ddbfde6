// `kvpatch check --format junit` over the fixture named by KVPATCH_FIXTURE, held to `--format json`: one test case
// per entry of the report, a failure for each finding (its line, column, rule and status), a skipped case for
// each ignored finding, an error for a file kvpatch refused, counts that add up, paths from the repository's top,
// and case names that stay the same when lines above move.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

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
// What a report says, counted from its elements.
struct Cases {
  std::multiset<Finding> failures;   // (line, column, rule, status)
  std::multiset<Finding> skipped;    // (line, column, rule, message)
  std::multiset<std::tuple<int, std::string>> comment_failures;  // (line, problem)
  std::multiset<std::string> names;  // classname + name
  int passed = 0;
  int errors = 0;
  std::string warnings;  // every suite's system-err
};

int attribute(const pugi::xml_node& node, const char* name) {
  REQUIRE_MESSAGE(node.attribute(name), node.name(), " has no ", name);
  return node.attribute(name).as_int();
}

// Parses the report and checks what holds for every fixture: well-formed XML, counts that match the elements,
// every case in the one file, at the path from the repository's top, named once.
Cases read_report(const std::string& xml, const std::string& in_repository) {
  // Python's name for the module: pkg/x.py is pkg.x.
  const std::string module = "pkg." + fs::path(in_repository).stem().string();
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_string(xml.c_str());
  REQUIRE_MESSAGE(parsed, parsed.description(), " at offset ", parsed.offset);
  const pugi::xml_node root = doc.child("testsuites");
  REQUIRE(root);
  CHECK(std::string(root.attribute("name").value()) == "kvpatch");
  // The detail text of a failure or skipped case: the text report's line for the entry.
  static const std::regex detail(R"(^(.+):(\d+):(\d+): ([a-z-]+): [\s\S]+ \[([a-z0-9-]+)\]$)");
  static const std::regex comment_detail(R"(^(.+):(\d+):(\d+): ignore comment ([a-z-]+): [\s\S]+$)");
  Cases cases;
  int totals[4] = {0, 0, 0, 0};
  for (const pugi::xml_node suite : root.children("testsuite")) {
    CHECK(std::string(suite.attribute("name").value()) == in_repository);
    int counted[4] = {0, 0, 0, 0};
    std::set<std::string> names;
    for (const pugi::xml_node test : suite.children("testcase")) {
      ++counted[0];
      CHECK(std::string(test.attribute("file").value()) == in_repository);
      CHECK(std::string(test.attribute("classname").value()) == module);
      const std::string name = test.attribute("name").value();
      CHECK_MESSAGE(names.insert(name).second, "two cases named ", name);
      cases.names.insert(name);
      const int line = attribute(test, "line");
      std::smatch m;
      if (test.child("error")) {
        ++counted[2];
        ++cases.errors;
        CHECK(name == "kvpatch-input-error");
      } else if (const pugi::xml_node failure = test.child("failure")) {
        ++counted[1];
        const std::string text = failure.text().get();
        if (std::regex_match(text, m, comment_detail)) {
          CHECK(std::stoi(m[2]) == line);
          cases.comment_failures.insert({line, m[4]});
          continue;
        }
        REQUIRE_MESSAGE(std::regex_match(text, m, detail), text);
        CHECK(std::stoi(m[2]) == line);
        CHECK(name.find(": " + m[5].str()) != std::string::npos);
        CHECK(std::string(failure.attribute("type").value()) == (is_warning(m[4]) ? "warning" : "error"));
        CHECK(std::string(failure.attribute("message").value()).rfind(m[4].str() + ": ", 0) == 0);
        cases.failures.insert({line, std::stoi(m[3]), m[5], m[4]});
      } else if (const pugi::xml_node skipped = test.child("skipped")) {
        ++counted[3];
        const std::string text = skipped.text().get();
        REQUIRE_MESSAGE(std::regex_match(text, m, detail), text);
        CHECK(m[4] == "ignored");
        cases.skipped.insert({line, std::stoi(m[3]), m[5], skipped.attribute("message").value()});
      } else {
        ++cases.passed;
      }
    }
    const char* keys[4] = {"tests", "failures", "errors", "skipped"};
    for (int k = 0; k < 4; ++k) {
      CHECK_MESSAGE(attribute(suite, keys[k]) == counted[k], keys[k]);
      totals[k] += counted[k];
    }
    cases.warnings += suite.child("system-err").text().get();
  }
  const char* keys[4] = {"tests", "failures", "errors", "skipped"};
  for (int k = 0; k < 4; ++k) CHECK_MESSAGE(attribute(root, keys[k]) == totals[k], keys[k]);
  return cases;
}

std::size_t lines_starting(const std::string& text, const std::string& prefix) {
  std::size_t n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("junit: a test case per entry, failing for each finding of the JSON report, from the repository's top") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    TempDir scratch("kvpatch-junit-" + fixture.name);
    const fs::path pkg = stage_in_repository(fixture, scratch.path());
    const std::string in_repository = "pkg/" + fixture.input;
    const ProcessResult as_json = run_kvpatch(fixture.command("check", {"--format", "json", "."}), pkg);
    const ProcessResult junit = run_kvpatch(fixture.command("check", {"--format", "junit", "."}), pkg);
    CHECK_MESSAGE(junit.exit_code == fixture.check_exit, describe({"kvpatch", "check", "--format", "junit"}, junit));
    const json report = json::parse(as_json.out);
    // stdout holds the report alone, even for refused input.
    const Cases cases = read_report(junit.out, in_repository);

    CHECK(cases.failures == json_findings(report));
    std::multiset<Finding> ignored;
    for (const auto& [line, column, rule, reason] : json_ignored(report)) {
      ignored.insert({line, column, rule, reason.empty() ? "ignored" : "ignored: " + reason});
    }
    CHECK(cases.skipped == ignored);
    // Every entry is a case: a threaded site, a present field or a required cast passes.
    CHECK(cases.failures.size() + cases.skipped.size() + cases.passed == json_entry_count(report));
    CHECK((cases.errors > 0) == fixture.refused());
    // Ignore comments that suppress nothing are warnings by default: no case, a line of the suite's system-err.
    const std::multiset<Finding> comments = ignore_comments(report);
    CHECK(cases.comment_failures.empty());
    CHECK(lines_starting(cases.warnings, "warning: " + in_repository + ":") == comments.size());

    SUBCASE("--unused-ignores error: each such comment is a failing case, and check fails on it") {
      const ProcessResult strict =
          run_kvpatch(fixture.command("check", {"--format", "junit", "--unused-ignores", "error", "."}), pkg);
      CHECK(strict.exit_code == (fixture.check_exit == 0 && !comments.empty() ? 1 : fixture.check_exit));
      const Cases strict_cases = read_report(strict.out, in_repository);
      std::multiset<std::tuple<int, std::string>> expected;
      for (const auto& [line, column, level, problem] : comments) expected.insert({line, problem});
      CHECK(strict_cases.comment_failures == expected);
      CHECK(strict_cases.warnings.empty());
    }

    SUBCASE("the same cases, by name, in another repository with a line added above the code") {
      TempDir elsewhere("kvpatch-junit-moved-" + fixture.name);
      const fs::path moved_pkg = stage_moved_in_repository(fixture, elsewhere.path());
      const ProcessResult moved = run_kvpatch(fixture.command("check", {"--format", "junit", "."}), moved_pkg);
      CHECK(moved.exit_code == junit.exit_code);
      CHECK(read_report(moved.out, in_repository).names == cases.names);
    }
  }
}
