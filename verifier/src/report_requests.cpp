// Turns a read report into what kvverify runs and lists: the dtype pairs its plan sites request, the
// sites it cannot verify, and the patch gaps, each with kvpatch's reason and the remedy.
#include "report_requests.h"

#include "kvpatch/mla_decode.h"

namespace kvverify {
namespace {

std::vector<Dtype> dtypes_for(DtypeRole role, Dtype model, Dtype kv_cache) {
  switch (role) {
    case DtypeRole::kModel: return {model};
    case DtypeRole::kKvCache: return {kv_cache};
    case DtypeRole::kGated: return model == kv_cache ? std::vector<Dtype>{model} : std::vector<Dtype>{model, kv_cache};
    case DtypeRole::kUnknown: return {};
  }
  return {};
}

bool is_fp8(Dtype dtype) { return dtype == Dtype::kFp8E4M3 || dtype == Dtype::kFp8E5M2; }

std::string role_name(DtypeRole role) {
  switch (role) {
    case DtypeRole::kModel: return "model";
    case DtypeRole::kKvCache: return "kv_cache";
    case DtypeRole::kGated: return "gated";
    case DtypeRole::kUnknown: return "unknown";
  }
  return "unknown";
}

// Why a site's dtypes are not what the patched code will plan, with what to do; empty when they are.
std::string unverifiable_reason(const ReportPlanSite& site) {
  const std::string kvpatch_reason = site.reason.empty() ? "" : " (kvpatch: " + site.reason + ")";
  const std::string planned_kv = site.kv_expr.empty() ? std::string("the query dtype") : "'" + site.kv_expr + "'";
  if (site.status == SiteStatus::kMissing && !site.reason.empty()) {
    return "site is missing kv_data_type, and `kvpatch apply` leaves it" + kvpatch_reason +
           "; its plan call still plans the KV cache as " + planned_kv +
           ": fix what kvpatch names, run `kvpatch apply`, then re-run `kvpatch check --format json`";
  }
  if (site.status == SiteStatus::kMissing) {
    return "site is missing kv_data_type: its plan call still plans the KV cache as " + planned_kv + " (role " +
           role_name(site.kv_role) +
           "), so the report was taken before the patch; run `kvpatch apply` and re-run `kvpatch check --format json`";
  }
  if (site.q_role == DtypeRole::kUnknown || site.kv_role == DtypeRole::kUnknown) {
    const std::string which = site.q_role == DtypeRole::kUnknown ? "q_data_type" : "kv_data_type";
    const std::string& expr = site.q_role == DtypeRole::kUnknown ? site.q_expr : site.kv_expr;
    return which + (expr.empty() ? "" : " '" + expr + "'") + " has role unknown: its dtype cannot be determined" +
           kvpatch_reason + "; pass the dtypes to the plan call explicitly, then re-run `kvpatch check --format json`";
  }
  if (site.status == SiteStatus::kUnknown) {
    return "kvpatch could not classify the site" + kvpatch_reason +
           "; pass the dtypes to the plan call explicitly, then re-run `kvpatch check --format json`";
  }
  return "";
}

std::string unsupported_reason(const DtypeRequest& request) {
  if (request.head_dim_ckv != kvpatch::mla::kHeadDimCkv || request.head_dim_kpe != kvpatch::mla::kHeadDimKpe) {
    return "the kernel supports head_dim_ckv 512 with head_dim_kpe 64 only";
  }
  if (request.q_dtype != Dtype::kBf16) return "the kernel takes a BF16 query only";
  if (request.kv_dtype != Dtype::kFp8E4M3 && request.kv_dtype != Dtype::kBf16) {
    return "the kernel takes an FP8 E4M3 or BF16 KV cache only";
  }
  return "";
}

// What a patch gap means for the plans kvverify verified, in kvpatch's words, with the remedy.
std::string patch_gap_reason(const ReportPatchGap& f) {
  const auto quoted = [](const std::string& text) { return text.empty() ? std::string("the KV cache") : "`" + text + "`"; };
  switch (f.kind) {
    case PatchGapKind::kRedundantCast:
      return "kvpatch: redundant cast " + quoted(f.expr) + (f.consumer.empty() ? "" : " (feeds " + f.consumer + ")") +
             ": that run() is handed the cache converted, not the FP8 cache its patched plan expects; run `kvpatch "
             "apply` (it removes the cast), then re-run `kvpatch check --format json`";
    case PatchGapKind::kRunInput:
      return "kvpatch: " + f.status + " " + quoted(f.expr) + (f.consumer.empty() ? "" : " into " + f.consumer) +
             (f.why.empty() ? "" : ": " + f.why) + (f.effect.empty() ? "" : "; " + f.effect) +
             ". A run() handed converted KV data cannot run an FP8 plan, and `kvpatch apply` cannot change this "
             "input: hand run() the cache as stored, then re-run `kvpatch check --format json`";
    case PatchGapKind::kScalesMissing:
      return "kvpatch: " + (f.expr.empty() ? std::string("run()") : f.expr) + " passes no ckv_scale/kpe_scale" +
             (f.flashinfer.empty() ? "" : ", which " + f.flashinfer + " requires with an FP8 cache") +
             ": it raises at the first FP8 decode step instead of running the verified plan; " +
             (f.fix.empty() ? (f.reason.empty() ? std::string("pass the scales by hand") : f.reason)
                            : "run `kvpatch apply` (it adds " + f.fix + ")") +
             ", then re-run `kvpatch check --format json`";
    case PatchGapKind::kFieldMissing:
      return "kvpatch: " + (f.consumer.empty() ? std::string("an indices updater") : f.consumer) +
             " sets no KV dtype field" + (f.expr.empty() ? "" : " (" + f.expr + ")") +
             ", which `kvpatch apply` adds for its plan() calls; a plan() that reads it before then raises "
             "AttributeError; run `kvpatch apply`, then re-run `kvpatch check --format json`";
  }
  return "";
}

}  // namespace

ReportRequests collect_requests(const CheckReport& report, Dtype model_dtype, Dtype kv_cache_dtype) {
  ReportRequests requests;
  for (const ReportPlanSite& site : report.plan_sites) {
    if (site.status == SiteStatus::kIgnored) {
      requests.ignored.push_back({site.where(), site.status,
                                  "ignored by a `# kvpatch: ignore` comment" + (site.reason.empty() ? "" : ": " + site.reason)});
      continue;
    }
    if (const std::string reason = unverifiable_reason(site); !reason.empty()) {
      requests.unverifiable.push_back(
          {site.where(), site.status, reason, site.status == SiteStatus::kMissing && !site.reason.empty()});
      continue;
    }
    bool plans_fp8_kv_for_wider_query = false;  // what kvpatch's "unbuildable" is about
    for (const Dtype q : dtypes_for(site.q_role, model_dtype, kv_cache_dtype)) {
      for (const Dtype kv : dtypes_for(site.kv_role, model_dtype, kv_cache_dtype)) {
        plans_fp8_kv_for_wider_query |= is_fp8(kv) && !is_fp8(q);
        DtypeRequest request;
        request.q_dtype = q;
        request.kv_dtype = kv;
        request.head_dim_ckv = site.head_dim_ckv.value_or(kvpatch::mla::kHeadDimCkv);
        request.head_dim_kpe = site.head_dim_kpe.value_or(kvpatch::mla::kHeadDimKpe);
        DtypeRequest* existing = nullptr;
        for (DtypeRequest& seen : requests.pairs) {
          if (seen.q_dtype == q && seen.kv_dtype == kv && seen.head_dim_ckv == request.head_dim_ckv &&
              seen.head_dim_kpe == request.head_dim_kpe) {
            existing = &seen;
          }
        }
        if (existing == nullptr) {
          request.reason = unsupported_reason(request);
          request.supported = request.reason.empty();
          requests.pairs.push_back(request);
          existing = &requests.pairs.back();
        }
        existing->sites.push_back(site.where());
      }
    }
    // kvpatch judges with an FP8 cache in mind; run with --kv-cache-dtype bf16, the site plans BF16 x BF16,
    // which every FlashInfer builds.
    if (!site.unbuildable.empty() && plans_fp8_kv_for_wider_query) {
      requests.unbuildable.push_back(
          {site.where(), site.status,
           "kvpatch: " + site.unbuildable + " (its dtype pair is verified below on kvpatch's kernel; FlashInfer's plan() "
           "raises on it, so the patched server cannot decode)"});
    }
  }
  for (const ReportPatchGap& finding : report.patch_gaps) {
    // A cast to BF16 changes nothing in a BF16 cache, nor do scales matter to a BF16 plan; a field that is
    // not there is missing whatever the cache holds.
    if (!is_fp8(kv_cache_dtype) && finding.kind != PatchGapKind::kFieldMissing) continue;
    requests.patch_gaps.push_back({finding.where(), finding.kind, finding.status, patch_gap_reason(finding)});
  }
  return requests;
}

}  // namespace kvverify
