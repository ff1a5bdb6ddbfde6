// global and nonlocal: CPython's symbol table refuses a declaration that comes after the name's use
// in the same scope, one naming a parameter, a name declared both ways, and a nonlocal with no
// enclosing function to bind it. The grammar takes all of them.
//
// Every check here errs towards accepting: names used where they are hard to classify (imports,
// nested definitions' defaults, comprehensions, match patterns) are not counted as uses, and a
// nonlocal counts as bound when its name appears anywhere in an enclosing function.
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kvpatch/python_compile_rules.h"

namespace kvpatch::compile_rules {
namespace {
using syntax::is;

enum class Use { read, bound, annotated };

struct Declaration {
  std::string_view keyword;  // "global" or "nonlocal"
  TSNode at;                 // where a problem with it is reported
};

std::set<std::string_view> parameter_names(const ParsedFile& file, TSNode function) {
  std::set<std::string_view> names;
  for (TSNode p : syntax::named_children(syntax::field(function, "parameters"))) {
    TSNode name = p;
    if (is(p, "default_parameter") || is(p, "typed_default_parameter")) name = syntax::field(p, "name");
    if (is(name, "typed_parameter")) name = syntax::named_child(name, 0);
    if (is(name, "list_splat_pattern") || is(name, "dictionary_splat_pattern")) name = syntax::named_child(name, 0);
    if (is(name, "identifier")) names.insert(file.text(name));
  }
  return names;
}

bool is_nested_scope(std::string_view type) { return type == "lambda" || comprehension_kind(type) != nullptr; }

class ScopeDeclarations {
public:
  ScopeDeclarations(const ParsedFile& file, TSNode scope, const Report& report)
      : file_(file), scope_(scope), report_(report) {}

  void run() {
    const bool module = is(scope_, "module");
    if (is(scope_, "function_definition")) parameters_ = parameter_names(file_, scope_);
    walk(module ? scope_ : syntax::field(scope_, "body"));
    for (const auto& [name, declaration] : nonlocals_) bound_outside(name, declaration);
  }

private:
  const ParsedFile& file_;
  TSNode scope_;
  const Report& report_;
  std::set<std::string_view> parameters_;
  std::map<std::string_view, Use> uses_;  // each name's first use before its declaration
  std::map<std::string_view, Declaration> declared_;
  std::map<std::string_view, Declaration> nonlocals_;

  void use(TSNode identifier, Use how) {
    const std::string_view name = file_.text(identifier);
    // At module level CPython takes `global x` then `x: int` (the name is the module's either way), though
    // not the other order; in a function or class body neither.
    if (how == Use::annotated && !is(scope_, "module")) {
      if (auto d = declared_.find(name); d != declared_.end()) {
        report_(identifier, "annotated name '" + std::string(name) + "' can't be " + std::string(d->second.keyword));
      }
    }
    uses_.emplace(name, how);
  }

