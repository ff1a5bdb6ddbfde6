#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "kvpatch/dtype_roles.h"
#include "kvpatch/edit_operations.h"
#include "kvpatch/imported_names.h"
#include "kvpatch/method_references.h"
#include "kvpatch/module_calls.h"
#include "kvpatch/reaching_definitions.h"
#include "kvpatch/rule_engine.h"
#include "kvpatch/tensor_views.h"
#include "kvpatch/wrapper_overrides.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

const char* run_input_status_name(RunInputStatus status) {
  return status == RunInputStatus::Converted ? "run-input-converted" : "run-input-unknown";
}

const char* run_input_label(const RunInputFinding& finding) {
  return finding.ignored ? "ignored" : run_input_status_name(finding.status);
}

namespace {
constexpr int kMaxTraceDepth = 12;  // bounds chains of locals and views between the KV source and run()

// The content of a string literal between its quotes; nullopt for anything else, bytes included.
std::optional<std::string> string_content(const ModuleFacts& facts, TSNode node) {
  if (!is(node, "string")) return std::nullopt;
  const std::string text = facts.text(node);
  const std::size_t quote = text.find_first_of("'\"");
  if (quote == std::string::npos || text.substr(0, quote).find_first_of("bB") != std::string::npos) return std::nullopt;
  const std::size_t width = text.compare(quote, 3, std::string(3, text[quote])) == 0 ? 3 : 1;
  if (text.size() < quote + 2 * width) return std::nullopt;
  return text.substr(quote + width, text.size() - quote - 2 * width);
}

bool any_glob(const std::vector<std::string>& patterns, const std::string& name) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, name); });
}

// The value is written as a device the rule names: "cuda", device, q.device, torch.device(...), 0.
bool names_device(const DeviceValues& values, const ModuleFacts& facts, TSNode value) {
  value = syntax::unparenthesized(value);
  if (const std::optional<std::string> s = string_content(facts, value)) return any_glob(values.strings, *s);
  if (is(value, "integer")) return values.integers;
  if (is(value, "identifier")) return any_glob(values.names, facts.text(value));
  if (is(value, "attribute")) return any_glob(values.attributes, facts.text(field(value, "attribute")));
  if (is(value, "call")) return any_glob(values.calls, one_line(facts.text(field(value, "function"))));
  return false;
}

// The call `.<method>(...)` has the shape of one of the rule's device moves, so it keeps the dtype.
bool moves_device_only(const KvPath& path, const ModuleFacts& facts, TSNode call, const std::string& method) {
  TSNode list = field(call, "arguments");
  if (!is(list, "argument_list")) return false;
  const std::vector<TSNode> arguments = syntax::statements(list);
  auto fits = [&](DeviceArgumentKind kind, TSNode value) {
    return kind == DeviceArgumentKind::Any || names_device(path.device_values, facts, value);
  };
  return std::any_of(path.device_moves.begin(), path.device_moves.end(), [&](const DeviceMove& move) {
    if (move.method != method) return false;
    std::size_t position = 0;
    return std::all_of(arguments.begin(), arguments.end(), [&](TSNode a) {
      if (is(a, "keyword_argument")) {
        const auto keyword = move.keywords.find(facts.text(field(a, "name")));
        return keyword != move.keywords.end() && fits(keyword->second, field(a, "value"));
      }
      if (is(a, "list_splat") || is(a, "dictionary_splat") || position >= move.positional.size()) return false;
      return fits(move.positional[position++], a);
    });
  });
}

struct Problem {
  RunInputStatus status = RunInputStatus::Unknown;
  TSNode node{};
  std::string why;
};

// What tracing one argument found: the problems on the way, and whether some path reached a KV source.
struct Trace {
  std::set<const Assignment*> visited;
  std::vector<Problem> problems;
  bool reached_source = false;
};

// Traces the KV inputs of the rule's consumers back to a KV source.
class RunInputChecker {
public:
  RunInputChecker(const CastRule& rule, const RuleSet& rules, const ModuleFacts& facts, const std::vector<PlanSite>& sites,
                  const std::vector<CastFinding>& casts)
      : rule_(rule), rules_(rules), facts_(facts), sites_(sites), casts_(casts), source_(facts.file().source),
        imports_(facts) {}

  std::vector<RunInputFinding> run() const {
    std::vector<RunInputFinding> out;
    each_consumer_call([&](const Fp8Consumer& spec, TSNode call, const FunctionFacts* scope,
                           const std::vector<std::size_t>& planning, const std::string& unsure,
                           const std::string& other) {
      if (!other.empty()) {
        other_signature(spec, call, scope, planning, other, out);
      } else {
        check_call(spec, call, scope, planning, unsure, out);
      }
    });
    escaped_consumers(out);
    return out;
  }

