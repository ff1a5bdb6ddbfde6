#include "kvpatch/module_calls.h"

#include <algorithm>

#include "kvpatch/dtype_roles.h"
#include "kvpatch/method_references.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {
// The parameters a call binds: a method's receiver fills its first one.
Signature call_signature(const FunctionFacts& function) {
  Signature signature = function.signature;
  if (function.is_method() && !signature.parameters.empty()) signature.parameters.erase(signature.parameters.begin());
  return signature;
}

// The call is `<self>.name(...)` in a method, self that method's own instance: the method it holds, else nullptr.
const FunctionFacts* own_instance_caller(const ModuleFacts& facts, TSNode call) {
  const TSNode callee = field(call, "function");
  if (!is(callee, "attribute")) return nullptr;
  const FunctionFacts* holder = holding_method(facts, facts.function_at(call));
  const TSNode receiver = field(callee, "object");
  if (holder == nullptr || holder->unbound || !is(receiver, "identifier") || facts.text(receiver) != self_name(*holder)) {
    return nullptr;
  }
  return holder;
}

// The name a parameter of the def is written with, or null.
TSNode parameter_node(const ModuleFacts& facts, const FunctionFacts& function, const std::string& name) {
  const TSNode parameters = field(function.node, "parameters");
  if (syntax::is_null(parameters)) return TSNode{};
  for (TSNode p : syntax::statements(parameters)) {
    TSNode n = p;
    if (is(p, "default_parameter") || is(p, "typed_default_parameter")) n = field(p, "name");
    else if (is(p, "typed_parameter")) n = ts_node_named_child(p, 0);
    if (is(n, "identifier") && facts.text(n) == name) return n;
  }
  return TSNode{};
}

// The defs `<self>.name(...)` may run in a method of cls: for cls and each subclass, the def its lineage finds
// (one that finds none and inherits only from the module's classes has no such method, and is left out); nullopt
// where an instance may run a def the module does not show.
std::optional<std::vector<const FunctionFacts*>> defs_on_instances(const ModuleFacts& facts, const ClassFacts& cls,
                                                                   const std::string& name) {
  std::vector<const FunctionFacts*> defs;
  for (const ClassFacts* c : facts.instance_classes(cls)) {
    const FunctionFacts* def = method_found(facts, *c, name);
    // Every class an instance of c inherits from is in its lineage: a method none of them defines is no method of
    // the instance (a call of it raises AttributeError).
    if (def == nullptr && facts.lineage_complete(*c)) continue;
    if (def == nullptr) return std::nullopt;
    if (std::find(defs.begin(), defs.end(), def) == defs.end()) defs.push_back(def);
  }
  return defs;
}

// A def nested in another whose every call the enclosing def shows: it is a plain def (no decorator, which may
// hand back some other callable; not named as the method holding it, which would make it read as that method),
// and its name appears in the enclosing body only as its own def and as the callee of calls. Any other use (the
// name handed on, returned or stored, bound again by an assignment, a parameter, an import, another def or a
// `nonlocal` / `global`) may call it from where the module does not show, or make a call run something else.
bool nested_calls_shown(const ModuleFacts& facts, const FunctionFacts& function) {
  if (function.outer < 0 || function.name == function.method_name) return false;
  if (is(syntax::parent(function.node), "decorated_definition")) return false;
  const FunctionFacts& outer = facts.functions()[static_cast<std::size_t>(function.outer)];
  const TSNode own_name = field(function.node, "name");
  bool shown = true;
  syntax::walk(outer.body, [&](TSNode n) {
    if (!shown) return false;
    if (!is(n, "identifier") || facts.text(n) != function.name || syntax::same(n, own_name)) return true;
    const TSNode parent = syntax::parent(n);
    shown = !syntax::names_a_variable(n) || (is(parent, "call") && syntax::same(field(parent, "function"), n));
    return shown;
  });
  return shown;
}

// The def a plain call `name(...)` in `scope` runs: the nearest enclosing function that binds the name decides,
// and it must bind it by a single nested def whose calls are all shown (nested_calls_shown); with none binding
// it, the module-level def. nullptr where that is not known.
const FunctionFacts* def_of_plain_call(const ModuleFacts& facts, const FunctionFacts* scope, const std::string& name) {
  const FunctionFacts* binding = function_binding(facts, scope, name);
  if (binding == nullptr) return facts.module_function(name);
  const std::vector<const FunctionFacts*> nested = nested_defs_named(facts, *binding, name);
  const bool only_def = nested.size() == 1 && binding->signature.index_of(name) < 0 &&
                        facts.local_assignments(*binding, name).empty();
  return only_def && nested_calls_shown(facts, *nested.front()) ? nested.front() : nullptr;
}
}  // namespace

