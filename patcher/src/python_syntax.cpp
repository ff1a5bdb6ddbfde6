#include "kvpatch/python_syntax.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kvpatch/input_error.h"
#include "kvpatch/python_compile_checks.h"

extern "C" const TSLanguage* tree_sitter_python(void);

namespace {
// The grammar release scripts/fetch-grammar.sh pins (CMake reads its stamp): what it parses is what
// kvpatch can read.
constexpr std::string_view grammar_version = KVPATCH_GRAMMAR_VERSION;
}  // namespace

namespace kvpatch {

void require_compatible_grammar() {
  const uint32_t version = ts_language_version(tree_sitter_python());
  if (version < TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION || version > TREE_SITTER_LANGUAGE_VERSION) {
    throw std::runtime_error(
        "tree-sitter-python grammar has parser ABI " + std::to_string(version) + " but the tree-sitter runtime loads " +
        std::to_string(TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION) + "-" + std::to_string(TREE_SITTER_LANGUAGE_VERSION) +
        "; re-run scripts/fetch-grammar.sh (it pins tree-sitter-python " + std::string(grammar_version) +
        ", ABI 14) and rebuild");
  }
}

PythonTree::PythonTree(const std::string& text) {
  TSParser* parser = ts_parser_new();
  if (!ts_parser_set_language(parser, tree_sitter_python())) {
    ts_parser_delete(parser);
    require_compatible_grammar();
    throw std::runtime_error("tree-sitter refused the Python grammar; rebuild kvpatch after scripts/fetch-grammar.sh");
  }
  tree_ = ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size()));
  ts_parser_delete(parser);
  if (tree_ == nullptr) throw std::runtime_error("tree-sitter failed to parse");
}

PythonTree::~PythonTree() {
  if (tree_ != nullptr) ts_tree_delete(tree_);
}

PythonTree::PythonTree(PythonTree&& other) noexcept : tree_(other.tree_) { other.tree_ = nullptr; }

TSNode PythonTree::root() const { return ts_tree_root_node(tree_); }

ParsedFile::ParsedFile(SourceFile file) : source(std::move(file)), tree(source.text()) {}

std::string_view ParsedFile::text(TSNode node) const {
  const uint32_t start = ts_node_start_byte(node);
  return std::string_view(source.text()).substr(start, ts_node_end_byte(node) - start);
}

std::optional<std::size_t> first_syntax_error(TSNode root) {
  if (!ts_node_has_error(root)) return std::nullopt;
  // Depth first over all children (MISSING nodes are often anonymous tokens), in source order.
  std::vector<TSNode> pending{root};
  while (!pending.empty()) {
    TSNode node = pending.back();
    pending.pop_back();
    if (ts_node_is_missing(node) || syntax::type(node) == "ERROR") return ts_node_start_byte(node);
    if (!ts_node_has_error(node)) continue;
    for (uint32_t i = ts_node_child_count(node); i > 0; --i) pending.push_back(ts_node_child(node, i - 1));
  }
  return ts_node_start_byte(root);
}

ParsedFile parse_source_file(SourceFile file) {
  ParsedFile parsed(std::move(file));
  if (auto error = first_syntax_error(parsed.tree.root())) {
    const SourcePosition where = parsed.source.position(*error);
    throw InputError(parsed.source.display_path(), where.line,
                     "syntax error at column " + std::to_string(where.column) + "; the file is not edited",
                     "fix the Python syntax first (python3 -m py_compile names the problem); if Python compiles "
                     "the file, the tree-sitter-python " + std::string(grammar_version) +
                     " grammar kvpatch reads it with cannot (such as a starred parenthesis in a bare tuple, "
                     "`return a, *(b)`, Python 3.13's type parameter defaults or 3.14's template strings): leave "
                     "the file out of the run (in a walked directory, with the project settings' `exclude`)",
                     where.column);
  }
  if (auto problem = first_compile_problem(parsed)) {
    const SourcePosition where = parsed.source.position(problem->offset);
    if (problem->grammar_misread) {
      throw InputError(parsed.source.display_path(), where.line,
                       "the tree-sitter-python " + std::string(grammar_version) + " grammar misreads this file: " +
                           problem->message + "; the file is not edited",
                       "if the line is meant as a statement of its own, wrap the tuple in parentheses; else leave the "
                       "file out of the run (in a walked directory, with the project settings' `exclude`)",
                       where.column);
    }
    throw InputError(parsed.source.display_path(), where.line,
                     "Python would not compile this file: " + problem->message + "; the file is not edited",
                     "fix it first (python3 -m py_compile names the problem)", where.column);
  }
  return parsed;
}