  // The scale findings of every consumer call whose KV inputs all trace back to a KV source unconverted.
  std::vector<RunScaleFinding> scales(const std::string& flashinfer) const {
    std::vector<RunScaleFinding> out;
    each_consumer_call([&](const Fp8Consumer& spec, TSNode call, const FunctionFacts* scope,
                           const std::vector<std::size_t>&, const std::string&, const std::string& other) {
      if (!spec.kv_scales || !other.empty()) return;  // no KV inputs known: a run-input finding covers the call
      const TracedInputs inputs = trace_inputs(spec, call, scope);
      if (!inputs.reached_source) return;
      for (const Traced& traced : inputs.traces) {
        if (!traced.ignored && !traced.trace.problems.empty()) return;  // a run-input finding covers this call
      }
      out.push_back(scale_finding(*spec.kv_scales, call, inputs.first_argument, flashinfer));
    });
    return out;
  }

private:
  // Calls visit(spec, call, scope, planning sites, unsure, other) for each consumer call on a wrapper that a plan
  // site plans for the KV dtype after the edits. unsure: "" for a receiver known to be the wrapper; else why
  // it is checked all the same (then only KV data that reaches it counts). other: "" or, where the call may run a
  // subclass's own def of the method with other parameters (its arguments are then not the wrapper's), which.
  template <typename Visit>
  void each_consumer_call(Visit visit) const {
    for (const ConsumerScope& c : consumer_scopes()) {
      for (TSNode call : facts_.calls()) {
        // `w.run(...)`, `(w.run)(...)`, `getattr(w, "run")(...)`, or `run(...)` after `run = w.run`.
        // Or through its class, `W.run(w, ...)`, on the instance passed first.
        const FunctionFacts* scope = facts_.function_at(call);
        const std::optional<MethodCall> method_call =
            wrapper_method_call(call, c.spec->method, c.values, *c.types, scope, facts_);
        if (!method_call) continue;
        // A receiver of unknown type may be the wrapper: it is checked when KV data reaches it. Through the class
        // without an instance, the call binds nothing, which the trace reports.
        const TSNode receiver = method_call->receiver;
        const TypeVerdict verdict = method_call->verdict;
        if (verdict != TypeVerdict::Wrapper && verdict != TypeVerdict::Unknown) continue;
        const std::vector<std::size_t> planning =
            sites_planning(*c.spec, c.types->source_attribute(receiver, scope), sites_);
        if (!plans_kv_dtype(planning)) continue;
        const std::string unsure = verdict == TypeVerdict::Wrapper ? ""
                                                                   : "; its receiver is not known to be a " +
                                                                         c.sites_rule->wrapper_class + " but may be";
        const RebindingOverride* other = override_run(*method_call, field(call, "function"), c.spec->method, c.overrides,
                                                      c.sites_rule->wrapper_class, *c.types, scope, facts_);
        const std::string receiver_text = syntax::is_null(receiver) ? "" : one_line(facts_.text(receiver));
        visit(*c.spec, call, scope, planning, unsure,
              other == nullptr ? "" : override_reason(receiver_text, c.spec->method, *other));
      }
    }
  }

  // What both walks over a consumer method need: its spec, the wrapper's types and the reads of the method
  // as a value. Built once per checker (building the types reads the whole module).
  struct ConsumerScope {
    const Fp8Consumer* spec = nullptr;
    const PlanSiteRule* sites_rule = nullptr;
    std::unique_ptr<WrapperTypes> types;
    std::vector<MethodValue> values;
    std::vector<RebindingOverride> overrides;  // the method's defs in wrapper subclasses that rebind its arguments
  };
  const std::vector<ConsumerScope>& consumer_scopes() const {
    if (!scopes_) {
      scopes_.emplace();
      for (const Fp8Consumer& spec : rule_.fp8_consumers) {
        const PlanSiteRule* sites_rule = rules_.plan_site_rule(spec.sites_rule);
        if (spec.kv_parameters.empty() || sites_rule == nullptr) continue;
        ConsumerScope& c = scopes_->emplace_back();
        c.spec = &spec;
        c.sites_rule = sites_rule;
        c.types = std::make_unique<WrapperTypes>(facts_, *sites_rule);
        c.values = method_values(spec.method, facts_);
        c.overrides = rebinding_overrides(consumer_method(spec), sites_rule->wrapper_class, *c.types, facts_);
      }
    }
    return *scopes_;
  }

  // A wrapper that any site plans for the KV dtype must get KV data as stored (a cast kept for another,
  // unknown or unfixable, site would hand it the model dtype); others get what they are planned for.
  bool plans_kv_dtype(const std::vector<std::size_t>& planning) const {
    return std::any_of(planning.begin(), planning.end(), [&](std::size_t i) { return sites_[i].threaded_after_edits(); });
  }

