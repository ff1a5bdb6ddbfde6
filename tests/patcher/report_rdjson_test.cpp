// `kvpatch check --format rdjson` (reviewdog), the `edits` of `--format json` and SARIF's `fixes` over the fixture named by
// KVPATCH_FIXTURE: one diagnostic per finding of the JSON report, at its place, from the repository's top, with its
// severity; and the fixes all three give, every finding's edits made together (one copy of an edit two findings share),
// turn the staged file into exactly what `kvpatch apply` writes.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
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
// A replacement of the text between two (line, byte column) positions, the end exclusive.
struct TextEdit {
  int line = 0, column = 0, end_line = 0, end_column = 0;
  std::string content;
  auto key() const { return std::tie(line, column, end_line, end_column, content); }
  bool operator<(const TextEdit& other) const { return key() < other.key(); }
  bool operator==(const TextEdit& other) const { return key() == other.key(); }
};

// The text with every edit made, as an editor or reviewdog would: positions count bytes after a UTF-8 BOM, lines
// start after each "\n".
std::string with_edits(const std::string& content, const std::set<TextEdit>& edits) {
  const std::string bom = content.rfind("\xEF\xBB\xBF", 0) == 0 ? content.substr(0, 3) : "";
  std::string text = content.substr(bom.size());
  std::vector<std::size_t> starts = {0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts.push_back(i + 1);
  }
  auto offset = [&](int line, int column) {
    REQUIRE((line >= 1 && static_cast<std::size_t>(line) <= starts.size() && column >= 1));
    const std::size_t at = starts[static_cast<std::size_t>(line - 1)] + static_cast<std::size_t>(column - 1);
    REQUIRE(at <= text.size());
    return at;
  };
  // From the end backwards, so that earlier offsets stay valid; edits must not overlap.
  std::size_t limit = text.size();
  for (auto it = edits.rbegin(); it != edits.rend(); ++it) {
    const std::size_t begin = offset(it->line, it->column);
    const std::size_t end = offset(it->end_line, it->end_column);
    REQUIRE(begin <= end);
    REQUIRE_MESSAGE(end <= limit, "overlapping edits at line ", it->line);
    text.replace(begin, end - begin, it->content);
    limit = begin;
  }
  return bom + text;
}

// The byte column of a UTF-16 column (SARIF's columnKind) on 1-based line `line` of content.
int byte_column(const std::string& content, int line, int utf16_column) {
  const std::size_t bom = content.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  std::size_t at = bom;
  for (int l = 1; l < line; ++l) at = content.find('\n', at) + 1;
  int units = 1;
  std::size_t i = at;
  for (; units < utf16_column && i < content.size(); ++i) {
    const auto c = static_cast<unsigned char>(content[i]);
    if ((c & 0xC0) == 0x80) continue;
    units += c >= 0xF0 ? 2 : 1;
  }
  while (i < content.size() && (static_cast<unsigned char>(content[i]) & 0xC0) == 0x80) ++i;
  return static_cast<int>(i - at) + 1;
}

std::string status_of(const std::string& message) { return message.substr(0, message.find(':')); }
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("rdjson reports the JSON report's findings, and its suggestions and the JSON edits are apply's edits") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    TempDir scratch("kvpatch-rdjson-" + fixture.name);
    const fs::path pkg = stage_in_repository(fixture, scratch.path());
    const std::string original = read_bytes(pkg / fixture.input);

    const ProcessResult as_json = run_kvpatch(fixture.command("check", {"--format", "json", "."}), pkg);
    const ProcessResult rdjson = run_kvpatch(fixture.command("check", {"--format", "rdjson", "."}), pkg);
    for (const ProcessResult* r : {&as_json, &rdjson}) {
      CHECK_MESSAGE(r->exit_code == fixture.check_exit, describe({"kvpatch", "check"}, *r));
    }
    const json report = json::parse(as_json.out);
    const json result = json::parse(rdjson.out);
    CHECK(result["source"]["name"] == "kvpatch");

    std::multiset<Finding> findings, errors, comments;
    std::set<TextEdit> suggested;
    for (const json& d : result["diagnostics"]) {
      CHECK(d["location"]["path"] == "pkg/" + fixture.input);  // from the repository's top, as reviewdog reads it
      const json& start = d["location"]["range"]["start"];
      const std::string code = d["code"]["value"];
      const std::string severity = d["severity"];
      const std::string message = d["message"];
      if (code == "kvpatch-input-error") {
        errors.insert({start["line"].get<int>(), 0, code, severity});
        continue;
      }
      const int column = start["column"].get<int>();
      if (code == "kvpatch-ignore-comment") {
        const std::string problem = message.substr(15, message.find(':') - 15);  // after "ignore comment "
        comments.insert({start["line"].get<int>(), column, severity == "ERROR" ? "error" : "warning", problem});
        continue;
      }
      const std::string status = status_of(message);
      findings.insert({start["line"].get<int>(), column, code, status});
      CHECK_MESSAGE(severity == (is_warning(status) ? "WARNING" : "ERROR"), message);
      for (const json& s : d.value("suggestions", json::array())) {
        suggested.insert({s["range"]["start"]["line"], s["range"]["start"]["column"], s["range"]["end"]["line"],
                          s["range"]["end"]["column"], s["text"]});
      }
    }
    CHECK(findings == json_findings(report));
    CHECK(comments == ignore_comments(report));
    CHECK(errors.size() == report["errors"].size());
    if (fixture.refused()) {
      CHECK(!errors.empty());
      return;
    }

    std::set<TextEdit> from_json;
    for (const char* kind : {"plan_sites", "casts", "fields", "run_scales", "run_inputs"}) {
      for (const json& entry : report[kind]) {
        for (const json& e : entry.value("edits", json::array())) {
          from_json.insert({e["location"]["line"], e["location"]["column"], e["end_location"]["line"],
                            e["end_location"]["column"], e["content"]});
        }
      }
    }
    CHECK(from_json == suggested);

    // SARIF: one fix per fixable result, of the same edits (its columns count UTF-16 code units).
    const ProcessResult sarif = run_kvpatch(fixture.command("check", {"--format", "sarif", "."}), pkg);
    const json log = json::parse(sarif.out);
    std::set<TextEdit> from_sarif;
    for (const json& r : log["runs"][0]["results"]) {
      if (!r.contains("fixes")) continue;
      CHECK(r["fixes"].size() == 1);
      for (const json& change : r["fixes"][0]["artifactChanges"]) {
        CHECK(change["artifactLocation"]["uri"] == "pkg/" + fixture.input);
        for (const json& rep : change["replacements"]) {
          const json& region = rep["deletedRegion"];
          const int line = region["startLine"], end_line = region["endLine"];
          from_sarif.insert({line, byte_column(original, line, region["startColumn"]), end_line,
                             byte_column(original, end_line, region["endColumn"]), rep["insertedContent"]["text"]});
        }
      }
    }
    CHECK(from_sarif == suggested);

    const ProcessResult apply = run_kvpatch(fixture.command("apply", {"."}), pkg);
    REQUIRE_MESSAGE(apply.exit_code == fixture.apply_exit, describe({"kvpatch", "apply"}, apply));
    const std::string applied = read_bytes(pkg / fixture.input);
    CHECK_MESSAGE(with_edits(original, suggested) == applied, "the suggestions made together are not what apply wrote");
    // A fixture apply changes has fixable findings, so this checks something there.
    CHECK((applied == original) == suggested.empty());
  }
}
