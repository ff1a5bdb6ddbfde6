// Binding targets: the grammar's patterns let through some targets CPython's compiler refuses
// (a call after `with ... as`, any expression after `del`, a tuple before `+=`), and it has no notion
// of __debug__, which Python never lets a program rebind.
#include <map>
#include <optional>
#include <string_view>

#include "kvpatch/python_compile_rules.h"

namespace kvpatch::compile_rules {
namespace {
using syntax::is;

// `(a)` as a target reads as a one-element tuple pattern without a comma; it is just `a`.
TSNode unwrapped(TSNode node) { return syntax::unparenthesized_target(node); }

// What CPython calls an expression that cannot be a target, in "cannot delete <what>".
std::string_view kind_of(std::string_view type) {
  if (type == "call") return "function call";
  if (type == "none") return "None";
  if (type == "true") return "True";
  if (type == "false") return "False";
  if (type == "ellipsis") return "ellipsis";
  if (type == "integer" || type == "float" || type == "string" || type == "concatenated_string") return "literal";
  if (type == "conditional_expression") return "conditional expression";
  if (type == "named_expression") return "named expression";
  if (type == "list_splat" || type == "list_splat_pattern") return "starred";
  return "expression";
}

struct Problem {
  TSNode node;
  std::string message;
};

// The first part of a target that cannot be bound (`verb` "assign to") or deleted ("delete").
std::optional<Problem> bad_target(const ParsedFile& file, TSNode node, std::string_view verb) {
  node = unwrapped(node);
  const std::string_view type = syntax::type(node);
  const std::string prefix = "cannot " + std::string(verb) + " ";
  if (type == "identifier") {
    if (file.text(node) == "__debug__") return Problem{node, prefix + "__debug__"};
    return std::nullopt;
  }
  if (type == "attribute") {
    const TSNode name = syntax::field(node, "attribute");
    if (verb != "delete" && file.text(name) == "__debug__") return Problem{name, prefix + "__debug__"};
    return std::nullopt;
  }
  if (type == "subscript" || type == "parenthesized_expression") return std::nullopt;  // `(*x)`: statement_forms
  if (type == "tuple" || type == "list" || type == "expression_list" || type == "pattern_list" ||
      type == "tuple_pattern" || type == "list_pattern") {
    for (TSNode element : syntax::named_children(node)) {
      if (syntax::is_extra(element)) continue;
      if (auto problem = bad_target(file, element, verb)) return problem;
    }
    return std::nullopt;
  }
  if ((type == "list_splat" || type == "list_splat_pattern") && verb != "delete") {
    return bad_target(file, syntax::named_child(node, 0), verb);
  }
  return Problem{node, prefix + std::string(kind_of(type))};
}

void check(const ParsedFile& file, TSNode target, std::string_view verb, const Report& report) {
  if (syntax::is_null(target)) return;
  if (auto problem = bad_target(file, target, verb)) report(problem->node, problem->message);
}

// `a, b += 1` and `(): int`: one name, attribute or subscript only.
void single_target(TSNode left, std::string_view what, const Report& report) {
  const TSNode target = unwrapped(left);
  const std::string_view type = syntax::type(target);
  const bool tuple = type == "tuple_pattern" || type == "pattern_list";
  if (!tuple && type != "list_pattern") return;
  const std::string kind = tuple ? "tuple" : "list";
  if (what == "augmented") return report(target, "'" + kind + "' is an illegal expression for augmented assignment");
  report(target, "only single target (not " + kind + ") can be annotated");
}
// PEP 572: a `:=` in a comprehension binds in the enclosing function, so it may not share a name with
// the comprehension's iteration variables, nor stand in the iterable after an `in`.
void comprehension_walrus(const ParsedFile& file, TSNode comprehension, const Report& report) {
  std::map<std::string_view, std::size_t> iteration;  // name -> where its for clause binds it
  for (TSNode clause : syntax::named_children(comprehension)) {
    if (!is(clause, "for_in_clause")) continue;
    syntax::walk(syntax::field(clause, "left"), [&](TSNode n) {
      if (is(n, "identifier")) iteration.emplace(file.text(n), ts_node_start_byte(n));
      return true;
    });
    syntax::walk(syntax::field(clause, "right"), [&](TSNode n) {
      if (is(n, "named_expression")) report(n, "assignment expression cannot be used in a comprehension iterable expression");
      return !is(n, "lambda");
    });
  }
  syntax::walk(comprehension, [&](TSNode n) {
    if (is(n, "lambda")) return false;
    if (!is(n, "named_expression")) return true;
    const TSNode name = syntax::field(n, "name");
    const auto bound = iteration.find(file.text(name));
    if (bound == iteration.end()) return true;
    const std::string quoted = "'" + std::string(file.text(name)) + "'";
    // The element expression comes first in the text but is evaluated after every for clause.
    const bool in_body = syntax::contains(syntax::field(comprehension, "body"), n);
    report(n, !in_body && bound->second > ts_node_start_byte(n)
                  ? "comprehension inner loop cannot rebind assignment expression target " + quoted
                  : "assignment expression cannot rebind comprehension iteration variable " + quoted);
    return true;
  });
}

// PEP 695: a type parameter's bound, a type alias's value and a generic class's bases are evaluated in
// scopes of their own where `:=` may not bind (a lambda inside them is its own function: allowed).
void walrus_within(TSNode node, const std::string& where, const Report& report) {
  if (syntax::is_null(node)) return;
  syntax::walk(node, [&](TSNode n) {
    if (is(n, "lambda")) return false;
    if (is(n, "named_expression")) report(n, "named expression cannot be used within " + where);
    return true;
  });
}

// `T: bound` and `T: (constraint, ...)` each read as a constrained_type whose second type is the bound.
void type_parameter_walrus(TSNode parameters, const Report& report) {
  for (TSNode parameter : syntax::named_children(parameters)) {
    const TSNode constrained = syntax::named_child(parameter, 0);
    if (!is(constrained, "constrained_type") || syntax::named_child_count(constrained) < 2) continue;
    const TSNode bound = syntax::named_child(syntax::named_child(constrained, 1), 0);
    walrus_within(bound, is(bound, "tuple") ? "a TypeVar constraint" : "a TypeVar bound", report);
  }
}
}  // namespace

void binding_targets(const ParsedFile& file, TSNode node, const Report& report) {
  const std::string_view type = syntax::type(node);
  if (type == "delete_statement") {
    for (TSNode target : syntax::named_children(node)) {
      if (!syntax::is_extra(target)) check(file, target, "delete", report);
    }
  } else if (type == "assignment") {
    check(file, syntax::field(node, "left"), "assign to", report);
    const bool annotated = !syntax::is_null(syntax::field(node, "type"));
    if (annotated) single_target(syntax::field(node, "left"), "annotated", report);
    // `x: int = y = 1` and `z = w: int = 1`: an annotated assignment has one target and ends the chain.
    const TSNode right = syntax::field(node, "right");
    if (is(right, "assignment") && (annotated || !syntax::is_null(syntax::field(right, "type")))) {
      report(right, "invalid syntax: an annotated assignment takes one target");
    }
    // `x = y += 1`: an augmented assignment is a statement of its own, never part of a chain.
    if (is(right, "augmented_assignment")) report(right, "invalid syntax: an augmented assignment takes one target");
  } else if (type == "augmented_assignment") {
    single_target(syntax::field(node, "left"), "augmented", report);
    check(file, syntax::field(node, "left"), "assign to", report);
    // `x -= a: b` and `x += y = 1`: the grammar reads on into another assignment.
    const TSNode right = syntax::field(node, "right");
    if (is(right, "assignment") || is(right, "augmented_assignment")) {
      report(right, "invalid syntax: an augmented assignment takes one target");
    }
  } else if (type == "for_statement" || type == "for_in_clause") {
    check(file, syntax::field(node, "left"), "assign to", report);
  } else if (type == "as_pattern_target") {
    for (TSNode target : syntax::named_children(node)) {
      if (!syntax::is_extra(target)) check(file, target, "assign to", report);
    }
  } else if (type == "named_expression" || type == "keyword_argument" || type == "function_definition" ||
             type == "class_definition") {
    check(file, syntax::field(node, "name"), "assign to", report);
    if (type == "class_definition" && !syntax::is_null(syntax::field(node, "type_parameters"))) {
      walrus_within(syntax::field(node, "superclasses"), "the definition of a generic", report);
    }
  } else if (type == "type_parameter") {
    type_parameter_walrus(node, report);
  } else if (type == "type_alias_statement") {
    walrus_within(syntax::field(node, "right"), "a type alias", report);
  } else if (comprehension_kind(type) != nullptr) {
    comprehension_walrus(file, node, report);
  } else if (type == "aliased_import") {
    check(file, syntax::field(node, "alias"), "assign to", report);
  }
}

}  // namespace kvpatch::compile_rules