  // A consumer method of a wrapper planned for the KV dtype, handed on as a value (`partial(w.run)`,
  // `r := w.run`): the calls made through it cannot be found, so neither can the KV data they pass. Like a
  // run() input of unknown origin, it keeps the wrapper's plan sites unthreaded.
  void escaped_consumers(std::vector<RunInputFinding>& out) const {
    for (const ConsumerScope& c : consumer_scopes()) {
      for (const MethodValue& v : c.values) {
        const FunctionFacts* scope = facts_.function_at(v.node);
        if (!v.alias.empty() || !read_on_wrapper(v, *c.types, scope)) continue;
        const std::vector<std::size_t> planning =
            sites_planning(*c.spec, c.types->source_attribute(v.receiver, scope), sites_);
        if (!plans_kv_dtype(planning)) continue;
        RunInputFinding f = untraceable_consumer(v.node, v.node, v.node, scope, planning);
        f.why = "the method is " + v.context + ", so the calls made through it, and the KV data they pass, cannot be traced";
        f.consumer_handed_on = true;
        out.push_back(std::move(f));
      }
    }
  }

  // An unknown finding for a consumer none of whose KV inputs can be traced, at `at`: `expr` is what it names,
  // `consumer` the call (or the read of the method), an ignore comment on `ignorable` suppresses it. The caller says
  // why.
  RunInputFinding untraceable_consumer(TSNode at_node, TSNode expr, TSNode ignorable, const FunctionFacts* scope,
                                       const std::vector<std::size_t>& planning) const {
    RunInputFinding f;
    f.rule = rule_.run_input_id;
    const SourcePosition pos = source_.position(ts_node_start_byte(at_node));
    f.line = pos.line;
    f.column = pos.column;
    if (const FunctionFacts* method = holding_method(facts_, scope)) {
      f.class_name = method->class_name;
      f.method = method->name;
    }
    if (auto reason = suppression(source_, ignorable, rule_.run_input_id)) {
      f.ignored = true;
      f.ignore_reason = *reason;
    }
    f.status = RunInputStatus::Unknown;
    f.expr = one_line(facts_.text(expr));
    f.consumer = one_line(facts_.text(expr)) + " at " + at(at_node);
    f.consumer_call = at_node;
    for (std::size_t i : planning) f.wrapper_sites.push_back({sites_[i].line, sites_[i].column});
    return f;
  }

  struct Traced {
    std::string parameter;
    Trace trace;
    std::optional<std::string> ignored;  // the reason of an ignore comment on its argument or on the call
  };
  struct TracedInputs {
    std::vector<Traced> traces;
    bool reached_source = false;
    TSNode first_argument{};  // the value of the first KV parameter checked (null when none is bound)
  };

  // Every KV parameter of the forms the call visibly uses (FlashInfer's ckv_cache and kpe_cache, or since 0.7
  // kv_cache=(ckv, kpe)), traced back; a call that shows nothing of any form is one unknown trace.
  TracedInputs trace_inputs(const Fp8Consumer& spec, TSNode call, const FunctionFacts* scope) const {
    TracedInputs out;
    const std::optional<std::string> call_ignored = suppression(source_, field(call, "function"), rule_.run_input_id);
    struct Bound {
      TSNode argument;
      std::string why;
      bool defaulted = false;  // the call binds and leaves the parameter to its default
    };
    std::map<std::string, Bound> bound;
    for (const std::string& parameter : spec.kv_parameters) {
      Bound& b = bound[parameter];
      b.argument = bound_argument(spec, call, parameter, b.why, b.defaulted);
    }
    std::vector<std::string> checked;
    for (const std::vector<std::string>& form : spec.kv_parameter_forms) {
      const bool used = std::any_of(form.begin(), form.end(), [&](const std::string& p) {
        return !syntax::is_null(bound[p].argument);
      });
      if (!used) continue;
      for (const std::string& p : form) {
        if (!listed(checked, p)) checked.push_back(p);
      }
    }
    if (checked.empty()) {
      std::string names;
      for (const std::string& n : spec.kv_parameters) names += (names.empty() ? "" : ", ") + n;
      Traced traced;
      traced.parameter = names;
      traced.ignored = call_ignored;
      const Bound& first = bound[spec.kv_parameters.front()];
      traced.trace.problems.push_back({RunInputStatus::Unknown, call,
                                       first.defaulted ? "the call passes none of " + names : first.why});
      out.traces.push_back(std::move(traced));
    }
    for (const std::string& parameter : checked) {
      Traced traced;
      traced.parameter = parameter;
      traced.ignored = call_ignored;
      TSNode argument = bound[parameter].argument;
      if (syntax::is_null(argument)) {
        traced.trace.problems.push_back({RunInputStatus::Unknown, call, bound[parameter].why});
      } else {
        if (syntax::is_null(out.first_argument)) out.first_argument = argument;
        trace(argument, scope, 0, traced.trace);
        if (auto reason = suppression(source_, argument, rule_.run_input_id)) traced.ignored = reason;
      }
      out.reached_source |= traced.trace.reached_source;
      out.traces.push_back(std::move(traced));
    }
    return out;
  }

