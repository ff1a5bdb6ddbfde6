// Reads a `kvpatch check --format json` report: its plan sites, its patch gaps and its errors.
#include "check_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "json.h"

namespace kvverify {
namespace {

// Locates errors as "path:line:column: field: problem (remedy)".
class Fields {
 public:
  explicit Fields(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const JsonValue& at, const std::string& field, const std::string& problem) const {
    throw InputError(path_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + field + ": " +
                     problem + " (expected the `kvpatch check --format json` schema, format_version 1)");
  }

  const JsonValue& member(const JsonValue& object, const std::string& key, const std::string& field) const {
    const JsonValue* value = object.find(key);
    if (value == nullptr) fail(object, field, "missing member \"" + key + "\"");
    return *value;
  }

  std::string string(const JsonValue& object, const std::string& key, const std::string& field) const {
    const JsonValue& value = member(object, key, field + "." + key);
    if (!value.is_string()) fail(value, field + "." + key, "expected a string");
    return value.as_string();
  }

  int integer(const JsonValue& object, const std::string& key, const std::string& field) const {
    const JsonValue& value = member(object, key, field + "." + key);
    if (!value.is_number() || value.as_number() != std::floor(value.as_number())) {
      fail(value, field + "." + key, "expected an integer");
    }
    return static_cast<int>(value.as_number());
  }

  // Lines and columns are 1-based in kvpatch's reports.
  int position(const JsonValue& object, const std::string& key, const std::string& field) const {
    const int value = integer(object, key, field);
    if (value < 1) fail(*object.find(key), field + "." + key, "expected a 1-based position, got " + std::to_string(value));
    return value;
  }

  DtypeRole role(const JsonValue& site, const std::string& key, const std::string& field, std::string& expr) const {
    const JsonValue& arg = member(site, key, field + "." + key);
    if (!arg.is_object()) fail(arg, field + "." + key, "expected an object {expr, role}");
    // The patcher writes null where no expression exists (an unknown site's **kwargs, say).
    const JsonValue& text = member(arg, "expr", field + "." + key + ".expr");
    if (!text.is_string() && !text.is_null()) fail(text, field + "." + key + ".expr", "expected a string or null");
    expr = text.is_string() ? text.as_string() : "";
    const std::string role = string(arg, "role", field + "." + key);
    if (role == "model") return DtypeRole::kModel;
    if (role == "kv_cache") return DtypeRole::kKvCache;
    if (role == "gated") return DtypeRole::kGated;
    if (role == "unknown") return DtypeRole::kUnknown;
    fail(*arg.find("role"), field + "." + key + ".role", "'" + role + "' is not one of model, kv_cache, gated, unknown");
  }

  SiteStatus status(const JsonValue& site, const std::string& field) const {
    const std::string status = string(site, "status", field);
    for (const SiteStatus known : {SiteStatus::kThreaded, SiteStatus::kMissing, SiteStatus::kGated, SiteStatus::kIgnored,
                                   SiteStatus::kUnknown}) {
      if (status == site_status_name(known)) return known;
    }
    fail(*site.find("status"), field + ".status",
         "'" + status + "' is not one of threaded, missing, gated, ignored, unknown");
  }

  // A key that only words a message: absent or null reads as "", any other non-string is an error.
  std::string text(const JsonValue& object, const std::string& key, const std::string& field) const {
    const JsonValue* value = object.find(key);
    if (value == nullptr || value->is_null()) return "";
    if (!value->is_string()) fail(*value, field + "." + key, "expected a string");
    return value->as_string();
  }

  std::optional<int> head_dim(const JsonValue& site, const std::string& key, const std::string& field) const {
    const JsonValue& arg = member(site, key, field + "." + key);
    if (!arg.is_object()) fail(arg, field + "." + key, "expected an object {expr, value}");
    const JsonValue* value = arg.find("value");
    if (value == nullptr || value->is_null()) return std::nullopt;
    if (!value->is_number() || value->as_number() != std::floor(value->as_number()) || value->as_number() < 0) {
      fail(*value, field + "." + key + ".value", "expected a non-negative integer or null");
    }
    return static_cast<int>(value->as_number());
  }

