#include "kvpatch/wrapper_overrides.h"

#include <algorithm>
#include <optional>

#include "kvpatch/module_calls.h"
#include "kvpatch/python_syntax.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

WrapperMethod plan_method(const PlanSiteRule& rule) {
  const int last = std::max(rule.signature.index_of(rule.kv_parameter), rule.signature.index_of(rule.q_parameter));
  return {rule.method, &rule.signature, static_cast<std::size_t>(last + 1), {}, {}};
}

WrapperMethod consumer_method(const Fp8Consumer& consumer) {
  WrapperMethod out{consumer.method, &consumer.signature, 0, {}, {}};
  const std::size_t positional = consumer.signature.positional_count();
  for (const std::string& name : consumer.kv_parameters) {
    const int i = consumer.signature.index_of(name);
    if (i < 0) continue;
    if (static_cast<std::size_t>(i) < positional) {
      out.positional = std::max(out.positional, static_cast<std::size_t>(i) + 1);
    } else {
      out.keywords.push_back(name);
    }
  }
  if (consumer.kv_scales) {
    for (const std::string& k : consumer.kv_scales->keywords) out.keywords.push_back(k);
  }
  out.handed_on = consumer.kv_parameters;
  return out;
}

bool forwards_to_base(TSNode call, const std::vector<CallArgument>& arguments, const std::string& method,
                      const FunctionFacts* scope, const WrapperTypes& types, const ModuleFacts& facts) {
  const TSNode callee = syntax::unparenthesized(field(call, "function"));
  if (!is(callee, "attribute") || facts.text(field(callee, "attribute")) != method) return false;
  const TSNode base = syntax::unparenthesized(field(callee, "object"));
  if (!is(base, "call") || facts.text(field(base, "function")) != "super") return false;
  if (scope == nullptr || !scope->is_method() || scope->unbound || scope->name != method ||
      !types.is_wrapper_class(scope->class_name)) {
    return false;
  }
  const std::vector<Parameter>& parameters = scope->signature.parameters;
  if (parameters.size() != 3 || parameters[1].kind != ParameterKind::VarPositional ||
      parameters[2].kind != ParameterKind::VarKeyword) {
    return false;
  }
  const bool passed_on = arguments.size() == 2 && arguments[0].kind == ArgumentKind::UnpackedSequence &&
                         arguments[0].text == parameters[1].name && arguments[1].kind == ArgumentKind::UnpackedMapping &&
                         arguments[1].text == parameters[2].name;
  if (!passed_on) return false;
  const TSNode argument_list = field(call, "arguments");
  bool elsewhere = false;
  syntax::walk(scope->body, [&](TSNode n) {
    if (elsewhere) return false;
    if (is(n, "identifier") && syntax::names_a_variable(n) &&
        (facts.text(n) == parameters[1].name || facts.text(n) == parameters[2].name)) {
      elsewhere = !syntax::contains(argument_list, n);
    }
    return !elsewhere;
  });
  return !elsewhere;
}


namespace {
// The `super().<method>(...)` calls in a def's body.
std::vector<TSNode> super_calls(const FunctionFacts& method, const std::string& name, const ModuleFacts& facts) {
  std::vector<TSNode> out;
  syntax::walk(method.body, [&](TSNode n) {
    if (!is(n, "call")) return true;
    const TSNode callee = syntax::unparenthesized(field(n, "function"));
    if (is(callee, "attribute") && facts.text(field(callee, "attribute")) == name) {
      const TSNode base = syntax::unparenthesized(field(callee, "object"));
      if (is(base, "call") && facts.text(field(base, "function")) == "super") out.push_back(n);
    }
    return true;
  });
  return out;
}

std::string parameter_list(const FunctionFacts& method, const ModuleFacts& facts) {
  return one_line(facts.text(field(method.node, "parameters")));
}
}  // namespace

bool binds_as_wrapper(const FunctionFacts& def, const WrapperMethod& method, const WrapperTypes& types,
                      const ModuleFacts& facts) {
  if (def.unbound) return false;  // a static or class method: the call's first argument is no instance
  const std::vector<Parameter>& own = def.signature.parameters;
  const std::vector<Parameter>& wrapper = method.signature->parameters;
  // After the instance, the wrapper's own parameters, by name and position, through method.positional.
  bool same = method.positional > 0 && method.positional <= wrapper.size() && own.size() > method.positional;
  for (std::size_t i = 0; same && i < method.positional; ++i) {
    const Parameter& p = own[i + 1];
    same = p.name == wrapper[i].name &&
           (p.kind == ParameterKind::PositionalOrKeyword || p.kind == ParameterKind::PositionalOnly);
  }
  // And every keyword of method.keywords, by name or through **kwargs.
  const bool any_keyword = std::any_of(own.begin(), own.end(), [](const Parameter& p) {
    return p.kind == ParameterKind::VarKeyword;
  });
  for (std::size_t k = 0; same && !any_keyword && k < method.keywords.size(); ++k) {
    same = std::any_of(own.begin() + 1, own.end(), [&](const Parameter& p) {
      return p.name == method.keywords[k] &&
             (p.kind == ParameterKind::PositionalOrKeyword || p.kind == ParameterKind::KeywordOnly);
    });
  }
  if (same) return true;
  const SourceFile& source = facts.file().source;
  for (TSNode call : super_calls(def, method.name, facts)) {
    const TSNode argument_list = field(call, "arguments");
    if (!is(argument_list, "argument_list")) continue;
    if (forwards_to_base(call, call_arguments(source.text(), argument_list), method.name, &def, types, facts)) {
      return true;
    }
  }
  return false;
}

