#include "kvpatch/python_compile_checks.h"

#include "kvpatch/python_compile_rules.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

namespace kvpatch {
namespace {
using syntax::has_token;
using syntax::is;
using syntax::is_extra;

// An indentation measured as CPython's tokenizer measures it: columns with tabs to multiples of 8,
// and with every tab as one column. Two indentations are the same level only when both agree;
// where one says deeper and the other not, CPython refuses the mix of tabs and spaces.
struct Width {
  int tab8 = 0;
  int tab1 = 0;
  bool operator==(const Width&) const = default;
  bool deeper_than(const Width& o) const { return tab8 > o.tab8 && tab1 > o.tab1; }
};

Width width_of(std::string_view lead) {
  Width w;
  for (char c : lead) {
    if (c == '\t') {
      w.tab8 = (w.tab8 / 8 + 1) * 8;
      ++w.tab1;
    } else if (c == '\f') {
      w = {};  // a form feed resets the count, as in CPython
    } else {
      ++w.tab8;
      ++w.tab1;
    }
  }
  return w;
}

// Words the grammar lets through as names in places where its error recovery is lenient
// (`def f(x: in)`, `else` as a parameter); to Python they are never names.
bool is_hard_keyword(std::string_view word) {
  static const std::set<std::string_view> kKeywords = {
      "False", "None",   "True",    "and",      "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",      "elif", "else",   "except", "finally",  "for",
      "from",  "global", "if",      "import",   "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",   "raise",   "return",   "try",  "while",  "with",   "yield"};
  return kKeywords.count(word) != 0;
}

// A module's or block's statements (named_children leaves the extras between them out).
std::vector<TSNode> statements_of(TSNode node) { return syntax::named_children(node); }

bool is_clause(std::string_view type) {
  return type == "elif_clause" || type == "else_clause" || type == "except_clause" || type == "except_group_clause" ||
         type == "finally_clause" || type == "case_clause";
}

class Checker {
public:
  explicit Checker(const ParsedFile& file)
      : file_(file), report_([this](TSNode node, std::string message) { report(node, std::move(message)); }) {}

  std::optional<CompileProblem> run() {
    // Each node with its parent and scope: tree-sitter finds a node's parent by descending from the root
    // again, which over every node of a large file costs seconds.
    struct Pending {
      TSNode node;
      TSNode parent;
      Scope scope;
    };
    std::vector<Pending> pending{{file_.tree.root(), TSNode{}, Scope{}}};
    while (!pending.empty()) {
      const auto [node, parent, scope] = pending.back();
      pending.pop_back();
      visit(node, parent);
      statement_in_scope(node, scope);
      for (uint32_t i = ts_node_child_count(node); i > 0; --i) {
        const TSNode child = ts_node_child(node, i - 1);
        if (ts_node_is_named(child)) pending.push_back({child, node, scope_of(node, child, scope)});
      }
    }
    // The walk visits a block's statements before what lies inside the earlier ones: report the
    // problem nearest the top of the file, as the compiler would.
    if (found_.empty()) return std::nullopt;
    return *std::min_element(found_.begin(), found_.end(),
                             [](const CompileProblem& a, const CompileProblem& b) { return a.offset < b.offset; });
  }

private:
  const ParsedFile& file_;
  const compile_rules::Report report_;

  // What encloses a node, for what the compiler allows only inside a function, an async function, a
  // loop, or outside a comprehension.
  struct Scope {
    bool function = false;        // return, yield, await
    bool async_function = false;  // await, async for, async with; not yield from
    bool loop = false;            // break, continue
    const char* comprehension = nullptr;        // what CPython calls the comprehension a yield is in
    bool first_iterable = false;                // in a comprehension's first for clause
    const char* outer_comprehension = nullptr;  // where that clause's iterable is evaluated
  };

