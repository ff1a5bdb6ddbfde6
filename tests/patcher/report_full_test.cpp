// `kvpatch check --format full` over the fixture named by KVPATCH_FIXTURE: without its indented lines it is exactly
// the text report; under each finding stand its source line and a caret at its column; and the fix it shows, its
// `-` lines replaced by its `+` lines, is the file with that finding's JSON `edits` made, alone.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
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
// The file's lines as the report shows them: after a UTF-8 BOM, without line endings.
std::vector<std::string> shown_lines(const std::string& content) {
  std::vector<std::string> lines = lines_of(content.rfind("\xEF\xBB\xBF", 0) == 0 ? content.substr(3) : content);
  for (std::string& line : lines) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
  }
  return lines;
}

// How many characters a terminal shows before a 1-based byte column: a UTF-8 character counts once.
std::size_t characters_before(const std::string& line, int column) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < static_cast<std::size_t>(column) && i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++n;
  }
  return n;
}

using Key = std::tuple<int, int, std::string>;  // line, column, rule

// Each finding's block in the full report: its header line and the indented lines under it.
struct Block {
  std::string header;
  std::vector<std::string> context;
};
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("--format full is the text report with each finding's source line, caret and fix") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    TempDir scratch("kvpatch-full-" + fixture.name);
    const fs::path pkg = stage_in_repository(fixture, scratch.path());
    const std::string original = read_bytes(pkg / fixture.input);

    const ProcessResult text = run_kvpatch(fixture.command("check", {"."}), pkg);
    const ProcessResult full = run_kvpatch(fixture.command("check", {"--format", "full", "."}), pkg);
    const ProcessResult as_json = run_kvpatch(fixture.command("check", {"--format", "json", "."}), pkg);
    for (const ProcessResult* r : {&text, &full, &as_json}) {
      CHECK_MESSAGE(r->exit_code == fixture.check_exit, describe({"kvpatch", "check"}, *r));
    }
    CHECK(full.err == text.err);

    std::vector<Block> blocks;
    for (const std::string& line : lines_of(full.out)) {
      if (line.starts_with(' ')) {
        REQUIRE_MESSAGE(!blocks.empty(), "an indented line before any finding: ", line);
        blocks.back().context.push_back(line);
      } else {
        blocks.push_back({line, {}});
      }
    }
    std::vector<std::string> headers;
    headers.reserve(blocks.size());
    for (const Block& b : blocks) headers.push_back(b.header);
    CHECK(headers == lines_of(text.out));
    if (fixture.refused()) return;

    const json report = json::parse(as_json.out);
    std::map<Key, std::set<TextEdit>> fixes;
    for (const char* kind : {"plan_sites", "casts", "fields", "run_scales", "run_inputs"}) {
      for (const json& entry : report[kind]) {
        const std::set<TextEdit> edits = json_entry_edits(entry);
        if (!edits.empty()) fixes[{entry["line"], entry["column"], entry["rule"]}] = edits;
      }
    }

    const std::vector<std::string> source = shown_lines(original);
    static const std::regex header(R"(^[^:]+:(\d+):(\d+): [a-z-]+: .* \[([a-z0-9-]+)\]$)");
    static const std::regex numbered(R"(^ +(\d+) ([|-])(?: (.*))?$)");  // an empty line without the blank
    static const std::regex added(R"(^ +\+(?: (.*))?$)");
    std::size_t with_context = 0;
    std::size_t with_fix = 0;
    for (const Block& b : blocks) {
      if (b.context.empty()) continue;
      CAPTURE(b.header);
      ++with_context;
      std::smatch m;
      REQUIRE(std::regex_match(b.header, m, header));
      const int line = std::stoi(m[1]);
      const int column = std::stoi(m[2]);
      const Key key{line, column, m[3]};
      REQUIRE((line >= 1 && static_cast<std::size_t>(line) <= source.size()));
      const std::string& code = source[static_cast<std::size_t>(line - 1)];

      // The gutter, the numbered source line and the caret under the column.
      REQUIRE(b.context.size() >= 3);
      CHECK(b.context[0].find_first_not_of(' ') == b.context[0].size() - 1);
      CHECK(b.context[0].back() == '|');
      std::smatch at;
      REQUIRE(std::regex_match(b.context[1], at, numbered));
      CHECK(std::stoi(at[1]) == line);
      CHECK(at[2] == "|");
      CHECK(at[3] == code);
      const std::string caret = b.context[2].substr(b.context[0].size() + 1);
      CHECK_MESSAGE(caret.size() == characters_before(code, column) + 1, b.context[2]);
      CHECK(caret.back() == '^');

      // The fix: `-` lines numbered, `+` lines after them; made bottom up, they give the JSON edits' result.
      const auto fix = fixes.find(key);
      if (b.context.size() == 3) {
        CHECK_MESSAGE(fix == fixes.end(), "the JSON report has edits for this finding, the full report none");
        continue;
      }
      CHECK(b.context[3].ends_with("= fix, as apply makes it:"));
      REQUIRE_MESSAGE(fix != fixes.end(), "a fix the JSON report has no edits for");
      ++with_fix;
      struct Hunk {
        int first = 0, last = 0;
        std::vector<std::string> after;
      };
      std::vector<Hunk> hunks;
      for (std::size_t i = 4; i < b.context.size(); ++i) {
        if (std::regex_match(b.context[i], at, numbered)) {
          REQUIRE(at[2] == "-");
          const int n = std::stoi(at[1]);
          CHECK(at[3] == source[static_cast<std::size_t>(n - 1)]);
          if (hunks.empty() || !hunks.back().after.empty() || n != hunks.back().last + 1) hunks.push_back({n, n, {}});
          else hunks.back().last = n;
        } else {
          REQUIRE_MESSAGE(std::regex_match(b.context[i], at, added), b.context[i]);
          REQUIRE(!hunks.empty());
          hunks.back().after.push_back(at[1]);
        }
      }
      std::vector<std::string> fixed = source;
      for (auto h = hunks.rbegin(); h != hunks.rend(); ++h) {
        const auto from = fixed.begin() + (h->first - 1);
        fixed.erase(from, fixed.begin() + h->last);
        fixed.insert(fixed.begin() + (h->first - 1), h->after.begin(), h->after.end());
      }
      CHECK(fixed == shown_lines(with_edits(original, fix->second)));
    }
    CHECK(with_context == json_findings(report).size());
    CHECK(with_fix == fixes.size());
  }
}
