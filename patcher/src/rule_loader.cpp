#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <set>

#include "kvpatch/input_error.h"
#include "kvpatch/module_helper.h"
#include "kvpatch/parameters.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {
namespace fs = std::filesystem;

bool FileSelection::matches(const std::string& text) const {
  auto holds = [&](const std::string& s) { return text.find(s) != std::string::npos; };
  return std::all_of(content_contains.begin(), content_contains.end(), [&](const std::string& s) {
    if (holds(s)) return true;
    auto others = stand_ins.find(s);
    return others != stand_ins.end() && std::any_of(others->second.begin(), others->second.end(), holds);
  });
}

const PlanSiteRule* RuleSet::plan_site_rule(const std::string& id) const {
  for (const PlanSiteRule& r : plan_site_rules) if (r.id == id) return &r;
  return nullptr;
}

std::vector<std::string> RuleSet::module_helper_names() const {
  std::vector<std::string> out;
  for (const FieldRule& r : field_rules) {
    if (!r.module_helper_name.empty()) out.push_back(r.module_helper_name);
  }
  return out;
}

const FieldRule* RuleSet::field_rule(const std::string& id) const {
  for (const FieldRule& r : field_rules) if (r.id == id) return &r;
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> RuleSet::finding_ids() const {
  std::vector<std::pair<std::string, std::string>> ids;
  for (const PlanSiteRule& r : plan_site_rules) ids.emplace_back(r.id, r.description);
  for (const FieldRule& r : field_rules) ids.emplace_back(r.id, r.description);
  for (const CastRule& r : cast_rules) {
    ids.emplace_back(r.id, r.description);
    if (r.run_input_id != r.id) {
      ids.emplace_back(r.run_input_id,
                       "KV data handed to a run() whose wrapper is, or after the fix will be, planned for the KV-cache "
                       "dtype is converted on the way (run-input-converted) or comes from where kvpatch cannot trace "
                       "(run-input-unknown). Reported by the cast rule " + r.id + ": " + r.description);
    }
    for (const Fp8Consumer& c : r.fp8_consumers) {
      if (c.kv_scales) ids.emplace_back(c.kv_scales->id, c.kv_scales->description);
    }
  }
  return ids;
}

bool glob_match(const std::string& pattern, const std::string& name) {
  // Iterative wildcard match with backtracking to the last `*`.
  std::size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) { ++p; ++n; }
    else if (p < pattern.size() && pattern[p] == '*') { star = p++; mark = n; }
    else if (star != std::string::npos) { p = star + 1; n = ++mark; }
    else return false;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

// Reads one rule file; every error names the file, the line and the field.
class RuleReader {
public:
  RuleReader(std::string file, const std::map<std::string, std::string>* parameters)
      : file_(std::move(file)), parameters_(parameters) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& field, const std::string& problem,
                         const std::string& remedy) const {
    const int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    throw InputError(file_, line, "field '" + field + "': " + problem, remedy);
  }

  void allow_keys(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> keys) const {
    if (!map.IsMap()) fail(map, path, "expected a mapping", "see the other files in rules/ for the layout");
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
        std::string known;
        for (const char* k : keys) known += std::string(known.empty() ? "" : ", ") + k;
        fail(it->first, join(path, key), "unknown field", "known fields here: " + known);
      }
    }
  }

  YAML::Node required(const YAML::Node& map, const std::string& path, const char* key) const {
    YAML::Node node = map[key];
    if (!node.IsDefined() || node.IsNull()) fail(map, join(path, key), "missing", "add it");
    return node;
  }

  std::string string(const YAML::Node& map, const std::string& path, const char* key, bool must,
                     const std::string& fallback = "") const {
    YAML::Node node = must ? required(map, path, key) : map[key];
    if (!node.IsDefined() || node.IsNull()) return fallback;
    if (!node.IsScalar()) fail(node, join(path, key), "expected a string", "write a plain or quoted string");
    return expand(node, join(path, key), node.as<std::string>());
  }

  // Free text that is never expanded: a description may mention `${...}` parameters by name.
  std::string prose(const YAML::Node& map, const char* key) const {
    YAML::Node node = map[key];
    if (!node.IsDefined() || node.IsNull()) return "";
    if (!node.IsScalar()) fail(node, key, "expected a string", "write a plain, quoted or folded (>) string");
    return node.as<std::string>();
  }

  std::string expand(const YAML::Node& at, const std::string& field, const std::string& text) const {
    if (parameters_ == nullptr) return text;
    try {
      return expand_parameters(text, *parameters_);
    } catch (const ParameterError& e) {
      fail(at, field, e.what(), "declare it under parameters: in rules/parameters.yaml or fix the reference");
    }
  }

  bool boolean(const YAML::Node& map, const std::string& path, const char* key, bool fallback) const {
    YAML::Node node = map[key];
    if (!node.IsDefined() || node.IsNull()) return fallback;
    bool value = fallback;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      fail(node, join(path, key), "expected true or false", "write true or false");
    }
    return value;
  }

  std::vector<std::string> strings(const YAML::Node& map, const std::string& path, const char* key, bool must) const {
    YAML::Node node = must ? required(map, path, key) : map[key];
    std::vector<std::string> out;
    if (!node.IsDefined() || node.IsNull()) return out;
    if (!node.IsSequence()) fail(node, join(path, key), "expected a list of strings", "write [a, b] or a - list");
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) fail(item, join(path, key), "expected a string", "write a plain or quoted string");
      out.push_back(expand(item, join(path, key), item.as<std::string>()));
    }
    return out;
  }

  std::vector<int> integers(const YAML::Node& map, const std::string& path, const char* key) const {
    std::vector<int> out;
    YAML::Node node = map[key];
    if (!node.IsDefined() || node.IsNull()) return out;
    if (!node.IsSequence()) fail(node, join(path, key), "expected a list of integers", "write [12, 13]");
    for (const YAML::Node& item : node) {
      int value = 0;
      if (!item.IsScalar() || !YAML::convert<int>::decode(item, value)) {
        fail(item, join(path, key), "expected an integer", "write a whole number");
      }
      out.push_back(value);
    }
    return out;
  }

  FileSelection files(const YAML::Node& rule) const {
    FileSelection selection;
    YAML::Node node = rule["files"];
    if (!node.IsDefined()) return selection;
    allow_keys(node, "files", {"content_contains"});
    selection.content_contains = strings(node, "files", "content_contains", false);
    return selection;
  }

  const std::string& file() const { return file_; }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

