// `kvpatch check --format github` and `--format sarif` over the fixture named by KVPATCH_FIXTURE, held
// to `--format json`: the same findings (file, line, column, rule, status), one annotation or result
// each, the same exit code, and paths from the top of the git repository even for a directory
// argument (as GitHub resolves them). Refused fixtures: exit 2, the input error as an annotation and as
// a SARIF notification, and still a well-formed SARIF log on stdout.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "support/files.h"
#include "support/fixture.h"
#include "support/kvpatch_cli.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;
using nlohmann::json;

namespace {
// (line, column, rule, status) of one finding.
using Finding = std::tuple<int, int, std::string, std::string>;

// What makes check exit 1, read from the JSON report (patcher/REPORT-JSON.md).
std::multiset<Finding> json_findings(const json& report) {
  std::multiset<Finding> out;
  auto add = [&](const json& j) {
    out.insert({j["line"].get<int>(), j.at("column").get<int>(), j["rule"].get<std::string>(),
                j["status"].get<std::string>()});
  };
  for (const json& s : report["plan_sites"]) {
    if (s["status"] == "missing" || s["status"] == "unknown") add(s);
    // A threaded or gated site its FlashInfer cannot build keeps its status and carries `unbuildable`.
    if (s.contains("unbuildable")) {
      out.insert({s["line"].get<int>(), s["column"].get<int>(), s["rule"].get<std::string>(), "unbuildable"});
    }
  }
  for (const json& c : report["casts"]) {
    if (c["status"] == "redundant") add(c);
  }
  for (const json& f : report["fields"]) {
    if (f["status"] == "missing") add(f);
  }
  for (const json& r : report["run_inputs"]) {
    if (r["status"] != "ignored") add(r);
  }
  for (const json& r : report["run_scales"]) {
    if (r["status"] == "missing") add(r);
  }
  return out;
}

// The findings the JSON report lists as ignored, as (line, column, rule, reason): SARIF keeps them as suppressed results.
std::multiset<Finding> json_ignored(const json& report) {
  std::multiset<Finding> out;
  for (const char* section : {"plan_sites", "fields", "run_inputs", "run_scales"}) {
    for (const json& j : report[section]) {
      if (j["status"] != "ignored") continue;
      out.insert({j["line"].get<int>(), j["column"].get<int>(), j["rule"].get<std::string>(),
                  j.value("reason", std::string())});
    }
  }
  return out;
}

// The JSON report's ignore_comments (warnings, not findings, unless --unused-ignores error), as (line, column,
// level, problem).
std::multiset<Finding> ignore_comments(const json& report) {
  std::multiset<Finding> out;
  for (const json& c : report["ignore_comments"]) {
    out.insert({c["line"].get<int>(), c["column"].get<int>(), c["level"].get<std::string>(),
                c["problem"].get<std::string>()});
  }
  return out;
}

// Those entries as the other level would give them.
std::multiset<Finding> at_level(const std::multiset<Finding>& comments, const std::string& level) {
  std::multiset<Finding> out;
  for (const auto& [line, column, was, problem] : comments) out.insert({line, column, level, problem});
  return out;
}

bool is_warning(const std::string& status) { return status == "unknown" || status == "run-input-unknown"; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("github and sarif report exactly the JSON report's findings, from the repository's top") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    TempDir scratch("kvpatch-formats-" + fixture.name);
    const fs::path pkg = scratch.path() / "pkg";
    fs::create_directories(pkg);
    fixture.stage(pkg);
    REQUIRE(run_process({required_env("KVPATCH_GIT"), "init", "-q", scratch.path().string()}).exit_code == 0);
    const std::string in_repository = "pkg/" + fixture.input;

    // A directory argument: text reports from the directory, the repository formats from its top.
    const ProcessResult as_json = run_kvpatch(fixture.command("check", {"--format", "json", "."}), pkg);
    const ProcessResult github = run_kvpatch(fixture.command("check", {"--format", "github", "."}), pkg);
    const ProcessResult sarif = run_kvpatch(fixture.command("check", {"--format", "sarif", "."}), pkg);
    const ProcessResult text = run_kvpatch(fixture.command("check", {"."}), pkg);
    for (const ProcessResult* r : {&as_json, &github, &sarif, &text}) {
      CHECK_MESSAGE(r->exit_code == fixture.check_exit, describe({"kvpatch", "check"}, *r));
    }
    const json report = json::parse(as_json.out);
    const std::multiset<Finding> expected = json_findings(report);

    SUBCASE("github: one workflow command per finding and per ignore comment that suppresses nothing, at its place, "
            "then the text report's summary line") {
      static const std::regex command(
          R"(^::(error|warning) file=([^,]*),line=(\d+),col=(\d+),title=kvpatch ([a-z-]+) \[([a-z0-9-]+)\]::(.+)$)");
      static const std::regex input_error(R"(^::error file=([^,]*),line=(\d+)(,col=\d+)?,title=kvpatch input error::.+$)");
      static const std::regex ignore_comment(
          R"(^::(warning|error) file=([^,]*),line=(\d+),col=(\d+),title=kvpatch ignore comment ([a-z-]+)::.+$)");
      std::multiset<Finding> annotated;
      std::multiset<Finding> ignore_comment_lines;
      int input_errors = 0;
      const std::vector<std::string> lines = lines_of(github.out);
      REQUIRE(!lines.empty());
      for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
        std::smatch m;
        if (std::regex_match(lines[i], m, input_error)) {
          CHECK(m[1] == in_repository);
          ++input_errors;
          continue;
        }
        if (std::regex_match(lines[i], m, ignore_comment)) {
          CHECK(m[2] == in_repository);
          ignore_comment_lines.insert({std::stoi(m[3]), std::stoi(m[4]), m[1], m[5]});
          continue;
        }
        REQUIRE_MESSAGE(std::regex_match(lines[i], m, command), "not a workflow command: ", lines[i]);
        CHECK(m[2] == in_repository);
        CHECK((m[1] == "warning") == is_warning(m[5]));
        annotated.insert({std::stoi(m[3]), std::stoi(m[4]), m[6], m[5]});
      }
      CHECK(annotated == expected);
      CHECK(ignore_comment_lines == ignore_comments(report));
      CHECK((input_errors > 0) == fixture.refused());
      CHECK(lines.back() == lines_of(text.out).back());
    }

