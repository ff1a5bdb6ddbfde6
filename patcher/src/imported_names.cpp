#include "kvpatch/imported_names.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

ImportedNames::ImportedNames(const ModuleFacts& facts) : facts_(facts) {
  // Imports at module level, also under `if TYPE_CHECKING:` or try/except; not inside defs or classes.
  syntax::walk(facts.file().tree.root(), [&](TSNode n) {
    if (is(n, "function_definition") || is(n, "class_definition")) return false;
    const bool from = is(n, "import_from_statement");
    if (!from && !is(n, "import_statement")) return true;
    TSNode module = field(n, "module_name");
    // A relative import keeps its leading dots (`from .traced import W` -> .traced.W, `from . import m` -> .m): it
    // names a module of this package, never the wrapper's package, but may name a class another module defines.
    std::string prefix;
    if (from) {
      prefix = facts.text(module);
      if (prefix.empty() || prefix.back() != '.') prefix += ".";
    }
    const uint32_t count = syntax::named_child_count(n);
    for (uint32_t i = 0; i < count; ++i) {
      TSNode item = syntax::named_child(n, i);
      if (from && syntax::same(item, module)) continue;
      if (is(item, "aliased_import")) {
        paths_[facts.text(field(item, "alias"))] = prefix + facts.text(field(item, "name"));
      } else if (is(item, "dotted_name")) {
        // `import a.b` binds a (to package a); `from m import a` binds a to m.a.
        const std::string first = facts.text(syntax::named_child(item, 0));
        paths_[first] = from ? prefix + facts.text(item) : first;
      }
    }
    return false;
  });
}

std::string ImportedNames::qualified(TSNode expr) const {
  expr = syntax::unparenthesized(expr);
  if (is(expr, "identifier")) {
    auto found = paths_.find(facts_.text(expr));
    return found == paths_.end() ? "" : found->second;
  }
  if (is(expr, "attribute")) {
    const std::string object = qualified(field(expr, "object"));
    return object.empty() ? "" : object + "." + facts_.text(field(expr, "attribute"));
  }
  return "";
}

bool in_package(const std::string& path, const std::string& package) {
  return !package.empty() && path.size() > package.size() && path.compare(0, package.size(), package) == 0 &&
         path[package.size()] == '.';
}

}  // namespace kvpatch