private:
  std::string file_;
  const std::map<std::string, std::string>* parameters_;
};

// An edit operation named by a rule must be one the rule's kind can perform.
std::string operation(const RuleReader& r, const YAML::Node& map, const std::string& path, const char* key,
                      const std::string& fallback, std::initializer_list<const char*> allowed) {
  std::string name = r.string(map, path, key, false, fallback);
  if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return name == a; })) {
    std::string known;
    for (const char* a : allowed) known += std::string(known.empty() ? "" : ", ") + a;
    r.fail(map[key], RuleReader::join(path, key), "'" + name + "' is not an edit operation of this rule kind",
           "use one of " + known);
  }
  return name;
}

PlanSiteRule read_plan_site_rule(const RuleReader& r, const YAML::Node& doc) {
  r.allow_keys(doc, "", {"id", "kind", "description", "files", "callee", "aliases", "unknown_receiver_arity",
                         "arguments", "dtype_roles", "fp8_kv_since_flashinfer", "fix", "tests"});
  PlanSiteRule rule;
  rule.id = r.string(doc, "", "id", true);
  rule.description = r.prose(doc, "description");
  rule.file = r.file();
  rule.files = r.files(doc);
  YAML::Node callee = r.required(doc, "", "callee");
  r.allow_keys(callee, "callee", {"class", "module", "other_classes", "method", "parameters"});
  rule.wrapper_class = r.string(callee, "callee", "class", true);
  rule.wrapper_module = r.string(callee, "callee", "module", false);
  rule.known_other_classes = r.strings(callee, "callee", "other_classes", false);
  rule.method = r.string(callee, "callee", "method", true);
  const std::string parameters = r.string(callee, "callee", "parameters", true);
  try {
    rule.signature = parse_parameter_list(parameters);
  } catch (const std::invalid_argument& e) {
    r.fail(callee["parameters"], "callee.parameters", e.what(), "write the parameters as in a Python def");
  }
  if (YAML::Node aliases = doc["aliases"]; aliases.IsDefined()) {
    r.allow_keys(aliases, "aliases", {"by_signature", "same_position", "by_partial"});
    rule.aliases_by_signature = r.boolean(aliases, "aliases", "by_signature", true);
    rule.alias_same_position = r.strings(aliases, "aliases", "same_position", false);
    rule.aliases_by_partial = r.boolean(aliases, "aliases", "by_partial", true);
  }
  rule.unknown_receiver_arity = r.integers(doc, "", "unknown_receiver_arity");
  YAML::Node arguments = r.required(doc, "", "arguments");
  r.allow_keys(arguments, "arguments", {"q_dtype", "kv_dtype", "head_dim_ckv", "head_dim_kpe"});
  rule.q_parameter = r.string(arguments, "arguments", "q_dtype", true);
  rule.kv_parameter = r.string(arguments, "arguments", "kv_dtype", true);
  rule.head_dim_ckv_parameter = r.string(arguments, "arguments", "head_dim_ckv", false);
  rule.head_dim_kpe_parameter = r.string(arguments, "arguments", "head_dim_kpe", false);
  for (const std::string* name : {&rule.q_parameter, &rule.kv_parameter, &rule.head_dim_ckv_parameter,
                                  &rule.head_dim_kpe_parameter}) {
    if (!name->empty() && rule.signature.index_of(*name) < 0) {
      r.fail(arguments, "arguments", "'" + *name + "' is not a parameter of callee.parameters",
             "name a parameter of the callee's signature");
    }
  }
  for (const std::string& name : rule.alias_same_position) {
    if (rule.signature.index_of(name) < 0) {
      r.fail(doc["aliases"]["same_position"], "aliases.same_position", "'" + name + "' is not a callee parameter",
             "name a parameter of the callee's signature");
    }
  }
  YAML::Node roles = r.required(doc, "", "dtype_roles");
  r.allow_keys(roles, "dtype_roles", {"kv_cache", "model"});
  rule.roles.kv_cache = r.strings(roles, "dtype_roles", "kv_cache", true);
  rule.roles.model = r.strings(roles, "dtype_roles", "model", true);
  rule.fp8_kv_since = r.string(doc, "", "fp8_kv_since_flashinfer", false);
  YAML::Node fix = r.required(doc, "", "fix");
  r.allow_keys(fix, "fix", {"field_rule", "operation", "when_defaulted"});
  rule.field_rule = r.string(fix, "fix", "field_rule", true);
  rule.operation = operation(r, fix, "fix", "operation", "replace-bound-argument", {"replace-bound-argument"});
  rule.operation_when_defaulted =
      operation(r, fix, "fix", "when_defaulted", "add-keyword-argument", {"add-keyword-argument", "none"});
  return rule;
}

