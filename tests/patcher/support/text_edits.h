// Edits as the machine-readable reports give them (1-based lines, byte columns, end exclusive), and the text they
// make: how an editor or a review bot would apply kvpatch's fixes, for the tests that hold them to `apply`.
#pragma once

#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

namespace kvpatch_test {

// A replacement of the text between two (line, byte column) positions, the end exclusive.
struct TextEdit {
  int line = 0, column = 0, end_line = 0, end_column = 0;
  std::string content;
  auto key() const { return std::tie(line, column, end_line, end_column, content); }
  bool operator<(const TextEdit& other) const { return key() < other.key(); }
  bool operator==(const TextEdit& other) const { return key() == other.key(); }
};

// The text with every edit made: positions count bytes after a UTF-8 BOM, lines start after each "\n". Edits
// must not overlap (a REQUIRE fails otherwise).
std::string with_edits(const std::string& content, const std::set<TextEdit>& edits);

// The `edits` of one entry of the JSON report (patcher/REPORT-JSON.md), none when it has no such key.
std::set<TextEdit> json_entry_edits(const nlohmann::json& entry);

}  // namespace kvpatch_test
