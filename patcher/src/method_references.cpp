#include "kvpatch/method_references.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "kvpatch/reaching_definitions.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {

// The outermost parenthesized_expression around the node, or the node itself.
TSNode parenthesized_outside(TSNode node) {
  for (TSNode up = syntax::parent(node); is(up, "parenthesized_expression"); up = syntax::parent(up)) node = up;
  return node;
}

// `getattr(r, "m")` with exactly those two arguments and a plain string literal naming the method.
bool is_getattr_of(TSNode node, const std::string& method, const ModuleFacts& facts) {
  if (!is(node, "call") || facts.text(field(node, "function")) != "getattr") return false;
  const std::vector<TSNode> args = syntax::statements(field(node, "arguments"));
  if (args.size() != 2 || !is(args[1], "string")) return false;
  const std::string literal = facts.text(args[1]);
  return literal == "\"" + method + "\"" || literal == "'" + method + "'";
}

TSNode receiver_of_read(TSNode node, const std::string& method, const ModuleFacts& facts) {
  if (is(node, "attribute") && facts.text(field(node, "attribute")) == method) return field(node, "object");
  if (is_getattr_of(node, method, facts)) return syntax::statements(field(node, "arguments"))[0];
  return TSNode{};
}

bool is_callee(TSNode outer) {
  TSNode parent = syntax::parent(outer);
  return is(parent, "call") && syntax::same(field(parent, "function"), outer);
}

// Inside the left side of an assignment (`w.plan = partial(f, w)`), or deleted.
bool is_target(TSNode node) {
  for (TSNode up = syntax::parent(node); !syntax::is_null(up); node = up, up = syntax::parent(up)) {
    if (is(up, "assignment") || is(up, "augmented_assignment")) return syntax::same(field(up, "left"), node);
    if (is(up, "delete_statement")) return true;
    if (is(up, "expression_statement") || is(up, "block") || is(up, "module")) return false;
  }
  return false;
}

// Read only to be looked at: `w.plan.__name__`, `w.plan is f`, `isinstance(w.plan, partial)`.
bool is_inspected(TSNode outer, const ModuleFacts& facts) {
  TSNode parent = syntax::parent(outer);
  if (is(parent, "attribute") && syntax::same(field(parent, "object"), outer)) return true;
  if (is(parent, "comparison_operator") || is(parent, "not_operator")) return true;
  if (is(parent, "argument_list") && is(syntax::parent(parent), "call")) {
    static constexpr std::array<std::string_view, 8> kInspectors = {"isinstance", "callable", "hasattr", "id",
                                                                    "type",       "repr",     "str",     "print"};
    const std::string callee = facts.text(field(syntax::parent(parent), "function"));
    return std::find(kInspectors.begin(), kInspectors.end(), callee) != kInspectors.end();
  }
  return false;
}

std::string escape_context(TSNode outer, const ModuleFacts& facts) {
  TSNode parent = syntax::parent(outer);
  if (is(parent, "argument_list") || is(parent, "keyword_argument")) {
    TSNode call = is(parent, "keyword_argument") ? syntax::parent(parent) : parent;
    call = syntax::parent(call);
    return "passed to " + one_line(facts.text(field(call, "function"))) + "()";
  }
  if (is(parent, "assignment")) return "assigned to " + one_line(facts.text(field(parent, "left")));
  if (is(parent, "named_expression")) return "bound with :=";
  if (is(parent, "conditional_expression")) return "chosen by a conditional expression";
  if (is(parent, "return_statement")) return "returned";
  if (is(parent, "lambda")) return "returned by a lambda";
  if (is(parent, "pair") || is(parent, "list") || is(parent, "tuple") || is(parent, "set")) return "put in a container";
  return "read as a value (" + std::string(syntax::type(parent)) + ")";
}

