#include <nlohmann/json.hpp>

#include "kvpatch/ignore_comments.h"
#include "kvpatch/report.h"

// reviewdog's Diagnostic Format (rdjson: one DiagnosticResult object), which `reviewdog -f=rdjson` reads to comment
// on a pull request's lines. A finding apply can fix carries its edits as suggestions, which reviewdog's
// github-pr-review and gitlab reporters turn into suggested changes. Lines and columns are 1-based; reviewdog counts
// columns in UTF-8 bytes, as kvpatch does.
namespace kvpatch {
namespace {
using json = nlohmann::ordered_json;

json position_json(int line, int column) {
  json p = {{"line", line}};
  if (column > 0) p["column"] = column;
  return p;
}

json diagnostic(const std::string& message, const std::string& file, int line, int column, const std::string& level,
                const std::string& code) {
  json location = {{"path", file}};
  if (line > 0) location["range"] = {{"start", position_json(line, column)}};
  return {{"message", message},
          {"location", std::move(location)},
          {"severity", level == "warning" ? "WARNING" : "ERROR"},
          {"code", {{"value", code}}}};
}
}  // namespace

std::string rdjson_report(const Run& run) {
  json diagnostics = json::array();
  for (const FileError& e : run.errors) {
    diagnostics.push_back(diagnostic(e.remedy.empty() ? e.message : e.message + "; " + e.remedy, e.file, e.line,
                                     e.column, "error", kInputErrorCheck));
  }
  for (const ReportItem& item : report_items(run)) {
    if (!item.finding) continue;
    json d = diagnostic(item.status + ": " + item.message, item.file, item.line, item.column, finding_level(item),
                        item.rule);
    if (!item.edits.empty()) {
      json suggestions = json::array();
      for (const PositionedEdit& e : item.edits) {
        suggestions.push_back({{"range", {{"start", position_json(e.start.line, e.start.column)},
                                          {"end", position_json(e.end.line, e.end.column)}}},
                               {"text", e.content}});
      }
      d["suggestions"] = std::move(suggestions);
    }
    diagnostics.push_back(std::move(d));
  }
  // Findings only under unused-ignores = "error", but a pull request is where a stale suppression should be seen.
  for (const FileReport& f : run.files) {
    for (const IgnoreProblem& p : f.ignore_problems) {
      diagnostics.push_back(diagnostic("ignore comment " + p.problem + ": " + p.message, f.file->source.display_path(),
                                       p.line, p.column, ignore_problem_level(run), kIgnoreCommentRule));
    }
  }
  json result = {{"source", {{"name", "kvpatch"}}}, {"diagnostics", std::move(diagnostics)}};
  return result.dump(2) + "\n";
}

}  // namespace kvpatch
