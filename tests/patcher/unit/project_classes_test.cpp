// Wrapper subclasses defined in one module of a run and imported by another (project_classes.h): how an import path
// finds the module that defines the class, the search to a fixed point, and the rules and receivers that see them.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"
#include "kvpatch/project_classes.h"
#include "kvpatch/rule_engine.h"
#include "kvpatch/wrapper_types.h"
#include "test_support.h"

using namespace kvpatch;
namespace fs = std::filesystem;

namespace {
const RuleSet& repository_rules() {
  static const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
  return rules;
}

const std::string kWrapper = "BatchMLAPagedAttentionWrapper";
const std::string kSitesRule = "flashinfer-mla-plan-kv-dtype";

// Modules in memory, searched as a run's files are.
std::map<std::string, std::vector<ProjectClass>> search(const std::vector<std::pair<std::string, std::string>>& modules) {
  std::vector<fs::path> paths;
  paths.reserve(modules.size());
  for (const auto& m : modules) paths.emplace_back(m.first);
  return find_project_classes(repository_rules(), paths, [&](std::size_t i) { return std::optional(modules[i].second); });
}

std::vector<std::string> names(const std::vector<ProjectClass>& classes) {
  std::vector<std::string> out;
  out.reserve(classes.size());
  for (const ProjectClass& c : classes) out.push_back(c.module + ":" + c.name);
  return out;
}

// The MLA wrapper's types in a module at `path`, with the run's subclasses.
struct Module {
  std::shared_ptr<const ParsedFile> file;
  ModuleFacts facts;
  WrapperTypes types;
  Module(const std::string& path, const std::string& code, std::vector<ProjectClass> classes)
      : file(std::make_shared<const ParsedFile>(parse_source_file(SourceFile(path, path, code)))),
        facts(*file),
        types(facts, kWrapper, "flashinfer", {}, std::move(classes)) {}
  TypeVerdict returned(const std::string& function) const {
    const FunctionFacts* f = facts.module_function(function);
    REQUIRE(f != nullptr);
    TSNode value{};
    syntax::walk(f->node, [&](TSNode n) {
      if (syntax::type(n) == "return_statement") value = syntax::named_child(n, 0);
      return true;
    });
    return types.of(value, f);
  }
};
}  // namespace