namespace syntax {
TSNode field(TSNode node, const char* name) {
  return ts_node_child_by_field_name(node, name, static_cast<uint32_t>(std::char_traits<char>::length(name)));
}

std::vector<TSNode> named_children(TSNode node) {
  std::vector<TSNode> out;
  const uint32_t n = ts_node_named_child_count(node);
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const TSNode child = ts_node_named_child(node, i);
    if (!is_extra(child)) out.push_back(child);
  }
  return out;
}

TSNode named_child(TSNode node, uint32_t index) {
  const uint32_t n = ts_node_named_child_count(node);
  for (uint32_t i = 0; i < n; ++i) {
    const TSNode child = ts_node_named_child(node, i);
    if (is_extra(child)) continue;
    if (index == 0) return child;
    --index;
  }
  return TSNode{};
}

uint32_t named_child_count(TSNode node) {
  uint32_t count = 0;
  const uint32_t n = ts_node_named_child_count(node);
  for (uint32_t i = 0; i < n; ++i) count += is_extra(ts_node_named_child(node, i)) ? 0 : 1;
  return count;
}

TSNode parent(TSNode node) { return ts_node_parent(node); }

std::vector<TSNode> statements(TSNode block) {
  std::vector<TSNode> out;
  for (TSNode child : named_children(block)) out.push_back(child);
  return out;
}

bool same(TSNode a, TSNode b) { return ts_node_eq(a, b); }

bool contains(TSNode outer, TSNode inner) {
  return ts_node_start_byte(outer) <= ts_node_start_byte(inner) && ts_node_end_byte(inner) <= ts_node_end_byte(outer);
}

namespace {
// Whether a block always ends by raising: its last statement is `raise`.
bool ends_raising(TSNode block) {
  const std::vector<TSNode> body = statements(block);
  return !body.empty() && is(body.back(), "raise_statement");
}

// Whether a `finally` could end the statement's run without the exception it is handling going on: a `return`,
// `break` or `continue` anywhere in it (functions and classes defined in it aside) would.
bool finally_lets_through(TSNode clause) {
  bool swallows = false;
  walk(clause, [&](TSNode n) {
    if (is(n, "function_definition") || is(n, "class_definition")) return false;
    swallows = swallows || is(n, "return_statement") || is(n, "break_statement") || is(n, "continue_statement");
    return !swallows;
  });
  return !swallows;
}

// Whether every part of a try statement that can run instead of the rest of its body, or after part of it, passes
// the exception on: each handler ends by raising and a `finally` never swallows it. Then a statement of the body
// (or of its `else`) that the try reaches runs whenever the try statement runs to its end.
bool try_passes_exceptions_on(TSNode statement) {
  for (TSNode clause : named_children(statement)) {
    if (is(clause, "except_clause") || is(clause, "except_group_clause")) {
      const std::vector<TSNode> parts = named_children(clause);
      if (parts.empty() || !is(parts.back(), "block") || !ends_raising(parts.back())) return false;
    }
    if (is(clause, "finally_clause") && !finally_lets_through(clause)) return false;
  }
  return true;
}

// The compound statement whose block `at` is, when running that statement to its end runs the whole block (the
// body of a `with`; the `finally` of a try; its body and `else` when the try passes every exception on); null
// otherwise.
TSNode straight_line_owner(TSNode at) {
  const TSNode owner = parent(at);
  if (is(owner, "with_statement")) return same(field(owner, "body"), at) ? owner : TSNode{};
  if (is(owner, "finally_clause")) return parent(owner);
  if (is(owner, "try_statement") && same(field(owner, "body"), at)) {
    return try_passes_exceptions_on(owner) ? owner : TSNode{};
  }
  if (is(owner, "else_clause") && is(parent(owner), "try_statement")) {
    return try_passes_exceptions_on(parent(owner)) ? parent(owner) : TSNode{};
  }
  return TSNode{};
}
}  // namespace