// `name = r.m` in a function, `name` not a parameter, and every other occurrence of it in the function a call
// (or another assignment of it): the calls this assignment alone reaches, in source order. False when name is used
// otherwise, or a call may see this value or another one.
bool alias_calls(TSNode assignment, const std::string& name, const ModuleFacts& facts, std::vector<TSNode>& calls) {
  const FunctionFacts* function = facts.function_at(assignment);
  if (function == nullptr || function->signature.index_of(name) >= 0) return false;
  const std::vector<const Assignment*> all = facts.local_assignments(*function, name);
  const Assignment* own = nullptr;
  for (const Assignment* a : all) {
    if (syntax::same(a->statement, assignment)) own = a;
  }
  if (own == nullptr) return false;
  // Bound by one of the name's assignments (`name = ...`, `name, x = ...`): not a use.
  auto targets = [&](TSNode n) {
    return syntax::is_bound_by_assignment(n) && std::any_of(all.begin(), all.end(), [&](const Assignment* a) {
             return syntax::contains(a->statement, n);
           });
  };
  bool only_called = true;
  syntax::walk(function->body, [&](TSNode n) {
    if (!only_called) return false;
    if (!is(n, "identifier") || facts.text(n) != name || targets(n)) return true;
    TSNode parent = syntax::parent(n);
    // `x.name` and `f(name=...)` name something else.
    if (is(parent, "attribute") && syntax::same(field(parent, "attribute"), n)) return true;
    if (is(parent, "keyword_argument") && syntax::same(field(parent, "name"), n)) return true;
    TSNode outer = parenthesized_outside(n);
    if (!is_callee(outer)) {
      only_called = false;
      return true;
    }
    // With the name assigned more than once, a call is this alias's only where no other value can reach it.
    const std::vector<const Assignment*> reaching =
        all.size() == 1 ? all : assignments_reaching(facts, *function, name, n);
    const bool ours = std::find(reaching.begin(), reaching.end(), own) != reaching.end();
    if (ours && reaching.size() > 1) only_called = false;
    if (ours && reaching.size() == 1) calls.push_back(syntax::parent(outer));
    return true;
  });
  return only_called;
}

// `a = b = r.m`: every name of the chain holds the value, so it is an alias only when each of them is one; its calls
// are theirs together. `innermost` is the assignment `b = r.m`.
void chained_alias(TSNode innermost, const ModuleFacts& facts, MethodValue& value) {
  std::vector<std::string> names;
  std::vector<TSNode> calls;
  for (TSNode a = innermost; !syntax::is_null(a);) {
    const TSNode target = field(a, "left");
    const std::string name = facts.text(target);
    if (!is(target, "identifier")) {
      value.context = "bound to " + name;
      return;
    }
    if (!alias_calls(a, name, facts, calls)) {
      value.context = "bound to " + name + ", which is used other than called";
      return;
    }
    names.push_back(name);
    const TSNode up = syntax::parent(a);
    a = is(up, "assignment") && syntax::same(field(up, "right"), a) ? up : TSNode{};
  }
  std::sort(calls.begin(), calls.end(),
            [](TSNode x, TSNode y) { return ts_node_start_byte(x) < ts_node_start_byte(y); });
  std::string joined;
  for (auto n = names.rbegin(); n != names.rend(); ++n) joined += (joined.empty() ? "" : " = ") + *n;
  value.alias = joined;
  value.alias_calls = std::move(calls);
}
}  // namespace

TSNode method_call_receiver(TSNode call, const std::string& method, const std::vector<MethodValue>& values,
                            const ModuleFacts& facts) {
  TSNode callee = field(call, "function");
  TSNode receiver = receiver_of_read(syntax::unparenthesized(callee), method, facts);
  if (!syntax::is_null(receiver) || !is(callee, "identifier")) return receiver;
  for (const MethodValue& v : values) {
    for (TSNode c : v.alias_calls) {
      if (syntax::same(c, call)) return v.receiver;
    }
  }
  return TSNode{};
}

