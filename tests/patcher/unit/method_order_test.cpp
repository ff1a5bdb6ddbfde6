// Where Python looks a method up for an instance (ModuleFacts::lineage): C3's order over every base, as far as one
// module decides it. Each complete order below is the __mro__ CPython 3 gives the same classes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kvpatch/field_holders.h"
#include "kvpatch/module_facts.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const char* kModule = R"PY(
from elsewhere import Imported
import mod


class A:
    pass


class B(A):
    pass


class C(A):
    pass


class Diamond(B, C):
    pass


class Rooted(object):
    pass


class UnderRooted(Rooted):
    pass


class Mixin:
    def helper(self):
        return 1


class MixinFirst(Mixin, Imported):
    pass


class ImportedFirst(Imported, Mixin):
    pass


class BehindImported(ImportedFirst, Mixin):
    pass


class Chain(Imported):
    pass


class UnderChain(Chain):
    pass


class Inconsistent(A, B):
    pass


class Dotted(mod.Base):
    pass


class WithMeta(Mixin, metaclass=type):
    pass


class Root:
    def __init__(self):
        self.x = 1


class LeftNoInit(Root):
    pass


class RightStops(Root):
    def __init__(self):
        pass


class ExplicitLeft(LeftNoInit, RightStops):
    def __init__(self):
        LeftNoInit.__init__(self)


class SuperLeft(LeftNoInit, RightStops):
    def __init__(self):
        super().__init__()


class Itself(Itself):
    pass
)PY";

std::vector<std::string> names(const std::vector<const ClassFacts*>& classes) {
  std::vector<std::string> out;
  out.reserve(classes.size());
  for (const ClassFacts* c : classes) out.push_back(c->name);
  return out;
}

using Names = std::vector<std::string>;
}  // namespace

TEST_SUITE("method_order") {
  TEST_CASE("C3 order over classes the module defines") {
    const auto file = test::parse(kModule);
    const ModuleFacts facts(*file);
    auto order = [&](const char* name) { return names(facts.lineage(*facts.find_class(name))); };
    auto complete = [&](const char* name) { return facts.lineage_complete(*facts.find_class(name)); };

    CHECK(order("Diamond") == Names{"Diamond", "B", "C", "A"});
    CHECK(complete("Diamond"));
    CHECK(order("UnderRooted") == Names{"UnderRooted", "Rooted"});
    CHECK(complete("UnderRooted"));
    CHECK(order("WithMeta") == Names{"WithMeta", "Mixin"});  // metaclass= is no base
    CHECK(complete("WithMeta"));
    CHECK(order("ExplicitLeft") == Names{"ExplicitLeft", "LeftNoInit", "RightStops", "Root"});

    SUBCASE("a mixin listed before an imported base comes next; what the imported base brings is not seen") {
      CHECK(order("MixinFirst") == Names{"MixinFirst", "Mixin"});
      CHECK_FALSE(complete("MixinFirst"));
    }
    SUBCASE("nothing behind an imported base is placed, not even a class of this module") {
      CHECK(order("ImportedFirst") == Names{"ImportedFirst"});
      CHECK_FALSE(complete("ImportedFirst"));
      // Mixin may stand behind the imported base's own classes, so it is not placed here either.
      CHECK(order("BehindImported") == Names{"BehindImported", "ImportedFirst"});
      CHECK_FALSE(complete("BehindImported"));
    }
    SUBCASE("one base at a time, as far as the module shows it") {
      CHECK(order("UnderChain") == Names{"UnderChain", "Chain"});
      CHECK_FALSE(complete("UnderChain"));
      CHECK(order("Dotted") == Names{"Dotted"});
      CHECK_FALSE(complete("Dotted"));
    }
    SUBCASE("a class named as its own base (another class of that name, or none, in Python) is not followed") {
      CHECK(order("Itself") == Names{"Itself"});
      CHECK_FALSE(complete("Itself"));
    }
    SUBCASE("bases C3 cannot order (Python raises TypeError): nothing past the class") {
      CHECK(order("Inconsistent") == Names{"Inconsistent"});
      CHECK_FALSE(complete("Inconsistent"));
    }
  }

  TEST_CASE("the classes whose instances may run a class's methods include those with it behind an imported base") {
    const auto file = test::parse(kModule);
    const ModuleFacts facts(*file);
    const Names running = names(facts.instance_classes(*facts.find_class("Mixin")));
    CHECK(running == Names{"Mixin", "MixinFirst", "ImportedFirst", "BehindImported", "WithMeta"});
    CHECK(names(facts.instance_classes(*facts.find_class("A"))) == Names{"A", "B", "C", "Diamond", "Inconsistent"});
  }

  TEST_CASE("an explicit X.__init__(self) runs the __init__ X's own order finds; super() goes on along the instance's") {
    const auto file = test::parse(kModule);
    const ModuleFacts facts(*file);
    // LeftNoInit.__init__ is Root's (LeftNoInit, Root), though RightStops stands between them for the instance.
    const ClassFacts* explicit_holder = init_holder(facts, *facts.find_class("ExplicitLeft"), "self.x");
    REQUIRE(explicit_holder != nullptr);
    CHECK(explicit_holder->name == "Root");
    // super() from SuperLeft reaches RightStops.__init__, which calls no further __init__: x is never set.
    CHECK(init_holder(facts, *facts.find_class("SuperLeft"), "self.x") == nullptr);
  }
}
