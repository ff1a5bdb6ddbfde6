#include <algorithm>
#include <sstream>
#include <tuple>

#include "kvpatch/python_syntax.h"
#include "kvpatch/report.h"

namespace kvpatch {

Summary summarize(const Run& run) {
  Summary s;
  for (const FileReport& f : run.files) {
    ++s.files;
    for (const PlanSite& p : f.plan_sites) {
      ++s.plan_sites;
      switch (p.status) {
        case SiteStatus::Threaded: ++s.threaded; break;
        case SiteStatus::Missing: ++s.missing; break;
        case SiteStatus::Gated: ++s.gated; break;
        case SiteStatus::Unknown: ++s.unknown; break;
        case SiteStatus::Ignored: ++s.ignored; break;
      }
    }
    for (const CastFinding& c : f.casts) {
      ++s.casts;
      ++(c.redundant ? s.redundant : s.required);
    }
    for (const FieldFinding& field : f.fields) {
      ++s.fields;
      if (!field.present && !field.ignored) ++s.fields_missing;
    }
    for (const RunInputFinding& r : f.run_inputs) {
      ++(r.ignored ? s.run_inputs_ignored
                   : r.status == RunInputStatus::Converted ? s.run_inputs_converted : s.run_inputs_unknown);
    }
    s.edits += static_cast<int>(f.edits.size());
  }
  return s;
}

bool has_findings(const Summary& s) {
  return s.missing + s.unknown + s.redundant + s.fields_missing + s.run_inputs_converted + s.run_inputs_unknown > 0;
}

std::string summary_line(const Summary& s) {
  std::ostringstream out;
  out << s.plan_sites << " plan sites: " << s.threaded << " threaded, " << s.missing << " missing, " << s.gated
      << " gated, " << s.unknown << " unknown, " << s.ignored << " ignored; " << s.casts << " casts: " << s.redundant
      << " redundant, " << s.required << " required; ";
  if (s.run_inputs_converted + s.run_inputs_unknown > 0) {
    out << s.run_inputs_converted + s.run_inputs_unknown << " run() inputs unsafe: " << s.run_inputs_converted
        << " converted, " << s.run_inputs_unknown << " unknown; ";
  }
  if (s.run_inputs_ignored > 0) out << s.run_inputs_ignored << " run() inputs ignored; ";
  out << s.edits << " edits";
  return out.str();
}

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
  std::string m = scope_name(s.class_name, s.method) + ": " +
                  (s.receiver.empty() ? s.callee : s.receiver + "." + s.callee.substr(s.callee.rfind('.') + 1));
  if (!s.bound_to.empty()) m += " (" + s.bound_to + ", installed with partial())";
  if (!s.kv_dtype.expr.empty()) {
    m += " binds q_data_type=" + s.q_dtype.expr + ", kv_data_type=" + s.kv_dtype.expr + " (" +
         (s.kv_dtype.role == DtypeRole::Gated ? "gated on " + s.kv_dtype.condition : describe_role(s.kv_dtype.role)) +
         ")";
  }
  switch (s.status) {
    case SiteStatus::Threaded: break;
    case SiteStatus::Missing:
      m += s.fix ? "; fix: kv_data_type=" + s.fix_text + (s.fix_gated ? " (the gate of the class's other sites)" : "")
                 : "; no fix: " + s.reason;
      break;
    case SiteStatus::Gated: m += "; counts as threaded, casts feeding this wrapper stay"; break;
    case SiteStatus::Unknown:
    case SiteStatus::Ignored: m += "; " + s.reason; break;
  }
  return m;
}

std::string field_message(const FieldFinding& f, const std::string& value_hint) {
  std::string m = f.class_name + ".__init__: ";
  if (f.ignored) return m + (f.field_text.empty() ? "no KV dtype field is added; " : "KV dtype field " + f.field_text + "; ") + f.reason;
  if (f.present) return m + "KV dtype field " + f.field_text;
  if (f.fix) return m + "no KV dtype field; fix: add " + value_hint;
  return m + "no KV dtype field; " + f.reason;
}

std::string cast_message(const CastFinding& c) {
  std::string m = scope_name(c.class_name, c.method) + ": " + (c.variable.empty() ? "" : c.variable + " = ") +
                  one_line(c.expr);
  if (!c.redundant) return m + " is needed by " + c.consumer;
  return m + " feeds only " + c.consumer +
         (c.guard_dtype.empty() ? "; fix: remove the cast"
                                : "; fix: keep the cast only for KV caches other than " + c.guard_dtype +
                                      ", which the plan names as the model dtype");
}

std::string run_input_message(const RunInputFinding& r) {
  const std::string what = r.status == RunInputStatus::Converted
                               ? r.expr + " converts the KV data " + r.consumer + " takes"
                               : "the KV data " + r.consumer + " takes comes from " + r.expr;
  return scope_name(r.class_name, r.method) + ": " + what + ": " + r.why + "; " + r.effect;
}

struct Line {
  int line, column;
  std::string text;
};
}  // namespace

std::string text_report(const Run& run) {
  std::ostringstream out;
  for (const FileReport& f : run.files) {
    const std::string& path = f.file->source.display_path();
    std::vector<Line> lines;
    auto prefix = [&](int line, int column, const char* status) {
      return path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + status + ": ";
    };
    for (const PlanSite& s : f.plan_sites) {
      lines.push_back({s.line, s.column, prefix(s.line, s.column, status_name(s.status)) + site_message(s) + " [" + s.rule + "]"});
    }
    for (const FieldFinding& field : f.fields) {
      const std::string hint = field.fix ? one_line(field.fix->replacement) : "";
      lines.push_back({field.line, field.column,
                       prefix(field.line, field.column, field.ignored ? "ignored" : field.present ? "present" : "missing") +
                           field_message(field, hint) + " [" + field.rule + "]"});
    }
    for (const CastFinding& c : f.casts) {
      lines.push_back({c.line, c.column,
                       prefix(c.line, c.column, c.redundant ? "redundant" : "required") + cast_message(c) + " [" +
                           c.rule + "]"});
    }
    for (const RunInputFinding& r : f.run_inputs) {
      lines.push_back({r.line, r.column,
                       prefix(r.line, r.column, run_input_label(r)) + run_input_message(r) + " [" + r.rule + "]"});
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const Line& a, const Line& b) { return std::tie(a.line, a.column) < std::tie(b.line, b.column); });
    for (const Line& l : lines) out << l.text << "\n";
  }
  out << summary_line(summarize(run)) << "\n";
  return out.str();
}

}  // namespace kvpatch