  // The scope of a node's child: a def's body is a function (a lambda's is too, for yield), a class body
  // is neither, a loop's body is a loop but its else clause is not. A comprehension is a scope of its
  // own except for the iterable of its first `for`, which the enclosing scope evaluates. (The child is
  // compared with the node's fields: tree-sitter 0.20's ts_node_field_name_for_child misnames some
  // children.)
  static Scope scope_of(TSNode node, TSNode child, Scope scope) {
    const std::string_view type = syntax::type(node);
    if (const char* kind = compile_rules::comprehension_kind(type)) {
      const bool first = is(child, "for_in_clause") && syntax::same(child, first_for_clause(node));
      // A generator expression may await in any function: it becomes an async generator.
      const bool awaits = scope.async_function || type == "generator_expression";
      return {scope.function, awaits, scope.loop, kind, first, scope.comprehension};
    }
    if (type == "for_in_clause") {
      if (scope.first_iterable && syntax::same(child, syntax::field(node, "right"))) {
        scope.comprehension = scope.outer_comprehension;
      }
      scope.first_iterable = false;
      return scope;
    }
    const bool function = type == "function_definition" || type == "lambda";
    const bool loop = type == "for_statement" || type == "while_statement";
    if (!function && !loop && type != "class_definition") return scope;
    if (!syntax::same(child, syntax::field(node, "body"))) return scope;
    if (function) return Scope{true, type == "function_definition" && has_token(node, "async")};
    if (loop) return {scope.function, scope.async_function, true};
    return {};
  }

  static TSNode first_for_clause(TSNode comprehension) {
    for (TSNode child : syntax::named_children(comprehension)) {
      if (is(child, "for_in_clause")) return child;
    }
    return TSNode{};
  }

  // CPython's compiler refuses these where the grammar takes any statement; a line moved out of its
  // method, loop or async function leaves them there.
  void statement_in_scope(TSNode node, Scope scope) {
    const std::string_view type = syntax::type(node);
    if (type == "return_statement" && !scope.function) report(node, "'return' outside function");
    if (type == "yield") {
      if (!scope.function) report(node, "'yield' outside function");
      if (scope.comprehension) report(node, "'yield' inside " + std::string(scope.comprehension));
      if (scope.async_function && has_token(node, "from")) report(node, "'yield from' inside async function");
    }
    if (type == "await" && !scope.async_function) {
      report(node, scope.function ? "'await' outside async function" : "'await' outside function");
    }
    if ((type == "for_statement" || type == "with_statement") && has_token(node, "async") && !scope.async_function) {
      report(node, type == "for_statement" ? "'async for' outside async function" : "'async with' outside async function");
    }
    if (type == "import_from_statement" && scope.function) {
      for (TSNode child : syntax::named_children(node)) {
        if (is(child, "wildcard_import")) report(node, "import * only allowed at module level");
      }
    }
    if (type == "break_statement" && !scope.loop) report(node, "'break' outside loop");
    if (type == "continue_statement" && !scope.loop) report(node, "'continue' not properly in loop");
  }

  void visit(TSNode node, TSNode parent) {
    const std::string_view type = syntax::type(node);
    if (type == "module") {
      module(node);
    } else if (type == "block") {
      block(node, parent);
    } else if (is_clause(type) && type != "case_clause") {
      clause(node, parent);
    } else if (type == "decorated_definition") {
      decorated(node);
    } else if (type == "argument_list") {
      arguments(node);
    } else if (type == "parameters" || type == "lambda_parameters") {
      parameters(node);
    } else if (type == "future_import_statement" && !is(parent, "module")) {
      // module() judges those at the top level; one in a block is never at the beginning of the file (mutation
      // seed 302056: under an `if`).
      report(node, "from __future__ imports must occur at the beginning of the file");
    } else if (type == "identifier" && is_hard_keyword(file_.text(node))) {
      report(node, "invalid syntax: '" + std::string(file_.text(node)) + "' is a keyword");
    }
    compile_rules::binding_targets(file_, node, report_);
    compile_rules::statement_forms(file_, node, report_);
    compile_rules::starred_expressions(node, report_);
    if (type == "module" || type == "function_definition" || type == "class_definition") {
      compile_rules::declarations(file_, node, report_);
    }
    if (type == "function_definition") compile_rules::function_body(node, report_);
    if (is(parent, "module") || is(parent, "block") || is_clause(type)) logical_lines(node);
  }
  std::vector<CompileProblem> found_;