  std::string at(TSNode node) const {
    const SourcePosition p = source_.position(ts_node_start_byte(node));
    return std::to_string(p.line) + ":" + std::to_string(p.column);
  }

  // A call that may run a subclass's own def of the method with other parameters: which of its arguments are KV data,
  // and what that def hands the wrapper's method, cannot be told. Like a run() input of unknown origin, it keeps the
  // wrapper's plan sites unthreaded.
  void other_signature(const Fp8Consumer& spec, TSNode call, const FunctionFacts* scope,
                       const std::vector<std::size_t>& planning, const std::string& other,
                       std::vector<RunInputFinding>& out) const {
    const TSNode callee = field(call, "function");
    RunInputFinding f = untraceable_consumer(call, callee, callee, scope, planning);
    f.why = other + ", so which arguments are KV data, and what it hands the wrapper's " + spec.method +
            "(), cannot be told";
    f.consumer_rebinds = true;
    out.push_back(std::move(f));
  }

  // unsure: "" for a receiver known to be the wrapper; else why it is checked all the same (then only KV
  // data that reaches it counts).
  void check_call(const Fp8Consumer& spec, TSNode call, const FunctionFacts* scope,
                  const std::vector<std::size_t>& planning, const std::string& unsure,
                  std::vector<RunInputFinding>& out) const {
    // Problems by node and by whether they are ignored, with the parameters whose values meet them.
    struct Entry {
      Problem problem;
      std::vector<std::string> parameters;
      std::string ignore_reason;
    };
    std::map<std::tuple<uint32_t, uint32_t, bool>, Entry> found;
    const TracedInputs inputs = trace_inputs(spec, call, scope);
    const bool reached_source = inputs.reached_source;
    const std::vector<Traced>& traces = inputs.traces;
    if (!unsure.empty() && !reached_source) return;  // no KV data: some other object's run()
    for (const Traced& traced : traces) {
      for (const Problem& p : traced.trace.problems) {
        Entry& entry = found[{ts_node_start_byte(p.node), ts_node_end_byte(p.node), traced.ignored.has_value()}];
        if (entry.parameters.empty()) {
          entry.problem = p;
          entry.ignore_reason = traced.ignored.value_or("");
        }
        if (!listed(entry.parameters, traced.parameter)) entry.parameters.push_back(traced.parameter);
      }
    }
    const std::string consumer = one_line(facts_.text(field(call, "function"))) + " at " + at(call);
    for (const auto& [key, entry] : found) {
      const Problem& p = entry.problem;
      RunInputFinding f;
      f.ignored = std::get<2>(key);
      f.ignore_reason = entry.ignore_reason;
      f.rule = rule_.run_input_id;
      const SourcePosition pos = source_.position(ts_node_start_byte(p.node));
      f.line = pos.line;
      f.column = pos.column;
      if (const FunctionFacts* method = holding_method(facts_, facts_.function_at(p.node))) {
        f.class_name = method->class_name;
        f.method = method->name;
      }
      f.status = p.status;
      f.expr = one_line(facts_.text(p.node));
      f.why = p.why;
      std::string parameters;
      for (const std::string& name : entry.parameters) parameters += (parameters.empty() ? "" : ", ") + name;
      f.consumer = consumer + " (" + parameters + unsure + ")";
      f.consumer_call = call;
      for (std::size_t i : planning) f.wrapper_sites.push_back({sites_[i].line, sites_[i].column});
      out.push_back(std::move(f));
    }
  }