TEST_SUITE("project_classes") {
  TEST_CASE("a module's path as imports name it") {
    CHECK(module_path("/src/pkg/traced.py") == "/src/pkg/traced");
    CHECK(module_path("/src/pkg/__init__.py") == "/src/pkg");
    CHECK(module_path("/src/pkg/./sub/../traced.py") == "/src/pkg/traced");
    CHECK(module_path("pkg/traced.py") == (fs::current_path() / "pkg/traced").generic_string());
  }

  TEST_CASE("import paths that name a class of another module, and those that do not") {
    const ProjectClass traced{"/src/pkg/traced", "TracedWrapper", {}};
    const fs::path backend = "/src/pkg/backend.py";
    CHECK(names_project_class(".traced.TracedWrapper", backend, traced));
    CHECK(names_project_class(".traced.TracedWrapper", "/src/pkg/__init__.py", traced));  // the package's own module
    CHECK(names_project_class("..traced.TracedWrapper", "/src/pkg/sub/deep.py", traced));  // one package up
    CHECK(names_project_class("..pkg.traced.TracedWrapper", backend, traced));
    CHECK(names_project_class("pkg.traced.TracedWrapper", backend, traced));  // absolute, from any sys.path entry
    CHECK(names_project_class("src.pkg.traced.TracedWrapper", "/elsewhere/x.py", traced));
    CHECK(names_project_class("traced.TracedWrapper", backend, traced));  // the directory itself on sys.path
    CHECK_FALSE(names_project_class(".traced.OtherWrapper", backend, traced));
    CHECK_FALSE(names_project_class(".timed.TracedWrapper", backend, traced));
    CHECK_FALSE(names_project_class("..traced.TracedWrapper", backend, traced));  // /src/traced
    CHECK_FALSE(names_project_class("other.traced.TracedWrapper", backend, traced));
    CHECK_FALSE(names_project_class("TracedWrapper", backend, traced));  // `import TracedWrapper`: a module
    CHECK_FALSE(names_project_class(".TracedWrapper", backend, traced));  // pkg/__init__.py's class
    CHECK_FALSE(names_project_class("...", backend, traced));
    const ProjectClass in_package{"/src/pkg", "PackageWrapper", {}};  // defined in pkg/__init__.py
    CHECK(names_project_class(".PackageWrapper", backend, in_package));
    CHECK(names_project_class("pkg.PackageWrapper", backend, in_package));
  }

  TEST_CASE("subclasses across modules, to a fixed point, and only through an import that binds the base") {
    const auto found = search({
        {"/p/pkg/deeper.py", "from .traced import TracedWrapper as Base\n\nclass DeeperWrapper(Base):\n    pass\n"},
        {"/p/pkg/traced.py", "from flashinfer import BatchMLAPagedAttentionWrapper\n\n"
                             "class TracedWrapper(BatchMLAPagedAttentionWrapper):\n    pass\n"},
        {"/p/pkg/deepest.py", "from pkg import deeper\n\nclass DeepestWrapper(deeper.DeeperWrapper):\n    pass\n"},
        {"/p/pkg/unbound.py", "class Stray(TracedWrapper):\n    pass\n"},  // the name is bound by nothing
        {"/p/pkg/elsewhere.py", "from .other import TracedWrapper\n\nclass Lookalike(TracedWrapper):\n    pass\n"},
        {"/p/pkg/broken.py", "class Broken(BatchMLAPagedAttentionWrapper:\n"},  // does not parse: passed by
        {"/p/pkg/ragged.py", "from flashinfer import BatchPrefillWithRaggedKVCacheWrapper\n\n"
                             "class Ragged(BatchPrefillWithRaggedKVCacheWrapper):\n    pass\n"},
    });
    REQUIRE(found.count(kSitesRule) == 1);
    // deeper.py's import binds Base to the class, so `from pkg.deeper import Base` would import it too.
    CHECK(names(found.at(kSitesRule)) ==
          std::vector<std::string>{"/p/pkg/traced:TracedWrapper", "/p/pkg/deeper:DeeperWrapper", "/p/pkg/deeper:Base",
                                   "/p/pkg/deepest:DeepestWrapper"});
    CHECK(search({{"/p/a.py", "import torch\n"}}).empty());
  }

  TEST_CASE("another name for the wrapper class or a subclass, bound at module level, is one of them too") {
    const auto found = search({
        {"/p/pkg/compat.py", "from flashinfer import BatchMLAPagedAttentionWrapper as MLAWrapper\n"},
        {"/p/pkg/assigned.py", "try:\n    import flashinfer\nexcept ImportError:\n    flashinfer = None\n\n"
                               "Fallback = None\nFallback = flashinfer.BatchMLAPagedAttentionWrapper\n"},
        {"/p/pkg/tagged.py", "from .compat import MLAWrapper\n\nclass TaggedWrapper(MLAWrapper):\n"
                             "    def plan(self, tag, *args, **kwargs):\n        pass\n\nTagged = TaggedWrapper\n"},
        {"/p/pkg/either.py", "from flashinfer import BatchMLAPagedAttentionWrapper, BatchDecodeWithPagedKVCacheWrapper\n"
                             "Either = BatchMLAPagedAttentionWrapper\nEither = BatchDecodeWithPagedKVCacheWrapper\n"},
        {"/p/pkg/inner.py", "from flashinfer import BatchMLAPagedAttentionWrapper\n\nclass Holder:\n"
                            "    Inner = BatchMLAPagedAttentionWrapper\n"},
    });
    REQUIRE(found.count(kSitesRule) == 1);
    // Either may be another class (marked so), and Inner is a class attribute: not one.
    // tagged.py's import binds MLAWrapper there too (a re-export, as for a subclass). tagged.py, which does not name
    // the wrapper class, is read in the second round.
    CHECK(names(found.at(kSitesRule)) ==
          std::vector<std::string>{"/p/pkg/compat:MLAWrapper", "/p/pkg/assigned:Fallback", "/p/pkg/either:Either",
                                   "/p/pkg/tagged:TaggedWrapper", "/p/pkg/tagged:MLAWrapper", "/p/pkg/tagged:Tagged"});
    // The alias of the subclass carries its own plan() with other parameters.
    for (const ProjectClass& c : found.at(kSitesRule)) {
      CAPTURE(c.name);
      CHECK(c.rebinding.count("plan") == (c.name.starts_with("Tagged") ? 1U : 0U));
      CHECK(c.maybe == (c.name == "Either"));
    }
    const Module m("/p/app/backend.py", "from pkg.compat import MLAWrapper\n\ndef built():\n    return MLAWrapper(ws)\n",
                   found.at(kSitesRule));
    CHECK(m.returned("built") == TypeVerdict::Wrapper);
  }

  TEST_CASE("a name that may be the wrapper or another class is exported as such, and builds an unknown type") {
    const auto found = search({
        {"/p/pkg/compat.py", "try:\n    from flashinfer import BatchMLAPagedAttentionWrapper\n"
                             "    MLAWrapper = BatchMLAPagedAttentionWrapper\nexcept ImportError:\n"
                             "    from .fallback import FallbackWrapper\n    MLAWrapper = FallbackWrapper\n"},
        // A class derived from a class of FlashInfer's that the rules do not know (only modules that name the wrapper
        // class, or a class found to be one, are read).
        {"/p/pkg/mystery.py", "from flashinfer import BatchMLAPagedAttentionWrapper, SomeNewWrapper\n\n"
                              "class Mystery(SomeNewWrapper):\n    pass\n"},
        // Bound to the wrapper and to a subclass that only the next round finds: the wrapper in the end.
        {"/p/pkg/late.py", "from flashinfer import BatchMLAPagedAttentionWrapper\nfrom .sub import Sub\n"
                           "Late = BatchMLAPagedAttentionWrapper\nif fast:\n    Late = Sub\n"},
        {"/p/pkg/sub.py", "import flashinfer\n\nclass Sub(flashinfer.BatchMLAPagedAttentionWrapper):\n    pass\n"},
    });
    REQUIRE(found.count(kSitesRule) == 1);
    std::map<std::string, bool> maybe;
    for (const ProjectClass& c : found.at(kSitesRule)) maybe[c.module + ":" + c.name] = c.maybe;
    CHECK(maybe == std::map<std::string, bool>{{"/p/pkg/compat:MLAWrapper", true},
                                               {"/p/pkg/mystery:Mystery", true},
                                               {"/p/pkg/late:Late", false},
                                               {"/p/pkg/late:Sub", false},
                                               {"/p/pkg/sub:Sub", false}});
    const Module m("/p/app/backend.py", R"PY(
from pkg.compat import MLAWrapper
from pkg.late import Late
from pkg import compat, mystery


class Local(MLAWrapper):
    pass


def imported():
    return MLAWrapper(ws)

def through_module():
    return compat.MLAWrapper(ws)

def derived():
    return Local(ws)

def annotated(w: Optional[MLAWrapper]):
    return w

def annotated_through_module(w: "compat.MLAWrapper"):
    return w

def unknown_base():
    return mystery.Mystery(ws)

def late():
    return Late(ws)
)PY",
                   found.at(kSitesRule));
    for (const std::string f : {"imported", "through_module", "derived", "annotated", "annotated_through_module",
                                "unknown_base"}) {
      CAPTURE(f);
      CHECK(m.returned(f) == TypeVerdict::Unknown);
    }
    CHECK(m.returned("late") == TypeVerdict::Wrapper);
    CHECK_FALSE(m.types.is_wrapper_class("Local"));
    CHECK(m.types.may_be_wrapper_class("Local"));
    // No def of a class that may be another is known to run: no rebinding is read through it.
    REQUIRE(m.types.imported_project_classes().size() == 1);
    CHECK(m.types.imported_project_classes()[0].first == "Late");
  }

  TEST_CASE("a package that re-exports a subclass: importing it from the package finds it") {
    const auto found = search({
        {"/p/pkg/__init__.py", "from .traced import TracedWrapper\n"},
        {"/p/pkg/traced.py", "import flashinfer\n\nclass TracedWrapper(flashinfer.BatchMLAPagedAttentionWrapper):\n"
                             "    pass\n"},
    });
    REQUIRE(found.count(kSitesRule) == 1);
    CHECK(names(found.at(kSitesRule)) == std::vector<std::string>{"/p/pkg/traced:TracedWrapper", "/p/pkg:TracedWrapper"});
    const Module m("/p/app/backend.py", "from pkg import TracedWrapper\n\ndef direct():\n    return TracedWrapper(ws)\n",
                   found.at(kSitesRule));
    CHECK(m.returned("direct") == TypeVerdict::Wrapper);
  }

  TEST_CASE("the rules for a run: each selects a module that names a subclass only") {
    const std::map<std::string, std::vector<ProjectClass>> classes{{kSitesRule, {{"/p/pkg/traced", "TracedWrapper", {}}}}};
    const RuleSet rules = with_project_classes(repository_rules(), classes);
    const std::string backend = "from .traced import TracedWrapper\nw = TracedWrapper(ws)\n";
    for (const PlanSiteRule& r : rules.plan_site_rules) {
      CHECK(r.files.matches(backend) == (r.id == kSitesRule));
      if (r.id == kSitesRule) CHECK(r.project_classes == classes.at(kSitesRule));
    }
    for (const FieldRule& r : rules.field_rules) CHECK(r.files.matches(backend));
    int casts = 0;
    for (const CastRule& r : rules.cast_rules) casts += r.files.matches(backend) ? 1 : 0;
    CHECK(casts == 1);  // the MLA cast rule; fa3's selects by other names
    // The repository's rules, as loaded, select it not.
    for (const FieldRule& r : repository_rules().field_rules) CHECK_FALSE(r.files.matches(backend));
  }

  TEST_CASE("a module that imports a subclass sees its instances as the wrapper, however it names it") {
    const std::vector<ProjectClass> classes{{"/p/pkg/traced", "TracedWrapper", {}}};
    const Module m("/p/pkg/backend.py", R"PY(
from .traced import TracedWrapper
from .traced import TracedWrapper as Renamed
from . import traced
import pkg.traced
from pkg.traced import TracedWrapper as Absolute
from .timed import TracedWrapper as Lookalike


class LocalSubclass(Renamed):
    pass


def direct():
    return TracedWrapper(ws)

def renamed():
    return Renamed(ws)

def through_module():
    return traced.TracedWrapper(ws)

def dotted_import():
    return pkg.traced.TracedWrapper(ws)

def absolute():
    return Absolute(ws)

def subclassed():
    return LocalSubclass(ws)

def annotated_by_name(w: Optional[TracedWrapper]):
    return w

def lookalike():
    return Lookalike(ws)
)PY",
                   classes);
    for (const char* f : {"direct", "renamed", "through_module", "dotted_import", "absolute", "subclassed",
                          "annotated_by_name"}) {
      CAPTURE(f);
      CHECK(m.returned(f) == TypeVerdict::Wrapper);
    }
    CHECK(m.types.is_wrapper_class("LocalSubclass"));
    CHECK(m.returned("lookalike") == TypeVerdict::Other);
    // Annotated through the module only (the class's name is bound by no import of this one).
    const Module annotations("/p/pkg/updaters.py", R"PY(
from . import traced, timed
import pkg.traced


def through_module(w: "traced.TracedWrapper"):
    return w

def dotted_import(w: Optional[pkg.traced.TracedWrapper]):
    return w

def lookalike(w: "timed.TracedWrapper"):
    return w
)PY",
                             classes);
    CHECK(annotations.returned("through_module") == TypeVerdict::Wrapper);
    CHECK(annotations.returned("dotted_import") == TypeVerdict::Wrapper);
    CHECK(annotations.returned("lookalike") == TypeVerdict::Other);
    // Without the run's classes, the module's own reading: another class.
    const Module alone("/p/pkg/backend.py", "from .traced import TracedWrapper\n\ndef direct():\n    return TracedWrapper(ws)\n", {});
    CHECK(alone.returned("direct") == TypeVerdict::Other);
  }
}
