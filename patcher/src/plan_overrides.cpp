#include "kvpatch/plan_overrides.h"

#include <algorithm>
#include <optional>

#include "kvpatch/module_calls.h"
#include "kvpatch/python_syntax.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

// Calls of the override, on instances of the subclass, are sites (bound as the wrapper's plan) in this module and in
// the modules of the run that import it (project_classes.h); modules outside the run are not seen.
bool forwards_to_base(TSNode call, const std::vector<CallArgument>& arguments, const PlanSiteRule& rule,
                      const FunctionFacts* scope, const WrapperTypes& types, const ModuleFacts& facts) {
  const TSNode callee = syntax::unparenthesized(field(call, "function"));
  if (!is(callee, "attribute") || facts.text(field(callee, "attribute")) != rule.method) return false;
  const TSNode base = syntax::unparenthesized(field(callee, "object"));
  if (!is(base, "call") || facts.text(field(base, "function")) != "super") return false;
  if (scope == nullptr || !scope->is_method() || scope->unbound || scope->name != rule.method ||
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

bool binds_as_wrapper(const FunctionFacts& method, const PlanSiteRule& rule, const WrapperTypes& types,
                      const ModuleFacts& facts) {
  if (method.unbound) return false;  // a static or class method: the call's first argument is no instance
  const std::vector<Parameter>& own = method.signature.parameters;
  const std::vector<Parameter>& wrapper = rule.signature.parameters;
  const int kv = rule.signature.index_of(rule.kv_parameter);
  const int q = rule.signature.index_of(rule.q_parameter);
  const int last = std::max(kv, q);
  // After the instance, the wrapper's own parameters, by name and position, through both dtypes'.
  bool same = last >= 0 && own.size() > static_cast<std::size_t>(last) + 1;
  for (int i = 0; same && i <= last; ++i) {
    const Parameter& p = own[static_cast<std::size_t>(i) + 1];
    same = p.name == wrapper[static_cast<std::size_t>(i)].name &&
           (p.kind == ParameterKind::PositionalOrKeyword || p.kind == ParameterKind::PositionalOnly);
  }
  if (same) return true;
  const SourceFile& source = facts.file().source;
  for (TSNode call : super_calls(method, rule.method, facts)) {
    const TSNode argument_list = field(call, "arguments");
    if (!is(argument_list, "argument_list")) continue;
    if (forwards_to_base(call, call_arguments(source.text(), argument_list), rule, &method, types, facts)) return true;
  }
  return false;
}

std::optional<RebindingOverride> class_override(const ClassFacts& cls, const PlanSiteRule& rule,
                                               const WrapperTypes& types, const ModuleFacts& facts) {
  if (const FunctionFacts* def = method_found(facts, cls, rule.method)) {
    if (binds_as_wrapper(*def, rule, types, facts)) return std::nullopt;
    const SourceFile& source = facts.file().source;
    const int line = static_cast<int>(source.position(ts_node_start_byte(def->node)).line);
    return RebindingOverride{cls.name, source.path().filename().string() + ":" + std::to_string(line),
                             parameter_list(*def, facts)};
  }
  // No def in the module's part of its lineage: a base imported from the run's other modules may have one.
  for (TSNode base : facts.positional_bases(cls)) {
    const std::string name = one_line(facts.text(base));
    for (const auto& [imported, c] : types.imported_project_classes()) {
      if (imported == name && !c.rebinding.empty()) return RebindingOverride{cls.name, c.rebinding, c.rebinding_parameters};
    }
  }
  return std::nullopt;
}

std::vector<RebindingOverride> rebinding_overrides(const PlanSiteRule& rule, const WrapperTypes& types,
                                                   const ModuleFacts& facts) {
  std::vector<RebindingOverride> out;
  for (const ClassFacts& cls : facts.classes()) {
    if (cls.name == rule.wrapper_class || !types.is_wrapper_class(cls.name)) continue;
    if (std::optional<RebindingOverride> o = class_override(cls, rule, types, facts)) out.push_back(std::move(*o));
  }
  for (const auto& [name, c] : types.imported_project_classes()) {
    if (!c.rebinding.empty()) out.push_back({name, c.rebinding, c.rebinding_parameters});
  }
  return out;
}

}  // namespace kvpatch