namespace {
bool never_falls_through(TSNode statement);

// The block's last statement never lets control run past it.
bool block_never_falls_through(TSNode block) {
  const std::vector<TSNode> body = statements(block);
  return !body.empty() && never_falls_through(body.back());
}

// The last block among a clause's children (an except or finally clause names none of them).
TSNode clause_block(TSNode clause) {
  const std::vector<TSNode> parts = named_children(clause);
  return !parts.empty() && is(parts.back(), "block") ? parts.back() : TSNode{};
}

bool never_falls_through(TSNode statement) {
  if (is(statement, "return_statement") || is(statement, "raise_statement")) return true;
  if (is(statement, "with_statement")) return block_never_falls_through(field(statement, "body"));
  if (is(statement, "if_statement")) {
    // Every branch, an `else` among them, ends by returning or raising.
    bool has_else = false;
    for (TSNode clause : named_children(statement)) {
      if (is(clause, "elif_clause") && !block_never_falls_through(field(clause, "consequence"))) return false;
      if (is(clause, "else_clause")) {
        has_else = true;
        if (!block_never_falls_through(field(clause, "body"))) return false;
      }
    }
    return has_else && block_never_falls_through(field(statement, "consequence"));
  }
  if (is(statement, "try_statement")) {
    bool body_ends = block_never_falls_through(field(statement, "body"));
    bool handlers_end = true;
    for (TSNode clause : named_children(statement)) {
      if (is(clause, "else_clause")) body_ends = body_ends || block_never_falls_through(field(clause, "body"));
      if (is(clause, "except_clause") || is(clause, "except_group_clause")) {
        const TSNode block = clause_block(clause);
        handlers_end = handlers_end && !is_null(block) && block_never_falls_through(block);
      }
      if (is(clause, "finally_clause")) {
        const TSNode block = clause_block(clause);
        if (!is_null(block) && block_never_falls_through(block)) return true;  // whatever the rest did
      }
    }
    return body_ends && handlers_end;
  }
  return false;
}
}  // namespace

bool never_reaches_end(TSNode body) { return block_never_falls_through(body); }

bool is_straight_line_in(TSNode statement, TSNode block) {
  for (TSNode at = parent(statement); !is_null(at);) {
    if (same(at, block)) return true;
    const TSNode owner = straight_line_owner(at);
    if (is_null(owner)) return false;
    at = parent(owner);
  }
  return false;
}

bool is_extra(TSNode node) { return is(node, "comment") || is(node, "line_continuation"); }

bool has_token(TSNode node, std::string_view token) {
  for (uint32_t i = 0; i < ts_node_child_count(node); ++i) {
    const TSNode child = ts_node_child(node, i);
    if (!ts_node_is_named(child) && type(child) == token) return true;
  }
  return false;
}

TSNode unparenthesized_target(TSNode node) {
  while ((is(node, "tuple_pattern") || is(node, "parenthesized_expression")) && named_child_count(node) == 1 &&
         !has_token(node, ",")) {
    node = named_child(node, 0);
  }
  return node;
}

