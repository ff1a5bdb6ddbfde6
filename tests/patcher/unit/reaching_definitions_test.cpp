// Which assignments of a local can reach a read: each function below reads `x` once, as `seen(x)`, and the
// tests name the lines of the assignments that can give it its value (nothing: the walk cannot tell).
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"
#include "kvpatch/reaching_definitions.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
constexpr const char* kModule = R"PY(import torch


def straight(a, b):
    x = a
    x = b
    seen(x)


def inside_branch(c, a, b):
    if c:
        x = a
        seen(x)
    else:
        x = b


def after_branches(c, a, b):
    if c:
        x = a
    else:
        x = b
    seen(x)


def override(c, a, b):
    x = a
    if c:
        log(c)
        x = b
    seen(x)


def elif_chain(c, d, a, b, e):
    if c:
        x = a
    elif d:
        x = b
    else:
        x = e
    seen(x)


def nested(c, d, a, b, e):
    x = a
    if c:
        if d:
            x = b
        else:
            x = e
    seen(x)


def inside_with(ctx, a, b):
    x = a
    with ctx:
        x = b
    seen(x)


def loop_without(a, b, items):
    x = a
    x = b
    for i in items:
        seen(x)


def loop_assigns(a, b, items):
    x = a
    for i in items:
        seen(x)
        x = b


def try_body(a, b):
    x = a
    try:
        x = b
        seen(x)
    except ValueError:
        pass


def handler(a, b):
    x = a
    try:
        x = b
    except ValueError:
        seen(x)


def closure(a, b):
    x = a
    x = b

    def inner():
        seen(x)

    return inner


def in_lambda(a, b):
    x = a
    x = b
    return lambda: seen(x)


def deleted(a, b):
    x = a
    x = b
    del x
    seen(x)


def imported(a, b):
    x = a
    x = b
    from torch import x
    seen(x)


def declared(a, b):
    x = a
    x = b

    def inner():
        nonlocal x
        x = torch.float16

    inner()
    seen(x)


def walrus(a, b):
    x = a
    if (x := b):
        pass
    seen(x)


def read_first(a, b):
    seen(x)
    x = a
    x = b


def reassigned_from_itself(a, b):
    x = a
    x = b
    x = seen(x)


def at_end(c, a, b):
    x = a
    if c:
        x = b


def returns_early(c, a, b):
    x = a
    if c:
        return
    x = b


def swapped(a, b):
    x, y = a, b
    x, y = y, x
    seen(x)


def swap_read(a, b):
    x, y = a, b
    y, x = seen(x), y


def walrus_in_value(a, b):
    x = a
    x = (x := b) + seen(x)


def unpacked_from_calls(f, g):
    x, y = f()
    x, y = g()
    seen(x)

def closure_called(a, b):
    x = a

    def inner():
        seen(x)

    inner()
    x = b


def closure_called_after(a, b):
    x = a

    def inner():
        seen(x)

    x = b
    inner()


def closure_called_twice(a, b):
    x = a

    def inner():
        seen(x)

    inner()
    x = b
    inner()


def closure_in_lambda(a, b):
    x = a

    def inner():
        return lambda: seen(x)

    later = inner()
    x = b
    later()


def closure_deeper_returned(a, b):
    x = a

    def middle():
        def deeper():
            seen(x)

        return deeper

    later = middle()
    x = b
    later()


def closure_deeper_called(a, b):
    x = a

    def middle():
        def deeper():
            seen(x)

        deeper()

    middle()
    x = b
)PY";

struct Module {
  std::shared_ptr<const ParsedFile> file = test::parse(kModule);
  ModuleFacts facts{*file};

  // The lines (1-based) of the assignments that reach `seen(x)` in the named function; nullopt when the walk
  // cannot tell.
  std::optional<std::vector<int>> reaching(const std::string& function) const {
    const FunctionFacts* f = facts.module_function(function);
    REQUIRE(f != nullptr);
    TSNode read{};
    syntax::walk(f->node, [&](TSNode n) {
      if (syntax::is(n, "call") && file->text(syntax::field(n, "function")) == "seen") {
        read = syntax::named_child(syntax::field(n, "arguments"), 0);
      }
      return true;
    });
    REQUIRE(!syntax::is_null(read));
    const auto found = reaching_assignments(facts, facts.local_assignments(*f, "x"), "x", read);
    if (!found) return std::nullopt;
    std::vector<int> lines;
    for (const Assignment* a : *found) lines.push_back(static_cast<int>(ts_node_start_point(a->statement).row) + 1);
    return lines;
  }
};

using Lines = std::vector<int>;