 private:
  std::string path_;
};

// Which statuses of one findings array are patch gaps, and which are not; any other is an input error.
struct PatchGapArray {
  const char* key;
  PatchGapKind kind;
  std::vector<std::string> findings, others;
};

// casts[], run_inputs[], run_scales[] and fields[]: each optional (run_scales was added within
// format_version 1), but a listed finding needs a position and a known status, since it can fail the run.
void read_patch_gaps(const Fields& fields, const JsonValue& document, CheckReport& report) {
  const PatchGapArray arrays[] = {
      {"casts", PatchGapKind::kRedundantCast, {"redundant"}, {"required"}},
      {"run_inputs", PatchGapKind::kRunInput, {"run-input-converted", "run-input-unknown"}, {"ignored"}},
      {"run_scales", PatchGapKind::kScalesMissing, {"missing"}, {"present", "ignored"}},
      {"fields", PatchGapKind::kFieldMissing, {"missing"}, {"present", "ignored"}},
  };
  // The field's name, for the message: the rule parameter in force.
  std::string kv_field;
  if (const JsonValue* parameters = document.find("parameters"); parameters != nullptr && parameters->is_object()) {
    kv_field = fields.text(*parameters, "kv_field", "parameters");
  }
  for (const PatchGapArray& array : arrays) {
    const JsonValue* list = document.find(array.key);
    if (list == nullptr || list->is_null()) continue;
    if (!list->is_array()) fields.fail(*list, array.key, "expected an array");
    for (size_t i = 0; i < list->as_array().size(); ++i) {
      const JsonValue& entry = list->as_array()[i];
      const std::string field = std::string(array.key) + "[" + std::to_string(i) + "]";
      if (!entry.is_object()) fields.fail(entry, field, "expected an object");
      const std::string status = fields.string(entry, "status", field);
      const auto known = [&status](const std::vector<std::string>& names) {
        return std::find(names.begin(), names.end(), status) != names.end();
      };
      if (known(array.others)) continue;
      if (!known(array.findings)) {
        std::string names;
        for (const auto* list_of : {&array.findings, &array.others}) {
          for (const std::string& name : *list_of) names += (names.empty() ? "" : ", ") + name;
        }
        fields.fail(*entry.find("status"), field + ".status", "'" + status + "' is not one of " + names);
      }
      ReportPatchGap finding;
      finding.kind = array.kind;
      finding.status = status;
      finding.file = fields.string(entry, "file", field);
      finding.line = fields.position(entry, "line", field);
      // fields[] gained `column` within format_version 1 (2026-11-30), so an older report lacks it.
      const bool column_optional = array.kind == PatchGapKind::kFieldMissing && entry.find("column") == nullptr;
      finding.column = column_optional ? 0 : fields.position(entry, "column", field);
      // What the finding is about: a run_scales entry names its call, a field its class (below).
      finding.expr = fields.text(entry, array.kind == PatchGapKind::kScalesMissing ? "call" : "expr", field);
      finding.consumer = fields.text(entry, array.kind == PatchGapKind::kFieldMissing ? "class" : "consumer", field);
      finding.why = fields.text(entry, "why", field);
      finding.effect = fields.text(entry, "effect", field);
      finding.flashinfer = fields.text(entry, "flashinfer", field);
      finding.fix = fields.text(entry, "fix", field);
      finding.reason = fields.text(entry, "reason", field);
      if (array.kind == PatchGapKind::kFieldMissing) {
        // With a reason, kvpatch adds no field because no plan() of the class is threaded: nothing reads it,
        // and those unthreaded sites are listed as unverifiable.
        if (!finding.reason.empty()) continue;
        finding.expr = kv_field;
      }
      report.patch_gaps.push_back(std::move(finding));
    }
  }
}

}  // namespace

std::string patch_gap_kind_name(PatchGapKind kind) {
  switch (kind) {
    case PatchGapKind::kRedundantCast: return "redundant_cast";
    case PatchGapKind::kRunInput: return "run_input";
    case PatchGapKind::kScalesMissing: return "scales_missing";
    case PatchGapKind::kFieldMissing: return "field_missing";
  }
  return "run_input";
}

std::string site_status_name(SiteStatus status) {
  switch (status) {
    case SiteStatus::kThreaded: return "threaded";
    case SiteStatus::kMissing: return "missing";
    case SiteStatus::kGated: return "gated";
    case SiteStatus::kIgnored: return "ignored";
    case SiteStatus::kUnknown: return "unknown";
  }
  return "unknown";
}

CheckReport parse_check_report(const std::string& text, const std::string& path) {
  JsonValue document;
  try {
    document = parse_json(text);
  } catch (const JsonSyntaxError& error) {
    throw InputError(path + ":" + std::to_string(error.line) + ":" + std::to_string(error.column) +
                     ": not valid JSON: " + error.what() + " (pass the output of `kvpatch check --format json`)");
  }
  const Fields fields(path);
  if (!document.is_object()) fields.fail(document, "(document)", "expected an object");
  if (fields.string(document, "tool", "(document)") != "kvpatch") {
    fields.fail(*document.find("tool"), "tool", "the report was not written by kvpatch");
  }
  const JsonValue& version = fields.member(document, "format_version", "format_version");
  if (!version.is_number() || version.as_number() != 1) {
    fields.fail(version, "format_version", "kvverify reads format_version 1 only");
  }

  CheckReport report;
  report.path = path;
  if (const JsonValue* root = document.find("root"); root != nullptr && root->is_string()) report.root = root->as_string();

  const JsonValue& sites = fields.member(document, "plan_sites", "plan_sites");
  if (!sites.is_array()) fields.fail(sites, "plan_sites", "expected an array");
  for (size_t i = 0; i < sites.as_array().size(); ++i) {
    const JsonValue& site = sites.as_array()[i];
    const std::string field = "plan_sites[" + std::to_string(i) + "]";
    if (!site.is_object()) fields.fail(site, field, "expected an object");
    ReportPlanSite parsed;
    parsed.file = fields.string(site, "file", field);
    parsed.line = fields.position(site, "line", field);
    parsed.column = fields.position(site, "column", field);
    parsed.callee = fields.string(site, "callee", field);
    parsed.status = fields.status(site, field);
    parsed.q_role = fields.role(site, "q_data_type", field, parsed.q_expr);
    parsed.kv_role = fields.role(site, "kv_data_type", field, parsed.kv_expr);
    parsed.head_dim_ckv = fields.head_dim(site, "head_dim_ckv", field);
    parsed.head_dim_kpe = fields.head_dim(site, "head_dim_kpe", field);
    if (const JsonValue* reason = site.find("reason"); reason != nullptr && reason->is_string()) {
      parsed.reason = reason->as_string();
    }
    // Optional (kvpatch writes it since 2026-11-30, within format_version 1), but a failure when present:
    // a wrong type must not pass for "buildable".
    if (const JsonValue* unbuildable = site.find("unbuildable"); unbuildable != nullptr && !unbuildable->is_null()) {
      if (!unbuildable->is_string() || unbuildable->as_string().empty()) {
        fields.fail(*unbuildable, field + ".unbuildable", "expected a non-empty string (kvpatch's reason) or null");
      }
      parsed.unbuildable = unbuildable->as_string();
    }
    report.plan_sites.push_back(std::move(parsed));
  }

  read_patch_gaps(fields, document, report);

  if (const JsonValue* errors = document.find("errors"); errors != nullptr && errors->is_array()) {
    for (const JsonValue& error : errors->as_array()) {
      const JsonValue* file = error.find("file");
      const JsonValue* line = error.find("line");
      const JsonValue* message = error.find("message");
      report.errors.push_back((file && file->is_string() ? file->as_string() : std::string("?")) + ":" +
                              (line && line->is_number() ? std::to_string(int(line->as_number())) : std::string("?")) +
                              ": " + (message && message->is_string() ? message->as_string() : std::string()));
    }
  }
  return report;
}

CheckReport read_check_report(const std::string& path) {
  // "-": the report piped in, `kvpatch check --format json DIR | kvverify --from -`.
  if (path == "-") {
    std::ostringstream text;
    text << std::cin.rdbuf();
    return parse_check_report(text.str(), kStdinName);
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputError(path + ": cannot open the report (check the path; write it with `kvpatch check --format json > FILE`)");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_check_report(text.str(), path);
}

}  // namespace kvverify
