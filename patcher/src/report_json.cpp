#include <nlohmann/json.hpp>

#include "kvpatch/report.h"

namespace kvpatch {
// ordered_json keeps the keys in the order patcher/REPORT-JSON.md documents, which reads better than sorted.
using json = nlohmann::ordered_json;

namespace {
json dtype_json(const DtypeArgument& a) {
  return {{"expr", a.expr.empty() ? json(nullptr) : json(a.expr)}, {"role", role_name(a.role)}};
}

json head_dim_json(const HeadDimArgument& a) {
  return {{"expr", a.expr.empty() ? json(nullptr) : json(a.expr)},
          {"value", a.value ? json(*a.value) : json(nullptr)}};
}

json position_json(const SourcePosition& p) { return {{"line", p.line}, {"column", p.column}}; }

// The optional `edits` key: what apply changes to fix this entry alone (finding_edits.h), as ruff's JSON gives a
// fix's edits: the text, and the range it replaces (end exclusive; equal ends insert).
void add_edits(json& j, const SourceFile& source, const std::vector<Edit>& edits) {
  if (edits.empty()) return;
  json out = json::array();
  for (const PositionedEdit& e : positioned(source, edits)) {
    out.push_back({{"content", e.content}, {"location", position_json(e.start)}, {"end_location", position_json(e.end)}});
  }
  j["edits"] = std::move(out);
}

// The keys every finding starts with, in the documented order: rule, file, line, column, class.
template <typename Finding>
json located(const Finding& f, const std::string& file) {
  return {{"rule", f.rule}, {"file", file}, {"line", f.line}, {"column", f.column}, {"class", f.class_name}};
}
}  // namespace

std::string json_report(const Run& run) {
  json report;
  report["tool"] = "kvpatch";
  report["format_version"] = 1;
  report["root"] = run.root.string();
  report["parameters"] = run.parameters;
  report["parameter_origins"] = run.parameter_origins.empty() ? json::object() : json(run.parameter_origins);
  json sites = json::array();
  json casts = json::array();
  json run_inputs = json::array();
  json fields = json::array();
  json run_scales = json::array();
  for (const FileReport& f : run.files) {
    const std::string& file = f.file->source.display_path();
    for (const PlanSite& s : f.plan_sites) {
      json j = located(s, file);
      j["method"] = s.method;
      j["receiver"] = s.receiver;
      j["callee"] = s.callee;
      j["q_data_type"] = dtype_json(s.q_dtype);
      j["kv_data_type"] = dtype_json(s.kv_dtype);
      j["head_dim_ckv"] = head_dim_json(s.head_dim_ckv);
      j["head_dim_kpe"] = head_dim_json(s.head_dim_kpe);
      j["status"] = status_name(s.status);
      if (!s.bound_to.empty()) j["bound_to"] = s.bound_to;
      if (s.status == SiteStatus::Gated) j["condition"] = s.condition;
      // A missing site apply leaves alone says why (a run() input, or a FlashInfer too old for the plan).
      const bool unfixed = s.status == SiteStatus::Missing && !s.fix && !s.reason.empty();
      if (s.status == SiteStatus::Unknown || s.status == SiteStatus::Ignored || unfixed) j["reason"] = s.reason;
      if (!s.unbuildable.empty()) j["unbuildable"] = s.unbuildable;
      add_edits(j, f.file->source, finding_edits(f, s));
      sites.push_back(std::move(j));
    }
    for (const CastFinding& c : f.casts) {
      json j = located(c, file);
      j["method"] = c.method;
      j["variable"] = c.variable;
      j["expr"] = c.expr;
      j["status"] = c.redundant ? "redundant" : "required";
      j["consumer"] = c.consumer;
      if (!c.guard_dtype.empty()) j["kept_for_dtypes_other_than"] = c.guard_dtype;
      add_edits(j, f.file->source, finding_edits(f, c));
      casts.push_back(std::move(j));
    }
    for (const RunInputFinding& r : f.run_inputs) {
      json j = located(r, file);
      j["method"] = r.method;
      j["expr"] = r.expr;
      j["status"] = run_input_label(r);
      j["why"] = r.why;
      j["consumer"] = r.consumer;
      j["effect"] = r.effect;
      // The cross-file case: the files whose plan sites may plan this run()'s wrapper.
      if (!r.planned_in.empty()) j["planned_in"] = r.planned_in;
      // What an ignored input would have been, and the comment's reason.
      if (r.ignored) {
        j["ignored_status"] = run_input_status_name(r.status);
        j["reason"] = r.ignore_reason;
      }
      run_inputs.push_back(std::move(j));
    }
    for (const FieldFinding& field : f.fields) {
      json j = located(field, file);
      j["status"] = field.ignored ? "ignored" : field.present ? "present" : "missing";
      const bool unfixed = !field.present && !field.ignored && !field.fix && !field.reason.empty();
      if (field.ignored || unfixed) j["reason"] = field.reason;
      add_edits(j, f.file->source, finding_edits(f, field));
      fields.push_back(std::move(j));
    }
    for (const RunScaleFinding& r : f.run_scales) {
      json j = located(r, file);
      j["method"] = r.method;
      j["call"] = r.call;
      j["status"] = r.ignored ? "ignored" : r.present ? "present" : "missing";
      j["flashinfer"] = r.flashinfer;
      if (r.present) j["passes"] = r.how;
      if (!r.present && !r.ignored) {
        if (r.fix) j["fix"] = r.fix_text;
        else j["reason"] = r.reason;
      }
      if (r.ignored) j["reason"] = r.ignore_reason;
      add_edits(j, f.file->source, finding_edits(f, r));
      run_scales.push_back(std::move(j));
    }
  }
  report["plan_sites"] = std::move(sites);
  report["casts"] = std::move(casts);
  report["run_inputs"] = std::move(run_inputs);
  report["fields"] = std::move(fields);
  report["run_scales"] = std::move(run_scales);
  json ignore_comments = json::array();
  for (const FileReport& f : run.files) {
    for (const IgnoreProblem& p : f.ignore_problems) {
      ignore_comments.push_back({{"file", f.file->source.display_path()},
                                 {"line", p.line},
                                 {"column", p.column},
                                 {"rule", p.rule},
                                 {"problem", p.problem},
                                 {"level", ignore_problem_level(run)},
                                 {"message", p.message}});
    }
  }
  report["ignore_comments"] = std::move(ignore_comments);
  json errors = json::array();
  for (const FileError& e : run.errors) {
    errors.push_back({{"file", e.file},
                      {"line", e.line},
                      {"column", e.column},
                      {"message", e.remedy.empty() ? e.message : e.message + "; " + e.remedy}});
  }
  report["errors"] = std::move(errors);
  const Summary s = summarize(run);
  report["summary"] = {{"files", s.files},         {"plan_sites", s.plan_sites}, {"threaded", s.threaded},
                       {"missing", s.missing},     {"gated", s.gated},           {"unknown", s.unknown},
                       {"ignored", s.ignored},     {"unbuildable", s.unbuildable}, {"casts", s.casts},           {"redundant", s.redundant},
                       {"required", s.required},   {"run_inputs_converted", s.run_inputs_converted},
                       {"run_inputs_unknown", s.run_inputs_unknown}, {"run_inputs_ignored", s.run_inputs_ignored},
                       {"run_scales", s.run_scales}, {"run_scales_missing", s.run_scales_missing},
                       {"run_scales_ignored", s.run_scales_ignored},
                       {"edits", s.edits}};
  return report.dump(2) + "\n";
}

}  // namespace kvpatch
