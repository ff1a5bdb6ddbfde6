// Where a starred expression (`*e`, `*e: T`) may stand. tree-sitter-python takes a star almost
// anywhere an expression goes; CPython's parser only where something unpacks it. And the grammar binds
// the star tighter than a trailing `.name`, `[i]` or `(...)`, so `(*self.topk)` reads as the attribute
// `topk` of `*self`: each check first finds the whole starred expression, then judges what holds it.
#include <string>
#include <string_view>

#include "kvpatch/python_compile_rules.h"

namespace kvpatch::compile_rules {
namespace {
using syntax::has_token;
using syntax::is;

// The field of an attribute, subscript or call that holds what it is applied to; nullptr for other nodes.
const char* chain_field(TSNode node) {
  return is(node, "attribute") ? "object" : is(node, "subscript") ? "value" : is(node, "call") ? "function" : nullptr;
}

// The node a chain of `.name`, `[i]` and `(...)` starts from: `*a` for the grammar's `*a.b[0]`.
TSNode chain_base(TSNode node) {
  for (const char* inner = chain_field(node); inner != nullptr; inner = chain_field(node)) node = syntax::field(node, inner);
  return node;
}

// What a starred expression `*e` stands in, as Python reads it. tree-sitter-python binds the star
// tighter than a trailing `.name`, `[i]` or `(...)`: in a list or a parenthesis it reads `*a.b` as the
// attribute `b` of `*a`, so the starred expression is the top of that chain, not the list_splat.
TSNode starred_whole(TSNode splat) {
  TSNode whole = splat;
  for (TSNode up = syntax::parent(whole); !syntax::is_null(up); up = syntax::parent(whole)) {
    const char* inner = chain_field(up);
    if (inner == nullptr || !syntax::same(syntax::field(up, inner), whole)) break;
    whole = up;
  }
  return whole;
}

// Whether a `type` node may be starred: the annotation of `*args`, or inside a subscript.
bool starred_annotation_allowed(TSNode type_node) {
  const TSNode owner = syntax::parent(type_node);
  if (is(owner, "typed_parameter") && is(syntax::named_child(owner, 0), "list_splat_pattern")) return true;
  return is(owner, "type_parameter") || is(owner, "generic_type");
}

// What an except clause catches, without its `as` name: the grammar reads `except* E as e:` as a
// clause whose value is `*E`, bound by `as`.
TSNode except_value(TSNode clause) {
  TSNode value = syntax::named_child(clause, 0);
  return is(value, "as_pattern") ? syntax::named_child(value, 0) : value;
}

bool star_of_except(TSNode clause, TSNode whole) {
  return (is(clause, "except_clause") || is(clause, "except_group_clause")) && syntax::same(except_value(clause), whole);
}

// `with (*a, b):` is a tuple to Python, which the grammar reads as two items: a parenthesized with
// clause of several items, none of them `as` anything, may hold a starred one.
bool with_items_are_a_tuple(TSNode clause) {
  if (!has_token(clause, "(")) return false;
  int items = 0;
  for (TSNode item : syntax::named_children(clause)) {
    if (!is(item, "with_item")) continue;
    if (is(syntax::field(item, "value"), "as_pattern")) return false;
    ++items;
  }
  return items > 1;
}

// `*e` only unpacks into something that holds several values: a call's arguments, a tuple (with its
// comma), a list, a set, a bare tuple, a subscript's index (PEP 646), an assignment target, the
// subjects of `match *a, b:` and `except*`. Elsewhere the grammar takes it and Python refuses it:
// `x = (*a.b)` (mutation seed 210693), `x = *a`, `return (*a)`, `a if *b else c`, `{1: *a}`, `1 + *a`,
// `f"{*a}"`, `[*a for a in b]`.
void starred_place(TSNode splat, const Report& report) {
  // `(**a)` outside a dict or a call: the grammar reads a star of a star.
  if (is(syntax::named_child(splat, 0), "list_splat")) return report(splat, "cannot use double starred expression here");
  if (is(syntax::parent(splat), "list_splat")) return;
  const TSNode whole = starred_whole(splat);
  const TSNode holder = syntax::parent(whole);
  const std::string_view type = syntax::type(holder);
  if (type == "argument_list" || type == "list" || type == "set" || type == "expression_list" ||
      type == "pattern_list" || type == "list_pattern") {
    return;
  }
  // The grammar gives `match *a, b:` two subjects where Python reads one tuple, and reads the statement
  // `*a,` as a starred expression followed by a comma.
  if ((type == "tuple" || type == "tuple_pattern" || type == "match_statement" || type == "expression_statement") &&
      has_token(holder, ",")) {
    return;
  }
  if (type == "with_item" && with_items_are_a_tuple(syntax::parent(holder))) return;
  if (type == "subscript" && !syntax::same(syntax::field(holder, "value"), whole)) {
    return;  // `a[*b]`; `a[*b:]` is a slice, below
  }
  if (star_of_except(holder, whole) || (type == "as_pattern" && star_of_except(syntax::parent(holder), whole))) return;
  if (type == "type") {
    // `*args: *tuple[int, str]`, which the grammar reads as a subscript of `*tuple`.
    if (!starred_annotation_allowed(holder)) report(holder, "invalid syntax: a starred annotation is allowed only on *args");
    return;
  }
  if (comprehension_kind(type) != nullptr && syntax::same(syntax::field(holder, "body"), whole)) {
    return report(holder, "iterable unpacking cannot be used in comprehension");
  }
  if (type == "interpolation") return report(holder, "f-string: cannot use starred expression here");
  if (type == "slice") return report(whole, "invalid syntax: a starred expression in a slice");
  if (type == "pair" && syntax::same(syntax::field(holder, "value"), whole)) {
    return report(whole, "cannot use a starred expression in a dictionary value");
  }
  if (type == "expression_statement") return report(holder, "can't use starred expression here");
  if (type == "parenthesized_expression" || type == "tuple" || type == "tuple_pattern") {
    return report(holder, "cannot use starred expression here");
  }
  report(whole, "can't use starred expression here");
}

// `x: *b` and `def f(x: *b)`: a starred annotation belongs to `*args` (or inside a subscript) only.
void splat_annotation(TSNode type_node, const Report& report) {
  const TSNode inner = syntax::named_child(type_node, 0);
  if (!is(inner, "splat_type") && !is(inner, "constrained_type")) return;
  const TSNode owner = syntax::parent(type_node);
  // `x: a: b` reads as a type parameter's bound, which only `def f[T: int]` (Python 3.12) may have.
  if (is(inner, "constrained_type")) {
    if (!is(owner, "type_parameter")) report(type_node, "invalid syntax: an annotation with two colons");
    return;
  }
  if (!starred_annotation_allowed(type_node)) report(type_node, "invalid syntax: a starred annotation is allowed only on *args");
}
}  // namespace

bool except_star(TSNode clause) { return is(clause, "except_clause") && is(chain_base(except_value(clause)), "list_splat"); }

void starred_expressions(TSNode node, const Report& report) {
  const std::string_view type = syntax::type(node);
  if (type == "list_splat") {
    starred_place(node, report);
  } else if (type == "list_splat_pattern") {
    // `*args`, or a starred target in a list or tuple of targets: `*a = b` and `for *a in b` are refused,
    // and `(*a) = b`, since a starred target needs a comma as much as a starred value does.
    const TSNode holder = syntax::parent(node);
    const std::string_view kind = syntax::type(holder);
    if (kind == "tuple_pattern" && !has_token(holder, ",")) return report(holder, "cannot use starred expression here");
    if (kind != "parameters" && kind != "lambda_parameters" && kind != "typed_parameter" && kind != "pattern_list" &&
        kind != "list_pattern" && kind != "tuple_pattern") {
      report(node, "starred assignment target must be in a list or tuple");
    }
  } else if (type == "type") {
    splat_annotation(node, report);
  }
}

}  // namespace kvpatch::compile_rules
