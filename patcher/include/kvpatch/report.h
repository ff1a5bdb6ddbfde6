#pragma once
// One run over a set of files, and its outputs: text report, JSON report, unified diff.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kvpatch/findings.h"

namespace kvpatch {

struct Run {
  std::filesystem::path root;  // absolute; reports name files relative to it
  std::map<std::string, std::string> parameters;
  std::vector<FileReport> files;
  std::vector<FileError> errors;
};

struct Summary {
  int files = 0;
  int plan_sites = 0, threaded = 0, missing = 0, gated = 0, unknown = 0, ignored = 0;
  int casts = 0, redundant = 0, required = 0;
  int fields = 0, fields_missing = 0;  // an ignored field is not missing
  int run_inputs_converted = 0, run_inputs_unknown = 0, run_inputs_ignored = 0;  // an ignored input is not unsafe
  int edits = 0;
};

Summary summarize(const Run& run);
// Findings remain: a missing or unknown plan site, a redundant cast, a missing field, or a run() input that is
// converted or of unknown origin.
bool has_findings(const Summary& summary);

// One line per finding, `<file>:<line>:<col>: <status>: <message> [<rule-id>]`, then the summary line
// (which names run() inputs only when some are converted, of unknown origin or ignored).
std::string text_report(const Run& run);
std::string summary_line(const Summary& summary);
// The --format json report (format_version 1).
std::string json_report(const Run& run);
// `--- a/<file>` / `+++ b/<file>` unified diff with 3 lines of context; "" when the file has no edits.
std::string unified_diff(const FileReport& file);

}  // namespace kvpatch