// The parameters given outside the rules (a project's .kvpatch.toml, --set), with what the rules declare,
// so that a statement they break is blamed on the one given that breaks it rather than on the rule file.
struct GivenParameters {
  const std::map<std::string, ParameterOverride>& overrides;
  const std::map<std::string, std::string>& raw;       // every parameter, overrides applied, unexpanded
  const std::map<std::string, std::string>& declared;  // the rules' own values

  // `text` expanded with the named parameters back at the rules' values; nullopt when it does not expand.
  std::optional<std::string> expand_without(const std::string& text, const std::vector<std::string>& names) const {
    std::map<std::string, std::string> parameters = raw;
    for (const std::string& name : names) parameters[name] = declared.at(name);
    try {
      return expand_parameters(text, expand_all(parameters));
    } catch (const ParameterError&) {
      return std::nullopt;
    }
  }
};

bool one_python_assignment(const std::string& statement) {
  PythonTree tree(statement);
  TSNode root = tree.root();
  return !first_syntax_error(root) && syntax::named_child_count(root) == 1 &&
         syntax::is(syntax::named_child(syntax::named_child(root, 0), 0), "assignment");
}

// The given parameter that breaks `field = value`: one whose value alone put back at the rules' value
// makes the statement parse, preferring one whose value is in the statement (putting back a selector
// such as kv_dtype_form fixes it too, by choosing another expression); failing that (more than one is
// broken), the first that changes the statement when all are put back and it parses then. Null when the
// rules' own values break it.
const std::string* breaking_parameter(const GivenParameters& given, const std::string& raw_statement,
                                      const std::string& statement) {
  std::vector<std::string> all;
  const std::string* fixes_it = nullptr;
  const std::string* changes_it = nullptr;  // the first whose revert changes the statement at all
  for (const auto& [name, override_] : given.overrides) {
    all.push_back(name);
    const std::optional<std::string> alone = given.expand_without(raw_statement, {name});
    if (!alone || *alone == statement) continue;
    if (changes_it == nullptr) changes_it = &name;
    if (!one_python_assignment(*alone)) continue;
    if (!override_.value.empty() && statement.find(override_.value) != std::string::npos) return &name;
    if (fixes_it == nullptr) fixes_it = &name;
  }
  if (fixes_it != nullptr) return fixes_it;
  const std::optional<std::string> reverted = given.expand_without(raw_statement, all);
  return reverted && one_python_assignment(*reverted) ? changes_it : nullptr;
}

