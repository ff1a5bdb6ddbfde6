// `--show-fixes` (ruff's) on `apply` and `check --fix`, over the fixture named by KVPATCH_FIXTURE: after the
// "patched FILE" lines it lists, per file, rule and status, how many findings the written edits fixed. Those counts
// are held to two things measured apart: the findings `check --statistics` counts before the fix less those it
// counts after (what actually went), and the `fixable` column before (what apply said it would fix).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <utility>
#include <vector>

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
using Counts = std::map<std::pair<std::string, std::string>, int>;  // (rule, status) -> count

// `check --statistics --format json`'s rows: {count} and {fixable} per (rule, status).
std::pair<Counts, Counts> statistics(const Fixture& fixture, const fs::path& dir) {
  const ProcessResult r = run_kvpatch(fixture.command("check", {"--statistics", "--format", "json", "."}), dir);
  REQUIRE_MESSAGE(r.exit_code != 2, describe({"kvpatch", "check", "--statistics"}, r));
  std::pair<Counts, Counts> out;
  for (const json& row : json::parse(r.out)) {
    out.first[{row["rule"], row["status"]}] = row["count"];
    if (row["fixable"].get<int>() > 0) out.second[{row["rule"], row["status"]}] = row["fixable"];
  }
  return out;
}

// The --show-fixes block at the end of `text`, parsed: its heading's two numbers and the counts per (rule, status).
// The block is everything from its heading on.
struct Shown {
  std::string block;
  int findings = 0;
  int files = 0;
  Counts counts;
};
Shown shown_fixes(const std::string& text) {
  Shown shown;
  static const std::regex heading(R"(fixed (\d+) findings? in (\d+) files?:)");
  static const std::regex file_line(R"(- (.+):)");
  static const std::regex count_line(R"(    (\d+) x ([a-z0-9-]+) \(([a-z-]+)\))");
  bool in_block = false;
  for (const std::string& line : lines_of(text)) {
    std::smatch m;
    if (!in_block && std::regex_match(line, m, heading)) {
      in_block = true;
      shown.findings = std::stoi(m[1]);
      shown.files = std::stoi(m[2]);
    } else if (!in_block) {
      continue;
    } else if (std::regex_match(line, m, count_line)) {
      shown.counts[{m[2], m[3]}] += std::stoi(m[1]);
    } else {
      CHECK_MESSAGE(std::regex_match(line, file_line), "not a line of the --show-fixes list: ", line);
    }
    shown.block += line + "\n";
  }
  return shown;
}
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("--show-fixes lists what the edits fixed: the findings that went, per rule and status") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    TempDir scratch("kvpatch-show-fixes-" + fixture.name);
    TempDir plain_scratch("kvpatch-show-fixes-plain-" + fixture.name);
    TempDir check_scratch("kvpatch-show-fixes-check-" + fixture.name);
    fixture.stage(scratch.path());
    fixture.stage(plain_scratch.path());
    fixture.stage(check_scratch.path());
    if (fixture.refused()) {
      const ProcessResult r = run_kvpatch(fixture.command("apply", {"--show-fixes", "."}), scratch.path());
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      return;
    }

    const auto [before, fixable] = statistics(fixture, scratch.path());
    const ProcessResult shown_run = run_kvpatch(fixture.command("apply", {"--show-fixes", "."}), scratch.path());
    const ProcessResult plain = run_kvpatch(fixture.command("apply", {"."}), plain_scratch.path());
    const Counts after = statistics(fixture, scratch.path()).first;
    CHECK_MESSAGE(shown_run.exit_code == fixture.apply_exit, describe({"kvpatch", "apply", "--show-fixes"}, shown_run));
    CHECK(read_bytes(scratch.path() / fixture.input) == read_bytes(plain_scratch.path() / fixture.input));

    Counts went;
    for (const auto& [key, count] : before) {
      const auto left = after.find(key);
      const int gone = count - (left == after.end() ? 0 : left->second);
      if (gone != 0) went[key] = gone;
    }
    const Shown shown = shown_fixes(shown_run.out);
    CHECK(shown.counts == went);
    CHECK(shown.counts == fixable);
    int total = 0;
    for (const auto& entry : went) total += entry.second;
    CHECK(shown.findings == total);
    CHECK(shown.files == (total > 0 ? 1 : 0));
    // Nothing else changes: apply's own lines come first, as without the option, and stderr is the same.
    CHECK(shown_run.out == plain.out + shown.block);
    CHECK(shown_run.err == replace_all(plain.err, plain_scratch.path().string(), scratch.path().string()));

    // check --fix --show-fixes with a machine-read report: the list on stderr, stdout the report alone.
    const ProcessResult fixed =
        run_kvpatch(fixture.command("check", {"--fix", "--show-fixes", "--format", "json", "."}), check_scratch.path());
    CHECK(fixed.exit_code == fixture.recheck_exit);
    CHECK(json::accept(fixed.out));
    CHECK_MESSAGE(fixed.err.find(shown.block) != std::string::npos, fixed.err);
    // A second run writes nothing, so lists nothing.
    const ProcessResult again = run_kvpatch(fixture.command("apply", {"--show-fixes", "."}), scratch.path());
    CHECK(again.out.empty());
  }
}