std::vector<std::pair<TSNode, TSNode>> unpacked_pairs(TSNode left, TSNode right) {
  left = unparenthesized_target(left);
  right = unparenthesized(right);
  const bool sequence_left = is(left, "pattern_list") || is(left, "tuple_pattern") || is(left, "list_pattern");
  const bool sequence_right = is(right, "expression_list") || is(right, "tuple") || is(right, "list");
  if (!sequence_left || !sequence_right) return {};
  const std::vector<TSNode> targets = named_children(left);
  const std::vector<TSNode> values = named_children(right);
  auto starred = [](TSNode n) { return is(n, "list_splat_pattern") || is(n, "list_splat") || is(n, "dictionary_splat"); };
  if (targets.size() != values.size() || std::any_of(targets.begin(), targets.end(), starred) ||
      std::any_of(values.begin(), values.end(), starred)) {
    return {};
  }
  std::vector<std::pair<TSNode, TSNode>> out;
  for (std::size_t i = 0; i < targets.size(); ++i) out.emplace_back(targets[i], values[i]);
  return out;
}

TSNode assigned_target(TSNode value) {
  TSNode up = parent(value);
  if (is(up, "assignment")) return same(field(up, "right"), value) ? unparenthesized_target(field(up, "left")) : TSNode{};
  TSNode assignment = parent(up);
  if (!is(assignment, "assignment") || !same(unparenthesized(field(assignment, "right")), up)) return TSNode{};
  for (const auto& [target, element] : unpacked_pairs(field(assignment, "left"), field(assignment, "right"))) {
    if (same(element, value)) return unparenthesized_target(target);
  }
  return TSNode{};
}

bool names_a_variable(TSNode identifier) {
  const TSNode up = parent(identifier);
  return !(is(up, "attribute") && same(field(up, "attribute"), identifier)) &&
         !(is(up, "keyword_argument") && same(field(up, "name"), identifier));
}

bool is_bound_by_assignment(TSNode node) {
  TSNode up = parent(node);
  while (is(up, "pattern_list") || is(up, "tuple_pattern") || is(up, "list_pattern") ||
         is(up, "parenthesized_expression") || is(up, "list_splat_pattern")) {
    node = up;
    up = parent(up);
  }
  return (is(up, "assignment") && same(field(up, "left"), node)) ||
         (is(up, "named_expression") && same(field(up, "name"), node));
}

TSNode walrus_extent(TSNode named_expression) {
  TSNode node = named_expression;
  for (TSNode up = parent(node); is(up, "conditional_expression") && same(named_child(up, 0), node); up = parent(up)) {
    node = up;
  }
  return node;
}

TSNode unparenthesized(TSNode node) {
  while (is(node, "parenthesized_expression") && named_child_count(node) == 1) {
    node = named_child(node, 0);
  }
  return node;
}
}  // namespace syntax

std::string one_line(std::string_view text) {
  std::string out;
  bool in_space = false;
  bool continued = false;  // the blanks held a backslash continuation
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      in_space = true;
      continue;
    }
    // A backslash ending a line joins it to the next, as blanks would (`a \` + `.b`).
    if (c == '\\' && (text.substr(i + 1, 1) == "\n" || text.substr(i + 1, 2) == "\r\n")) {
      in_space = true;
      continued = true;
      continue;
    }
    if (in_space && !out.empty()) {
      // No space after an opening bracket or before a closing one: `.to(\n q.dtype\n)` reads `.to(q.dtype)`; nor
      // around a dot that a continuation moved to the next line: `self \` + `.data_type` reads `self.data_type`.
      const char last = out.back();
      const bool bracket = last == '(' || last == '[' || last == '{' || c == ')' || c == ']' || c == '}';
      if (!bracket && !(continued && (c == '.' || last == '.'))) out += ' ';
    }
    in_space = false;
    continued = false;
    out += c;
  }
  return out;
}

}  // namespace kvpatch