  // Whether the call already hands over scales, and if not the argument that does so for an FP8 cache only
  // (FlashInfer refuses scales for any other KV dtype, and the model may run with a BF16 cache).
  RunScaleFinding scale_finding(const KvScales& spec, TSNode call, TSNode kv_argument, const std::string& flashinfer) const {
    RunScaleFinding f;
    f.rule = spec.id;
    const SourcePosition pos = source_.position(ts_node_start_byte(call));
    f.line = pos.line;
    f.column = pos.column;
    if (const FunctionFacts* method = holding_method(facts_, facts_.function_at(call))) {
      f.class_name = method->class_name;
      f.method = method->name;
    }
    f.call = one_line(facts_.text(field(call, "function")));
    f.flashinfer = flashinfer;
    if (auto reason = suppression(source_, field(call, "function"), spec.id)) {
      f.ignored = true;
      f.ignore_reason = *reason;
    }
    TSNode list = field(call, "arguments");
    for (TSNode a : is(list, "argument_list") ? syntax::statements(list) : std::vector<TSNode>{}) {
      if (is(a, "keyword_argument") && listed(spec.any_of, facts_.text(field(a, "name")))) {
        f.present = true;
        f.how = "passes " + facts_.text(field(a, "name"));
        return f;
      }
      if (is(a, "dictionary_splat")) {
        f.present = true;
        f.how = "passes " + one_line(facts_.text(a)) + ", which may hold them";
        return f;
      }
    }
    // The dtype test reads the buffer the KV argument is a view of: `k_buffer` for `k_buffer[:, :, :512]`,
    // and for kv_cache=(ckv, kpe) the first view's; for `ckv.to(q.dtype)`, a cast the edits remove, ckv.
    TSNode buffer = syntax::unparenthesized(kv_argument);
    while (true) {
      if (is(buffer, "subscript") || is(buffer, "tuple")) {
        buffer = syntax::unparenthesized(is(buffer, "tuple") ? syntax::statements(buffer).front() : field(buffer, "value"));
      } else if (const CastFinding* cast = is(buffer, "call") ? cast_at(buffer) : nullptr;
                 cast != nullptr && cast->redundant && cast->guard_dtype.empty() && !cast->fix.empty()) {
        buffer = syntax::unparenthesized(field(field(buffer, "function"), "object"));
      } else {
        break;
      }
    }
    // The dtype is written through the name the module binds its package to (`th.float8_e4m3fn` after
    // `import torch as th`); `torch` itself when it is bound that way.
    const std::string dtype_module = spec.fp8_dtype.substr(0, spec.fp8_dtype.find('.'));
    std::string module_name;
    for (const auto& [local, path] : imports_.paths()) {
      if (path == dtype_module && (module_name.empty() || local == dtype_module)) module_name = local;
    }
    if (!is(list, "argument_list")) {
      f.reason = "the call's arguments are a generator expression; add the scales by hand";
    } else if (!(is(buffer, "identifier") || (is(buffer, "attribute") && plain_chain(buffer)))) {
      f.reason = "the KV data is not a name kvpatch can test the dtype of; pass " + keyword_list(spec) +
                 " by hand for an FP8 cache";
    } else if (module_name.empty()) {
      f.reason = "the module does not import " + dtype_module + "; pass " + keyword_list(spec) + " by hand";
    } else {
      std::string mapping;
      for (const std::string& k : spec.keywords) mapping += (mapping.empty() ? "" : ", ") + ("\"" + k + "\": " + spec.value);
      const std::string fp8_dtype = module_name + spec.fp8_dtype.substr(dtype_module.size());
      f.fix_text = "**({" + mapping + "} if " + one_line(facts_.text(buffer)) + ".dtype == " + fp8_dtype + " else {})";
      if (!f.ignored) f.fix = add_argument(source_, list, f.fix_text, spec.id);
    }
    return f;
  }

  static std::string keyword_list(const KvScales& spec) {
    std::string out;
    for (const std::string& k : spec.keywords) out += (out.empty() ? "" : " and ") + k;
    return out;
  }

  // `a.b.c`: attributes on a name, nothing evaluated twice but attribute reads.
  static bool plain_chain(TSNode node) {
    while (is(node, "attribute")) node = field(node, "object");
    return is(node, "identifier");
  }

  // The value the call passes for a parameter, or null with why. A call that also unpacks *x or **x still
  // shows the values it passes by position before the unpacking, or by keyword.
  TSNode bound_argument(const Fp8Consumer& spec, TSNode call, const std::string& parameter, std::string& why,
                        bool& defaulted) const {
    defaulted = false;
    TSNode list = field(call, "arguments");
    if (!is(list, "argument_list")) {
      why = "the call's arguments are a generator expression";
      return TSNode{};
    }
    std::vector<CallArgument> arguments = call_arguments(source_.text(), list);
    if (const std::optional<MethodCall> method_call = consumer_call(spec, call); method_call && method_call->through_class) {
      // The instance fills the method's first parameter; the rest bind as they would on `w.<method>(...)`.
      if (syntax::is_null(method_call->receiver)) {
        why = "the method is called through its class, and the call does not pass the instance first by position";
        return TSNode{};
      }
      arguments.erase(arguments.begin());
    }
    auto node_of = [&](const CallArgument& a) {
      return ts_node_named_descendant_for_byte_range(list, static_cast<uint32_t>(a.value_begin),
                                                     static_cast<uint32_t>(a.value_end));
    };
    const Binding binding = bind_arguments(spec.signature, arguments);
    if (binding.complete) {
      const BoundValue* v = binding.find(parameter);
      if (v != nullptr && !v->from_default()) return node_of(arguments[static_cast<std::size_t>(v->argument)]);
      why = "the call leaves " + parameter + " to its default";
      defaulted = true;
      return TSNode{};
    }
    const auto index = static_cast<std::size_t>(spec.signature.index_of(parameter));
    std::size_t leading = 0;
    while (leading < arguments.size() && arguments[leading].kind == ArgumentKind::Positional) ++leading;
    if (index < spec.signature.positional_count() && index < leading) return node_of(arguments[index]);
    for (const CallArgument& a : arguments) {
      if (a.kind == ArgumentKind::Keyword && a.keyword == parameter) return node_of(a);
    }
    why = "kvpatch cannot see which value the call passes as " + parameter + ": " + binding.failure;
    return TSNode{};
  }