FieldRule read_field_rule(const RuleReader& r, const YAML::Node& doc, const GivenParameters& given) {
  r.allow_keys(doc, "", {"id", "kind", "description", "files", "scope", "anchor", "field", "value", "operation",
                         "module_helper", "module_helper_imports", "tests"});
  FieldRule rule;
  rule.id = r.string(doc, "", "id", true);
  rule.description = r.prose(doc, "description");
  rule.file = r.file();
  rule.files = r.files(doc);
  YAML::Node scope = r.required(doc, "", "scope");
  r.allow_keys(scope, "scope", {"init_assigns", "sites_rule", "require_sites", "class_names"});
  rule.init_assigns = r.string(scope, "scope", "init_assigns", true);
  rule.sites_rule = r.string(scope, "scope", "sites_rule", true);
  rule.require_sites = r.boolean(scope, "scope", "require_sites", true);
  rule.class_patterns = r.strings(scope, "scope", "class_names", false);
  rule.anchor = r.string(doc, "", "anchor", true);
  rule.field = r.string(doc, "", "field", true);
  rule.value = r.string(doc, "", "value", true);
  rule.operation = operation(r, doc, "", "operation", "insert-after-anchor", {"insert-after-anchor"});
  rule.module_helper = r.string(doc, "", "module_helper", false);
  rule.module_helper_imports = r.strings(doc, "", "module_helper_imports", false);
  if (!rule.module_helper.empty()) {
    rule.module_helper_name = module_helper_name(rule.module_helper);
    if (rule.module_helper_name.empty()) {
      r.fail(doc["module_helper"], "module_helper", "is not one top-level Python function definition",
             "write one def (decorators allowed), indented with 4 spaces, or leave it empty");
    }
  }
  const std::string statement = rule.field + " = " + rule.value + "\n";
  if (!one_python_assignment(statement)) {
    const std::string raw_statement = doc["field"].as<std::string>() + " = " + doc["value"].as<std::string>() + "\n";
    if (const std::string* name = breaking_parameter(given, raw_statement, statement)) {
      const ParameterOverride& culprit = given.overrides.at(*name);
      throw InputError(culprit.origin, culprit.line,
                       "parameter '" + *name + "' = '" + culprit.value + "' makes the field rule's statement `" +
                           rule.field + " = " + rule.value + "` something other than one Python assignment",
                       *name == "kv_field" ? "give an attribute or a name, such as self.kv_data_type"
                                           : "give one Python expression");
    }
    r.fail(doc["value"], "value", "`" + rule.field + " = " + rule.value + "` is not one Python assignment",
           "check the field and value (and any --set kv_field=/kv_dtype_expr= given)");
  }
  return rule;
}

std::vector<std::string> required_list(const RuleReader& r, const YAML::Node& map, const std::string& path,
                                       const char* key) {
  std::vector<std::string> out = r.strings(map, path, key, true);
  if (out.empty()) r.fail(map[key], RuleReader::join(path, key), "must not be empty", "list at least one entry");
  return out;
}

DeviceArgumentKind device_argument_kind(const RuleReader& r, const YAML::Node& at, const std::string& path,
                                        const std::string& name) {
  if (name == "device") return DeviceArgumentKind::Device;
  if (name == "any") return DeviceArgumentKind::Any;
  r.fail(at, path, "'" + name + "' is not an argument kind", "use device (a value kv_path.device_values names) or any");
}

// kv_path.device_moves: `- {method: to, positional: [device], keywords: {device: device, non_blocking: any}}`.
std::vector<DeviceMove> read_device_moves(const RuleReader& r, const YAML::Node& path) {
  std::vector<DeviceMove> out;
  YAML::Node moves = path["device_moves"];
  if (!moves.IsDefined() || moves.IsNull()) return out;
  if (!moves.IsSequence()) r.fail(moves, "kv_path.device_moves", "expected a list", "write - {method: to, positional: [device]}");
  for (const YAML::Node& m : moves) {
    r.allow_keys(m, "kv_path.device_moves", {"method", "positional", "keywords"});
    DeviceMove move;
    move.method = r.string(m, "kv_path.device_moves", "method", true);
    for (const std::string& kind : r.strings(m, "kv_path.device_moves", "positional", false)) {
      move.positional.push_back(device_argument_kind(r, m["positional"], "kv_path.device_moves.positional", kind));
    }
    if (YAML::Node keywords = m["keywords"]; keywords.IsDefined() && !keywords.IsNull()) {
      if (!keywords.IsMap()) r.fail(keywords, "kv_path.device_moves.keywords", "expected a mapping", "write {keyword: kind}");
      for (auto it = keywords.begin(); it != keywords.end(); ++it) {
        if (!it->second.IsScalar()) r.fail(it->second, "kv_path.device_moves.keywords", "expected a kind", "write device or any");
        move.keywords[it->first.as<std::string>()] =
            device_argument_kind(r, it->second, "kv_path.device_moves.keywords", it->second.as<std::string>());
      }
    }
    out.push_back(std::move(move));
  }
  return out;
}

DeviceValues read_device_values(const RuleReader& r, const YAML::Node& path) {
  DeviceValues values;
  YAML::Node node = path["device_values"];
  if (!node.IsDefined() || node.IsNull()) return values;
  r.allow_keys(node, "kv_path.device_values", {"strings", "names", "attributes", "calls", "integers"});
  values.strings = r.strings(node, "kv_path.device_values", "strings", false);
  values.names = r.strings(node, "kv_path.device_values", "names", false);
  values.attributes = r.strings(node, "kv_path.device_values", "attributes", false);
  values.calls = r.strings(node, "kv_path.device_values", "calls", false);
  values.integers = r.boolean(node, "kv_path.device_values", "integers", false);
  return values;
}

