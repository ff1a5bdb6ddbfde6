#include "kvpatch/edit_operations.h"

#include <algorithm>
#include <optional>

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {
bool only_blanks(std::string_view text) { return text.find_first_not_of(" \t") == std::string_view::npos; }

// True when the node is the first code on its line.
bool starts_line(const SourceFile& source, TSNode node) {
  const std::size_t start = ts_node_start_byte(node);
  const int line = source.position(start).line;
  return only_blanks(std::string_view(source.text()).substr(source.line_start(line), start - source.line_start(line)));
}

// True when only blanks or a comment follow the node on its last line.
bool ends_line(const SourceFile& source, TSNode node) {
  const std::size_t end = ts_node_end_byte(node);
  const int line = source.position(end).line;
  std::string_view rest = std::string_view(source.text()).substr(end, source.line_content_end(line) - end);
  const std::size_t code = rest.find_first_not_of(" \t");
  return code == std::string_view::npos || rest[code] == '#';
}

// The whole lines the node spans, line endings included.
Edit delete_lines(const SourceFile& source, TSNode node, const std::string& rule) {
  if (!starts_line(source, node) || !ends_line(source, node)) {
    throw EditNotPossible("the statement shares a line with other code");
  }
  const int first = source.position(ts_node_start_byte(node)).line;
  const int last = source.position(ts_node_end_byte(node)).line;
  return {source.line_start(first), source.line_end(last), "", rule};
}

Edit replace_with_pass(TSNode statement, const std::string& rule) {
  return {ts_node_start_byte(statement), ts_node_end_byte(statement), "pass", rule};
}

// One indentation step of the file at a statement: its indentation less that of the line opening its block.
std::string indent_step(const SourceFile& source, TSNode statement) {
  const std::string inner = source.indentation_of_line(source.position(ts_node_start_byte(statement)).line);
  TSNode owner = syntax::parent(syntax::parent(statement));
  if (!syntax::is_null(owner) && syntax::is(syntax::parent(statement), "block")) {
    const std::string outer = source.indentation_of_line(source.position(ts_node_start_byte(owner)).line);
    if (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0) return inner.substr(outer.size());
  }
  return inner.find('\t') != std::string::npos ? "\t" : "    ";
}
}  // namespace

Edit replace_argument_value(const CallArgument& argument, const std::string& text, const std::string& rule) {
  return {argument.value_begin, argument.value_end, text, rule};
}

Edit add_keyword_argument(const SourceFile& source, TSNode argument_list, const std::string& name,
                          const std::string& value, const std::string& rule) {
  return add_argument(source, argument_list, name + "=" + value, rule);
}

Edit add_argument(const SourceFile& source, TSNode argument_list, const std::string& item, const std::string& rule) {
  const std::vector<TSNode> arguments = syntax::statements(argument_list);
  const std::size_t close = ts_node_end_byte(argument_list) - 1;  // the `)`
  if (arguments.empty()) return {close, close, item, rule};
  const std::size_t last_end = ts_node_end_byte(arguments.back());
  std::size_t trailing_comma = std::string::npos;
  const uint32_t n = ts_node_child_count(argument_list);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode child = ts_node_child(argument_list, i);
    if (!ts_node_is_named(child) && syntax::type(child) == "," && ts_node_start_byte(child) >= last_end) {
      trailing_comma = ts_node_start_byte(child);
    }
  }
  const int last_line = source.position(last_end).line;
  const bool one_per_line = source.position(close).line > last_line;
  if (one_per_line) {
    const std::string indent = source.indentation_of_line(source.position(ts_node_start_byte(arguments.back())).line);
    // The new line goes after a comment that ends the last argument's line, so that the comment (an ignore
    // comment among them) stays on the line of the argument it was written for.
    const std::size_t after = trailing_comma != std::string::npos ? trailing_comma + 1 : last_end;
    const std::size_t line_end = source.line_content_end(source.position(after).line);
    const std::string_view rest = std::string_view(source.text()).substr(after, line_end - after);
    const std::size_t code = rest.find_first_not_of(" \t");
    const bool comment_ends_line = code != std::string_view::npos && rest[code] == '#';
    if (comment_ends_line) {
      // A trailing comma stays the style: the new last argument gets one when the old one had one.
      const bool had_comma = trailing_comma != std::string::npos;
      return {after, line_end,
              (had_comma ? "" : ",") + std::string(rest) + source.line_ending() + indent + item + (had_comma ? "," : ""),
              rule};
    }
    if (trailing_comma != std::string::npos) {
      return {trailing_comma + 1, trailing_comma + 1, source.line_ending() + indent + item + ",", rule};
    }
    return {last_end, last_end, "," + source.line_ending() + indent + item, rule};
  }
  if (trailing_comma != std::string::npos) return {trailing_comma + 1, trailing_comma + 1, " " + item, rule};
  return {last_end, last_end, ", " + item, rule};
}

