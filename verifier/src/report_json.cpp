// The --format json report (verifier/README.md documents the schema).
#include <string>

#include "json.h"
#include "run_report.h"

namespace kvverify {
namespace {

JsonValue metrics_json(const ParityMetrics& m) {
  JsonValue v;
  v.set("pass", m.pass);
  v.set("elements", m.elements);
  v.set("max_abs_err", m.max_abs_err);
  v.set("max_rel_err", m.max_rel_err);
  v.set("max_error_over_bound", m.max_bound_ratio);
  v.set("cosine", m.cosine);
  v.set("beyond_tolerance", m.beyond);
  v.set("beyond_tolerance_share", m.beyond_share);
  v.set("nonfinite", m.nonfinite);
  v.set("lost_nan", m.lost_nan);
  v.set("scale_fit", m.scale_fit);
  v.set("lse_max_abs_err", m.lse_max_abs_err);
  v.set("lse_beyond_tolerance", m.lse_beyond);
  v.set("requests_beyond_tolerance", m.requests_beyond);
  v.set("diagnosis", m.diagnosis);
  return v;
}

JsonValue shape_json(const ShapeResult& r) {
  JsonValue v;
  v.set("label", r.shape.label());
  v.set("model", r.shape.model);
  v.set("tp", r.shape.tp);
  v.set("heads", r.shape.heads);
  v.set("batch", r.shape.batch);
  v.set("context_len", r.shape.context_len);
  v.set("page_size", r.shape.page_size);
  v.set("q_dtype", dtype_name(r.shape.q_dtype));
  v.set("kv_dtype", dtype_name(r.shape.kv_dtype));
  v.set("ckv_scale", r.shape.ckv_scale);
  v.set("kpe_scale", r.shape.kpe_scale);
  v.set("sm_scale", r.shape.sm_scale);
  v.set("seed", std::to_string(r.shape.seed));  // a string: 64-bit seeds exceed a double's integers
  v.set("fault", fault_info(r.fault).id);
  v.set("tested", r.tested);
  v.set("status", status_name(r.status));
  v.set("reason", r.reason);
  v.set("bytes_needed", r.bytes_needed);
  v.set("seconds", r.seconds);
  v.set("reference", r.reference_kind);
  v.set("vs_reference", r.vs_reference ? metrics_json(*r.vs_reference) : JsonValue());
  if (r.vs_cast_path) {
    const CastParity& c = *r.vs_cast_path;
    JsonValue cast;
    cast.set("pass", c.pass);
    cast.set("required", c.bit_exact_required ? "bit-identical" : "within twice the output tolerance");
    cast.set("bit_identical", c.bits.identical());
    cast.set("differing_elements", c.bits.differing);
    cast.set("differing_lse", c.bits.lse_differing);
    cast.set("max_abs_diff", c.bits.max_abs_diff);
    cast.set("within_tolerance", c.within_tolerance ? metrics_json(*c.within_tolerance) : JsonValue());
    v.set("vs_cast_path", cast);
  } else {
    v.set("vs_cast_path", JsonValue());
  }
  return v;
}

// Sites listed apart from the verified ones: {site, status?, reason} each.
JsonValue site_list(const std::vector<UnverifiableSite>& sites, bool with_status) {
  JsonValue list(JsonValue::Array{});
  for (const UnverifiableSite& site : sites) {
    JsonValue entry;
    entry.set("site", site.site);
    if (with_status) entry.set("status", site_status_name(site.status));
    entry.set("reason", site.reason);
    list.push_back(entry);
  }
  return list;
}
}  // namespace

std::string render_json(const RunReport& report) {
  JsonValue root;
  root.set("tool", "kvverify");
  root.set("format_version", 1);
  root.set("mode", report.gpu ? "gpu" : "cpu");
  root.set("kernel_launched", report.gpu);
  root.set("device", report.device);

  JsonValue model;
  model.set("name", report.model.name);
  model.set("heads", report.model.heads);
  model.set("layers", report.model.layers);
  model.set("pool_tokens", report.model.pool_tokens);
  model.set("sm_scale", report.model.sm_scale);
  model.set("source", report.model.source);
  root.set("model", model);

  const Tolerance& t = report.tolerance;
  JsonValue tolerance;
  tolerance.set("output_rtol", t.output_rtol);
  tolerance.set("output_atol_times_magnitude", t.output_atol);
  tolerance.set("output_per_token_times_magnitude", t.output_per_token);
  tolerance.set("lse_atol_log2", t.lse_atol);
  tolerance.set("lse_per_token_log2", t.lse_per_token);
  tolerance.set("min_cosine", t.min_cosine);
  root.set("tolerance", tolerance);

  JsonValue shapes(JsonValue::Array{});
  for (const ShapeResult& shape : report.shapes) shapes.push_back(shape_json(shape));
  root.set("shapes", shapes);

  if (report.self_test) {
    JsonValue controls(JsonValue::Array{});
    for (const SelfTestControl& control : report.controls) {
      JsonValue c;
      c.set("control", fault_info(control.result.fault).id);
      c.set("fault", fault_info(control.result.fault).description);
      c.set("expected", control.expect_pass ? "PASS" : "FAIL");
      c.set("status", status_name(control.result.status));
      c.set("as_expected", control.as_expected());
      c.set("shape", shape_json(control.result));
      controls.push_back(c);
    }
    root.set("self_test", controls);
  } else {
    root.set("self_test", JsonValue());
  }

  if (report.from) {
    const FromReport& from = *report.from;
    JsonValue f;
    f.set("path", from.path);
    f.set("plan_sites", static_cast<int64_t>(from.plan_sites));
    f.set("model_dtype", dtype_name(from.model_dtype));
    f.set("kv_cache_dtype", dtype_name(from.kv_cache_dtype));
    JsonValue pairs(JsonValue::Array{});
    for (const DtypeRequest& pair : from.requests.pairs) {
      JsonValue p;
      p.set("q_dtype", dtype_name(pair.q_dtype));
      p.set("kv_dtype", dtype_name(pair.kv_dtype));
      p.set("head_dim_ckv", pair.head_dim_ckv);
      p.set("head_dim_kpe", pair.head_dim_kpe);
      p.set("supported", pair.supported);
      p.set("reason", pair.reason);
      JsonValue sites(JsonValue::Array{});
      for (const std::string& site : pair.sites) sites.push_back(site);
      p.set("sites", sites);
      pairs.push_back(p);
    }
    f.set("pairs", pairs);
    f.set("unverifiable", site_list(from.requests.unverifiable, true));
    f.set("ignored", site_list(from.requests.ignored, false));  // all "ignored": no status to tell apart
    f.set("unbuildable", site_list(from.requests.unbuildable, true));
    JsonValue patch_gaps(JsonValue::Array{});
    for (const PatchGap& finding : from.requests.patch_gaps) {
      JsonValue entry;
      entry.set("site", finding.site);
      entry.set("kind", patch_gap_kind_name(finding.kind));
      entry.set("status", finding.status);
      entry.set("reason", finding.reason);
      patch_gaps.push_back(entry);
    }
    f.set("patch_gaps", patch_gaps);
    JsonValue errors(JsonValue::Array{});
    for (const std::string& error : from.patcher_errors) errors.push_back(error);
    f.set("patcher_errors", errors);
    root.set("from_report", f);
  } else {
    root.set("from_report", JsonValue());
  }

  if (report.savings_bytes) {
    const CastBytes& b = *report.savings_bytes;
    JsonValue s;
    s.set("pool_tokens", b.pool_tokens);
    s.set("layers", b.layers);
    s.set("cast_read_bytes_per_layer", b.read_per_layer);
    s.set("cast_written_bytes_per_layer", b.written_per_layer);
    s.set("cast_moved_bytes_per_layer", b.moved_per_layer());
    s.set("cast_moved_bytes_per_step", b.moved_per_step());
    JsonValue timings(JsonValue::Array{});
    for (const CastPathTiming& timing : report.timings) {
      JsonValue x;
      x.set("tp", timing.tp);
      x.set("heads", timing.heads);
      x.set("batch", timing.batch);
      x.set("context_len", timing.context_len);
      x.set("cast_ms_per_layer", timing.cast_ms);
      x.set("cast_path_ms_per_layer", timing.cast_path_ms);
      x.set("direct_fp8_ms_per_layer", timing.direct_ms);
      x.set("speedup", timing.speedup());
      x.set("cast_path_ms_per_step", timing.cast_path_ms * b.layers);
      x.set("direct_fp8_ms_per_step", timing.direct_ms * b.layers);
      x.set("error", timing.error);
      timings.push_back(x);
    }
    s.set("timings", timings);
    root.set("savings", s);
  } else {
    root.set("savings", JsonValue());
  }

  int counts[4] = {0, 0, 0, 0};
  for (const ShapeResult& shape : report.shapes) ++counts[static_cast<int>(shape.status)];
  JsonValue summary;
  summary.set("shapes", static_cast<int64_t>(report.shapes.size()));
  summary.set("passed", counts[0]);
  summary.set("failed", counts[1]);
  summary.set("skipped", counts[2]);
  summary.set("errors", counts[3]);
  if (report.from) {
    int64_t unsupported = 0;
    for (const DtypeRequest& pair : report.from->requests.pairs) unsupported += pair.supported ? 0 : 1;
    summary.set("unsupported_pairs", unsupported);
    summary.set("unverifiable_sites", static_cast<int64_t>(report.from->requests.unverifiable.size()));
    int64_t missing = 0;
    for (const UnverifiableSite& site : report.from->requests.unverifiable) missing += site.status == SiteStatus::kMissing;
    summary.set("missing_sites", missing);
    summary.set("ignored_sites", static_cast<int64_t>(report.from->requests.ignored.size()));
    summary.set("unbuildable_sites", static_cast<int64_t>(report.from->requests.unbuildable.size()));
    summary.set("patch_gaps", static_cast<int64_t>(report.from->requests.patch_gaps.size()));
    summary.set("unread_files", static_cast<int64_t>(report.from->patcher_errors.size()));
  }
  summary.set("fatal", report.fatal);
  summary.set("result", report.passed() ? "PASS" : "FAIL");
  summary.set("seconds", report.seconds);
  root.set("summary", summary);
  return to_json_text(root);
}

}  // namespace kvverify