  // Each check stops at its first problem; problems from different nodes are all kept.
  void report(TSNode node, std::string message) { found_.push_back({ts_node_start_byte(node), std::move(message)}); }

  // The whitespace before the node when nothing else precedes it on its line.
  std::optional<std::string_view> lead_if_first(TSNode node) const {
    const std::size_t start = ts_node_start_byte(node);
    const std::size_t line_start = file_.source.line_start(file_.source.position(start).line);
    const std::string_view lead = std::string_view(file_.source.text()).substr(line_start, start - line_start);
    if (lead.find_first_not_of(" \t\f") != std::string_view::npos) return std::nullopt;
    return lead;
  }

  // The indentation of the line the node starts on.
  Width line_width(TSNode node) const {
    const std::string_view line = file_.source.line_text(file_.source.position(ts_node_start_byte(node)).line);
    return width_of(line.substr(0, std::min(line.find_first_not_of(" \t\f"), line.size())));
  }

  void module(TSNode node) {
    const std::vector<TSNode> statements = statements_of(node);
    for (TSNode s : statements) {
      const auto lead = lead_if_first(s);
      if (lead && !(width_of(*lead) == Width{})) return report(s, "unexpected indent");
    }
    // `from __future__ import` may follow only the module's docstring and other such imports.
    for (std::size_t i = 0, leading = 0; i < statements.size(); ++i) {
      const TSNode s = statements[i];
      const bool docstring = i == 0 && is(s, "expression_statement") && is(syntax::named_child(s, 0), "string");
      if (is(s, "future_import_statement")) {
        if (leading != i) return report(s, "from __future__ imports must occur at the beginning of the file");
        ++leading;
        future_features(s);
      } else if (docstring) {
        ++leading;
      }
    }
  }

  void block(TSNode node, TSNode header) {
    const std::vector<TSNode> body = statements_of(node);
    if (body.empty()) return report(header, "expected an indented block after this line");
    const auto first_lead = lead_if_first(body.front());
    if (!first_lead) {
      // A body on the header's line (`if x: y = 1`): nothing may continue it on lines of its own.
      for (TSNode s : body) {
        if (lead_if_first(s)) return report(s, "unexpected indent");
      }
      return;
    }
    const Width level = width_of(*first_lead);
    if (!level.deeper_than(line_width(header))) return report(body.front(), "expected an indented block");
    for (TSNode s : body) {
      const auto lead = lead_if_first(s);
      if (!lead) continue;
      const Width w = width_of(*lead);
      if (w == level) continue;
      if (w.deeper_than(level) || level.deeper_than(w)) {
        // Python says "unexpected indent" or "unindent does not match any outer indentation level".
        return report(s, "indentation matches no block: " + std::to_string(w.tab1) + " columns here, " +
                             std::to_string(level.tab1) + " for the block's other statements");
      }
      return report(s, "inconsistent use of tabs and spaces in indentation");
    }
  }

  // Each decorator and the definition line up with the first decorator: the grammar reads `@dec` followed by a
  // deeper `def` as one definition, where Python's tokenizer sees an unexpected indent (mutation seed 102021).
  void decorated(TSNode node) {
    const Width level = line_width(node);
    std::vector<TSNode> parts;
    for (TSNode d : syntax::named_children(node)) {
      if (is(d, "decorator")) parts.push_back(d);
    }
    parts.push_back(syntax::field(node, "definition"));
    for (TSNode part : parts) {
      const auto lead = lead_if_first(part);
      if (!lead) continue;
      const Width w = width_of(*lead);
      if (w == level) continue;
      if (w.deeper_than(level)) return report(part, "unexpected indent: not indented as the decorator above it");
      if (level.deeper_than(w)) return report(part, "unindent does not match the decorator above it");
      return report(part, "inconsistent use of tabs and spaces in indentation");
    }
  }