  // The consumer call as a call of spec's method (through its class, `W.run(w, ...)`, or not).
  std::optional<MethodCall> consumer_call(const Fp8Consumer& spec, TSNode call) const {
    for (const ConsumerScope& c : consumer_scopes()) {
      if (c.spec == &spec) return wrapper_method_call(call, spec.method, c.values, *c.types, facts_.function_at(call), facts_);
    }
    return std::nullopt;
  }

  const CastFinding* cast_at(TSNode call) const {
    for (const CastFinding& c : casts_) {
      if (!syntax::is_null(c.call) && syntax::same(c.call, call)) return &c;
    }
    return nullptr;
  }

  bool looks_like_dtype(TSNode argument) const {
    if (is(argument, "keyword_argument")) return facts_.text(field(argument, "name")) == "dtype";
    const std::string text = facts_.text(argument);
    if (is(argument, "attribute")) {
      const std::string attr = facts_.text(field(argument, "attribute"));
      TSNode object = field(argument, "object");
      const bool torch = facts_.text(object) == "torch" || imports_.qualified(object) == "torch";
      return attr == "dtype" || (torch && listed(rule_.kv_path.dtype_names, attr));
    }
    return is(argument, "identifier") && text.find("dtype") != std::string::npos;
  }

  // A lone argument that could be a shape or a dtype (a name, an attribute, a call).
  bool ambiguous_lone_argument(const std::vector<TSNode>& arguments) const {
    if (arguments.size() != 1) return false;
    TSNode a = syntax::unparenthesized(arguments.front());
    if (is(a, "attribute") && facts_.text(field(a, "attribute")) == "shape") return false;
    return is(a, "identifier") || is(a, "attribute") || is(a, "call") || is(a, "subscript");
  }

  static void reached(Trace& t) { t.reached_source = true; }

  void trace(TSNode expr, const FunctionFacts* scope, int depth, Trace& t) const {
    expr = syntax::unparenthesized(expr);
    auto unknown = [&](const std::string& why) { t.problems.push_back({RunInputStatus::Unknown, expr, why}); };
    if (syntax::is_null(expr) || is(expr, "none")) return;
    if (depth > kMaxTraceDepth) return unknown("the value passes through too many steps for kvpatch to follow");
    if (is(expr, "conditional_expression")) {
      const std::vector<TSNode> parts = syntax::statements(expr);
      trace(parts.front(), scope, depth + 1, t);
      trace(parts.back(), scope, depth + 1, t);
      return;
    }
    if (is(expr, "boolean_operator")) {
      trace(field(expr, "left"), scope, depth + 1, t);
      trace(field(expr, "right"), scope, depth + 1, t);
      return;
    }
    if (is(expr, "subscript")) return trace(field(expr, "value"), scope, depth + 1, t);
    // run(kv_cache=(ckv, kpe)), or a helper's `return ckv, kpe` unpacked by its caller: every element is KV data.
    if (is(expr, "tuple") || is(expr, "list") || is(expr, "expression_list")) {
      for (TSNode element : syntax::statements(expr)) trace(element, scope, depth + 1, t);
      return;
    }
    if (is(expr, "call")) return trace_call(expr, scope, depth, t);
    if (is(expr, "attribute")) {
      if (listed(rule_.kv_source_attributes, facts_.text(field(expr, "attribute")))) return reached(t);
      return unknown(one_line(facts_.text(expr)) + " is not a KV source rule " + rule_.id + " knows");
    }
    if (is(expr, "identifier")) return trace_name(expr, scope, depth, t);
    const std::string kind(syntax::type(expr));
    unknown("kvpatch does not follow " + std::string(kind.find_first_of("aeiou") == 0 ? "an " : "a ") + kind +
            " back to a KV source");
  }

