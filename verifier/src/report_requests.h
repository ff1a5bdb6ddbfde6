// What kvverify makes of a read report: the (q dtype, kv dtype, head dims) pairs its plan sites
// request, the sites it cannot verify and why, and the patch gaps that apply to the cache dtype.
#pragma once

#include <string>
#include <vector>

#include "check_report.h"
#include "dtype.h"

namespace kvverify {

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