  // The names a `from __future__ import` may take: CPython 3's features (a typo is a compile error).
  void future_features(TSNode statement) {
    static const std::set<std::string_view> kFeatures = {
        "nested_scopes",  "generators",       "division",       "absolute_import", "with_statement",
        "print_function", "unicode_literals", "barry_as_FLUFL", "generator_stop",  "annotations"};
    for (TSNode n : syntax::named_children(statement)) {
      const TSNode name = is(n, "aliased_import") ? syntax::field(n, "name") : n;
      if (!is(name, "dotted_name")) continue;
      const std::string_view feature = file_.text(name);
      if (kFeatures.count(feature) == 0) return report(n, "future feature " + std::string(feature) + " is not defined");
    }
  }

  // elif / else / except / finally line up with the statement they belong to.
  void clause(TSNode node, TSNode statement) {
    const auto lead = lead_if_first(node);
    if (lead && !(width_of(*lead) == line_width(statement))) {
      report(node, "this clause is not indented as its statement is");
    }
  }

  // A line break outside brackets ends a logical line, unless a backslash continues it. Where the
  // grammar expects more of a statement it reads on across the break (`x:` then `y(1)` below it
  // becomes one annotated assignment), so each statement, and each compound statement's header up to
  // its body, is read token by token here.
  void logical_lines(TSNode node) {
    const std::string_view type = syntax::type(node);
    if (type == "decorated_definition") {
      for (TSNode d : syntax::named_children(node)) {
        if (is(d, "decorator")) one_logical_line(d, TSNode{});
      }
      return logical_lines(syntax::field(node, "definition"));
    }
    TSNode body{};
    for (uint32_t i = 0; i < ts_node_child_count(node); ++i) {
      if (is(ts_node_child(node, i), "block")) {
        body = ts_node_child(node, i);
        break;
      }
    }
    one_logical_line(node, body);
  }

  // The node's tokens before `stop` (or all of them) must share one logical line.
  void one_logical_line(TSNode node, TSNode stop) {
    const std::size_t end = syntax::is_null(stop) ? ts_node_end_byte(node) : ts_node_start_byte(stop);
    int depth = 0;
    std::optional<TSNode> previous;
    std::vector<TSNode> pending{node};
    while (!pending.empty()) {
      const TSNode current = pending.back();
      pending.pop_back();
      if (ts_node_start_byte(current) >= end && !syntax::same(current, node)) continue;
      if (is_extra(current)) continue;
      const std::string_view type = syntax::type(current);
      // A string is one token, whatever lines it spans; so are its f-string braces.
      const uint32_t children = type == "string" ? 0 : ts_node_child_count(current);
      if (children > 0) {
        for (uint32_t i = children; i > 0; --i) pending.push_back(ts_node_child(current, i - 1));
        continue;
      }
      if (previous && depth == 0 && !continued(ts_node_end_byte(*previous), ts_node_start_byte(current))) {
        // Python ends a statement at a line ending in a comma (a bare tuple); the grammar reads on.
        if (is(*previous, ",")) {
          found_.push_back({ts_node_start_byte(*previous),
                            "it reads this line, which ends in a comma, and the next as one statement where Python "
                            "reads two",
                            true});
          return;
        }
        return report(current, "invalid syntax: a line break outside brackets ends the statement before this");
      }
      if (type == "(" || type == "[" || type == "{") ++depth;
      if ((type == ")" || type == "]" || type == "}") && depth > 0) --depth;
      previous = current;
    }
  }

  // Whether the text between two tokens keeps them on one logical line: no line break, or each one
  // escaped by a backslash.
  bool continued(std::size_t from, std::size_t to) const {
    const std::string_view gap = std::string_view(file_.source.text()).substr(from, to - from);
    for (std::size_t i = gap.find('\n'); i != std::string_view::npos; i = gap.find('\n', i + 1)) {
      const std::size_t before = i > 0 && gap[i - 1] == '\r' ? i - 1 : i;
      if (before == 0 || gap[before - 1] != '\\') return false;
    }
    return true;
  }