const FunctionFacts* method_found(const ModuleFacts& facts, const ClassFacts& cls, const std::string& name) {
  for (const ClassFacts* c : facts.lineage(cls)) {
    if (const FunctionFacts* m = facts.method(*c, name)) return m;
  }
  return nullptr;
}

std::string position_text(TSNode node) {
  const TSPoint at = ts_node_start_point(node);
  return std::to_string(at.row + 1) + ":" + std::to_string(at.column + 1);
}

std::optional<std::vector<TSNode>> known_calls(const ModuleFacts& facts, const FunctionFacts& function) {
  if (function.outer >= 0) {
    // Only the enclosing def can call a nested one by its name; nested_calls_shown makes every such call one of it.
    if (!nested_calls_shown(facts, function)) return std::nullopt;
    const FunctionFacts& outer = facts.functions()[static_cast<std::size_t>(function.outer)];
    std::vector<TSNode> out;
    for (TSNode call : facts.calls_named(function.name)) {
      if (is(field(call, "function"), "identifier") && syntax::contains(outer.body, call)) out.push_back(call);
    }
    return out;
  }
  if (function.unbound) return std::nullopt;
  const bool method = function.is_method();
  if (method ? !method_values(function.name, facts).empty() : !function_values(function.name, facts).empty()) {
    return std::nullopt;
  }
  std::vector<TSNode> out;
  for (TSNode call : facts.calls_named(function.name)) {
    const TSNode callee = field(call, "function");
    if (method) {
      if (!is(callee, "attribute")) continue;  // a plain call of the same name is some other function
      // Only `<self>.name(...)` in a method is known to call a def: this one where the instance's class runs it,
      // the method's own class or a subclass overriding name (a base's call reaches the override).
      const FunctionFacts* holder = own_instance_caller(facts, call);
      if (holder == nullptr) return std::nullopt;
      const ClassFacts* cls = facts.find_class(holder->class_name);
      const auto defs = cls == nullptr ? std::nullopt : defs_on_instances(facts, *cls, function.name);
      if (!defs) return std::nullopt;
      if (std::find(defs->begin(), defs->end(), &function) == defs->end()) continue;
    } else if (!is(callee, "identifier") || function_binding(facts, facts.function_at(call), function.name) != nullptr) {
      continue;  // `x.name(...)`, or a local of that name: some other callable
    }
    out.push_back(call);
  }
  return out;
}

std::optional<std::vector<ParameterBinding>> parameter_bindings(const ModuleFacts& facts, const FunctionFacts& function,
                                                                const std::string& parameter) {
  const bool method = function.is_method();
  if (method && (function.signature.parameters.empty() || parameter == function.signature.parameters.front().name)) {
    return std::nullopt;
  }
  const std::optional<std::vector<TSNode>> calls = known_calls(facts, function);
  if (!calls) return std::nullopt;
  const Signature signature = call_signature(function);
  std::vector<ParameterBinding> out;
  for (TSNode call : *calls) {
    ParameterBinding b;
    b.call = call;
    b.caller = facts.function_at(call);
    const TSNode argument_list = field(call, "arguments");
    if (!is(argument_list, "argument_list")) return std::nullopt;
    const std::vector<CallArgument> arguments = call_arguments(facts.file().source.text(), argument_list);
    const Binding binding = bind_arguments(signature, arguments);
    const BoundValue* bound = binding.complete ? binding.find(parameter) : nullptr;
    if (bound == nullptr) {
      b.failure = binding.complete ? "" : binding.failure;
    } else if (bound->from_default()) {
      b.default_text = bound->text;
    } else {
      const CallArgument& a = arguments[static_cast<std::size_t>(bound->argument)];
      b.value = ts_node_named_descendant_for_byte_range(argument_list, static_cast<uint32_t>(a.value_begin),
                                                        static_cast<uint32_t>(a.value_end));
    }
    out.push_back(b);
  }
  return out;
}