Edit insert_statement_after(const SourceFile& source, TSNode anchor_statement, const std::string& statement,
                            const std::string& rule) {
  if (!starts_line(source, anchor_statement)) throw EditNotPossible("the anchor statement does not start its line");
  if (!ends_line(source, anchor_statement)) throw EditNotPossible("code follows the anchor statement on its line");
  const int first = source.position(ts_node_start_byte(anchor_statement)).line;
  const int last = source.position(ts_node_end_byte(anchor_statement)).line;
  const std::size_t at = source.line_content_end(last);
  return {at, at, source.line_ending() + source.indentation_of_line(first) + statement, rule};
}

Edit insert_block_after(const SourceFile& source, TSNode anchor_statement, const std::string& header,
                        const std::string& body, const std::string& rule) {
  const std::string indent =
      source.indentation_of_line(source.position(ts_node_start_byte(anchor_statement)).line);
  return insert_statement_after(
      source, anchor_statement,
      header + source.line_ending() + indent + indent_step(source, anchor_statement) + body, rule);
}

std::vector<Edit> conjoin_condition(TSNode condition, const std::string& text, const std::string& rule) {
  const std::size_t begin = ts_node_start_byte(condition);
  const std::size_t end = ts_node_end_byte(condition);
  // `and` binds looser than comparisons and `not`, tighter than `or`, conditionals, lambdas and `:=`.
  bool tight = !is(condition, "boolean_operator") && !is(condition, "conditional_expression") &&
               !is(condition, "lambda") && !is(condition, "named_expression");
  if (is(condition, "boolean_operator")) {
    TSNode op = field(condition, "operator");
    tight = !syntax::is_null(op) && syntax::type(op) == "and";
  }
  if (tight) return {{end, end, " and " + text, rule}};
  return {{begin, begin, "(", rule}, {end, end, ") and " + text, rule}};
}

std::vector<Edit> guard_statement(const SourceFile& source, TSNode statement, const std::string& condition,
                                  const std::string& rule) {
  if (!starts_line(source, statement) || !ends_line(source, statement)) {
    throw EditNotPossible("the statement shares a line with other code");
  }
  bool multiline_string = false;
  syntax::walk(statement, [&](TSNode n) {
    if (is(n, "string") && source.position(ts_node_start_byte(n)).line != source.position(ts_node_end_byte(n)).line) {
      multiline_string = true;
    }
    return !multiline_string;
  });
  if (multiline_string) throw EditNotPossible("the statement holds a string over several lines");
  const std::string step = indent_step(source, statement);
  const int first = source.position(ts_node_start_byte(statement)).line;
  const int last = source.position(ts_node_end_byte(statement)).line;
  const std::size_t at = ts_node_start_byte(statement);
  std::vector<Edit> edits{{at, at, "if " + condition + ":" + source.line_ending() +
                                       source.indentation_of_line(first) + step, rule}};
  // Continuation lines sit inside brackets, where a deeper indentation changes nothing.
  for (int line = first + 1; line <= last; ++line) edits.push_back({source.line_start(line), source.line_start(line), step, rule});
  return edits;
}

Edit unwrap_method_call(TSNode call, const std::string& rule) {
  TSNode callee = field(call, "function");
  if (!is(callee, "attribute")) throw EditNotPossible("the call is not a method call");
  return {ts_node_end_byte(field(callee, "object")), ts_node_end_byte(call), "", rule};
}