CastRule read_cast_rule(const RuleReader& r, const YAML::Node& doc) {
  r.allow_keys(doc, "", {"id", "kind", "description", "files", "functions", "kv_sources", "cast",
                         "metadata_attributes", "fp8_consumers", "kv_path", "operation", "guard_operation", "run_input_id",
                         "tests"});
  CastRule rule;
  rule.id = r.string(doc, "", "id", true);
  rule.description = r.prose(doc, "description");
  rule.file = r.file();
  rule.files = r.files(doc);
  rule.functions = required_list(r, doc, "", "functions");
  YAML::Node sources = r.required(doc, "", "kv_sources");
  r.allow_keys(sources, "kv_sources", {"calls", "attributes"});
  rule.kv_source_calls = r.strings(sources, "kv_sources", "calls", false);
  rule.kv_source_attributes = r.strings(sources, "kv_sources", "attributes", false);
  if (rule.kv_source_calls.empty() && rule.kv_source_attributes.empty()) {
    r.fail(sources, "kv_sources", "names no call and no attribute", "list the KV-cache sources, e.g. calls: [get_key_buffer]");
  }
  if (YAML::Node cast = doc["cast"]; cast.IsDefined()) {
    r.allow_keys(cast, "cast", {"method", "argument_attribute", "keyword", "extra_keywords"});
    rule.cast_method = r.string(cast, "cast", "method", false, "to");
    rule.cast_argument_attribute = r.string(cast, "cast", "argument_attribute", false, "dtype");
    rule.cast_keyword = r.string(cast, "cast", "keyword", false, "dtype");
    rule.cast_extra_keywords = r.strings(cast, "cast", "extra_keywords", false);
  }
  rule.metadata_attributes = r.strings(doc, "", "metadata_attributes", false);
  rule.operation = operation(r, doc, "", "operation", "remove-method-call", {"remove-method-call"});
  rule.guard_operation = operation(r, doc, "", "guard_operation", "guard-cast", {"guard-cast", "none"});
  rule.run_input_id = r.string(doc, "", "run_input_id", false, rule.id);
  if (YAML::Node path = doc["kv_path"]; path.IsDefined()) {
    r.allow_keys(path, "kv_path", {"keeps_dtype", "dtype_overloads", "converts", "dtype_names", "device_moves",
                                   "device_values"});
    rule.kv_path.keeps_dtype = r.strings(path, "kv_path", "keeps_dtype", false);
    rule.kv_path.dtype_overloads = r.strings(path, "kv_path", "dtype_overloads", false);
    rule.kv_path.converts = r.strings(path, "kv_path", "converts", false);
    rule.kv_path.dtype_names = r.strings(path, "kv_path", "dtype_names", false);
    for (const std::string& m : rule.kv_path.dtype_overloads) {
      if (std::find(rule.kv_path.keeps_dtype.begin(), rule.kv_path.keeps_dtype.end(), m) == rule.kv_path.keeps_dtype.end()) {
        r.fail(path["dtype_overloads"], "kv_path.dtype_overloads", "'" + m + "' is not listed in kv_path.keeps_dtype",
               "list it under keeps_dtype too");
      }
    }
    rule.kv_path.device_moves = read_device_moves(r, path);
    rule.kv_path.device_values = read_device_values(r, path);
    const DeviceValues& v = rule.kv_path.device_values;
    const bool names_devices = !v.strings.empty() || !v.names.empty() || !v.attributes.empty() || !v.calls.empty() || v.integers;
    const auto takes_device = [](const DeviceMove& m) {
      return std::find(m.positional.begin(), m.positional.end(), DeviceArgumentKind::Device) != m.positional.end() ||
             std::any_of(m.keywords.begin(), m.keywords.end(), [](const auto& k) { return k.second == DeviceArgumentKind::Device; });
    };
    if (!names_devices && std::any_of(rule.kv_path.device_moves.begin(), rule.kv_path.device_moves.end(), takes_device)) {
      r.fail(path["device_moves"], "kv_path.device_moves", "an argument is of kind device but kv_path.device_values names none",
             "add kv_path.device_values: {strings: [cuda], attributes: [device]}");
    }
  }
  YAML::Node consumers = doc["fp8_consumers"];
  if (consumers.IsDefined() && !consumers.IsNull()) {
    if (!consumers.IsSequence()) r.fail(consumers, "fp8_consumers", "expected a list", "write a - list or []");
    for (const YAML::Node& c : consumers) {
      r.allow_keys(c, "fp8_consumers",
                   {"method", "sites_rule", "planned_by", "parameters", "kv_parameters", "kv_parameter_forms", "kv_scales"});
      Fp8Consumer consumer;
      consumer.method = r.string(c, "fp8_consumers", "method", true);
      consumer.sites_rule = r.string(c, "fp8_consumers", "sites_rule", true);
      consumer.kv_parameters = r.strings(c, "fp8_consumers", "kv_parameters", false);
      if (!consumer.kv_parameters.empty()) {
        const std::string parameters = r.string(c, "fp8_consumers", "parameters", true);
        try {
          consumer.signature = parse_parameter_list(parameters);
        } catch (const std::invalid_argument& e) {
          r.fail(c["parameters"], "fp8_consumers.parameters", e.what(), "write the parameters as in a Python def, without self");
        }
        for (const std::string& name : consumer.kv_parameters) {
          if (consumer.signature.index_of(name) < 0) {
            r.fail(c["kv_parameters"], "fp8_consumers.kv_parameters", "'" + name + "' is not one of its parameters",
                   "name a parameter listed under parameters");
          }
        }
        // Each form is written as one string of space-separated names: "ckv_cache kpe_cache".
        for (const std::string& text : r.strings(c, "fp8_consumers", "kv_parameter_forms", false)) {
          std::vector<std::string> form;
          std::istringstream names(text);
          for (std::string name; names >> name;) {
            if (std::find(consumer.kv_parameters.begin(), consumer.kv_parameters.end(), name) ==
                consumer.kv_parameters.end()) {
              r.fail(c["kv_parameter_forms"], "fp8_consumers.kv_parameter_forms", "'" + name + "' is not in kv_parameters",
                     "name only parameters listed under kv_parameters");
            }
            form.push_back(name);
          }
          if (form.empty()) {
            r.fail(c["kv_parameter_forms"], "fp8_consumers.kv_parameter_forms", "an empty form",
                   "write the form's parameters separated by spaces");
          }
          consumer.kv_parameter_forms.push_back(std::move(form));
        }
        if (consumer.kv_parameter_forms.empty()) consumer.kv_parameter_forms.push_back(consumer.kv_parameters);
        if (!doc["kv_path"].IsDefined()) {
          r.fail(c["kv_parameters"], "fp8_consumers.kv_parameters", "KV inputs are traced but the rule has no kv_path",
                 "add kv_path: {keeps_dtype: [...], converts: [...]}");
        }
      }
      YAML::Node channels = c["planned_by"];
      if (channels.IsDefined() && !channels.IsNull()) {
        if (!channels.IsSequence()) r.fail(channels, "fp8_consumers.planned_by", "expected a list", "write a - list");
        for (const YAML::Node& ch : channels) {
          r.allow_keys(ch, "fp8_consumers.planned_by", {"receiver_source", "classes"});
          consumer.planned_by.push_back({r.string(ch, "fp8_consumers.planned_by", "receiver_source", true),
                                         required_list(r, ch, "fp8_consumers.planned_by", "classes")});
        }
      }
      YAML::Node scales = c["kv_scales"];
      if (scales.IsDefined() && !scales.IsNull()) {
        const std::string where = "fp8_consumers.kv_scales";
        r.allow_keys(scales, where, {"id", "description", "since_flashinfer", "keywords", "any_of", "value", "fp8_dtype"});
        if (consumer.kv_parameters.empty()) {
          r.fail(scales, where, "scales are checked only on traced KV inputs", "add kv_parameters to the consumer");
        }
        KvScales k;
        k.id = r.string(scales, where, "id", true);
        k.description = r.prose(scales, "description");
        k.since = r.string(scales, where, "since_flashinfer", true);
        k.keywords = required_list(r, scales, where, "keywords");
        k.any_of = r.strings(scales, where, "any_of", false);
        k.value = r.string(scales, where, "value", true);
        k.fp8_dtype = r.string(scales, where, "fp8_dtype", true);
        for (const std::string& keyword : k.keywords) {
          if (consumer.signature.index_of(keyword) < 0) {
            r.fail(scales["keywords"], where + ".keywords", "'" + keyword + "' is not one of the consumer's parameters",
                   "name a parameter listed under parameters");
          }
          if (std::find(k.any_of.begin(), k.any_of.end(), keyword) == k.any_of.end()) k.any_of.push_back(keyword);
        }
        consumer.kv_scales = std::move(k);
      }
      rule.fp8_consumers.push_back(std::move(consumer));
    }
  }
  return rule;
}

