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

// A kvpatch finding that a run() call is not handed what the patched plans expect: a KV cast that
// `kvpatch apply` removes (run_inputs and casts[] "redundant"), a KV input converted or of unknown
// origin (run_inputs[]), or FP8 scales missing (run_scales[] "missing"). Ignored ones are not read.
enum class RunFindingKind { kRedundantCast, kRunInput, kScalesMissing };
std::string run_finding_kind_name(RunFindingKind kind);

struct ReportRunFinding {
  std::string file;
  int line = 0, column = 0;
  RunFindingKind kind = RunFindingKind::kRunInput;
  std::string status;  // kvpatch's: redundant, run-input-converted, run-input-unknown, missing
  // kvpatch's words under its own keys, each empty when the report leaves it out; `expr` is run_scales'
  // `call` for a scales finding.
  std::string expr, consumer, why, effect, flashinfer, fix, reason;
  std::string where() const { return file + ":" + std::to_string(line) + ":" + std::to_string(column); }
};

struct CheckReport {
  std::string path;
  std::string root;
  std::vector<ReportPlanSite> plan_sites;
  std::vector<ReportRunFinding> run_findings;  // in report order: casts, run_inputs, run_scales
  std::vector<std::string> errors;  // the patcher's own errors, "file:line: message"
};

CheckReport parse_check_report(const std::string& text, const std::string& path);
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

// A run() call that does not run the verified plans as verified (ReportRunFinding, judged for the
// cache dtype kvverify was given).
struct RunCallFinding {
  std::string site;
  RunFindingKind kind = RunFindingKind::kRunInput;
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
  // With an FP8 cache: kvpatch's findings that a run() call is handed converted KV data or no FP8
  // scales, so the server does not run the verified plans as verified. They fail the run, as they fail
  // `kvpatch check`. With a BF16 cache none applies (a cast to BF16 changes nothing; no scales needed).
  std::vector<RunCallFinding> run_calls;
};

// status missing (the report predates `kvpatch apply`, or apply leaves the site and kvpatch says why)
// or unknown -> unverifiable; ignored -> listed only; threaded and gated sites: role model ->
// model_dtype, kv_cache -> kv_cache_dtype, gated -> both, unknown -> unverifiable; head dims: the
// literal when given, else 512/64. A verifiable site that kvpatch marks unbuildable has its pairs
// verified and is listed in `unbuildable` as well. Run findings go to `run_calls` when the cache is FP8.
ReportRequests collect_requests(const CheckReport& report, Dtype model_dtype, Dtype kv_cache_dtype);

}  // namespace kvverify
