// Statement and expression shapes that tree-sitter-python parses without an ERROR node and CPython's
// parser refuses: Python 2 forms (`raise X, Y`, `print x`, `<>`), an unparenthesized tuple after a
// comprehension's `in`, a stray comma, a non-ASCII bytes literal, a backslash that continues the
// file's last line, and match patterns Python refuses. Misplaced stars: python_starred_checks.cpp.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "kvpatch/python_compile_rules.h"

namespace kvpatch::compile_rules {
namespace {
using syntax::has_token;
using syntax::is;


std::size_t named_count(TSNode node) { return syntax::named_child_count(node); }

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A string's prefix letters (`rb`, `F`, ...), lower-cased.
std::string prefix_of(const ParsedFile& file, TSNode string) {
  const TSNode start = syntax::named_child(string, 0);
  if (!is(start, "string_start")) return {};
  std::string prefix;
  for (char c : file.text(start)) {
    if (c == '"' || c == '\'') break;
    prefix += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return prefix;
}

bool is_bytes(const ParsedFile& file, TSNode string) { return prefix_of(file, string).find('b') != std::string::npos; }

// The escapes CPython refuses in a literal that is not raw: \x with fewer than 2 hex digits, and in a
// str \u and \U with fewer than 4 and 8, \U past U+10FFFF, \N without {name}. (Unknown escapes such
// as \d are only a warning.)
void escapes(const ParsedFile& file, TSNode string, const Report& report) {
  const std::string prefix = prefix_of(file, string);
  if (prefix.find('r') != std::string::npos) return;
  const bool bytes = prefix.find('b') != std::string::npos;
  for (TSNode part : syntax::named_children(string)) {
    if (!is(part, "string_content")) continue;
    const std::string_view text = file.text(part);
    for (std::size_t i = 0; i + 1 < text.size(); ++i) {
      if (text[i] != '\\') continue;
      const char kind = text[++i];
      std::size_t need = kind == 'x' ? 2 : 0;
      if (!bytes) need = kind == 'u' ? 4 : kind == 'U' ? 8 : need;
      std::size_t have = 0;
      while (have < need && i + 1 + have < text.size() && is_hex_digit(text[i + 1 + have])) ++have;
      if (have < need) {
        return report(part, std::string("(unicode error) truncated \\") + kind + std::string(need, 'X') + " escape");
      }
      if (kind == 'U' && !bytes && std::stoul(std::string(text.substr(i + 1, 8)), nullptr, 16) > 0x10FFFF) {
        return report(part, "(unicode error) illegal Unicode character in a \\U escape");
      }
      if (kind == 'N' && !bytes && (i + 1 >= text.size() || text[i + 1] != '{' || text.find('}', i) == std::string_view::npos)) {
        return report(part, "(unicode error) malformed \\N character escape");
      }
      i += need;
    }
  }
}

// Control characters other than tab, form feed and line breaks, outside string literals and comments.
void control_characters(const ParsedFile& file, TSNode module, const Report& report) {
  const std::string_view text(file.source.text());
  std::size_t from = 0;  // the first byte not yet looked at
  const auto scan = [&](std::size_t to, TSNode at) {
    for (std::size_t i = from; i < to; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || c == 0x7f) {
        report(at, "invalid non-printable character U+00" + std::string(1, "0123456789ABCDEF"[c >> 4]) +
                       std::string(1, "0123456789ABCDEF"[c & 15]));
        return false;
      }
    }
    return true;
  };
  bool clean = true;
  syntax::walk(module, [&](TSNode n) {
    if (!clean) return false;
    // Strings and comments may hold any character; everything else is scanned, gaps included.
    if (is(n, "string") || is(n, "comment") || ts_node_named_child_count(n) == 0) {
      clean = scan(ts_node_start_byte(n), n);
      if (!is(n, "string") && !is(n, "comment") && clean) clean = scan(ts_node_end_byte(n), n);
      from = std::max(from, static_cast<std::size_t>(ts_node_end_byte(n)));
      return false;
    }
    return true;
  });
  if (clean) scan(text.size(), module);
}

void bytes_literal(const ParsedFile& file, TSNode string, const Report& report) {
  if (!is_bytes(file, string)) return;
  for (TSNode part : syntax::named_children(string)) {
    if (!is(part, "string_content")) continue;
    for (char c : file.text(part)) {
      if (static_cast<unsigned char>(c) >= 0x80) return report(part, "bytes can only contain ASCII literal characters");
    }
  }
}

void concatenation(const ParsedFile& file, TSNode node, const Report& report) {
  bool bytes = false;
  bool text = false;
  for (TSNode part : syntax::named_children(node)) {
    if (!is(part, "string")) continue;
    (is_bytes(file, part) ? bytes : text) = true;
    if (bytes && text) return report(part, "cannot mix bytes and nonbytes literals");
  }
}

// An underscore in a number stands between two digits, or right after a base prefix (`0x_1f`).
void number_underscores(std::string_view text, TSNode node, const Report& report) {
  const bool hex = text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const bool prefixed = text.size() > 1 && text[0] == '0' && std::string_view("xXoObB").find(text[1]) != std::string_view::npos;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '_') continue;
    const auto digit = [&](char c) { return hex ? is_hex_digit(c) : is_digit(c); };
    const bool after = (i > 0 && digit(text[i - 1])) || (prefixed && i == 2);
    const bool before = i + 1 < text.size() && digit(text[i + 1]);
    if (!after || !before) return report(node, "invalid decimal literal: '_' must stand between digits");
  }
}

