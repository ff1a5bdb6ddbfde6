#pragma once
// Wrapper subclasses that one module of a run defines and another imports. Each file is analysed on its own, so a
// module that builds `TracedWrapper(...)` (`from .traced import TracedWrapper`, a subclass of the wrapper in a module
// beside it) would read its instances as another class: their plan() calls would be no sites at all, and check
// would pass with every one of them unthreaded. Before the files are analysed, the run's modules are searched for
// such classes; the rules then see them as the wrapper in every module that imports them.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/rule_set.h"

namespace kvpatch {

// A module's path as imports name it: absolute, '/'-separated, without `.py`, and a package's `__init__.py` as the
// package (`/src/pkg/traced.py` -> /src/pkg/traced, `/src/pkg/__init__.py` -> /src/pkg).
std::string module_path(const std::filesystem::path& file);

// Whether a dotted path from a module's imports, read in the module at `importer`, names the class: relative paths
// (`.traced.TracedWrapper`, `..pkg.W`) from the importer's package, absolute ones (`pkg.traced.TracedWrapper`) by
// their trailing components, as any place on sys.path may hold the package.
bool names_project_class(const std::string& dotted, const std::filesystem::path& importer, const ProjectClass& cls);

// The classes of the modules that are a plan-site rule's wrapper class or inherit from it, by rule id: a class whose
// base names the wrapper (or one found before, imported from its module), and a name a module's imports bind to one
// (a package's __init__.py that re-exports it), to a fixed point; and, marked `maybe`, the classes and names that may
// be the wrapper class or another (project_classes are then of unknown type, never another class's). read(i) gives module i's
// text, nullopt when it cannot be read; a module that does not parse is passed by (its own analysis reports it).
std::map<std::string, std::vector<ProjectClass>> find_project_classes(
    const RuleSet& rules, const std::vector<std::filesystem::path>& modules,
    const std::function<std::optional<std::string>(std::size_t)>& read);

// The rules for a run that has these classes: each plan-site rule knows its own, and a rule that selects files by
// the wrapper class's name selects those that name one of them instead.
RuleSet with_project_classes(RuleSet rules, const std::map<std::string, std::vector<ProjectClass>>& classes);

}  // namespace kvpatch