std::vector<RuleTestCase> read_tests(const RuleReader& raw, const YAML::Node& doc, const std::string& rule_id,
                                     const std::string& kind) {
  std::vector<RuleTestCase> out;
  YAML::Node tests = doc["tests"];
  if (!tests.IsDefined() || tests.IsNull()) return out;
  if (!tests.IsSequence()) raw.fail(tests, "tests", "expected a list of test cases", "write a - list");
  const std::set<std::string> statuses =
      kind == "plan-site" ? std::set<std::string>{"threaded", "missing", "gated", "unknown", "ignored", "unbuildable"}
      : kind == "field"   ? std::set<std::string>{"present", "missing", "ignored"}
                          // present / missing: the run() scale findings of the rule's consumers
                          : std::set<std::string>{"redundant", "required", "run-input-converted", "run-input-unknown",
                                                  "ignored", "present", "missing"};
  for (const YAML::Node& t : tests) {
    raw.allow_keys(t, "tests", {"name", "code", "expect", "fixed", "parameters"});
    RuleTestCase c;
    c.rule = rule_id;
    c.file = raw.file();
    c.line = t.Mark().line + 1;
    c.name = raw.string(t, "tests", "name", true);
    c.code = raw.string(t, "tests", "code", true);
    if (t["fixed"].IsDefined()) c.fixed = raw.string(t, "tests", "fixed", true);
    YAML::Node expect = t["expect"];
    if (expect.IsDefined() && !expect.IsNull()) {
      if (!expect.IsSequence()) raw.fail(expect, "tests.expect", "expected a list", "write - {line: N, status: S}");
      for (const YAML::Node& e : expect) {
        raw.allow_keys(e, "tests.expect", {"line", "status"});
        ExpectedFinding f;
        YAML::Node line = raw.required(e, "tests.expect", "line");
        if (!line.IsScalar() || !YAML::convert<int>::decode(line, f.line)) {
          raw.fail(line, "tests.expect.line", "expected an integer", "write the 1-based line of the finding");
        }
        f.status = raw.string(e, "tests.expect", "status", true);
        if (statuses.count(f.status) == 0) {
          std::string known;
          for (const std::string& s : statuses) known += (known.empty() ? "" : ", ") + s;
          raw.fail(e["status"], "tests.expect.status", "'" + f.status + "' is not a status of a " + kind + " rule",
                   "use one of " + known);
        }
        c.expect.push_back(f);
      }
    }
    if (YAML::Node p = t["parameters"]; p.IsDefined()) {
      if (!p.IsMap()) raw.fail(p, "tests.parameters", "expected a mapping", "write name: value pairs");
      for (auto it = p.begin(); it != p.end(); ++it) c.parameters[it->first.as<std::string>()] = it->second.as<std::string>();
    }
    out.push_back(std::move(c));
  }
  return out;
}

