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
#include "support/text_edits.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;
using nlohmann::json;

namespace {
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
        for (const TextEdit& e : json_entry_edits(entry)) from_json.insert(e);
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