    SUBCASE("sarif: a SARIF 2.1.0 log with one result per finding, per ignored finding (suppressed) and per ignore "
            "comment that suppresses nothing, rules indexed, errors as notifications") {
      const json log = json::parse(sarif.out);  // stdout holds the log alone, even for refused input
      CHECK(log["version"] == "2.1.0");
      REQUIRE(log["runs"].size() == 1);
      const json& run = log["runs"][0];
      CHECK(run["tool"]["driver"]["name"] == "kvpatch");
      CHECK(run["originalUriBaseIds"]["SRCROOT"]["uri"] ==
            "file://" + fs::weakly_canonical(scratch.path()).string() + "/");
      const json& rules = run["tool"]["driver"]["rules"];
      std::multiset<Finding> results;
      std::multiset<Finding> suppressed;
      std::multiset<Finding> ignore_results;
      for (const json& r : run["results"]) {
        const json& where = r["locations"].at(0)["physicalLocation"];
        CHECK(where["artifactLocation"]["uri"] == in_repository);
        CHECK(where["artifactLocation"]["uriBaseId"] == "SRCROOT");
        CHECK(rules.at(r["ruleIndex"].get<std::size_t>())["id"] == r["ruleId"]);
        const std::string status = r["properties"]["kvpatchStatus"];
        if (r["ruleId"] == "kvpatch-ignore-comment") {
          CHECK(status.rfind("ignore-comment-", 0) == 0);
          ignore_results.insert({where["region"]["startLine"].get<int>(), where["region"]["startColumn"].get<int>(),
                                 r["level"].get<std::string>(),
                                 status.substr(std::string_view("ignore-comment-").size())});
          continue;
        }
        if (r.contains("suppressions")) {
          // An ignored finding: one suppression, from a comment here (the fixtures set no per-file-ignores).
          CHECK(status == "ignored");
          CHECK(r["level"] == "warning");
          REQUIRE(r["suppressions"].size() == 1);
          const json& waiver = r["suppressions"][0];
          CHECK(waiver["kind"] == "inSource");
          suppressed.insert({where["region"]["startLine"].get<int>(), where["region"]["startColumn"].get<int>(),
                             r["ruleId"].get<std::string>(), waiver.value("justification", std::string())});
          continue;
        }
        CHECK(r["level"] == (is_warning(status) ? "warning" : "error"));
        // Every fixture's finding lines are ASCII up to the finding, so UTF-16 and byte columns agree.
        results.insert({where["region"]["startLine"].get<int>(), where["region"]["startColumn"].get<int>(),
                        r["ruleId"].get<std::string>(), status});
      }
      CHECK(results == expected);
      CHECK(suppressed == json_ignored(report));
      CHECK(ignore_results == ignore_comments(report));
      const json& invocation = run["invocations"].at(0);
      CHECK(invocation["executionSuccessful"] == !fixture.refused());
      CHECK(invocation["toolExecutionNotifications"].empty() == !fixture.refused());
    }

    SUBCASE("--unused-ignores error: the same comments as errors in every format, and check fails on them") {
      const std::multiset<Finding> comments = ignore_comments(report);
      CHECK(comments == at_level(comments, "warning"));  // the default
      const std::vector<std::string> strict = {"--unused-ignores", "error"};
      auto with = [&](std::vector<std::string> args) {
        args.insert(args.end(), strict.begin(), strict.end());
        return args;
      };
      const ProcessResult strict_json = run_kvpatch(fixture.command("check", with({"--format", "json", "."})), pkg);
      const ProcessResult strict_github = run_kvpatch(fixture.command("check", with({"--format", "github", "."})), pkg);
      const ProcessResult strict_sarif = run_kvpatch(fixture.command("check", with({"--format", "sarif", "."})), pkg);
      const int exit = fixture.check_exit == 0 && !comments.empty() ? 1 : fixture.check_exit;
      for (const ProcessResult* r : {&strict_json, &strict_github, &strict_sarif}) {
        CHECK_MESSAGE(r->exit_code == exit, describe({"kvpatch", "check", "--unused-ignores", "error"}, *r));
      }
      const json strict_report = json::parse(strict_json.out);
      CHECK(ignore_comments(strict_report) == at_level(comments, "error"));
      int github_errors = 0;
      for (const std::string& line : lines_of(strict_github.out)) {
        const bool ignore_comment = line.find("title=kvpatch ignore comment") != std::string::npos;
        CHECK_FALSE((ignore_comment && line.rfind("::warning", 0) == 0));
        if (ignore_comment && line.rfind("::error", 0) == 0) ++github_errors;
      }
      CHECK(github_errors == static_cast<int>(comments.size()));
      int sarif_errors = 0;
      const json strict_log = json::parse(strict_sarif.out);
      for (const json& r : strict_log["runs"][0]["results"]) {
        if (r["ruleId"] == "kvpatch-ignore-comment") {
          CHECK(r["level"] == "error");
          ++sarif_errors;
        }
      }
      CHECK(sarif_errors == static_cast<int>(comments.size()));
    }
  }
}