namespace {
// Whether no elif/else clause follows this one in its if statement.
bool is_last_clause(TSNode clause) {
  for (TSNode n = ts_node_next_named_sibling(clause); !syntax::is_null(n); n = ts_node_next_named_sibling(n)) {
    if (is(n, "elif_clause") || is(n, "else_clause")) return false;
  }
  return true;
}

// Whether removing the statements in `going` takes this one with it: it is one of them, or an `if` with no elif/else,
// alone on its lines, all of whose body goes (remove_statement deletes such an `if` whole).
bool goes(const SourceFile& source, TSNode statement, const std::vector<TSNode>& going) {
  if (std::any_of(going.begin(), going.end(), [&](TSNode g) { return syntax::same(g, statement); })) return true;
  if (!is(statement, "if_statement") || !syntax::is_null(field(statement, "alternative"))) return false;
  if (!starts_line(source, statement) || !ends_line(source, statement)) return false;
  const TSNode body = field(statement, "consequence");
  if (!is(body, "block")) return false;
  const std::vector<TSNode> statements = syntax::statements(body);
  return !statements.empty() && std::all_of(statements.begin(), statements.end(),
                                            [&](TSNode s) { return goes(source, s, going); });
}

// The statement's neighbour in its block when it shares the statement's line (`a; b`): the statement after it
// (`after`), or the one before it. A comment is not a statement.
TSNode line_neighbour(const SourceFile& source, TSNode statement, bool after) {
  TSNode n = statement;
  do {
    n = after ? ts_node_next_named_sibling(n) : ts_node_prev_named_sibling(n);
  } while (!syntax::is_null(n) && is(n, "comment"));
  if (syntax::is_null(n)) return n;
  const int line = source.position(after ? ts_node_end_byte(statement) : ts_node_start_byte(statement)).line;
  const int other = source.position(after ? ts_node_start_byte(n) : ts_node_end_byte(n)).line;
  return line == other ? n : TSNode{};
}

// Whether only blanks, a comment or a last `;` follow the node on its line.
bool ends_line_but_semicolon(const SourceFile& source, TSNode node) {
  if (ends_line(source, node)) return true;
  const std::size_t end = ts_node_end_byte(node);
  const std::string_view rest =
      std::string_view(source.text()).substr(end, source.line_content_end(source.position(end).line) - end);
  const std::size_t semicolon = rest.find_first_not_of(" \t");
  if (semicolon == std::string_view::npos || rest[semicolon] != ';') return false;
  const std::size_t code = rest.find_first_not_of(" \t", semicolon + 1);
  return code == std::string_view::npos || rest[code] == '#';
}

// `x = 1; a; b` loses `a` with one of its semicolons: up to the next statement when that one stays, else from
// the end of the one before when that one stays. When every statement of those lines goes and they have the
// lines to themselves, the lines go (each statement returns that same edit). When they are all of their block
// (`block_empties`), the block's first statement becomes `pass` and each later one on its line goes from the
// end of the one before. Nothing in the other cases: the caller writes `pass`, since two deletions there
// could overlap.
std::optional<Edit> delete_from_semicolon_list(const SourceFile& source, TSNode statement, const std::string& rule,
                                               const std::vector<TSNode>& going, bool block_empties) {
  const TSNode previous = line_neighbour(source, statement, false);
  if (block_empties) {
    if (syntax::is_null(previous)) return std::nullopt;
    return Edit{ts_node_end_byte(previous), ts_node_end_byte(statement), "", rule};
  }
  TSNode first = statement;
  TSNode last = statement;
  bool all_go = true;
  for (TSNode n = previous; !syntax::is_null(n); n = line_neighbour(source, first, false)) {
    all_go = all_go && goes(source, n, going);
    first = n;
  }
  for (TSNode n = line_neighbour(source, last, true); !syntax::is_null(n); n = line_neighbour(source, last, true)) {
    all_go = all_go && goes(source, n, going);
    last = n;
  }
  if (syntax::same(first, last)) return std::nullopt;  // alone on its line, after other code (`if c: a`)
  if (all_go) {
    if (!starts_line(source, first) || !ends_line_but_semicolon(source, last)) return std::nullopt;
    const int first_line = source.position(ts_node_start_byte(first)).line;
    const int last_line = source.position(ts_node_end_byte(last)).line;
    return Edit{source.line_start(first_line), source.line_end(last_line), "", rule};
  }
  const TSNode next = line_neighbour(source, statement, true);
  if (!syntax::is_null(next) && !goes(source, next, going)) {
    return Edit{ts_node_start_byte(statement), ts_node_start_byte(next), "", rule};
  }
  if (!syntax::is_null(previous) && !goes(source, previous, going)) {
    return Edit{ts_node_end_byte(previous), ts_node_end_byte(statement), "", rule};
  }
  return std::nullopt;
}
}  // namespace

std::vector<Edit> remove_statement(const SourceFile& source, TSNode statement, const std::string& rule,
                                   const std::vector<TSNode>& going) {
  TSNode block = syntax::parent(statement);
  TSNode owner = syntax::parent(block);
  const std::vector<TSNode> statements = syntax::statements(block);
  const bool empties_block = std::all_of(statements.begin(), statements.end(), [&](TSNode s) {
    return syntax::same(s, statement) || goes(source, s, going);
  });
  const bool first = syntax::same(statements.front(), statement);
  // What a statement that the block keeps as `pass` (its first) or loses (the others) becomes.
  auto removed_from = [&](bool keeps_pass) -> std::vector<Edit> {
    if (!keeps_pass && starts_line(source, statement) && ends_line(source, statement)) {
      return {delete_lines(source, statement, rule)};
    }
    if (!keeps_pass) {
      if (std::optional<Edit> edit = delete_from_semicolon_list(source, statement, rule, going, empties_block)) {
        return {*edit};
      }
    }
    return {replace_with_pass(statement, rule)};
  };
  if (!empties_block) return removed_from(false);
  // A branch goes only when dropping it keeps every other branch's condition: a whole `if` with no
  // elif/else, or the last elif/else clause. Elsewhere `pass` keeps the branch, so no later clause
  // starts running in the case the cast handled. The whole `if` is then removed as a statement of its own block,
  // which it may empty in turn (a guard that is all of a `with` body).
  if (is(owner, "if_statement") && syntax::same(field(owner, "consequence"), block)) {
    if (syntax::is_null(field(owner, "alternative")) && starts_line(source, owner) && ends_line(source, owner)) {
      return remove_statement(source, owner, rule, going);
    }
    return removed_from(first);
  }
  if ((is(owner, "elif_clause") || is(owner, "else_clause")) && is_last_clause(owner) && starts_line(source, owner) &&
      ends_line(source, owner)) {
    return {delete_lines(source, owner, rule)};
  }
  return removed_from(first);
}

}  // namespace kvpatch
