#pragma once
// The rules as data, loaded from rules/*.yaml: what to match, where, and what text to produce.
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvpatch/per_file_ignores.h"
#include "kvpatch/signature.h"

namespace kvpatch {

// Whether a rule's list of names (methods, calls, attributes) holds the name.
inline bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Which files a rule looks at: every listed string must occur in the file's text, or one of its stand-ins.
struct FileSelection {
  std::vector<std::string> content_contains;
  // Set for a run, never read from a rule file: names that stand for a listed one (the wrapper class's subclasses
  // that the run's modules define, project_classes.h).
  std::map<std::string, std::vector<std::string>> stand_ins;
  bool matches(const std::string& text) const;
};

// A def of a wrapper method in a class of the run: where it is (`file.py:line`) and its parameter list as written.
struct OverrideDef {
  std::string where;
  std::string parameters;
  // Why its calls do not bind, where its parameters would: what it does with a KV input besides handing it on to the
  // wrapper's method ("" for parameters that are not the wrapper's).
  std::string why;
};

// A class that a module of the run defines (project_classes.h).
struct ProjectClass {
  std::string module;  // module_path() of the file that defines it
  std::string name;
  // By method name (plan, and each consumer such as run): where its instances run a def of their own that does not
  // bind as the wrapper's does (wrapper_overrides.h), `file:line`, and that def's parameter list. Absent: they do not.
  std::map<std::string, OverrideDef> rebinding;
  // A name the module binds to the wrapper class in one place and to another class in another (`MLAWrapper =
  // BatchMLAPagedAttentionWrapper` in a try, `= FallbackWrapper` in its handler): what it builds is of unknown type.
  bool maybe = false;
  // One class, however its methods were judged.
  bool operator==(const ProjectClass& o) const { return module == o.module && name == o.name; }
};

// Attribute or variable names that denote the KV-cache dtype, and those that denote the model dtype.
struct DtypeRoleNames {
  std::vector<std::string> kv_cache;
  std::vector<std::string> model;
};

// kind: plan-site — calls that reach <wrapper_class>.<method>; their KV-dtype argument is threaded.
struct PlanSiteRule {
  std::string id;
  std::string description;  // the rule file's prose, for reports that carry rule help (SARIF)
  std::string file;  // the rule file, for messages
  FileSelection files;
  std::string wrapper_class;
  std::string wrapper_module;                    // the package it is imported from; its other classes may be it too
  std::vector<std::string> known_other_classes;  // classes of that package known not to be the wrapper
  std::string method;
  Signature signature;
  std::vector<std::string> alias_same_position;  // module functions whose parameters after the first match here are aliases
  bool aliases_by_signature = true;
  bool aliases_by_partial = true;                // `X.<method> = partial(f, X)` makes f an alias
  std::vector<int> unknown_receiver_arity;       // `.method(...)` on an unknown receiver with this many arguments is a site
  // Set for a run, never read from a rule file: the subclasses of wrapper_class that the run's modules define, which
  // a module importing one sees as the wrapper (project_classes.h).
  std::vector<ProjectClass> project_classes;
  std::string q_parameter;
  std::string kv_parameter;
  std::string head_dim_ckv_parameter;
  std::string head_dim_kpe_parameter;
  DtypeRoleNames roles;
  std::string field_rule;  // the field rule whose per-class field is the fix's replacement text
  // The first FlashInfer release that builds the plan the fix makes (BF16 query x FP8 KV); against an older
  // one (known from a pin or --flashinfer-version) no site is threaded. Empty: any release.
  std::string fp8_kv_since;
  // Edit operations, by name: for a bound KV argument, and for one left to its default ("" = leave it).
  std::string operation = "replace-bound-argument";
  std::string operation_when_defaulted = "add-keyword-argument";
};

// kind: field — each class in scope gets `<field> = <value>` after its `<anchor> = ...` in __init__.
struct FieldRule {
  std::string id;
  std::string description;  // the rule file's prose, for reports that carry rule help (SARIF)
  std::string file;
  FileSelection files;
  std::string sites_rule;            // classes must hold sites of this plan-site rule (when require_sites)
  bool require_sites = true;
  std::string init_assigns;          // classes whose __init__ assigns this attribute
  std::vector<std::string> class_patterns;  // optional globs on the class name
  std::string anchor;
  std::string field;
  std::string value;
  std::string operation = "insert-after-anchor";
  // A module-level def the value calls (a cached platform test), added when an edit calls it: "" for none.
  std::string module_helper;
  std::string module_helper_name;                   // read from module_helper
  std::vector<std::string> module_helper_imports;   // modules it needs bound
};

// Which updater classes plan the wrapper a run() receiver is read from (by the attribute it comes from).
struct WrapperChannel {
  std::string receiver_source;
  std::vector<std::string> classes;  // globs
};

// FP8 scales a consumer must be handed once it is planned for an FP8 KV dtype (FlashInfer 0.6.14 and later
// refuse an FP8 run() without ckv_scale and kpe_scale, and refuse them for any other dtype).
struct KvScales {
  std::string id;           // the finding's rule id, named by `# kvpatch: ignore[<id>]`
  std::string description;  // for reports that carry rule help (SARIF)
  std::string since;        // the first FlashInfer release that requires them: "0.6.14"
  std::vector<std::string> keywords;  // the keywords the fix passes, each with `value`: ckv_scale, kpe_scale
  std::vector<std::string> any_of;    // keywords any of which a call may already pass (ckv_scale_arr too)
  std::string value;                  // "1.0": the cast the patch removes applied no scale
  std::string fp8_dtype;              // "torch.float8_e4m3fn": the one dtype FlashInfer takes scales for
};

struct Fp8Consumer {
  std::string method;      // e.g. run
  std::string sites_rule;  // the receiver must be that rule's wrapper class; that rule's sites decide
  std::vector<WrapperChannel> planned_by;
  Signature signature;                     // the method's parameters (without self), to bind its arguments
  std::vector<std::string> kv_parameters;  // those that take KV data: traced back to a KV source
  // Alternative ways of passing the KV data, each some of kv_parameters (default: one, all of them). A call
  // is checked on the forms it visibly uses; passing nothing of any form is unknown.
  std::vector<std::vector<std::string>> kv_parameter_forms;
  std::optional<KvScales> kv_scales;  // absent: the consumer takes FP8 data as it is
};

// The kind of value an argument of a device move takes.
enum class DeviceArgumentKind { Device, Any };

// A method that moves data to another device and keeps its dtype, but only when called in this shape:
// `.to(q.device, non_blocking=True)` is one, `.to(other_tensor)` (dtype and device) is not.
struct DeviceMove {
  std::string method;
  std::vector<DeviceArgumentKind> positional;  // the kind at each position; trailing ones may be left out
  std::map<std::string, DeviceArgumentKind> keywords;  // the keywords it may take, with their kinds
};

// What a device argument looks like; anything else (a tensor, a dtype, an unknown name) is not one.
struct DeviceValues {
  std::vector<std::string> strings;     // globs on a string literal's content: "cuda", "cuda:*"
  std::vector<std::string> names;       // globs on a bare name: device, *_device
  std::vector<std::string> attributes;  // globs on the attribute read: `<x>.device`
  std::vector<std::string> calls;       // globs on the callee's text: torch.device
  bool integers = false;                // an integer literal is a device index
};

// How KV data may travel from its source to a consumer: methods followed as keeping the dtype, methods
// that convert it, and what a dtype argument looks like.
struct KvPath {
  std::vector<std::string> keeps_dtype;      // views, slices, layout changes
  std::vector<std::string> dtype_overloads;  // keeps_dtype methods that reinterpret when given a dtype (view)
  std::vector<std::string> converts;         // `.to(...)`, `.bfloat16()`, ... (except the casts the rule removes)
  std::vector<std::string> dtype_names;      // `torch.<name>` denotes a dtype
  std::vector<DeviceMove> device_moves;      // followed when a call fits one of them, checked before converts
  DeviceValues device_values;
};

// kind: cast — `.to(<x>.dtype)` on a KV-cache value, redundant when every consumer accepts the KV dtype.
struct CastRule {
  std::string id;
  std::string description;  // the rule file's prose, for reports that carry rule help (SARIF)
  std::string file;
  FileSelection files;
  std::vector<std::string> functions;
  std::vector<std::string> kv_source_calls;
  std::vector<std::string> kv_source_attributes;
  std::string cast_method = "to";
  std::string cast_argument_attribute = "dtype";
  std::string cast_keyword = "dtype";  // the cast method's keyword for its dtype: `.to(dtype=q.dtype)`
  // Keywords that may come with the dtype and go with the cast, changing nothing once it is gone:
  // `.to(q.dtype, non_blocking=True)`.
  std::vector<std::string> cast_extra_keywords;
  std::vector<std::string> metadata_attributes;  // reading these (dtype, shape) does not consume the data
  std::vector<Fp8Consumer> fp8_consumers;
  KvPath kv_path;
  std::string operation = "remove-method-call";  // `x = x.to(...)` goes as a statement, else `.to(...)` goes
  // For a plan that names the KV-cache dtype only for one dtype (`kv if kv == D else model`): the cast stays
  // for other caches, under `if <buffer>.dtype != D:`.
  std::string guard_operation = "guard-cast";
  // The id run-input findings carry and `# kvpatch: ignore[<id>]` names; apart from the cast's own id, so that
  // keeping a cast and vouching for what a run() is handed are separate statements. The rule's id when unset.
  std::string run_input_id;
};

struct ExpectedFinding {
  int line = 0;
  std::string status;
};

// A rule file's own test case: code, the findings the rule must report, and the file after apply.
struct RuleTestCase {
  std::string rule;
  std::string file;  // the rule file
  int line = 0;      // where the case starts in it
  std::string name;
  std::string code;
  std::vector<ExpectedFinding> expect;
  std::optional<std::string> fixed;  // absent: the code must come out unchanged
  std::map<std::string, std::string> parameters;  // per-case overrides of rule parameters
};

struct RuleSet {
  std::filesystem::path directory;
  std::map<std::string, std::string> parameters;  // effective values, after --set
  // Where each overridden parameter was given: "--set NAME", "--kv-dtype-form", or "FILE:LINE" of a configuration.
  std::map<std::string, std::string> parameter_origins;
  std::vector<PlanSiteRule> plan_site_rules;
  std::vector<FieldRule> field_rules;
  std::vector<CastRule> cast_rules;
  std::vector<RuleTestCase> tests;
  // The run's per-file-ignores (set by the CLI from the settings file and the options): the rules' findings they
  // name are ignored in the files they match (analyze_source()).
  std::vector<PerFileIgnores> per_file_ignores;