std::vector<const FunctionFacts*> defs_called(const ModuleFacts& facts, TSNode call) {
  const TSNode callee = field(call, "function");
  std::vector<const FunctionFacts*> defs;
  if (const FunctionFacts* holder = own_instance_caller(facts, call)) {
    const ClassFacts* cls = facts.find_class(holder->class_name);
    // A subclass may run its own override of the method through the same `self.name(...)`.
    const auto found = cls == nullptr ? std::nullopt : defs_on_instances(facts, *cls, facts.text(field(callee, "attribute")));
    if (!found) return {};
    for (const FunctionFacts* def : *found) {
      if (def->unbound || !def->is_method()) return {};
    }
    defs = *found;
  } else if (is(callee, "identifier")) {
    const FunctionFacts* def = def_of_plain_call(facts, facts.function_at(call), facts.text(callee));
    if (def == nullptr) return {};
    defs.push_back(def);
  }
  return defs;
}

std::optional<std::vector<TSNode>> returned_values(const FunctionFacts& function) {
  std::vector<TSNode> values;
  bool generator = false;
  syntax::walk(function.body, [&](TSNode n) {
    if (is(n, "function_definition") || is(n, "class_definition") || is(n, "lambda")) return false;
    if (is(n, "yield")) generator = true;
    if (is(n, "return_statement")) values.push_back(ts_node_named_child(n, 0));  // null for a bare `return`
    return true;
  });
  if (generator || !syntax::never_reaches_end(function.body)) return std::nullopt;
  return values;
}

std::optional<std::vector<ReturnedValue>> unpacked_returns(const ModuleFacts& facts, TSNode statement,
                                                           const std::string& name) {
  if (!is(statement, "assignment")) return std::nullopt;
  const TSNode left = syntax::unparenthesized_target(field(statement, "left"));
  const TSNode call = syntax::unparenthesized(field(statement, "right"));
  if (!(is(left, "pattern_list") || is(left, "tuple_pattern") || is(left, "list_pattern")) || !is(call, "call")) {
    return std::nullopt;
  }
  const std::vector<TSNode> targets = syntax::named_children(left);
  std::optional<std::size_t> index;  // Python binds the names left to right: the last of a repeated name holds
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (!is(syntax::unparenthesized_target(targets[i]), "identifier")) return std::nullopt;  // `*rest`, `x.a`, ...
    if (facts.text(syntax::unparenthesized_target(targets[i])) == name) index = i;
  }
  const std::vector<const FunctionFacts*> defs = defs_called(facts, call);
  if (!index || defs.empty()) return std::nullopt;
  std::vector<ReturnedValue> out;
  for (const FunctionFacts* def : defs) {
    const std::optional<std::vector<TSNode>> values = returned_values(*def);
    if (!values) return std::nullopt;
    for (TSNode value : *values) {
      value = syntax::unparenthesized(value);
      if (!(is(value, "tuple") || is(value, "expression_list") || is(value, "list"))) return std::nullopt;
      const std::vector<TSNode> elements = syntax::named_children(value);
      if (elements.size() != targets.size() ||
          std::any_of(elements.begin(), elements.end(), [](TSNode e) { return is(e, "list_splat"); })) {
        return std::nullopt;
      }
      out.push_back({elements[*index], def});
    }
  }
  return out;
}

std::vector<ReceivingParameter> receiving_parameters(const ModuleFacts& facts, TSNode call, TSNode argument) {
  const TSNode argument_list = field(call, "arguments");
  if (!is(argument_list, "argument_list")) return {};
  const std::vector<const FunctionFacts*> defs = defs_called(facts, call);
  if (defs.empty()) return {};  // most calls: nothing of the module's to bind the arguments to
  const std::vector<CallArgument> arguments = call_arguments(facts.file().source.text(), argument_list);
  int index = -1;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].value_begin == ts_node_start_byte(argument) && arguments[i].value_end == ts_node_end_byte(argument)) {
      index = static_cast<int>(i);
    }
  }
  if (index < 0) return {};
  std::vector<ReceivingParameter> out;
  for (const FunctionFacts* def : defs) {
    const Binding binding = bind_arguments(call_signature(*def), arguments);
    if (!binding.complete) return {};
    const auto bound = std::find_if(binding.values.begin(), binding.values.end(),
                                    [&](const auto& entry) { return entry.second.argument == index; });
    if (bound == binding.values.end()) return {};  // collected by *args or **kwargs
    const TSNode node = parameter_node(facts, *def, bound->first);
    if (syntax::is_null(node)) return {};
    out.push_back({def, bound->first, node});
  }
  return out;
}

}  // namespace kvpatch
