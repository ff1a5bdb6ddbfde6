// Reads a `kvpatch check --format json` report and turns its plan sites into the (q dtype,
// kv dtype, head dims) requests kvverify can check.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dtype.h"

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

struct DtypeRequest {
  Dtype q_dtype = Dtype::kBf16, kv_dtype = Dtype::kFp8E4M3;
  int head_dim_ckv = 512, head_dim_kpe = 64;
  std::vector<std::string> sites;  // file:line:column of each plan site requesting it
  bool supported = false;
  std::string reason;              // why not supported
};

// A plan site listed apart from the verified ones, and why (unverifiable and unbuildable sites fail the
// run, ignored ones do not).
struct UnverifiableSite {
  std::string site;
  SiteStatus status = SiteStatus::kUnknown;
  std::string reason;
  bool apply_leaves = false;  // status missing, and kvpatch says why `kvpatch apply` does not thread it
};

// A patch gap (ReportPatchGap) that applies to the cache dtype kvverify was given.
struct PatchGap {
  std::string site;
  PatchGapKind kind = PatchGapKind::kRunInput;
  std::string status;  // kvpatch's
  std::string reason;
};

struct ReportRequests {
  std::vector<DtypeRequest> pairs;  // distinct, in first-seen order
  std::vector<UnverifiableSite> unverifiable;  // status missing or unknown, or a role unknown
  std::vector<UnverifiableSite> ignored;       // status ignored: kvpatch was told to leave them
  // Threaded or gated sites that kvpatch found unbuildable: their pairs are verified (this kernel serves
  // them), but the FlashInfer the server runs with raises in plan(), so the patched code cannot decode.
  std::vector<UnverifiableSite> unbuildable;
  // They fail the run, as they fail `kvpatch check`. With a BF16 cache only a missing field applies (a
  // cast to BF16 changes nothing; a BF16 plan takes no scales).
  std::vector<PatchGap> patch_gaps;
};

// status missing (the report predates `kvpatch apply`, or apply leaves the site and kvpatch says why)
// or unknown -> unverifiable; ignored -> listed only; threaded and gated sites: role model ->
// model_dtype, kv_cache -> kv_cache_dtype, gated -> both, unknown -> unverifiable; head dims: the
// literal when given, else 512/64. A verifiable site that kvpatch marks unbuildable has its pairs
// verified and is listed in `unbuildable` as well. Patch gaps that apply to kv_cache_dtype go to `patch_gaps`.
ReportRequests collect_requests(const CheckReport& report, Dtype model_dtype, Dtype kv_cache_dtype);

}  // namespace kvverify
