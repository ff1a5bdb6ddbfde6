// Reads a `kvpatch check --format json` report: its plan sites, the findings that say the patched
// code would not run its plans as verified (patch gaps), and the files kvpatch could not read.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>


namespace kvverify {

// An unreadable or malformed report; what() names the file, line and field. kvverify exits 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class DtypeRole { kModel, kKvCache, kGated, kUnknown };

// kvpatch's verdict on a plan site: only threaded and gated sites request what the patched code plans.
enum class SiteStatus { kThreaded, kMissing, kGated, kIgnored, kUnknown };
std::string site_status_name(SiteStatus status);

struct ReportPlanSite {
  std::string file;  // relative to the report's root
  int line = 0, column = 0;
  std::string callee;
  SiteStatus status = SiteStatus::kUnknown;
  std::string q_expr, kv_expr;
  DtypeRole q_role = DtypeRole::kUnknown, kv_role = DtypeRole::kUnknown;
  std::optional<int> head_dim_ckv, head_dim_kpe;  // literal values only
  std::string reason;                             // kvpatch's reason for an unknown or ignored site
  // kvpatch's "unbuildable": the FlashInfer the file runs with cannot build this plan (a threaded or
  // gated site against a release older than 0.6.14); why, and the remedy. Empty when buildable.
  std::string unbuildable;
  std::string where() const { return file + ":" + std::to_string(line) + ":" + std::to_string(column); }
};

// A patch gap: a kvpatch finding that the server, as the report describes it, will not run the plans
// kvverify verifies. A KV cast `kvpatch apply` removes (casts[] "redundant") or a KV input converted or
// of unknown origin (run_inputs[]) hands run() other data than the FP8 cache its plan expects; without
// FP8 scales (run_scales[] "missing") run() raises; without the KV dtype field (fields[] "missing" that
// apply adds) a plan() reading it raises. Ignored findings are not read.
enum class PatchGapKind { kRedundantCast, kRunInput, kScalesMissing, kFieldMissing };
std::string patch_gap_kind_name(PatchGapKind kind);

struct ReportPatchGap {
  std::string file;
  int line = 0, column = 0;
  PatchGapKind kind = PatchGapKind::kRunInput;
  std::string status;  // kvpatch's: redundant, run-input-converted, run-input-unknown, missing
  // kvpatch's words under its own keys, each empty when the report leaves it out; `expr` is run_scales'
  // `call` for a scales finding, and for a field the field's name (parameters.kv_field), with the class
  // in `consumer`.
  std::string expr, consumer, why, effect, flashinfer, fix, reason;
  std::string where() const {  // column 0: a field from a report older than fields[].column
    return file + ":" + std::to_string(line) + (column > 0 ? ":" + std::to_string(column) : "");
  }
};

struct CheckReport {
  std::string path;
  std::string root;
  std::vector<ReportPlanSite> plan_sites;
  std::vector<ReportPatchGap> patch_gaps;  // in report order: casts, run_inputs, run_scales, fields
  std::vector<std::string> errors;  // the patcher's own errors, "file:line: message"
};

CheckReport parse_check_report(const std::string& text, const std::string& path);
// PATH "-" reads standard input, named kStdinName in errors and in the run's report.
inline constexpr const char* kStdinName = "<stdin>";
CheckReport read_check_report(const std::string& path);  // throws InputError

}  // namespace kvverify