std::optional<MethodCall> wrapper_method_call(TSNode call, const std::string& method, const std::vector<MethodValue>& values,
                                              const WrapperTypes& types, const FunctionFacts* scope,
                                              const ModuleFacts& facts) {
  const TSNode receiver = method_call_receiver(call, method, values, facts);
  if (syntax::is_null(receiver)) return std::nullopt;
  MethodCall out;
  if (const std::optional<TypeVerdict> through = types.class_verdict(receiver, scope)) {
    out.through_class = true;
    out.verdict = *through;
    const std::vector<TSNode> args =
        is(field(call, "arguments"), "argument_list") ? syntax::statements(field(call, "arguments")) : std::vector<TSNode>{};
    if (!args.empty() && !is(args[0], "keyword_argument") && !is(args[0], "list_splat") &&
        !is(args[0], "dictionary_splat") && !is(args[0], "parenthesized_list_splat")) {
      out.receiver = args[0];
    }
    return out;
  }
  out.receiver = receiver;
  out.verdict = types.of(receiver, scope);
  return out;
}

bool read_on_wrapper(const MethodValue& value, const WrapperTypes& types, const FunctionFacts* scope) {
  return types.class_verdict(value.receiver, scope).value_or(types.of(value.receiver, scope)) == TypeVerdict::Wrapper;
}

std::vector<MethodValue> method_values(const std::string& method, const ModuleFacts& facts) {
  std::vector<MethodValue> out;
  syntax::walk(facts.file().tree.root(), [&](TSNode node) {
    TSNode receiver = receiver_of_read(node, method, facts);
    if (syntax::is_null(receiver)) return true;
    const TSNode outer = parenthesized_outside(node);
    if (is_callee(outer) || is_target(node) || is_inspected(outer, facts)) return true;
    MethodValue value;
    value.node = node;
    value.receiver = receiver;
    TSNode parent = syntax::parent(outer);
    // `name = r.m`, or name's own element of `a, name = ..., r.m`, or the statement `(name := r.m)`, whose own
    // value goes nowhere.
    const bool walrus = is(parent, "named_expression") && syntax::same(field(parent, "value"), outer) &&
                        is(syntax::parent(parenthesized_outside(parent)), "expression_statement");
    const TSNode target = walrus ? field(parent, "name") : syntax::assigned_target(outer);
    if (is(parent, "assignment") && syntax::same(field(parent, "right"), outer) &&
        is(syntax::parent(parent), "assignment")) {
      chained_alias(parent, facts, value);
    } else if (is(target, "identifier")) {
      const std::string name = facts.text(target);
      std::vector<TSNode> calls;
      const TSNode binding = walrus || is(parent, "assignment") ? parent : syntax::parent(parent);
      if (alias_calls(binding, name, facts, calls)) {
        value.alias = name;
        value.alias_calls = std::move(calls);
      } else {
        value.context = "bound to " + name + ", which is used other than called";
      }
    }
    if (value.alias.empty() && value.context.empty()) value.context = escape_context(outer, facts);
    out.push_back(std::move(value));
    return true;
  });
  return out;
}

std::vector<MethodValue> function_values(const std::string& name, const ModuleFacts& facts) {
  std::vector<MethodValue> out;
  syntax::walk(facts.file().tree.root(), [&](TSNode node) {
    if (!is(node, "identifier") || facts.text(node) != name) return true;
    TSNode parent = syntax::parent(node);
    if ((is(parent, "function_definition") && syntax::same(field(parent, "name"), node)) ||
        (is(parent, "attribute") && syntax::same(field(parent, "attribute"), node)) ||
        (is(parent, "keyword_argument") && syntax::same(field(parent, "name"), node)) ||
        is(parent, "dotted_name") || is(parent, "aliased_import") || is(parent, "global_statement")) {
      return true;
    }
    const TSNode outer = parenthesized_outside(node);
    if (is_callee(outer) || is_target(node) || is_inspected(outer, facts)) return true;
    MethodValue value;
    value.node = node;
    value.context = escape_context(outer, facts);
    out.push_back(std::move(value));
    return true;
  });
  return out;
}

}  // namespace kvpatch