  void trace_call(TSNode call, const FunctionFacts* scope, int depth, Trace& t) const {
    TSNode callee = field(call, "function");
    const std::string callee_text = one_line(facts_.text(callee));
    // A helper of the module holds what it returns: each return value traced in the helper.
    if (const std::vector<const FunctionFacts*> defs = defs_called(facts_, call); !defs.empty()) {
      for (const FunctionFacts* def : defs) {
        const std::optional<std::vector<TSNode>> values = returned_values(*def);
        if (!values) {
          t.problems.push_back({RunInputStatus::Unknown, call, def->name + "() may end without a return kvpatch can "
                                                               "follow (a generator, or code after its last return)"});
          continue;
        }
        for (TSNode value : *values) trace(value, def, depth + 1, t);
      }
      return;
    }
    if (is(callee, "identifier")) {
      if (listed(rule_.kv_source_calls, callee_text)) return reached(t);
      t.problems.push_back({RunInputStatus::Unknown, call, callee_text + "() is a function kvpatch does not follow"});
      return;
    }
    if (!is(callee, "attribute")) {
      t.problems.push_back({RunInputStatus::Unknown, call, "kvpatch does not follow a call of " + callee_text});
      return;
    }
    const std::string name = facts_.text(field(callee, "attribute"));
    TSNode object = field(callee, "object");
    if (TSNode viewed = torch_view_input(rule_.kv_path, facts_, imports_, call); !syntax::is_null(viewed)) {
      return trace(viewed, scope, depth + 1, t);
    }
    // A conversion is reported and the trace goes on through it, so that every one on the way is named.
    if (const CastFinding* cast = cast_at(call)) {
      if (!cast->agrees_with_plan()) {
        const bool suppressed = cast->consumer.rfind("suppressed", 0) == 0;
        t.problems.push_back({RunInputStatus::Converted, call,
                       "the cast stays, " + std::string(suppressed ? "" : "since it is needed by ") + cast->consumer});
      }
      return trace(object, scope, depth + 1, t);
    }
    if (listed(rule_.kv_source_calls, name)) return reached(t);
    if (moves_device_only(rule_.kv_path, facts_, call, name)) return trace(object, scope, depth + 1, t);
    if (listed(rule_.kv_path.keeps_dtype, name)) {
      TSNode list = field(call, "arguments");
      const std::vector<TSNode> arguments = is(list, "argument_list") ? syntax::statements(list) : std::vector<TSNode>{};
      if (std::any_of(arguments.begin(), arguments.end(), [&](TSNode a) { return looks_like_dtype(a); })) {
        t.problems.push_back({RunInputStatus::Converted, call, "a ." + name + "() with a dtype reinterprets the KV bytes as another dtype"});
      } else if (listed(rule_.kv_path.dtype_overloads, name) && ambiguous_lone_argument(arguments)) {
        t.problems.push_back({RunInputStatus::Unknown, call,
                       "." + name + "(" + one_line(facts_.text(arguments.front())) +
                           ") may take a dtype, which reinterprets the KV bytes; kvpatch cannot tell"});
        return;
      }
      return trace(object, scope, depth + 1, t);
    }
    if (listed(rule_.kv_path.converts, name)) {
      t.problems.push_back({RunInputStatus::Converted, call, "not a cast rule " + rule_.id + " removes or guards (" + removable() + ")"});
      return trace(object, scope, depth + 1, t);
    }
    t.problems.push_back({RunInputStatus::Unknown, call, callee_text + "() is not known to keep the dtype of the KV data"});
  }

  // The keywords that may come with a cast's dtype, in words: ", with or without `non_blocking=`".
  std::string extra_keywords() const {
    std::string out;
    for (const std::string& k : rule_.cast_extra_keywords) out += (out.empty() ? "" : " or `") + k + "=`";
    return out.empty() ? "" : ", with or without `" + out;
  }

  // The casts the rule handles, in words.
  std::string removable() const {
    std::string functions;
    for (const std::string& f : rule_.functions) functions += (functions.empty() ? "" : " / ") + f;
    return "those are `." + rule_.cast_method + "(<x>." + rule_.cast_argument_attribute + ")`, the dtype written there" +
           (rule_.cast_keyword.empty() ? "" : " (or as `" + rule_.cast_keyword + "=`)") + extra_keywords() +
           ", held by a local or by a helper's parameter that every call binds to it, on a KV source's value, or on a "
           "name holding it, in " +
           functions;
  }

  // The assignment can run before the use: it ends before it, or a loop holds both.
  bool may_precede(const Assignment& a, TSNode use, const FunctionFacts& function) const {
    if (ts_node_end_byte(a.statement) <= ts_node_start_byte(use)) return true;
    for (TSNode n = syntax::parent(use); !syntax::is_null(n) && !syntax::same(n, function.body); n = syntax::parent(n)) {
      if ((is(n, "for_statement") || is(n, "while_statement")) && syntax::contains(n, a.statement)) return true;
    }
    return false;
  }

  // An assignment written directly in the function's body (or a `with` there): once it ran, a parameter's value is
  // gone.
  static bool unconditional(const Assignment& a, const FunctionFacts& function) {
    TSNode statement = syntax::parent(a.statement);
    return is(a.statement, "assignment") && is(statement, "expression_statement") &&
           syntax::is_straight_line_in(statement, function.body);
  }