// Python 2's long suffix (`10L`) and octal form (`0777`); an imaginary literal may have leading zeros.
void integer_literal(std::string_view text, TSNode node, const Report& report) {
  number_underscores(text, node, report);
  if (text.empty() || text.back() == 'j' || text.back() == 'J') return;
  if (text.back() == 'l' || text.back() == 'L') return report(node, "invalid decimal literal");
  const bool leading_zero = text.size() > 1 && text[0] == '0' && (text[1] == '_' || (text[1] >= '0' && text[1] <= '9'));
  if (leading_zero && text.find_first_of("123456789") != std::string_view::npos) {
    report(node, "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
  }
}

// Match-statement patterns: `**rest` last and named, keyword patterns after positional ones, no `as _`.
void match_pattern(const ParsedFile& file, TSNode node, const Report& report) {
  const std::string_view type = syntax::type(node);
  if (type == "dict_pattern") {
    const std::vector<TSNode> items = syntax::named_children(node);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!is(items[i], "splat_pattern")) continue;
      if (syntax::named_child_count(items[i]) == 0) return report(items[i], "invalid syntax: a mapping pattern cannot capture **_");
      if (i + 1 != items.size()) return report(items[i], "invalid syntax: **rest must end a mapping pattern");
    }
  } else if (type == "class_pattern") {
    bool keyword = false;
    for (TSNode argument : syntax::named_children(node)) {
      if (!is(argument, "case_pattern")) continue;
      const bool this_keyword = is(syntax::named_child(argument, 0), "keyword_pattern");
      if (keyword && !this_keyword) return report(argument, "positional patterns follow keyword patterns");
      keyword = keyword || this_keyword;
    }
  } else if (type == "as_pattern" && is(syntax::parent(node), "case_pattern")) {
    const TSNode alias = syntax::named_child(node, syntax::named_child_count(node) - 1);
    if (is(alias, "identifier") && file.text(alias) == "_") report(alias, "cannot use '_' as a target");
  }
}

// `def f[0]()`: a definition's type parameters are names (`T`, `T: bound`, `*Ts`, `**P`); the grammar takes
// any type there. (A subscript in an annotation, `list[int]`, is a type_parameter node too, of any type.)
void type_parameters(TSNode node, const Report& report) {
  const TSNode owner = syntax::parent(node);
  // `type X[T] = ...` reads as an alias whose left side is the generic type `X[T]`.
  const TSNode alias_side = is(owner, "generic_type") ? syntax::parent(owner) : TSNode{};
  const bool alias = is(alias_side, "type") && is(syntax::parent(alias_side), "type_alias_statement") &&
                     syntax::same(syntax::field(syntax::parent(alias_side), "left"), alias_side);
  if (!is(owner, "function_definition") && !is(owner, "class_definition") && !alias) return;
  for (TSNode parameter : syntax::named_children(node)) {
    if (!is(parameter, "type")) continue;
    TSNode inner = syntax::named_child(parameter, 0);
    if (is(inner, "constrained_type")) inner = syntax::named_child(syntax::named_child(inner, 0), 0);
    if (is(inner, "splat_type")) inner = syntax::named_child(inner, 0);
    if (!is(inner, "identifier")) report(parameter, "invalid syntax: a type parameter must be a name");
  }
}