  const PlanSiteRule* plan_site_rule(const std::string& id) const;
  // Every id a finding can carry (each rule's, and each cast rule's run_input_id), in rule-file order, with
  // the description of the rule that reports it.
  std::vector<std::pair<std::string, std::string>> finding_ids() const;
  const FieldRule* field_rule(const std::string& id) const;
  // The names of the module-level defs the field rules add with their edits (module_helper).
  std::vector<std::string> module_helper_names() const;
};

// A rule parameter's value given outside the rules, and where it was given, so that an error can point there:
// origin "--set NAME" (line 0) on the command line, or a configuration file and its line.
struct ParameterOverride {
  std::string value;
  std::string origin;
  int line = 0;
};

// Loads every *.yaml in dir (sorted by name), with the parameters overridden.
// Throws InputError naming the rule file, the line and the field at fault; an unknown override or a value outside
// a parameter's choices names the override's origin.
RuleSet load_rule_set(const std::filesystem::path& dir, const std::map<std::string, ParameterOverride>& overrides);
// The same with --set NAME=VALUE pairs.
RuleSet load_rule_set(const std::filesystem::path& dir, const std::map<std::string, std::string>& overrides = {});

// True when name matches the glob (`*` any run of characters, `?` one character).
bool glob_match(const std::string& pattern, const std::string& name);

}  // namespace kvpatch
