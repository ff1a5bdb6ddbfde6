// The per-module indexes that keep queries linear: function_at, assignments_to, calls_named.
#include <doctest/doctest.h>

#include "kvpatch/module_facts.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const char* kModule = R"PY(
def outer(a):
    x = f(a)

    def inner(b):
        y = g(b)
        return y

    x = obj.f(x)
    return inner(x)


class K:
    def m(self):
        self.v = f(1)
        self.v.append(2)

    z = h(3)


w = f(4)
)PY";
}  // namespace

TEST_SUITE("module_index") {
  TEST_CASE("function_at finds the innermost def, or none after a body ends") {
    auto file = test::parse(kModule);
    const ModuleFacts facts(*file);
    CHECK(facts.function_at(test::find_node(*file, "call", "g(b)"))->name == "inner");
    // After the nested def's body ends, the enclosing def holds the call again.
    CHECK(facts.function_at(test::find_node(*file, "call", "obj.f(x)"))->name == "outer");
    CHECK(facts.function_at(test::find_node(*file, "call", "f(1)"))->name == "m");
    CHECK(facts.function_at(test::find_node(*file, "call", "h(3)")) == nullptr);  // class level
    CHECK(facts.function_at(test::find_node(*file, "call", "f(4)")) == nullptr);  // module level
  }

  TEST_CASE("assignments_to lists every assignment to one target, in module order") {
    auto file = test::parse(kModule);
    const ModuleFacts facts(*file);
    const auto xs = facts.assignments_to("x");
    REQUIRE(xs.size() == 2);
    CHECK(file->text(xs[0]->value) == "f(a)");
    CHECK(file->text(xs[1]->value) == "obj.f(x)");
    const auto vs = facts.assignments_to("self.v");
    REQUIRE(vs.size() == 2);
    CHECK(vs[0]->kind == AssignmentKind::Plain);
    CHECK(vs[1]->kind == AssignmentKind::ItemStore);
    CHECK(facts.assignments_to("nothing").empty());
  }

  TEST_CASE("calls_named matches a plain callee and an attribute callee by the last name") {
    auto file = test::parse(kModule);
    const ModuleFacts facts(*file);
    const auto& fs = facts.calls_named("f");
    REQUIRE(fs.size() == 4);
    CHECK(file->text(fs[0]) == "f(a)");
    CHECK(file->text(fs[1]) == "obj.f(x)");
    CHECK(file->text(fs[2]) == "f(1)");
    CHECK(file->text(fs[3]) == "f(4)");
    CHECK(facts.calls_named("append").size() == 1);
    CHECK(facts.calls_named("missing").empty());
  }
}