namespace {
// Whether the identifier `n` (a read of the def's parameter `name`, the wrapper's parameter number `slot`) is passed as
// itself, in its own place, to the wrapper's method: on super(), or on one of the class's bases with the instance first.
bool passed_as_itself(TSNode n, const std::string& name, int slot, const FunctionFacts& def,
                      const std::vector<TSNode>& bases, const std::string& method, const ModuleFacts& facts) {
  const TSNode up = syntax::parent(n);
  const TSNode list = is(up, "keyword_argument") ? syntax::parent(up) : up;
  const TSNode call = syntax::parent(list);
  if (!is(list, "argument_list") || !is(call, "call")) return false;
  const TSNode callee = syntax::unparenthesized(field(call, "function"));
  if (!is(callee, "attribute") || facts.text(field(callee, "attribute")) != method) return false;
  const TSNode object = syntax::unparenthesized(field(callee, "object"));
  const bool on_super = is(object, "call") && facts.text(field(object, "function")) == "super";
  const bool on_base = std::any_of(bases.begin(), bases.end(), [&](TSNode b) {
    return one_line(facts.text(b)) == one_line(facts.text(object));
  });
  const std::vector<CallArgument> arguments = call_arguments(facts.file().source.text(), list);
  const std::string self = def.signature.parameters.empty() ? "" : def.signature.parameters[0].name;
  const bool instance_first = on_base && !arguments.empty() && arguments[0].kind == ArgumentKind::Positional &&
                              arguments[0].text == self;
  if (!on_super && !instance_first) return false;
  const std::size_t first = instance_first ? 1 : 0;
  for (std::size_t i = first; i < arguments.size(); ++i) {
    const CallArgument& a = arguments[i];
    if (a.value_begin != ts_node_start_byte(n) || a.value_end != ts_node_end_byte(n)) continue;
    if (a.kind == ArgumentKind::Keyword) return a.keyword == name;
    // By position, in its own place; after a splat (`*extra`) a positional argument lands nowhere that can be told.
    return a.kind == ArgumentKind::Positional && slot >= 0 && i == first + static_cast<std::size_t>(slot) &&
           std::all_of(arguments.begin() + static_cast<std::ptrdiff_t>(first),
                       arguments.begin() + static_cast<std::ptrdiff_t>(i),
                       [](const CallArgument& b) { return b.kind == ArgumentKind::Positional; });
  }
  return false;
}

// The statement holding a node, for messages.
TSNode statement_of(TSNode n) {
  while (!syntax::is_null(syntax::parent(n)) && !is(syntax::parent(n), "block") && !is(syntax::parent(n), "module")) {
    n = syntax::parent(n);
  }
  return n;
}
}  // namespace

std::string altered_input(const FunctionFacts& def, const WrapperMethod& method, const ModuleFacts& facts) {
  const ClassFacts* holder = facts.find_class(def.class_name);
  const std::vector<TSNode> bases = holder == nullptr ? std::vector<TSNode>{} : facts.positional_bases(*holder);
  for (const std::string& name : method.handed_on) {
    if (def.signature.index_of(name) < 1) continue;  // not a parameter of the def (then **kwargs hands it on)
    const int slot = method.signature->index_of(name);
    TSNode other{};  // the first read that is not the parameter passed as itself
    syntax::walk(def.body, [&](TSNode n) {
      if (!syntax::is_null(other)) return false;
      if (is(n, "identifier") && facts.text(n) == name && syntax::names_a_variable(n) &&
          !passed_as_itself(n, name, slot, def, bases, method.name, facts)) {
        other = n;
      }
      return syntax::is_null(other);
    });
    if (!syntax::is_null(other)) {
      return "does more with " + name + " than hand it on to the wrapper's " + method.name +
             "(): " + one_line(facts.text(statement_of(other))) + " at line " +
             std::to_string(facts.file().source.position(ts_node_start_byte(other)).line);
    }
  }
  return "";
}

std::optional<RebindingOverride> class_override(const ClassFacts& cls, const WrapperMethod& method,
                                               const WrapperTypes& types, const ModuleFacts& facts) {
  if (const FunctionFacts* def = method_found(facts, cls, method.name)) {
    const bool binds = binds_as_wrapper(*def, method, types, facts);
    std::string why = binds ? altered_input(*def, method, facts) : "";
    if (binds && why.empty()) return std::nullopt;
    const SourceFile& source = facts.file().source;
    const int line = static_cast<int>(source.position(ts_node_start_byte(def->node)).line);
    return RebindingOverride{cls.name, {source.path().filename().string() + ":" + std::to_string(line),
                                        parameter_list(*def, facts), std::move(why)}};
  }
  // No def in the module's part of its lineage: a base imported from the run's other modules may have one.
  for (TSNode base : facts.positional_bases(cls)) {
    const std::string name = one_line(facts.text(base));
    for (const auto& [imported, c] : types.imported_project_classes()) {
      if (imported != name) continue;
      const auto found = c.rebinding.find(method.name);
      if (found != c.rebinding.end()) return RebindingOverride{cls.name, found->second};
    }
  }
  return std::nullopt;
}

