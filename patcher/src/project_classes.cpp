#include "kvpatch/project_classes.h"

#include <algorithm>
#include <memory>
#include <set>

#include "kvpatch/imported_names.h"
#include "kvpatch/input_error.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/wrapper_overrides.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/source_file.h"
#include "kvpatch/wrapper_types.h"

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
fs::path absolute_normal(const fs::path& file) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec);
  return (ec ? file : absolute).lexically_normal();
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (std::size_t at = text.find(separator); at != std::string::npos; at = text.find(separator, begin)) {
    parts.push_back(text.substr(begin, at - begin));
    begin = at + 1;
  }
  parts.push_back(text.substr(begin));
  return parts;
}

// The wrapper methods whose calls the rules bind: the rule's plan(), and the consumers (run()) the cast rules check
// on its wrapper.
std::vector<WrapperMethod> bound_methods(const RuleSet& rules, const PlanSiteRule& rule) {
  std::vector<WrapperMethod> out{plan_method(rule)};
  for (const CastRule& cast : rules.cast_rules) {
    for (const Fp8Consumer& consumer : cast.fp8_consumers) {
      const bool known = std::any_of(out.begin(), out.end(), [&](const WrapperMethod& m) { return m.name == consumer.method; });
      if (consumer.sites_rule == rule.id && !known) out.push_back(consumer_method(consumer));
    }
  }
  return out;
}

// The rebinding defs of the class a module-level alias is assigned (`Traced = TracedWrapper`): a class of the module
// or one it imports from the run. None for the wrapper class itself.
std::map<std::string, OverrideDef> aliased_rebinding(const std::string& alias, const std::string& module,
                                                     const std::vector<ProjectClass>& classes, const WrapperTypes& types,
                                                     const ModuleFacts& facts) {
  for (const Assignment* a : facts.assignments_to(alias)) {
    const TSNode value = syntax::unparenthesized(a->value);
    if (a->function >= 0 || syntax::is_null(value) || !syntax::is(value, "identifier")) continue;
    const std::string name = facts.text(value);
    for (const ProjectClass& c : classes) {
      if (c.module == module && c.name == name) return c.rebinding;
    }
    for (const auto& [imported, c] : types.imported_project_classes()) {
      if (imported == name) return c.rebinding;
    }
  }
  return {};
}

// A module of the run, parsed once: the facts every round of the search reads again.
struct ParsedModule {
  std::shared_ptr<const ParsedFile> file;
  std::unique_ptr<ModuleFacts> facts;
};
}  // namespace

std::string module_path(const fs::path& file) {
  fs::path path = absolute_normal(file);
  if (path.extension() == ".py") path.replace_extension();
  if (path.filename() == "__init__") path = path.parent_path();
  return path.generic_string();
}

bool names_project_class(const std::string& dotted, const fs::path& importer, const ProjectClass& cls) {
  const std::size_t level = dotted.find_first_not_of('.');
  if (level == std::string::npos) return false;
  std::vector<std::string> components = split(dotted.substr(level), '.');
  if (components.back() != cls.name) return false;
  components.pop_back();
  if (level > 0) {
    // `.` is the importer's own package (the directory it lies in, for a package's __init__.py too); each further
    // dot is one package up.
    fs::path base = absolute_normal(importer).parent_path();
    for (std::size_t up = 1; up < level; ++up) base = base.parent_path();
    for (const std::string& c : components) base /= c;
    return base.generic_string() == cls.module;
  }
  if (components.empty()) return false;  // `import W` names a module, never a class
  const std::vector<std::string> module = split(cls.module, '/');
  return module.size() >= components.size() &&
         std::equal(components.rbegin(), components.rend(), module.rbegin());
}