struct LoadedDocument {
  std::string file;
  YAML::Node doc;
  std::string kind;
};

}  // namespace

RuleSet load_rule_set(const fs::path& dir, const std::map<std::string, std::string>& overrides) {
  std::map<std::string, ParameterOverride> given;
  for (const auto& [name, value] : overrides) given[name] = {value, "--set " + name, 0};
  return load_rule_set(dir, given);
}

RuleSet load_rule_set(const fs::path& dir, const std::map<std::string, ParameterOverride>& overrides) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(dir.string(), 0, "rules directory not found", "pass --rules DIR or set KVPATCH_RULES_DIR");
  }
  std::vector<fs::path> files;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".yaml") continue;
    std::error_code entry_ec;
    if (it->is_regular_file(entry_ec)) {
      files.push_back(it->path());
    } else if (entry_ec) {
      throw InputError(it->path().string(), 0, "cannot read the rule file: " + entry_ec.message(),
                       "fix or remove it; kvpatch's own rules/ are plain files");
    }
  }
  if (ec) throw InputError(dir.string(), 0, "cannot list the rules directory: " + ec.message(), "check its permissions");
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(dir.string(), 0, "no *.yaml rule files", "pass the kvpatch rules/ directory");

  // First pass: parse every file and collect the parameters, so rule fields can reference them.
  std::vector<LoadedDocument> documents;
  std::map<std::string, std::string> declared;
  std::map<std::string, std::pair<std::vector<std::string>, std::string>> choices;  // name -> (values, file)
  for (const fs::path& path : files) {
    const std::string file = path.string();
    YAML::Node doc;
    try {
      doc = YAML::LoadFile(file);
    } catch (const YAML::Exception& e) {
      throw InputError(file, e.mark.line + 1, "malformed YAML: " + e.msg, "fix the YAML syntax");
    }
    RuleReader raw(file, nullptr);
    if (!doc.IsMap()) raw.fail(doc, "kind", "the file is not a mapping", "start the file with kind: ...");
    const std::string kind = raw.string(doc, "", "kind", true);
    if (kind == "parameters") {
      raw.allow_keys(doc, "", {"kind", "description", "parameters", "choices"});
      YAML::Node params = raw.required(doc, "", "parameters");
      if (!params.IsMap()) raw.fail(params, "parameters", "expected a mapping", "write name: value pairs");
      for (auto it = params.begin(); it != params.end(); ++it) {
        const std::string name = it->first.as<std::string>();
        if (!it->second.IsScalar()) raw.fail(it->second, "parameters." + name, "expected a string", "quote the value");
        if (declared.count(name) != 0) {
          raw.fail(it->first, "parameters." + name, "declared twice", "declare each parameter in one file only");
        }
        declared[name] = it->second.as<std::string>();
      }
      if (YAML::Node c = doc["choices"]; c.IsDefined()) {
        if (!c.IsMap()) raw.fail(c, "choices", "expected a mapping", "write name: [value, ...]");
        for (auto it = c.begin(); it != c.end(); ++it) {
          const std::string name = it->first.as<std::string>();
          choices[name] = {raw.strings(c, "choices", name.c_str(), true), file};
        }
      }
    } else if (kind != "plan-site" && kind != "field" && kind != "cast") {
      raw.fail(doc["kind"], "kind", "'" + kind + "' is not a rule kind", "use parameters, plan-site, field or cast");
    }
    documents.push_back({file, doc, kind});
  }

  RuleSet set;
  set.directory = dir;
  std::map<std::string, std::string> raw_parameters = declared;
  for (const auto& [name, given] : overrides) {
    if (declared.count(name) == 0) {
      std::string known;
      for (const auto& [k, v] : declared) known += (known.empty() ? "" : ", ") + k;
      throw InputError(given.origin, given.line, "unknown rule parameter '" + name + "'", "known parameters: " + known);
    }
    raw_parameters[name] = given.value;
    set.parameter_origins[name] = given.line > 0 ? given.origin + ":" + std::to_string(given.line) : given.origin;
  }
  // Choices are checked on the values as given, before they select other parameters.
  for (const auto& [name, allowed] : choices) {
    auto it = raw_parameters.find(name);
    if (it == raw_parameters.end()) continue;
    if (std::find(allowed.first.begin(), allowed.first.end(), it->second) == allowed.first.end()) {
      std::string known;
      for (const std::string& v : allowed.first) known += (known.empty() ? "" : ", ") + v;
      const auto given = overrides.find(name);
      throw InputError(given == overrides.end() ? allowed.second : given->second.origin,
                       given == overrides.end() ? 0 : given->second.line,
                       "'" + it->second + "' is not a value of parameter '" + name + "'", "use one of " + known);
    }
  }

  try {
    set.parameters = expand_all(raw_parameters);
  } catch (const ParameterError& e) {
    throw InputError(dir.string(), 0, std::string("rule parameters: ") + e.what(),
                     "check --set values and the parameters: files in the rules directory");
  }
  std::set<std::string> ids;
  for (const LoadedDocument& d : documents) {
    if (d.kind == "parameters") continue;
    RuleReader reader(d.file, &set.parameters);
    std::string id;
    if (d.kind == "plan-site") {
      set.plan_site_rules.push_back(read_plan_site_rule(reader, d.doc));
      id = set.plan_site_rules.back().id;
    } else if (d.kind == "field") {
      set.field_rules.push_back(read_field_rule(reader, d.doc, {overrides, raw_parameters, declared}));
      id = set.field_rules.back().id;
    } else {
      set.cast_rules.push_back(read_cast_rule(reader, d.doc));
      id = set.cast_rules.back().id;
    }
    if (!ids.insert(id).second) reader.fail(d.doc["id"], "id", "rule id '" + id + "' is used twice", "give each rule its own id");
    RuleReader verbatim(d.file, nullptr);  // test code is taken as written, never expanded
    for (RuleTestCase& c : read_tests(verbatim, d.doc, id, d.kind)) set.tests.push_back(std::move(c));
  }

  // Cross-references between rules name existing rules of the right kind.
  for (const LoadedDocument& d : documents) {
    RuleReader reader(d.file, &set.parameters);
    if (d.kind == "plan-site") {
      const std::string ref = reader.string(d.doc["fix"], "fix", "field_rule", true);
      if (set.field_rule(ref) == nullptr) {
        reader.fail(d.doc["fix"]["field_rule"], "fix.field_rule", "no field rule has id '" + ref + "'",
                    "name the id of a kind: field rule");
      }
    } else if (d.kind == "field") {
      const std::string ref = reader.string(d.doc["scope"], "scope", "sites_rule", true);
      if (set.plan_site_rule(ref) == nullptr) {
        reader.fail(d.doc["scope"]["sites_rule"], "scope.sites_rule", "no plan-site rule has id '" + ref + "'",
                    "name the id of a kind: plan-site rule");
      }
    } else if (d.kind == "cast" && d.doc["fp8_consumers"].IsSequence()) {
      for (const YAML::Node& c : d.doc["fp8_consumers"]) {
        const std::string ref = reader.string(c, "fp8_consumers", "sites_rule", true);
        if (set.plan_site_rule(ref) == nullptr) {
          reader.fail(c["sites_rule"], "fp8_consumers.sites_rule", "no plan-site rule has id '" + ref + "'",
                      "name the id of a kind: plan-site rule");
        }
      }
    }
  }
  return set;
}

}  // namespace kvpatch