  void trace_name(TSNode name_node, const FunctionFacts* scope, int depth, Trace& t) const {
    const std::string name = facts_.text(name_node);
    auto unknown = [&](const std::string& why) { t.problems.push_back({RunInputStatus::Unknown, name_node, why}); };
    for (const FunctionFacts* f = scope; f != nullptr;
         f = f->outer >= 0 ? &facts_.functions()[static_cast<std::size_t>(f->outer)] : nullptr) {
      const bool parameter = f->signature.index_of(name) >= 0;
      std::vector<const Assignment*> assignments = facts_.local_assignments(*f, name);
      if (assignments.empty() && !parameter) continue;
      // Only the assignments the walk back from the use finds reach it; for a closure's read, those that reach the
      // calls of the closure (reaching_assignments).
      if (auto reaching = reaching_assignments(facts_, assignments, name, name_node)) assignments = *reaching;
      if (f == scope) {
        // Where the walk cannot tell, in the function itself those that can run before the use.
        assignments.erase(std::remove_if(assignments.begin(), assignments.end(),
                                         [&](const Assignment* a) { return !may_precede(*a, name_node, *f); }),
                          assignments.end());
      }
      const bool overwritten = std::any_of(assignments.begin(), assignments.end(), [&](const Assignment* a) {
        return f == scope && unconditional(*a, *f) && ts_node_end_byte(a->statement) <= ts_node_start_byte(name_node);
      });
      if (parameter && !overwritten) return trace_parameter(*f, name_node, depth, t);
      if (assignments.empty()) return unknown(name + " is not assigned before this use");
      for (const Assignment* a : assignments) {
        if (!t.visited.insert(a).second) continue;
        if (a->kind == AssignmentKind::Plain && !syntax::is_null(a->value)) {
          trace(a->value, f, depth + 1, t);
        } else if (a->kind == AssignmentKind::Unpacked && is(a->statement, "assignment")) {
          trace_unpacked(field(a->statement, "right"), f, depth + 1, t);
        } else {
          unknown(name + " is bound by " + one_line(facts_.text(a->statement)).substr(0, 60) +
                  ", which kvpatch does not follow");
        }
      }
      return;
    }
    unknown(name + " is not a local; kvpatch does not follow module-level values");
  }

  // A parameter the function never overwrites before the use holds what the function's calls pass it: each is
  // traced in its caller, where the module shows every call (parameter_bindings).
  void trace_parameter(const FunctionFacts& function, TSNode name_node, int depth, Trace& t) const {
    const std::string name = facts_.text(name_node);
    auto unknown = [&](const std::string& why) { t.problems.push_back({RunInputStatus::Unknown, name_node, why}); };
    const std::optional<std::vector<ParameterBinding>> bindings = parameter_bindings(facts_, function, name);
    if (!bindings || bindings->empty()) {
      return unknown(name + " is a parameter of " + function.name + "(), " +
                     (bindings ? "which nothing in the module calls" : "which the module may not show every call of") +
                     "; kvpatch does not follow values into it");
    }
    for (const ParameterBinding& b : *bindings) {
      const std::string call = "the call of " + function.name + "() at " + position_text(b.call);
      if (!syntax::is_null(b.value)) {
        trace(b.value, b.caller, depth + 1, t);
      } else if (b.default_text) {
        if (*b.default_text != "None") unknown(call + " leaves " + name + " to its default " + one_line(*b.default_text));
      } else {
        unknown(call + " binds " + name + " to nothing known" + (b.failure.empty() ? "" : " (" + b.failure + ")"));
      }
    }
  }

  // `a, b = <value>`: every element of a literal tuple or list (any may be ours), else the whole value.
  void trace_unpacked(TSNode value, const FunctionFacts* scope, int depth, Trace& t) const {
    value = syntax::unparenthesized(value);
    while (is(value, "assignment")) value = field(value, "right");
    if (is(value, "tuple") || is(value, "list") || is(value, "expression_list")) {
      for (TSNode element : syntax::statements(value)) trace(element, scope, depth, t);
      return;
    }
    trace(value, scope, depth, t);
  }

  const CastRule& rule_;
  const RuleSet& rules_;
  const ModuleFacts& facts_;
  const std::vector<PlanSite>& sites_;
  const std::vector<CastFinding>& casts_;
  const SourceFile& source_;
  const ImportedNames imports_;  // `th.bfloat16` is torch's after `import torch as th`
  mutable std::optional<std::vector<ConsumerScope>> scopes_;  // consumer_scopes(), built on first use
};
}  // namespace

std::vector<RunInputFinding> check_run_inputs(const CastRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                                              const std::vector<PlanSite>& sites, const std::vector<CastFinding>& casts) {
  return RunInputChecker(rule, rules, facts, sites, casts).run();
}

std::vector<RunScaleFinding> check_run_scales(const CastRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                                              const std::vector<PlanSite>& sites, const std::vector<CastFinding>& casts,
                                              const std::string& flashinfer) {
  return RunInputChecker(rule, rules, facts, sites, casts).scales(flashinfer);
}

}  // namespace kvpatch