std::map<std::string, std::vector<ProjectClass>> find_project_classes(
    const RuleSet& rules, const std::vector<fs::path>& modules,
    const std::function<std::optional<std::string>(std::size_t)>& read) {
  std::map<std::string, std::vector<ProjectClass>> found;
  std::set<std::string> searched;              // class names whose modules have been looked for
  std::map<std::size_t, ParsedModule> parsed;  // the modules that name one of them (null facts: did not parse)
  for (;;) {
    std::vector<std::string> fresh;
    for (const PlanSiteRule& rule : rules.plan_site_rules) {
      if (searched.insert(rule.wrapper_class).second) fresh.push_back(rule.wrapper_class);
      for (const ProjectClass& c : found[rule.id]) {
        if (searched.insert(c.name).second) fresh.push_back(c.name);
      }
    }
    if (fresh.empty()) break;
    // A module can only define a subclass of a class it names: only those are parsed.
    for (std::size_t i = 0; i < modules.size(); ++i) {
      if (parsed.count(i) != 0) continue;
      const std::optional<std::string> text = read(i);
      if (!text || std::none_of(fresh.begin(), fresh.end(), [&](const std::string& n) {
            return text->find(n) != std::string::npos;
          })) {
        continue;
      }
      ParsedModule& m = parsed[i];
      try {
        require_source_text(*text, modules[i].generic_string());
        m.file = std::make_shared<const ParsedFile>(
            parse_source_file(SourceFile(modules[i], modules[i].generic_string(), *text)));
        m.facts = std::make_unique<ModuleFacts>(*m.file);
      } catch (const InputError&) {
        m.facts.reset();
      }
    }
    bool grew = false;
    for (const PlanSiteRule& rule : rules.plan_site_rules) {
      std::vector<ProjectClass>& classes = found[rule.id];
      const std::vector<WrapperMethod> methods = bound_methods(rules, rule);
      for (const auto& [i, m] : parsed) {
        if (!m.facts) continue;
        const fs::path& module = modules[i];  // not the binding i: clang 14 cannot capture structured bindings
        const WrapperTypes types(*m.facts, rule.wrapper_class, rule.wrapper_module, rule.known_other_classes, classes);
        auto add = [&](ProjectClass c) {
          const auto known = std::find(classes.begin(), classes.end(), c);
          if (known == classes.end()) {
            classes.push_back(std::move(c));
            grew = true;
          } else if (known->maybe && !c.maybe) {
            // Bound to the wrapper and to a class a later round found to be a subclass of it: the wrapper after all.
            *known = std::move(c);
            grew = true;
          }
        };
        for (const ClassFacts& cls : m.facts->classes()) {
          if (types.may_be_wrapper_class(cls.name)) add(ProjectClass{module_path(module), cls.name, {}, true});
          if (cls.name == rule.wrapper_class || !types.is_wrapper_class(cls.name)) continue;
          ProjectClass c{module_path(module), cls.name, {}};
          for (const WrapperMethod& method : methods) {
            if (std::optional<RebindingOverride> o = class_override(cls, method, types, *m.facts)) {
              c.rebinding[method.name] = o->def;
            }
          }
          add(std::move(c));
        }
        // A name the module's imports bind to one is an attribute of the module too: a package's __init__.py that
        // re-exports it (`from .traced import TracedWrapper`) lets others import it from the package.
        const ImportedNames imports(*m.facts);
        for (const auto& binding : imports.paths()) {
          const auto bound = std::find_if(classes.begin(), classes.end(), [&](const ProjectClass& c) {
            return names_project_class(binding.second, module, c);
          });
          if (bound == classes.end()) continue;
          ProjectClass c = *bound;
          c.module = module_path(module);
          c.name = binding.first;
          add(std::move(c));
        }
        // Another name the module binds to the wrapper class or to one of them (`MLAWrapper =
        // BatchMLAPagedAttentionWrapper`, `from flashinfer import BatchMLAPagedAttentionWrapper as MLAWrapper` in a
        // compatibility module): a module that imports that name gets the class too. One that may be the wrapper or
        // another class (bound to each in different places) is exported as such, like a class derived from a package
        // class of unknown kind above: what an importer builds with it is of unknown type there too.
        for (const std::string& name : m.facts->module_names()) {
          if (name == rule.wrapper_class || m.facts->find_class(name) != nullptr) continue;
          if (types.may_be_wrapper_class(name)) {
            add(ProjectClass{module_path(module), name, {}, true});
          } else if (types.is_wrapper_class(name)) {
            add(ProjectClass{module_path(module), name,
                             aliased_rebinding(name, module_path(module), classes, types, *m.facts)});
          }
        }
      }
    }
    if (!grew) break;
  }
  std::erase_if(found, [](const auto& entry) { return entry.second.empty(); });
  return found;
}

RuleSet with_project_classes(RuleSet rules, const std::map<std::string, std::vector<ProjectClass>>& classes) {
  for (PlanSiteRule& rule : rules.plan_site_rules) {
    auto it = classes.find(rule.id);
    if (it != classes.end()) rule.project_classes = it->second;
  }
  auto add_stand_ins = [&](FileSelection& selection) {
    for (const std::string& term : selection.content_contains) {
      for (const PlanSiteRule& rule : rules.plan_site_rules) {
        if (rule.wrapper_class != term) continue;
        std::vector<std::string>& names = selection.stand_ins[term];
        for (const ProjectClass& c : rule.project_classes) {
          if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
        }
      }
    }
  };
  for (PlanSiteRule& r : rules.plan_site_rules) add_stand_ins(r.files);
  for (FieldRule& r : rules.field_rules) add_stand_ins(r.files);
  for (CastRule& r : rules.cast_rules) add_stand_ins(r.files);
  return rules;
}

}  // namespace kvpatch