// The lines of the assignments of `x` that reach the end of the named function; nullopt when the walk cannot tell.
std::optional<Lines> at_end(const Module& m, const std::string& function) {
  const FunctionFacts* f = m.facts.module_function(function);
  REQUIRE(f != nullptr);
  const auto found = reaching_end(m.facts, m.facts.local_assignments(*f, "x"), "x");
  if (!found) return std::nullopt;
  Lines lines;
  for (const Assignment* a : *found) lines.push_back(static_cast<int>(ts_node_start_point(a->statement).row) + 1);
  return lines;
}
}  // namespace

TEST_SUITE("reaching_definitions") {
  TEST_CASE("a later assignment in the same block replaces an earlier one") {
    CHECK(Module().reaching("straight") == Lines{6});
  }

  TEST_CASE("a read inside one branch sees that branch's assignment only") {
    CHECK(Module().reaching("inside_branch") == Lines{12});
  }

  TEST_CASE("after an if statement every branch's assignment reaches, with the one before when a path skips them") {
    const Module m;
    CHECK(m.reaching("after_branches") == Lines{20, 22});
    CHECK(m.reaching("override") == Lines{27, 30});
    CHECK(m.reaching("elif_chain") == Lines{36, 38, 40});
    CHECK(m.reaching("nested") == Lines{45, 48, 50});  // a path that skips the outer if keeps x = a
  }

  TEST_CASE("a with statement's body runs once, in order") {
    CHECK(Module().reaching("inside_with") == Lines{57});
  }

  TEST_CASE("loops: only when the loop assigns nothing is what ran before it all that reaches") {
    const Module m;
    CHECK(m.reaching("loop_without") == Lines{63});
    CHECK(m.reaching("loop_assigns") == std::nullopt);
  }

  TEST_CASE("try: the body runs in order; a handler can follow any part of it") {
    const Module m;
    CHECK(m.reaching("try_body") == Lines{78});
    CHECK(m.reaching("handler") == std::nullopt);
  }

  TEST_CASE("reads that run later, or names bound some other way, are not followed") {
    const Module m;
    CHECK(m.reaching("closure") == std::nullopt);
    CHECK(m.reaching("in_lambda") == std::nullopt);
    CHECK(m.reaching("deleted") == std::nullopt);
    CHECK(m.reaching("imported") == std::nullopt);
    CHECK(m.reaching("declared") == std::nullopt);
    CHECK(m.reaching("walrus") == std::nullopt);
    CHECK(m.reaching("read_first") == std::nullopt);
  }

  TEST_CASE("a closure's read sees what reaches the calls of it, where its function makes every one") {
    const Module m;
    CHECK(m.reaching("closure_called") == Lines{188});        // called before x = b
    CHECK(m.reaching("closure_called_after") == Lines{203});  // defined before x = b, called after it
    CHECK(m.reaching("closure_called_twice") == Lines{208, 214});
    CHECK(m.reaching("closure") == std::nullopt);  // returned: it may run anywhere
    // The lambda, or the deeper def handed back, may run after x = b: not followed. A deeper def its encloser only
    // calls runs within the encloser's call.
    CHECK(m.reaching("closure_in_lambda") == std::nullopt);
    CHECK(m.reaching("closure_deeper_returned") == std::nullopt);
    CHECK(m.reaching("closure_deeper_called") == Lines{244});
  }

  TEST_CASE("a read in an assignment's value comes before its binding: the statements before it tell") {
    const Module m;
    CHECK(m.reaching("reassigned_from_itself") == Lines{149});  // `x = seen(x)` reads x = b
    CHECK(m.reaching("swap_read") == Lines{173});               // `y, x = seen(x), y` reads x of `x, y = a, b`
    CHECK(m.reaching("walrus_in_value") == std::nullopt);       // a walrus in the value binds x before the read
  }

  TEST_CASE("`a, b = x, y` assigns each name its own element") {
    const Module m;
    CHECK(m.reaching("swapped") == Lines{168});
    const FunctionFacts* f = m.facts.module_function("swapped");
    REQUIRE(f != nullptr);
    const std::vector<const Assignment*> xs = m.facts.local_assignments(*f, "x");
    REQUIRE(xs.size() == 2);
    CHECK(xs[0]->kind == AssignmentKind::Plain);
    CHECK(m.file->text(xs[0]->value) == "a");
    CHECK(m.file->text(xs[1]->value) == "y");
  }

  TEST_CASE("`a, b = f()` binds each name as surely as a plain assignment: the last one before the read reaches") {
    CHECK(Module().reaching("unpacked_from_calls") == Lines{184});
  }

  TEST_CASE("what a function leaves at its end, unless it can return before") {
    const Module m;
    CHECK(at_end(m, "at_end") == Lines{154, 156});
    CHECK(at_end(m, "returns_early") == std::nullopt);
  }
}
