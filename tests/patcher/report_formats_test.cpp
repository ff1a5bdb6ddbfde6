// `kvpatch check --format github`, `--format sarif` and `--format gitlab` over the fixture named by KVPATCH_FIXTURE,
// held to `--format json`: the same findings (file, line, column, rule, status), one annotation, result or issue
// each, the same exit code, and paths from the top of the git repository even for a directory
// argument (as GitHub resolves them). Refused fixtures: exit 2, the input error as an annotation and as
// a SARIF notification, and still a well-formed SARIF log on stdout.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
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

TEST_SUITE("formats") {
  TEST_CASE("github, sarif and gitlab report exactly the JSON report's findings, from the repository's top") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    TempDir scratch("kvpatch-formats-" + fixture.name);
    const fs::path pkg = stage_in_repository(fixture, scratch.path());
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

    SUBCASE("gitlab: a Code Quality report with one issue per finding, input error and ignore comment that suppresses "
            "nothing, each fingerprint its own and unchanged when lines above move or the checkout is elsewhere") {
      const ProcessResult gitlab = run_kvpatch(fixture.command("check", {"--format", "gitlab", "."}), pkg);
      CHECK_MESSAGE(gitlab.exit_code == fixture.check_exit, describe({"kvpatch", "check", "--format", "gitlab"}, gitlab));
      const json issues = json::parse(gitlab.out);  // stdout holds the array alone, even for refused input
      REQUIRE(issues.is_array());
      static const std::regex finding_description(R"(^([a-z-]+): .+$)");
      static const std::regex ignore_description(R"(^ignore comment ([a-z-]+): .+$)");
      std::multiset<Finding> findings;
      std::multiset<std::tuple<int, std::string>> comment_issues;
      std::set<std::string> fingerprints;
      int input_errors = 0;
      for (const json& issue : issues) {
        CHECK(issue["location"]["path"] == in_repository);
        CHECK(fingerprints.insert(issue["fingerprint"].get<std::string>()).second);
        const std::string description = issue["description"];
        const std::string severity = issue["severity"];
        const int line = issue["location"]["lines"]["begin"];
        std::smatch m;
        if (issue["check_name"] == "kvpatch-input-error") {
          CHECK(severity == "critical");
          ++input_errors;
        } else if (issue["check_name"] == "kvpatch-ignore-comment") {
          REQUIRE(std::regex_match(description, m, ignore_description));
          CHECK(severity == "minor");
          comment_issues.insert({line, m[1]});
        } else {
          REQUIRE_MESSAGE(std::regex_match(description, m, finding_description), description);
          CHECK(severity == (is_warning(m[1]) ? "minor" : "major"));
          findings.insert({line, 0, issue["check_name"].get<std::string>(), m[1]});
        }
      }
      // GitLab reads a line, not a column: the JSON report's findings with their columns left out.
      std::multiset<Finding> expected_lines;
      for (const auto& [line, column, rule, status] : expected) expected_lines.insert({line, 0, rule, status});
      CHECK(findings == expected_lines);
      std::multiset<std::tuple<int, std::string>> expected_comments;
      for (const auto& [line, column, level, problem] : ignore_comments(report)) expected_comments.insert({line, problem});
      CHECK(comment_issues == expected_comments);
      CHECK((input_errors > 0) == fixture.refused());

      // The same backend in another repository, a comment line added above its first import.
      TempDir elsewhere("kvpatch-formats-moved-" + fixture.name);
      const fs::path moved_pkg = stage_moved_in_repository(fixture, elsewhere.path());
      const ProcessResult moved = run_kvpatch(fixture.command("check", {"--format", "gitlab", "."}), moved_pkg);
      CHECK(moved.exit_code == gitlab.exit_code);
      std::set<std::string> moved_fingerprints;
      for (const json& issue : json::parse(moved.out)) moved_fingerprints.insert(issue["fingerprint"].get<std::string>());
      CHECK(moved_fingerprints == fingerprints);
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
      const ProcessResult strict_gitlab = run_kvpatch(fixture.command("check", with({"--format", "gitlab", "."})), pkg);
      CHECK(strict_gitlab.exit_code == exit);
      int gitlab_majors = 0;
      for (const json& issue : json::parse(strict_gitlab.out)) {
        if (issue["check_name"] == "kvpatch-ignore-comment") {
          CHECK(issue["severity"] == "major");
          ++gitlab_majors;
        }
      }
      CHECK(gitlab_majors == static_cast<int>(comments.size()));
    }
  }
}
