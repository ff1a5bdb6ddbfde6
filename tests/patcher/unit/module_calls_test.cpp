// Calls into the module's own defs: which defs a call runs, every call of a def, and what a def returns.
#include <doctest/doctest.h>

#include "kvpatch/module_calls.h"
#include "kvpatch/module_facts.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const char* kModule = R"PY(
from functools import partial


class Base:
    def forward(self, layer):
        a = self.hook(layer)
        b = self.plain(layer)
        c = module_helper(layer)
        d = other.forward(layer)
        return a, b, c, d

    def hook(self, layer):
        return layer

    def plain(self, layer):
        try:
            return layer.x
        finally:
            pass

    def escapes(self):
        return partial(self.plain)


class Sub(Base):
    def hook(self, layer):
        if layer:
            return layer.a
        elif layer.b:
            raise ValueError(layer)
        else:
            return layer.c


def module_helper(layer):
    with layer:
        return layer.y


def falls_off(layer):
    if layer:
        return layer


def may_skip(layer):
    try:
        return layer.z
    except ValueError:
        pass


def handled(layer):
    try:
        x = layer.z
    except ValueError:
        return None
    else:
        return x


def generator(layer):
    yield layer
    return layer


class SeenBase:
    def forward(self, layer):
        a = self.only_below(layer)
        return a


class Leaf(SeenBase):
    def only_below(self, layer):
        return layer


class UnseenBase(torch.nn.Module):
    def forward(self, layer):
        a = self.only_below(layer)
        return a


class UnseenLeaf(UnseenBase):
    def only_below(self, layer):
        return layer
)PY";

struct Module {
  std::shared_ptr<const ParsedFile> file = test::parse(kModule);
  ModuleFacts facts{*file};

  // The call `forward` of the class assigns to the name.
  TSNode call_assigned(const std::string& name, const std::string& cls = "Base") const {
    for (const Assignment* a : facts.local_assignments(*facts.method(cls, "forward"), name)) return a->value;
    FAIL("no assignment of " << name);
    return TSNode{};
  }
  bool returns(const FunctionFacts* f) const {
    REQUIRE(f != nullptr);
    return returned_values(*f).has_value();
  }
};
}  // namespace

TEST_SUITE("module_calls") {
  TEST_CASE("a call on the method's own instance runs the def each instance's class finds, overrides included") {
    Module m;
    const std::vector<const FunctionFacts*> hook = defs_called(m.facts, m.call_assigned("a"));
    REQUIRE(hook.size() == 2);
    CHECK(hook[0] == m.facts.method("Base", "hook"));
    CHECK(hook[1] == m.facts.method("Sub", "hook"));
    CHECK(defs_called(m.facts, m.call_assigned("c")) ==
          std::vector<const FunctionFacts*>{m.facts.module_function("module_helper")});
    CHECK(defs_called(m.facts, m.call_assigned("d")).empty());  // another receiver: not known to be one of ours
    // A base that inherits from nothing else has no such method of its own: its subclass's def is the one that runs.
    CHECK(defs_called(m.facts, m.call_assigned("a", "SeenBase")) ==
          std::vector<const FunctionFacts*>{m.facts.method("Leaf", "only_below")});
    // One with a base from elsewhere may inherit one the module does not show.
    CHECK(defs_called(m.facts, m.call_assigned("a", "UnseenBase")).empty());
    CHECK_FALSE(known_calls(m.facts, *m.facts.method("UnseenLeaf", "only_below")).has_value());
    // And that call may reach any def of the name (a class inheriting from both bases would run Leaf's), so no
    // def of it has every call known.
    CHECK_FALSE(known_calls(m.facts, *m.facts.method("Leaf", "only_below")).has_value());
  }

  TEST_CASE("every call of a def, where the module shows them all") {
    Module m;
    const std::optional<std::vector<TSNode>> hook = known_calls(m.facts, *m.facts.method("Sub", "hook"));
    REQUIRE(hook.has_value());
    CHECK(hook->size() == 1);  // Base.forward()'s self.hook(...) reaches the override
    CHECK_FALSE(known_calls(m.facts, *m.facts.method("Base", "plain")).has_value());  // handed to partial()
    const std::optional<std::vector<TSNode>> none = known_calls(m.facts, *m.facts.module_function("falls_off"));
    REQUIRE(none.has_value());
    CHECK(none->empty());
  }

  TEST_CASE("a def returns values only where control never runs off its end") {
    Module m;
    CHECK(m.returns(m.facts.method("Base", "hook")));
    CHECK(m.returns(m.facts.method("Base", "plain")));       // return in a try-finally
    CHECK(m.returns(m.facts.method("Sub", "hook")));         // every branch returns or raises
    CHECK(m.returns(m.facts.module_function("module_helper")));  // return in a with
    CHECK(m.returns(m.facts.module_function("handled")));    // the handler returns, and the else
    CHECK_FALSE(m.returns(m.facts.module_function("falls_off")));  // an if without an else
    CHECK_FALSE(m.returns(m.facts.module_function("may_skip")));   // a handler that goes on
    CHECK_FALSE(m.returns(m.facts.module_function("generator")));
    CHECK(returned_values(*m.facts.method("Sub", "hook"))->size() == 2);
  }
}