  // The scope's own statements in source order; `bound` marks a target being bound or deleted.
  void walk(TSNode root) {
    std::vector<std::pair<TSNode, Use>> pending{{root, Use::read}};
    while (!pending.empty()) {
      const auto [node, how] = pending.back();
      pending.pop_back();
      const std::string_view type = syntax::type(node);
      std::vector<std::pair<TSNode, Use>> next;
      if (type == "identifier") {
        use(node, how);
      } else if (type == "global_statement" || type == "nonlocal_statement") {
        declare(node, type == "global_statement" ? "global" : "nonlocal");
      } else if (type == "function_definition" || type == "class_definition") {
        next.push_back({syntax::field(node, "name"), Use::bound});  // the body is a scope of its own
      } else if (is_nested_scope(type) || type == "import_statement" || type == "import_from_statement" ||
                 type == "future_import_statement") {
        // not counted (see the top of the file)
      } else if (type == "case_clause") {
        for (TSNode child : syntax::named_children(node)) {
          if (is(child, "block")) next.push_back({child, Use::read});
        }
      } else if (type == "attribute") {
        next.push_back({syntax::field(node, "object"), Use::read});
      } else if (type == "keyword_argument") {
        next.push_back({syntax::field(node, "value"), Use::read});
      } else if (type == "assignment" || type == "augmented_assignment" || type == "for_statement" ||
                 type == "named_expression") {
        for (uint32_t i = 0; i < syntax::named_child_count(node); ++i) {
          const TSNode child = syntax::named_child(node, i);
          const bool target = syntax::same(child, syntax::field(node, type == "named_expression" ? "name" : "left"));
          const bool annotated = target && is(child, "identifier") && !syntax::is_null(syntax::field(node, "type"));
          next.push_back({child, annotated ? Use::annotated : target ? Use::bound : Use::read});
        }
      } else if (type == "as_pattern_target" || type == "delete_statement") {
        for (TSNode child : syntax::named_children(node)) next.push_back({child, Use::bound});
      } else {
        for (TSNode child : syntax::named_children(node)) next.push_back({child, how});
      }
      for (auto it = next.rbegin(); it != next.rend(); ++it) {
        if (!syntax::is_null(it->first)) pending.push_back(*it);
      }
    }
  }

  void declare(TSNode statement, std::string_view keyword) {
    if (keyword == "nonlocal" && is(scope_, "module")) {
      return report_(statement, "nonlocal declaration not allowed at module level");
    }
    for (TSNode identifier : syntax::named_children(statement)) {
      if (!is(identifier, "identifier")) continue;
      const std::string_view name = file_.text(identifier);
      const std::string quoted = "'" + std::string(name) + "'";
      if (parameters_.count(name) != 0) {
        report_(identifier, "name " + quoted + " is parameter and " + std::string(keyword));
      } else if (auto u = uses_.find(name); u != uses_.end()) {
        const std::string kw(keyword);
        if (u->second == Use::annotated) report_(identifier, "annotated name " + quoted + " can't be " + kw);
        else if (u->second == Use::bound) report_(identifier, "name " + quoted + " is assigned to before " + kw + " declaration");
        else report_(identifier, "name " + quoted + " is used prior to " + kw + " declaration");
      }
      const auto [earlier, first] = declared_.emplace(name, Declaration{keyword, statement});
      if (!first && earlier->second.keyword != keyword) report_(identifier, "name " + quoted + " is nonlocal and global");
      if (keyword == "nonlocal") nonlocals_.emplace(name, Declaration{keyword, identifier});
    }
  }

  // A nonlocal name must be bound in an enclosing function: it must at least appear in one, outside
  // this scope. Where there is one, names mangled inside a class (`__x`) are not looked for; a
  // method's `__class__` is always bound.
  void bound_outside(std::string_view name, const Declaration& declaration) {
    TSNode outermost{};
    bool in_class = is(scope_, "class_definition");
    for (TSNode up = syntax::parent(scope_); !syntax::is_null(up); up = syntax::parent(up)) {
      if (is(up, "function_definition")) outermost = up;
      in_class = in_class || is(up, "class_definition");
    }
    // A method's `__class__` is the implicit cell the compiler makes for super().
    if (in_class && name == "__class__") return;
    const bool mangled = name.size() > 2 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) != "__";
    bool found = false;
    if (!syntax::is_null(outermost)) {
      found = in_class && mangled;  // bound under its mangled name, perhaps: not looked for
      syntax::walk(outermost, [&](TSNode n) {
        if (found || syntax::same(n, scope_)) return false;
        if (is(n, "identifier") && file_.text(n) == name) found = true;
        return !found;
      });
    }
    if (!found) report_(declaration.at, "no binding for nonlocal '" + std::string(name) + "' found");
  }
};
}  // namespace

void declarations(const ParsedFile& file, TSNode scope, const Report& report) {
  ScopeDeclarations(file, scope, report).run();
}

}  // namespace kvpatch::compile_rules