std::vector<RebindingOverride> rebinding_overrides(const WrapperMethod& method, const std::string& wrapper_class,
                                                   const WrapperTypes& types, const ModuleFacts& facts) {
  std::vector<RebindingOverride> out;
  for (const ClassFacts& cls : facts.classes()) {
    if (cls.name == wrapper_class || !types.is_wrapper_class(cls.name)) continue;
    if (std::optional<RebindingOverride> o = class_override(cls, method, types, facts)) out.push_back(std::move(*o));
  }
  for (const auto& [name, c] : types.imported_project_classes()) {
    const auto found = c.rebinding.find(method.name);
    if (found != c.rebinding.end()) out.push_back({name, found->second});
  }
  return out;
}

bool super_in_override(TSNode receiver, const FunctionFacts* scope, const std::string& method, const WrapperTypes& types,
                       const ModuleFacts& facts) {
  receiver = syntax::unparenthesized(receiver);
  if (syntax::is_null(receiver) || !is(receiver, "call") || facts.text(field(receiver, "function")) != "super") return false;
  // Zero-argument super() binds the def's own class and first parameter: only in the def itself, not a nested one.
  if (scope == nullptr || !scope->is_method() || scope->unbound || scope->name != method ||
      scope->class_name.empty() || !types.is_wrapper_class(scope->class_name)) {
    return false;
  }
  const TSNode list = field(receiver, "arguments");
  const std::vector<TSNode> arguments = is(list, "argument_list") ? syntax::statements(list) : std::vector<TSNode>{};
  if (arguments.empty()) return true;
  return arguments.size() == 2 && facts.text(arguments[0]) == scope->class_name &&
         facts.text(arguments[1]) == self_name(*scope);
}

const RebindingOverride* override_run(const MethodCall& call, TSNode callee, const std::string& method,
                                      const std::vector<RebindingOverride>& overrides, const std::string& wrapper_class,
                                      const WrapperTypes& types, const FunctionFacts* scope, const ModuleFacts& facts) {
  if (overrides.empty() || call.verdict != TypeVerdict::Wrapper) return nullptr;
  auto named = [&](const std::string& name) -> const RebindingOverride* {
    auto found = std::find_if(overrides.begin(), overrides.end(), [&](const RebindingOverride& o) { return o.class_name == name; });
    return found == overrides.end() ? nullptr : &*found;
  };
  callee = syntax::unparenthesized(callee);
  if (call.through_class && is(callee, "attribute")) {
    const TSNode cls = syntax::unparenthesized(field(callee, "object"));
    const TSNode last = is(cls, "attribute") ? field(cls, "attribute") : cls;
    if (is(last, "identifier") && facts.text(last) == wrapper_class) return nullptr;
    if (is(cls, "identifier") && facts.find_class(facts.text(cls)) != nullptr) {
      // `Tagged.plan(w, ...)`: the def Tagged's lineage finds, whatever w's class.
      const ClassFacts& through = *facts.find_class(facts.text(cls));
      if (const RebindingOverride* o = named(through.name)) return o;
      if (method_found(facts, through, method) != nullptr || facts.lineage_complete(through)) return nullptr;
    }
  }
  if (super_in_override(call.receiver, scope, method, types, facts)) {
    // The def the class's bases find (class_override() records an inherited one under each subclass's name too).
    const ClassFacts* holder = facts.find_class(scope->class_name);
    for (TSNode base : holder == nullptr ? std::vector<TSNode>{} : facts.positional_bases(*holder)) {
      if (const RebindingOverride* o = named(one_line(facts.text(base)))) return o;
    }
    return nullptr;
  }
  const std::string cls = syntax::is_null(call.receiver) ? "" : types.module_class_of(call.receiver, scope);
  if (cls == wrapper_class && facts.find_class(cls) == nullptr) return nullptr;  // built by the wrapper class
  const ClassFacts* known = cls.empty() ? nullptr : facts.find_class(cls);
  if (known == nullptr) return &overrides.front();
  for (const ClassFacts* c : facts.instance_classes(*known)) {
    if (const RebindingOverride* o = named(c->name)) return o;
  }
  return nullptr;
}

std::string override_reason(const std::string& receiver, const std::string& method, const RebindingOverride& o) {
  return (receiver.empty() ? "the instance" : receiver) + " may be a " + o.class_name + ", whose own " + method +
         o.def.parameters + " (" + o.def.where + ") " +
         (o.def.why.empty() ? "neither takes the wrapper's parameters in their order nor only hands them on" : o.def.why);
}

}  // namespace kvpatch
