#pragma once
// One run over a set of files, and its outputs: text, JSON, GitHub annotations, SARIF, GitLab Code Quality, JUnit XML,
// unified diff.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/finding_edits.h"
#include "kvpatch/findings.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

struct Run {
  std::filesystem::path root;  // absolute; reports name files relative to it
  std::map<std::string, std::string> parameters;
  std::vector<FileReport> files;
  std::vector<FileError> errors;
  std::map<std::string, std::string> parameter_origins;  // RuleSet::parameter_origins: where each was given
  // The run's unused-ignores setting is "error": each ignore comment that suppresses nothing (FileReport::
  // ignore_problems) is a finding, not a warning, in every report and in the exit code.
  bool ignore_problems_fail = false;
};

struct Summary {
  int files = 0;
  int plan_sites = 0, threaded = 0, missing = 0, gated = 0, unknown = 0, ignored = 0;
  int unbuildable = 0;  // threaded or gated sites whose FlashInfer cannot build the plan for an FP8 cache
  int casts = 0, redundant = 0, required = 0;
  int fields = 0, fields_missing = 0;  // an ignored field is not missing
  int run_inputs_converted = 0, run_inputs_unknown = 0, run_inputs_ignored = 0;  // an ignored input is not unsafe
  int run_scales = 0, run_scales_missing = 0, run_scales_ignored = 0;  // an ignored run() is not missing them
  int edits = 0;
  int ignore_problems_failing = 0;  // ignore comments that suppress nothing, counted only when Run::ignore_problems_fail
};

Summary summarize(const Run& run);
// Findings remain: a missing, unknown or unbuildable plan site, a redundant cast, a missing field, a run() input that is
// converted or of unknown origin, a run() without the FP8 scales its FlashInfer requires, or (only with
// Run::ignore_problems_fail) an ignore comment that suppresses nothing.
bool has_findings(const Summary& summary);
int finding_count(const Summary& summary);  // how many of those

// One entry of a report: a plan site, field, cast or run() input, worded as the text report words it.
struct ReportItem {
  std::string file;  // display path, relative to Run::root
  int line = 0;
  int column = 0;  // 1-based, in bytes
  std::string status;  // threaded, missing, gated, unknown, ignored, present, redundant, required, run-input-*
  std::string message;
  std::string rule;
  bool finding = false;  // counts towards has_findings()
  // An ignored finding: the reason its suppression gives (an ignore comment's text, which may be empty, or
  // "per-file-ignores at FILE:LINE"); nullopt for the rest.
  std::optional<std::string> suppressed;
  std::string scope;  // what the message starts with: `Class.method`, `<module>` or a function's name
  // The edits `apply` makes for this finding (finding_edits.h): a missing plan site, field or run() scales with a
  // fix, or a redundant cast with one. Unknown sites, unbuildable sites and run() inputs never have any.
  std::vector<PositionedEdit> edits;
  bool fixable() const { return finding && !edits.empty(); }  // ruff's "[*]"
};
// Every entry, file by file in run order, each file's by line and column.
std::vector<ReportItem> report_items(const Run& run);
// The severity CI formats and stderr give an ignore comment that suppresses nothing: "warning", or "error" when the
// run's unused-ignores setting makes it a finding.
const char* ignore_problem_level(const Run& run);
// The severity CI formats give a finding: "warning" for what kvpatch cannot judge (unknown sites and
// run() inputs: a reader must look, not necessarily change), "error" for what the patch exists to fix.
const char* finding_level(const ReportItem& item);

// The report forms --format and the settings' output-format take; `concise` is ruff's name for text.
inline const std::vector<std::string>& report_format_names() {
  static const std::vector<std::string> names = {"text", "full", "json", "github", "gitlab", "junit", "rdjson", "sarif"};
  return names;
}

// What a report for a person holds: every entry and then the summary line (--statistics: after the count apply can
// fix), or, for -q/--quiet (ruff's), the findings alone, so that a quiet run over patched code prints nothing.
enum class Extent { Everything, FindingsOnly };

// One entry as the text report prints it: `<file>:<line>:<col>: <status>: <message> [<rule-id>]`.
std::string text_line(const ReportItem& item);
// One line per entry, text_line() (per finding only, with Extent::FindingsOnly), then the summary line (which names
// run() inputs only when some are converted, of unknown origin or ignored).
std::string text_report(const Run& run, Extent extent = Extent::Everything);
// The text report with each finding's source line, a caret at its column and, when apply fixes it, the lines its
// edits change, before (`-`, numbered) and after (`+`): --format full, for a person at a terminal.
std::string full_report(const Run& run, Extent extent = Extent::Everything);
std::string summary_line(const Summary& summary);
// The --format json report (format_version 1).
std::string json_report(const Run& run);
// --format github: one GitHub Actions workflow command per finding and input error (`::error file=...,line=...::`),
// which the Actions runner shows as annotations on the lines, then the summary line.
std::string github_report(const Run& run, Extent extent = Extent::Everything);
// --format sarif: a SARIF 2.1.0 log of the findings and input errors (GitHub code scanning, IDE viewers);
// rules supply each rule id's description, tool_version the driver's version.
std::string sarif_report(const Run& run, const RuleSet& rules, const std::string& tool_version);
// --format rdjson: reviewdog's Diagnostic Format, a diagnostic per finding, input error and ignore comment that
// suppresses nothing; a fixable finding's edits as its suggestions.
std::string rdjson_report(const Run& run);
// --statistics (ruff's): one line per rule id and status with findings, the most frequent first, each with its count
// and how many of them `apply` has an edit for; then the text report's summary line.
std::string statistics_report(const Run& run, Extent extent = Extent::Everything);
// --statistics --format json: those rows as a JSON array of {rule, status, count, fixable}.
std::string statistics_json(const Run& run);
// --show-fixes (ruff's): what `apply` fixed in `run`, the run it wrote the edits of, counted per file of `patched`
// (display paths, in that order) and per rule id and status, the most frequent first:
// `fixed N findings in M files:`, then `- FILE:` and `    COUNT x RULE (STATUS)` lines. Counts rather than lines,
// since the lines moved when the edits were made. Empty when no fixable finding is in those files.
std::string fixes_report(const Run& run, const std::vector<std::string>& patched);
// The check name GitLab's report gives a file kvpatch could not check (it has no rule: nothing can ignore it), and
// what `kvpatch rule` says of it.
inline constexpr const char* kInputErrorCheck = "kvpatch-input-error";
inline constexpr const char* kInputErrorDescription =
    "A file kvpatch could not check: for instance one it could not read, one not in UTF-8, or one holding code "
    "Python would not compile (a syntax error, inconsistent indentation). Nothing in it was checked, so a plan() "
    "call there may miss kv_data_type unseen; the command exits 2. The message names the file, the line and the remedy. It is not a "
    "finding of any rule, and no ignore comment or per-file-ignores entry can waive it: fix the file, or leave it "
    "out with exclude.";

// --format gitlab: GitLab's Code Quality report (a JSON array of issues) of the findings, the input errors and the
// ignore comments that suppress nothing, each with a fingerprint that moving lines leaves as it is.
std::string gitlab_report(const Run& run);
// --format junit: JUnit XML (Jenkins, GitLab test reports, Azure Pipelines): a test suite per file, a test case per
// plan site, field, cast and run(), failing for a finding, skipped when ignored, an error for a file not checked.
std::string junit_report(const Run& run);
// `--- a/<file>` / `+++ b/<file>` unified diff with 3 lines of context; "" when the file has no edits.
std::string unified_diff(const FileReport& file);

}  // namespace kvpatch
