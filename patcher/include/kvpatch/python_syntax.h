#pragma once
// tree-sitter-python behind a small interface: parse a source, find syntax errors, read nodes.
#include <tree_sitter/api.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvpatch/source_file.h"

namespace kvpatch {

// Throws std::runtime_error when the compiled grammar's ABI is outside what the runtime loads.
void require_compatible_grammar();

// Owns the syntax tree of one source file's text (the text after any BOM).
class PythonTree {
public:
  explicit PythonTree(const std::string& text);
  ~PythonTree();
  PythonTree(const PythonTree&) = delete;
  PythonTree& operator=(const PythonTree&) = delete;
  PythonTree(PythonTree&& other) noexcept;
  PythonTree& operator=(PythonTree&&) = delete;

  TSNode root() const;

private:
  TSTree* tree_ = nullptr;
};

// A parsed file: the source and its tree, kept together so node offsets index source.text().
struct ParsedFile {
  SourceFile source;
  PythonTree tree;
  explicit ParsedFile(SourceFile file);
  std::string_view text(TSNode node) const;
};

// Start of the first ERROR or MISSING node, in source order; nullopt for a clean tree.
std::optional<std::size_t> first_syntax_error(TSNode root);

// Parses a file and throws InputError (with the first error's line) if it has syntax errors, or holds code
// Python would not compile that the grammar reads cleanly (python_compile_checks.h).
ParsedFile parse_source_file(SourceFile file);

namespace syntax {
inline bool is_null(TSNode node) { return ts_node_is_null(node); }
inline std::string_view type(TSNode node) { return ts_node_type(node); }
inline bool is(TSNode node, std::string_view node_type) { return !is_null(node) && type(node) == node_type; }
TSNode field(TSNode node, const char* name);
// The named children that are code: extras (comments, and backslashes ending a line, which tree-sitter puts among
// the children wherever they stand, as in `f(a, \` then `b)`) are left out, so that positions count arguments,
// parameters and operands as Python does.
std::vector<TSNode> named_children(TSNode node);
// The index-th of those, a null node past the end; and how many there are.
TSNode named_child(TSNode node, uint32_t index);
uint32_t named_child_count(TSNode node);
TSNode parent(TSNode node);
// The node's named children that are statements of a block or module (comments left out).
std::vector<TSNode> statements(TSNode block);
// Calls visit(node) on the node and every named descendant, parents first, in source order.
// A visit returning false skips that node's descendants.
// Iterative, so deeply nested expressions cannot exhaust the stack.
template <typename Visit>
void walk(TSNode node, Visit&& visit) {
  std::vector<TSNode> pending{node};
  while (!pending.empty()) {
    TSNode current = pending.back();
    pending.pop_back();
    if (!visit(current)) continue;
    for (uint32_t i = ts_node_named_child_count(current); i > 0; --i) pending.push_back(ts_node_named_child(current, i - 1));
  }
}
bool same(TSNode a, TSNode b);
// True when inner lies within outer (or is outer).
bool contains(TSNode outer, TSNode inner);
// Whether a statement is one of block's own, or one of the body of a `with` that is, or of a `finally`, or of the
// body or `else` of a try whose handlers all end by raising (at any depth of these): it runs whenever the block runs
// past it, as a context manager does not skip its body and such a try cannot end early without raising.
bool is_straight_line_in(TSNode statement, TSNode block);
// A function body whose end control never reaches: its last statement returns or raises, or is an if/else, try or
// with every way through which does (a function that can reach its end returns None there).
bool never_reaches_end(TSNode body);
// Strips parentheses: (x) -> x.
TSNode unparenthesized(TSNode node);
// Where a `:=` stands as Python reads it. The grammar reads `x := a if c else b` as the conditional
// `(x := a) if c else b`; Python reads `x := (a if c else b)`, since an unparenthesized `:=` is no operand.
// For a named_expression that is a conditional's first operand so, the outermost such conditional; else the node.
TSNode walrus_extent(TSNode named_expression);
// The same for an assignment target, where the grammar reads `(a)` as a one-element tuple pattern without a comma:
// (a) -> a, but (a,) stays.
TSNode unparenthesized_target(TSNode node);
// `a, b = x, y` (tuple or list on either side, parenthesized or not), given its left and right sides: each target
// with the element Python binds it to, when both sides list as many and none is starred; empty for any other.
std::vector<std::pair<TSNode, TSNode>> unpacked_pairs(TSNode left, TSNode right);
// The target a value is bound to: x of `x = value` (or `(x) = value`), or x of `a, x = ..., value` (unpacked_pairs);
// null when the value is not bound to a target of its own.
TSNode assigned_target(TSNode value);
// Whether the node is bound by an assignment: its whole target, or a name anywhere in a tuple or list target; or
// the name a `:=` binds.
bool is_bound_by_assignment(TSNode node);
// Whether an identifier names a variable there: not an attribute's name (`x.name`) nor a keyword argument's
// (`f(name=...)`).
bool names_a_variable(TSNode identifier);
// Tokens the grammar lets stand anywhere, outside the structure: a comment, a backslash ending a line.
bool is_extra(TSNode node);
// Whether one of the node's unnamed children (its keywords and punctuation) is `token`.
bool has_token(TSNode node, std::string_view token);
}  // namespace syntax

// Collapses runs of whitespace (newlines and backslash continuations included) to one space, none inside brackets
// or around a dot a continuation moved: for one-line messages, and to compare code texts as Python reads them.
std::string one_line(std::string_view text);

}  // namespace kvpatch
