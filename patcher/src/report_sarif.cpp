#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "kvpatch/ignore_comments.h"
#include "kvpatch/report.h"

// SARIF 2.1.0 (OASIS), the log format GitHub code scanning uploads and SARIF viewers open. What makes a
// check exit 1 becomes a result; so does each ignored finding, with its suppression (inSource for an ignore
// comment, external for per-file-ignores), and each ignore comment that suppresses nothing, as a warning.
// Input errors go to the invocation's notifications, and executionSuccessful says whether every file could be
// read and parsed.
namespace kvpatch {
using json = nlohmann::ordered_json;

namespace {
constexpr const char* kSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
constexpr const char* kRootId = "SRCROOT";

// RFC 3986: unreserved characters and '/' stay, every other byte is percent-encoded.
std::string uri_encode(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// SARIF's default columnKind counts UTF-16 code units; kvpatch counts bytes. A line's bytes are valid
// UTF-8 (load_source_file checks), so count the code units of the bytes before the column.
int utf16_column(std::string_view line, int byte_column) {
  int units = 0;
  const std::size_t end = std::min<std::size_t>(line.size(), static_cast<std::size_t>(byte_column - 1));
  for (std::size_t i = 0; i < end; ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    units += c >= 0xF0 ? 2 : 1;         // four-byte sequences are surrogate pairs in UTF-16
  }
  return units + 1;
}

std::string first_sentence(const std::string& text) {
  const std::size_t end = text.find(". ");
  std::string s = end == std::string::npos ? text : text.substr(0, end + 1);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

json location(const std::string& file, int line, int column) {
  json physical = {{"artifactLocation", {{"uri", uri_encode(file)}, {"uriBaseId", kRootId}}}};
  if (line > 0) {
    json region = {{"startLine", line}};
    if (column > 0) region["startColumn"] = column;
    physical["region"] = std::move(region);
  }
  return json::array({{{"physicalLocation", std::move(physical)}}});
}
// A fixable finding's edits as one SARIF fix (a quick fix in viewers that offer them): `apply`'s edits for it alone,
// each a replacement of a region of the original file (empty to insert), columns in UTF-16 code units as the log's.
json fixes(const ReportItem& item, const SourceFile& source) {
  json replacements = json::array();
  for (const PositionedEdit& e : item.edits) {
    json region = {{"startLine", e.start.line},
                   {"startColumn", utf16_column(source.line_text(e.start.line), e.start.column)},
                   {"endLine", e.end.line},
                   {"endColumn", utf16_column(source.line_text(e.end.line), e.end.column)}};
    replacements.push_back({{"deletedRegion", std::move(region)}, {"insertedContent", {{"text", e.content}}}});
  }
  json change = {{"artifactLocation", {{"uri", uri_encode(item.file)}, {"uriBaseId", kRootId}}},
                 {"replacements", std::move(replacements)}};
  return json::array({{{"description", {{"text", "the edits kvpatch apply makes for this finding"}}},
                       {"artifactChanges", json::array({std::move(change)})}}});
}
}  // namespace

std::string sarif_report(const Run& run, const RuleSet& rules, const std::string& tool_version) {
  json descriptors = json::array();
  std::map<std::string, int> rule_index;
  for (const auto& [id, description] : rules.finding_ids()) {
    if (rule_index.count(id) != 0) continue;
    rule_index[id] = static_cast<int>(descriptors.size());
    json d = {{"id", id}};
    if (!description.empty()) {
      d["shortDescription"] = {{"text", first_sentence(description)}};
      std::string full = description;
      while (!full.empty() && (full.back() == '\n' || full.back() == ' ')) full.pop_back();
      d["fullDescription"] = {{"text", full}};
    }
    descriptors.push_back(std::move(d));
  }
  std::map<std::string, const SourceFile*> sources;
  for (const FileReport& f : run.files) sources[f.file->source.display_path()] = &f.file->source;

  json results = json::array();
  for (const ReportItem& item : report_items(run)) {
    if (!item.finding && !item.suppressed) continue;
    const SourceFile& source = *sources.at(item.file);
    const int column = utf16_column(source.line_text(item.line), item.column);
    json r = {{"ruleId", item.rule}};
    if (rule_index.count(item.rule) != 0) r["ruleIndex"] = rule_index[item.rule];
    // A suppressed finding was not judged (the ignore stops the rule there), so it has no level of its
    // own; SARIF's default, warning, is written out.
    r["level"] = item.suppressed ? "warning" : finding_level(item);
    r["message"] = {{"text", item.status + ": " + item.message}};
    r["locations"] = location(item.file, item.line, column);
    if (item.suppressed) {
      // Kept in the log, as SARIF means suppressions to be, so that an audit sees what was waived and why;
      // code scanning shows such results as dismissed, not open.
      json suppression = {{"kind", suppressed_by_settings(source, item.rule, *item.suppressed) ? "external" : "inSource"}};
      if (!item.suppressed->empty()) suppression["justification"] = *item.suppressed;
      r["suppressions"] = json::array({std::move(suppression)});
    }
    if (!item.edits.empty()) r["fixes"] = fixes(item, source);
    r["properties"] = {{"kvpatchStatus", item.status}};
    results.push_back(std::move(r));
  }
  // Ignore comments that suppress nothing (ignore_comments.h) are warnings (errors under unused-ignores = "error")
  // under a rule of kvpatch's own, whose
  // descriptor is listed only when a result uses it, so that logs without any stay as they were.
  for (const FileReport& f : run.files) {
    for (const IgnoreProblem& p : f.ignore_problems) {
      if (rule_index.count(kIgnoreCommentRule) == 0) {
        rule_index[kIgnoreCommentRule] = static_cast<int>(descriptors.size());
        descriptors.push_back({{"id", kIgnoreCommentRule},
                               {"shortDescription", {{"text", first_sentence(kIgnoreCommentDescription)}}},
                               {"fullDescription", {{"text", kIgnoreCommentDescription}}}});
      }
      const SourceFile& source = f.file->source;
      json r = {{"ruleId", kIgnoreCommentRule}, {"ruleIndex", rule_index[kIgnoreCommentRule]}, {"level", ignore_problem_level(run)}};
      r["message"] = {{"text", "ignore comment " + p.problem + ": " + p.message}};
      r["locations"] = location(source.display_path(), p.line, utf16_column(source.line_text(p.line), p.column));
      r["properties"] = {{"kvpatchStatus", "ignore-comment-" + p.problem}};
      results.push_back(std::move(r));
    }
  }
  json notifications = json::array();
  for (const FileError& e : run.errors) {
    // The byte column of a file that failed to load may not fall on a character; the line is enough.
    notifications.push_back({{"level", "error"},
                             {"message", {{"text", e.remedy.empty() ? e.message : e.message + "; " + e.remedy}}},
                             {"locations", location(e.file, e.line, 0)}});
  }
  std::string root = run.root.string();
  if (root.empty() || root.back() != '/') root += '/';
  json log = {{"$schema", kSchema},
              {"version", "2.1.0"},
              {"runs",
               json::array({{{"tool", {{"driver", {{"name", "kvpatch"}, {"version", tool_version}, {"rules", descriptors}}}}},
                             {"invocations",
                              json::array({{{"executionSuccessful", run.errors.empty()},
                                            {"toolExecutionNotifications", std::move(notifications)}}})},
                             {"originalUriBaseIds", {{kRootId, {{"uri", "file://" + uri_encode(root)}}}}},
                             {"results", std::move(results)},
                             {"columnKind", "utf16CodeUnits"}}})}};
  return log.dump(2) + "\n";
}

}  // namespace kvpatch
