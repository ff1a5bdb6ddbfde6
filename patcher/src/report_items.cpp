#include <algorithm>
#include <tuple>

#include "kvpatch/python_syntax.h"
#include "kvpatch/report.h"

// The findings of a run as one list, worded once for every report format (text, GitHub annotations, SARIF).
namespace kvpatch {

namespace {
std::string scope_name(const std::string& class_name, const std::string& method) {
  if (class_name.empty()) return method.empty() ? "<module>" : method;
  return class_name + "." + method;
}

std::string describe_role(DtypeRole role) {
  switch (role) {
    case DtypeRole::KvCache: return "the KV-cache dtype";
    case DtypeRole::Model: return "the model dtype";
    case DtypeRole::Gated: return "gated";
    case DtypeRole::Unknown: break;
  }
  return "unknown dtype";
}

std::string site_message(const PlanSite& s) {
  std::string m = scope_name(s.class_name, s.method) + ": ";
  if (!s.called_as.empty()) m += s.called_as + (s.receiver.empty() ? "" : "(" + s.receiver + ", ...)");
  else m += s.receiver.empty() ? s.callee : s.receiver + "." + s.callee.substr(s.callee.rfind('.') + 1);
  if (!s.bound_to.empty()) m += " (" + s.bound_to + ", installed with partial())";
  if (!s.kv_dtype.expr.empty()) {
    m += " binds q_data_type=" + s.q_dtype.expr + ", kv_data_type=" + s.kv_dtype.expr + " (" +
         (s.kv_dtype.role == DtypeRole::Gated ? "gated on " + s.kv_dtype.condition : describe_role(s.kv_dtype.role)) +
         (s.kv_dtype.passed_by.empty() || s.kv_dtype.role == DtypeRole::Unknown ? "" : ", as the calls of " + s.kv_dtype.passed_by + "() pass it") + ")";
  }
  switch (s.status) {
    case SiteStatus::Threaded: break;
    case SiteStatus::Missing:
      m += s.fix ? "; fix: " +
                       (s.fix_through_local.empty() ? "kv_data_type=" + s.fix_text
                                                    : s.fix_through_local + ", the local only kv_data_type reads") +
                       (s.fix_gated ? " (the gate of the class's other sites)" : "")
                 : "; no fix: " + s.reason;
      break;
    case SiteStatus::Gated: m += "; counts as threaded, casts feeding this wrapper stay"; break;
    case SiteStatus::Unknown:
    case SiteStatus::Ignored: m += "; " + s.reason; break;
  }
  if (!s.unbuildable.empty()) m += "; " + s.unbuildable;
  return m;
}

std::string field_scope(const FieldFinding& f) { return f.class_name + ".__init__"; }

std::string field_message(const FieldFinding& f, const std::string& value_hint) {
  std::string m = field_scope(f) + ": ";
  if (f.ignored) return m + (f.field_text.empty() ? "no KV dtype field is added; " : "KV dtype field " + f.field_text + "; ") + f.reason;
  if (f.present) return m + "KV dtype field " + f.field_text;
  if (f.fix) return m + "no KV dtype field; fix: add " + value_hint;
  return m + "no KV dtype field; " + f.reason;
}

std::string cast_message(const CastFinding& c) {
  std::string m = scope_name(c.class_name, c.method) + ": " + (c.variable.empty() ? "" : c.variable + " = ") +
                  one_line(c.expr);
  if (!c.redundant) return m + (c.stays_unjudged ? " stays: " : " is needed by ") + c.consumer;
  std::string locals;
  for (const std::string& l : c.unread_dtype_locals) locals += (locals.empty() ? "" : ", ") + l;
  std::string readers;
  for (const std::string& r : c.dtype_local_readers) readers += (readers.empty() ? "" : ", ") + r;
  const std::string read_by =
      readers.empty() ? ", which only it reads"
                      : ", which only it and the cast" + std::string(c.dtype_local_readers.size() > 1 ? "s" : "") + " at " +
                            readers + " read";
  return m + " feeds only " + c.consumer +
         (c.guard_dtype.empty() ? "; fix: remove the cast" + (locals.empty() ? "" : " and " + locals + read_by)
                                : "; fix: keep the cast only for KV caches other than " + c.guard_dtype +
                                      ", which the plan names as the model dtype");
}

std::string run_input_message(const RunInputFinding& r) {
  const std::string what = r.consumer_handed_on ? r.expr + " is handed on"
                           : r.consumer_rebinds ? "the arguments of " + r.consumer + " may not be the wrapper's"
                           : r.status == RunInputStatus::Converted
                               ? r.expr + " converts the KV data " + r.consumer + " takes"
                               : "the KV data " + r.consumer + " takes comes from " + r.expr;
  return scope_name(r.class_name, r.method) + ": " + what + ": " + r.why + "; " + r.effect;
}

std::string run_scale_message(const RunScaleFinding& r) {
  std::string m = scope_name(r.class_name, r.method) + ": " + r.call + " is handed the KV cache as stored, and " +
                  r.flashinfer + " needs FP8 scales there for an FP8 cache";
  if (r.ignored) return m + "; " + (r.ignore_reason.empty() ? "suppressed by kvpatch: ignore" : r.ignore_reason);
  if (r.present) return m + "; it " + r.how;
  return m + (r.fix ? "; fix: add " + r.fix_text + " (the cast it replaces applied no scale)" : "; no fix: " + r.reason);
}

}  // namespace

const char* ignore_problem_level(const Run& run) { return run.ignore_problems_fail ? "error" : "warning"; }

const char* finding_level(const ReportItem& item) {
  return item.status == "unknown" || item.status == "run-input-unknown" ? "warning" : "error";
}

std::vector<ReportItem> report_items(const Run& run) {
  std::vector<ReportItem> all;
  for (const FileReport& f : run.files) {
    const SourceFile& source = f.file->source;
    const std::string& path = source.display_path();
    std::vector<ReportItem> items;
    for (const PlanSite& s : f.plan_sites) {
      const bool finding = s.status == SiteStatus::Missing || s.status == SiteStatus::Unknown || !s.unbuildable.empty();
      items.push_back({path, s.line, s.column, site_label(s), site_message(s), s.rule, finding,
                       s.status == SiteStatus::Ignored ? std::optional<std::string>(s.reason) : std::nullopt,
                       scope_name(s.class_name, s.method), positioned(source, finding_edits(f, s))});
    }
    for (const FieldFinding& field : f.fields) {
      const std::string hint = field.fix ? one_line(field.fix->replacement) : "";
      const bool missing = !field.present && !field.ignored;
      items.push_back({path, field.line, field.column, field.ignored ? "ignored" : field.present ? "present" : "missing",
                       field_message(field, hint), field.rule, missing,
                       field.ignored ? std::optional<std::string>(field.reason) : std::nullopt,
                       field_scope(field), positioned(source, finding_edits(f, field))});
    }
    for (const CastFinding& c : f.casts) {
      items.push_back({path, c.line, c.column, c.redundant ? "redundant" : "required", cast_message(c), c.rule,
                       c.redundant, std::nullopt, scope_name(c.class_name, c.method),
                       positioned(source, finding_edits(f, c))});
    }
    for (const RunInputFinding& r : f.run_inputs) {
      items.push_back({path, r.line, r.column, run_input_label(r), run_input_message(r), r.rule, !r.ignored,
                       r.ignored ? std::optional<std::string>(r.ignore_reason) : std::nullopt,
                       scope_name(r.class_name, r.method), {}});  // run() inputs are never edited
    }
    for (const RunScaleFinding& r : f.run_scales) {
      const bool missing = !r.present && !r.ignored;
      items.push_back({path, r.line, r.column, r.ignored ? "ignored" : r.present ? "present" : "missing",
                       run_scale_message(r), r.rule, missing,
                       r.ignored ? std::optional<std::string>(r.ignore_reason) : std::nullopt,
                       scope_name(r.class_name, r.method), positioned(source, finding_edits(f, r))});
    }
    std::stable_sort(items.begin(), items.end(), [](const ReportItem& a, const ReportItem& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    std::move(items.begin(), items.end(), std::back_inserter(all));
  }
  return all;
}

}  // namespace kvpatch