  void arguments(TSNode node) {
    bool keyword = false;
    bool mapping = false;
    std::set<std::string_view> names;
    for (TSNode a : syntax::named_children(node)) {
      if (is_extra(a)) continue;
      const std::string_view type = syntax::type(a);
      if (type == "keyword_argument") {
        keyword = true;
        const TSNode name = syntax::field(a, "name");
        if (!syntax::is_null(name) && !names.insert(file_.text(name)).second) {
          return report(a, "keyword argument repeated: " + std::string(file_.text(name)));
        }
      } else if (type == "dictionary_splat") {
        mapping = true;
      } else if (type == "list_splat") {
        if (mapping) return report(a, "iterable argument unpacking follows keyword argument unpacking");
      } else if (mapping) {
        return report(a, "positional argument follows keyword argument unpacking");
      } else if (keyword) {
        return report(a, "positional argument follows keyword argument");
      }
    }
  }

  void parameters(TSNode node) {
    bool defaulted = false;
    bool keyword_only = false;
    bool mapping = false;
    bool star = false;        // `*args` or a bare `*` seen
    bool slash = false;       // `/` seen
    TSNode bare_star{};       // a bare `*` no keyword-only parameter has followed yet
    std::size_t before = 0;   // parameters seen
    std::set<std::string_view> names;
    for (TSNode p : syntax::named_children(node)) {
      if (is_extra(p)) continue;
      std::string_view type = syntax::type(p);
      if (mapping) return report(p, "arguments cannot follow var-keyword argument");
      if (type == "positional_separator") {
        if (before == 0) return report(p, "at least one argument must precede /");
        if (slash) return report(p, "/ may appear only once");
        if (star) return report(p, "/ must be ahead of *");
        slash = true;
        continue;
      }
      ++before;
      TSNode name_node = p;
      if (type == "typed_parameter") {
        // `x: int`, or `*args: int` / `**kw: int` with the splat inside.
        const TSNode inner = syntax::named_child(p, 0);
        type = syntax::type(inner);
        name_node = inner;
      }
      if (type == "default_parameter" || type == "typed_default_parameter") {
        name_node = syntax::field(p, "name");
        if (!keyword_only) defaulted = true;
      } else if (type == "list_splat_pattern" || type == "dictionary_splat_pattern" || type == "keyword_separator") {
        if (type != "dictionary_splat_pattern") {
          if (star) return report(p, "* argument may appear only once");
          star = true;
        } else if (!syntax::is_null(bare_star)) {
          return report(bare_star, "named arguments must follow bare *");
        }
        if (type == "keyword_separator") bare_star = p;
        keyword_only = true;
        mapping = type == "dictionary_splat_pattern";
        name_node = type == "keyword_separator" ? TSNode{} : syntax::named_child(name_node, 0);
      } else if (type == "identifier") {
        if (defaulted && !keyword_only) return report(p, "parameter without a default follows parameter with a default");
      } else {
        // The grammar takes any pattern here (`False`, a tuple); Python 3 takes names only.
        return report(p, "invalid syntax: a parameter must be a name");
      }
      if (type != "keyword_separator") bare_star = TSNode{};
      if (is(name_node, "identifier") && file_.text(name_node) == "__debug__") return report(p, "cannot assign to __debug__");
      if (is(name_node, "identifier") && !names.insert(file_.text(name_node)).second) {
        return report(p, "duplicate argument '" + std::string(file_.text(name_node)) + "' in function definition");
      }
    }
    if (!syntax::is_null(bare_star)) report(bare_star, "named arguments must follow bare *");
  }
};
}  // namespace

std::optional<CompileProblem> first_compile_problem(const ParsedFile& file) { return Checker(file).run(); }

namespace compile_rules {
const char* comprehension_kind(std::string_view type) {
  if (type == "list_comprehension") return "list comprehension";
  if (type == "set_comprehension") return "set comprehension";
  if (type == "dictionary_comprehension") return "dict comprehension";
  if (type == "generator_expression") return "generator expression";
  return nullptr;
}
}  // namespace compile_rules

}  // namespace kvpatch