// `x := 1` as a statement, after `=`, `return`, `assert`, `lambda:`, `not`, a keyword or in a bare tuple:
// unparenthesized, an assignment expression stands only in a condition (if, elif, while, a case guard),
// a call's positional arguments, a list, set or parenthesized tuple, a subscript, a comprehension's
// element, a match subject or a decorator. The grammar takes it after any operator.
void walrus_place(TSNode walrus, const Report& report) {
  const TSNode node = syntax::walrus_extent(walrus);
  const TSNode holder = syntax::parent(node);
  const std::string_view type = syntax::type(holder);
  if (type == "if_statement" || type == "elif_clause" || type == "while_statement" || type == "argument_list" ||
      type == "list" || type == "set" || type == "tuple" || type == "subscript" || type == "parenthesized_expression" ||
      type == "match_statement" || type == "decorator" || type == "interpolation") {
    return;
  }
  if (type == "if_clause" && is(syntax::parent(holder), "case_clause")) return;
  if (comprehension_kind(type) != nullptr && syntax::same(syntax::field(holder, "body"), node)) return;
  report(node, "invalid syntax: an assignment expression must be parenthesized here");
}
}  // namespace

void statement_forms(const ParsedFile& file, TSNode node, const Report& report) {
  const std::string_view type = syntax::type(node);
  if (type == "raise_statement") {
    // `raise X, Y` is Python 2: the grammar reads the pair as an unparenthesized tuple.
    if (is(syntax::named_child(node, 0), "expression_list")) report(node, "invalid syntax: raise takes one exception");
  } else if (type == "except_clause" || type == "except_group_clause") {
    // `except A, B:` is accepted: Python 3.14 (PEP 758) reads it as `except (A, B):`, though 3.11-3.13
    // refuse it. With `as` every Python refuses it; three types or `except*` the grammar cannot parse.
    if (has_token(node, ",")) {
      for (TSNode child : syntax::named_children(node)) {
        if (is(child, "as_pattern")) report(node, "multiple exception types must be parenthesized when using 'as'");
      }
    }
    // `except E as a.b:`: the grammar takes any target, Python a name only.
    const TSNode caught = syntax::named_child(node, 0);
    const TSNode target = is(caught, "as_pattern") ? syntax::field(caught, "alias") : TSNode{};
    if (!syntax::is_null(target) && !is(syntax::named_child(target, 0), "identifier")) {
      report(target, "invalid syntax: an exception can be bound to a name only");
    }
  } else if (type == "print_statement" || type == "exec_statement") {
    // Python 2's statements; `print >> f, x` alone is also a Python 3 expression (a tuple).
    const bool chevron = is(syntax::named_child(node, 0), "chevron");
    if (!chevron) report(node, type == "print_statement" ? "Missing parentheses in call to 'print'" : "Missing parentheses in call to 'exec'");
  } else if (type == "comparison_operator" || type == "binary_operator" || type == "boolean_operator" ||
             type == "unary_operator" || type == "not_operator") {
    if (has_token(node, "<>")) report(node, "invalid syntax: '<>' is Python 2's '!='");
  } else if (type == "yield") {
    // `[1, yield]`, `{yield}`: unparenthesized, a yield stands alone, after `=` or in an f-string only.
    const TSNode holder = syntax::parent(node);
    if (!is(holder, "expression_statement") && !is(holder, "assignment") && !is(holder, "augmented_assignment") &&
        !is(holder, "parenthesized_expression") && !is(holder, "interpolation")) {
      report(node, "invalid syntax: a yield expression must be parenthesized here");
    }
  } else if (type == "named_expression") {
    walrus_place(node, report);
  } else if (type == "type_parameter") {
    type_parameters(node, report);
  } else if (type == "as_pattern") {
    // `f(x as y)`, `[a as b]`: the grammar takes `as` after any expression; Python binds with it only in
    // a with item (`with (a as b):` too), an except clause and a case pattern (imports have their own node).
    const TSNode holder = syntax::parent(node);
    const bool with_item = is(holder, "with_item") ||
                           (is(holder, "parenthesized_expression") && is(syntax::parent(holder), "with_item"));
    if (!with_item && !is(holder, "except_clause") && !is(holder, "except_group_clause") && !is(holder, "case_pattern")) {
      report(node, "invalid syntax: 'as' binds a name only after with, except or case");
    }
    match_pattern(file, node, report);
  } else if (type == "float") {
    number_underscores(file.text(node), node, report);
  } else if (type == "integer") {
    integer_literal(file.text(node), node, report);
  } else if (type == "try_statement") {
    bool plain = false;
    bool group = false;
    TSNode bare{};  // an `except:` with no exception named
    for (TSNode clause : syntax::named_children(node)) {
      if (!syntax::is_null(bare) && (is(clause, "except_clause") || is(clause, "except_group_clause"))) {
        report(bare, "default 'except:' must be last");
      }
      if (is(clause, "except_clause") && is(syntax::named_child(clause, 0), "block")) bare = clause;
      const bool starred = except_star(clause);
      plain = plain || (is(clause, "except_clause") && !starred);
      group = group || is(clause, "except_group_clause") || starred;
    }
    if (plain && group) report(node, "cannot have both 'except' and 'except*' on the same 'try'");
  } else if (type == "for_in_clause") {
    // `[x for x in a, b]` and `f(x for x in a, 1)`: the grammar reads on into a tuple Python refuses.
    if (has_token(node, ",")) {
      // A generator that is a call's only argument borrows the call's parentheses.
      const TSNode generator = syntax::parent(node);
      const bool argument = is(generator, "generator_expression") && is(syntax::parent(generator), "call");
      report(node, argument ? "Generator expression must be parenthesized"
                            : "invalid syntax: the iterable after 'in' must be parenthesized");
    }
  } else if (type == "import_statement") {
    // `import a, b,`: the grammar takes a trailing comma that only `from` imports in parentheses may have.
    const uint32_t n = ts_node_child_count(node);
    if (n > 0 && is(ts_node_child(node, n - 1), ",")) {
      report(ts_node_child(node, n - 1), "invalid syntax: a trailing comma after an import");
    }
  } else if (type == "import_from_statement" || type == "future_import_statement") {
    const uint32_t n = ts_node_child_count(node);
    if (n > 0 && is(ts_node_child(node, n - 1), ",") && !has_token(node, "(")) {
      report(ts_node_child(node, n - 1), "trailing comma not allowed without surrounding parentheses");
    }
    // `from m import (a, b.c)`: the grammar takes a dotted name where Python takes a name (mutation seed 80838).
    // (Every named child but the module is a name; Debian's tree-sitter 0.20.7 names no child's field here.)
    const TSNode module_name = syntax::field(node, "module_name");
    for (TSNode name : syntax::named_children(node)) {
      if (syntax::same(name, module_name)) continue;
      if (is(name, "aliased_import")) name = syntax::field(name, "name");
      if (is(name, "dotted_name") && syntax::named_child_count(name) > 1) {
        report(name, "invalid syntax: a name imported with 'from' cannot be dotted");
      }
    }
  } else if (type == "argument_list" || type == "parameters" || type == "lambda_parameters") {
    if (has_token(node, ",") && named_count(node) == 0) report(node, "invalid syntax: a lone comma");
  } else if (type == "module") {
    control_characters(file, node, report);
  } else if (type == "string") {
    bytes_literal(file, node, report);
    escapes(file, node, report);
  } else if (type == "concatenated_string") {
    concatenation(file, node, report);
  } else if (type == "dict_pattern" || type == "class_pattern") {
    match_pattern(file, node, report);
  } else if (type == "line_continuation") {
    // A backslash before the end of the file continues a line that never comes.
    const std::string_view rest = std::string_view(file.source.text()).substr(ts_node_end_byte(node));
    if (rest.find_first_not_of(" \t\f\r\n") == std::string_view::npos) report(node, "unexpected EOF while parsing");
  }
}

}  // namespace kvpatch::compile_rules
