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

// Defs nested in a method: followed where the method uses the name only to call it.
const char* kNested = R"PY(
def helper(x):
    return x


class Backend:
    def forward(self, layer):
        def helper(y):
            return y

        def stored(y):
            return y

        def rebound(y):
            return y

        @cache
        def decorated(y):
            return y

        a = helper(layer)
        b = stored(layer)
        self.keep = stored
        rebound = partial(rebound, 1)
        c = decorated(layer)
        return a, b, c

    def other(self, layer):
        d = helper(layer)
        return d
)PY";

struct Nested {
  std::shared_ptr<const ParsedFile> file = test::parse(kNested);
  ModuleFacts facts{*file};

  const FunctionFacts* nested(const std::string& name) const {
    for (const FunctionFacts& f : facts.functions()) {
      if (f.outer >= 0 && f.name == name) return &f;
    }
    FAIL("no nested def " << name);
    return nullptr;
  }
  TSNode call_assigned(const std::string& method, const std::string& name) const {
    for (const Assignment* a : facts.local_assignments(*facts.method("Backend", method), name)) return a->value;
    FAIL("no assignment of " << name);
    return TSNode{};
  }
};
}  // namespace

TEST_SUITE("module_calls") {
  TEST_CASE("a def nested in a method is called by the method's calls of its name, where the name is only called") {
    const Nested m;
    const FunctionFacts* inner = m.nested("helper");
    const FunctionFacts* outer = m.facts.module_function("helper");
    REQUIRE(outer != nullptr);
    // The nested def hides the module's def of the same name inside forward, and only there.
    CHECK(defs_called(m.facts, m.call_assigned("forward", "a")) == std::vector<const FunctionFacts*>{inner});
    CHECK(defs_called(m.facts, m.call_assigned("other", "d")) == std::vector<const FunctionFacts*>{outer});
    const std::optional<std::vector<TSNode>> inner_calls = known_calls(m.facts, *inner);
    REQUIRE(inner_calls.has_value());
    REQUIRE(inner_calls->size() == 1);
    CHECK(syntax::same(inner_calls->front(), m.call_assigned("forward", "a")));
    const std::optional<std::vector<TSNode>> outer_calls = known_calls(m.facts, *outer);
    REQUIRE(outer_calls.has_value());
    REQUIRE(outer_calls->size() == 1);
    CHECK(syntax::same(outer_calls->front(), m.call_assigned("other", "d")));
    // Stored, bound again or decorated: a call may come from where the module does not show, or run something else.
    for (const char* name : {"stored", "rebound", "decorated"}) {
      CAPTURE(name);
      CHECK_FALSE(known_calls(m.facts, *m.nested(name)).has_value());
    }
    CHECK(defs_called(m.facts, m.call_assigned("forward", "b")).empty());
    CHECK(defs_called(m.facts, m.call_assigned("forward", "c")).empty());
  }

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
