// What CPython refuses that tree-sitter-python parses without an error node: each form is refused
// with its line and CPython's reason, and the valid forms nearest to each are accepted. The forms
// came from mutating backend sources line by line and comparing kvpatch with `python3 -m py_compile`.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "kvpatch/input_error.h"
#include "kvpatch/python_syntax.h"

using namespace kvpatch;

namespace {
// "line: message" of the refusal, or "" when the snippet is accepted.
std::string refusal(const std::string& code) {
  try {
    parse_source_file(SourceFile("snippet.py", "snippet.py", code));
    return "";
  } catch (const InputError& e) {
    return std::to_string(e.line()) + ": " + e.what() + "; " + e.remedy();
  }
}

// Each snippet is refused, its refusal starting with the expected "line: message".
void check_refused(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& c : cases) {
    CAPTURE(c.first);
    CHECK(refusal(c.first).rfind(c.second, 0) == 0);
  }
}
}  // namespace

TEST_SUITE("python_compile_checks") {
  TEST_CASE("indentation the grammar reads into some block is refused where Python would stop") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        // deeper than the block's other statements (CPython: unexpected indent)
        {"class A:\n    def f(self):\n        x = 1\n            y = 2\n        return x\n",
         "4: Python would not compile this file: indentation matches no block: 12 columns here, 8 for the block's "
         "other statements; the file is not edited"},
        // back to a level no enclosing block has (CPython: unindent does not match any outer level)
        {"class A:\n    def f(self):\n        x = 1\n      y = 2\n    def g(self):\n        pass\n",
         "4: Python would not compile this file: indentation matches no block: 6 columns here, 4 for the block's "
         "other statements; the file is not edited"},
        {"x = 1\n    y = 2\n", "2: Python would not compile this file: unexpected indent; the file is not edited"},
        {"def f():\nx = 1\n", "1: Python would not compile this file: expected an indented block after this line; the "
                              "file is not edited"},
        {"if a:\n    pass\nelse:\nx = 1\n", "3: Python would not compile this file: expected an indented block after "
                                          "this line; the file is not edited"},
        {"def f():\n    if a:\n        pass\n      else:\n        pass\n",
         "4: Python would not compile this file: this clause is not indented as its statement is; the file is not "
         "edited"},
        {"if a: x = 1\n    y = 2\n", "2: Python would not compile this file: unexpected indent; the file is not edited"},
        {"def f():\n\tx = 1\n        y = 2\n",
         "3: Python would not compile this file: inconsistent use of tabs and spaces in indentation; the file is not "
         "edited"},
        // a definition deeper than its decorator, read by the grammar as one definition (mutation seed 102021)
        {"class A:\n    def __init__(self):\n        pass\n@dataclass\n\n    def update(self):\n        pass\n",
         "6: Python would not compile this file: unexpected indent: not indented as the decorator above it"},
        {"class A:\n    @dec\n    @d2\n        def f(self):\n            pass\n",
         "4: Python would not compile this file: unexpected indent: not indented as the decorator above it"},
        {"@dec\n  @d2\ndef f():\n    pass\n",
         "2: Python would not compile this file: unexpected indent: not indented as the decorator above it"},
        {"class A:\n    @dec\n\tdef f(self):\n        pass\n",
         "3: Python would not compile this file: inconsistent use of tabs and spaces in indentation"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.first);
      CHECK(refusal(c.first).rfind(c.second, 0) == 0);
      CHECK(refusal(c.first).find("python3 -m py_compile names the problem") != std::string::npos);
    }
  }

  TEST_CASE("argument and parameter lists the compiler rejects are refused") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"w.plan(a, kv_data_type=x, kv_data_type=y)\n", "1: Python would not compile this file: keyword argument "
                                                       "repeated: kv_data_type"},
        {"w.plan(a, q_data_type=x,\n       b)\n", "2: Python would not compile this file: positional argument follows "
                                                 "keyword argument"},
        {"f(**a, b)\n", "1: Python would not compile this file: positional argument follows keyword argument unpacking"},
        {"f(**a, *b)\n", "1: Python would not compile this file: iterable argument unpacking follows keyword argument "
                         "unpacking"},
        {"def f(a=1, b):\n    pass\n", "1: Python would not compile this file: parameter without a default follows "
                                       "parameter with a default"},
        {"def f(self, a, self):\n    pass\n", "1: Python would not compile this file: duplicate argument 'self' in "
                                            "function definition"},
        {"def f(**kw, a):\n    pass\n", "1: Python would not compile this file: arguments cannot follow var-keyword "
                                       "argument"},
        {"def f(a,\n      False,\n      b):\n    pass\n", "2: Python would not compile this file: invalid syntax: "
                                                        "'False' is a keyword"},
        {"def f(a, (b, c)):\n    pass\n", "1: Python would not compile this file: invalid syntax: a parameter must be "
                                         "a name"},
        {"def f(self, max_bs: in, b: int):\n    pass\n", "1: Python would not compile this file: invalid syntax: 'in' "
                                                        "is a keyword"},
        {"if a:\n    x = 1\nele:\n    y(1)\n", "4: Python would not compile this file: invalid syntax: a line break "
                                              "outside brackets ends the statement before this"},
    };
    check_refused(cases);
  }

  TEST_CASE("return, yield, break and continue outside the function or loop that allows them, and a late __future__ import, are refused") {
    // A line moved out of its method or loop (a mutation kvpatch once patched and wrote back uncompilable).
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"class A:\n    def f(self):\n        x = 1\n    return x\n",
         "4: Python would not compile this file: 'return' outside function"},
        {"return 1\n", "1: Python would not compile this file: 'return' outside function"},
        {"def f():\n    class B:\n        return 1\n", "3: Python would not compile this file: 'return' outside function"},
        {"class A:\n    x = yield 1\n", "2: Python would not compile this file: 'yield' outside function"},
        {"def f(x=(yield)):\n    pass\n", "1: Python would not compile this file: 'yield' outside function"},
        {"def f():\n    break\n", "2: Python would not compile this file: 'break' outside loop"},
        {"for i in a:\n    pass\nelse:\n    break\n", "4: Python would not compile this file: 'break' outside loop"},
        {"while a:\n    def g():\n        continue\n",
         "3: Python would not compile this file: 'continue' not properly in loop"},
        // An import moved above the module's first line.
        {"import torch\nfrom __future__ import annotations\n",
         "2: Python would not compile this file: from __future__ imports must occur at the beginning of the file"},
        {"'''Doc.'''\n'''Not a docstring.'''\nfrom __future__ import annotations\n",
         "3: Python would not compile this file: from __future__ imports must occur at the beginning of the file"},
        {"if torch.version.cuda:\n    from __future__ import annotations\n",
         "2: Python would not compile this file: from __future__ imports must occur at the beginning of the file"},
        {"def f():\n    from __future__ import annotations\n",
         "2: Python would not compile this file: from __future__ imports must occur at the beginning of the file"},
        {"from __future__ import division, annotatins\n",
         "1: Python would not compile this file: future feature annotatins is not defined"},
    };
    check_refused(cases);
  }

  // Each group below came from CPython 3.11's own syntax tests (test_syntax.py), run through kvpatch:
  // the snippets compile() refuses that the grammar parses cleanly.
  TEST_CASE("targets the compiler cannot bind or delete are refused") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"del x, f()\n", "1: Python would not compile this file: cannot delete function call"},
        {"del [a, (b, c.d + 2)]\n", "1: Python would not compile this file: cannot delete expression"},
        {"del (a := 5)\n", "1: Python would not compile this file: cannot delete named expression"},
        {"del 1\n", "1: Python would not compile this file: cannot delete literal"},
        {"del None\n", "1: Python would not compile this file: cannot delete None"},
        {"del [*x,]\n", "1: Python would not compile this file: cannot delete starred"},
        {"with a as (b, c()):\n    pass\n", "1: Python would not compile this file: cannot assign to function call"},
        {"with a as (*b, d + 1):\n    pass\n", "1: Python would not compile this file: cannot assign to expression"},
        {"a, b += 1, 2\n", "1: Python would not compile this file: 'tuple' is an illegal expression for augmented "
                           "assignment"},
        {"[a, b] += 1\n", "1: Python would not compile this file: 'list' is an illegal expression for augmented "
                          "assignment"},
        {"(): int\n", "1: Python would not compile this file: only single target (not tuple) can be annotated"},
        {"obj.__debug__ = 1\n", "1: Python would not compile this file: cannot assign to __debug__"},
        {"(a, *__debug__) = x\n", "1: Python would not compile this file: cannot assign to __debug__"},
        {"f(__debug__=1)\n", "1: Python would not compile this file: cannot assign to __debug__"},
        {"def f(*, __debug__):\n    pass\n", "1: Python would not compile this file: cannot assign to __debug__"},
        {"def __debug__():\n    pass\n", "1: Python would not compile this file: cannot assign to __debug__"},
        {"def f[T: (x := 3)]():\n    pass\n",
         "1: Python would not compile this file: named expression cannot be used within a TypeVar bound"},
        {"class A[T: ((x := 3), int)]:\n    pass\n",
         "1: Python would not compile this file: named expression cannot be used within a TypeVar constraint"},
        {"type A = (x := 3)\n", "1: Python would not compile this file: named expression cannot be used within a type alias"},
        {"class A[T](B[(x := 1)]):\n    pass\n",
         "1: Python would not compile this file: named expression cannot be used within the definition of a generic"},
    };
    check_refused(cases);
  }

  TEST_CASE("Python 2 forms, stray commas, misplaced stars and non-ASCII bytes are refused") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"raise X, Y\n", "1: Python would not compile this file: invalid syntax: raise takes one exception"},
        {"try:\n    pass\nexcept A, B as e:\n    pass\n",
         "3: Python would not compile this file: multiple exception types must be parenthesized when using 'as'"},
        {"try:\n    pass\nexcept A:\n    pass\nexcept* B:\n    pass\n",
         "1: Python would not compile this file: cannot have both 'except' and 'except*' on the same 'try'"},
        {"f(x for x in a, 1)\n", "1: Python would not compile this file: Generator expression must be parenthesized"},
        {"y = [x for x in a, b]\n", "1: Python would not compile this file: invalid syntax: the iterable after 'in' "
                                    "must be parenthesized"},
        {"from torch import a,\n", "1: Python would not compile this file: trailing comma not allowed without "
                                   "surrounding parentheses"},
        {"f(,)\n", "1: Python would not compile this file: invalid syntax: a lone comma"},
        {"from m import (\n    a,\n    self.data_type,\n)\n",
         "3: Python would not compile this file: invalid syntax: a name imported with 'from' cannot be dotted"},
        {"from m import b.c as d\n", "1: Python would not compile this file: invalid syntax: a name imported with "
                                      "'from' cannot be dotted"},
        {"from .m import (x, y.z as w)\n", "1: Python would not compile this file: invalid syntax: a name "
                                            "imported with 'from' cannot be dotted"},
        {"x = b\"\xc3\xa9\"\n", "1: Python would not compile this file: bytes can only contain ASCII literal characters"},
        {"x = b\"a\" \"b\"\n", "1: Python would not compile this file: cannot mix bytes and nonbytes literals"},
        {"A[:*b]\n", "1: Python would not compile this file: invalid syntax: a starred expression in a slice"},
        {"print((*b))\n", "1: Python would not compile this file: cannot use starred expression here"},
        {"x: *b = 1\n", "1: Python would not compile this file: invalid syntax: a starred annotation is allowed only "
                        "on *args"},
        {"x = A.b\\\n", "1: Python would not compile this file: unexpected EOF while parsing"},
        {"def f(a, /, b, /):\n    pass\n", "1: Python would not compile this file: / may appear only once"},
        {"def f(a, *b, c, /):\n    pass\n", "1: Python would not compile this file: / must be ahead of *"},
        {"g = lambda /, a: a\n", "1: Python would not compile this file: at least one argument must precede /"},
        {"def f(*a, *b):\n    pass\n", "1: Python would not compile this file: * argument may appear only once"},
        {"def f(a, *):\n    pass\n", "1: Python would not compile this file: named arguments must follow bare *"},
        {"def f(*, **k):\n    pass\n", "1: Python would not compile this file: named arguments must follow bare *"},
        // from the other test modules of CPython's suite
        {"print x, y\n", "1: Python would not compile this file: Missing parentheses in call to 'print'"},
        {"exec 'code'\n", "1: Python would not compile this file: Missing parentheses in call to 'exec'"},
        {"x = 0777\n", "1: Python would not compile this file: leading zeros in decimal integer literals are not "
                       "permitted"},
        {"x = 10L\n", "1: Python would not compile this file: invalid decimal literal"},
        {"*a\n", "1: Python would not compile this file: can't use starred expression here"},
        {"y = [*x for x in z]\n", "1: Python would not compile this file: iterable unpacking cannot be used in "
                                  "comprehension"},
        {"try:\n    pass\nexcept:\n    pass\nexcept ValueError:\n    pass\n",
         "3: Python would not compile this file: default 'except:' must be last"},
        {"WARNING:root:warn\n", "1: Python would not compile this file: invalid syntax: an annotation with two colons"},
        {"x: int = y = 1\n", "1: Python would not compile this file: invalid syntax: an annotated assignment takes one "
                             "target"},
        {"try:\n    pass\nexcept E as a.b:\n    pass\n",
         "3: Python would not compile this file: invalid syntax: an exception can be bound to a name only"},
        {"x = 2 <> 3\n", "1: Python would not compile this file: invalid syntax: '<>' is Python 2's '!='"},
        {"match x:\n    case {**rest, 'k': v}:\n        pass\n",
         "2: Python would not compile this file: invalid syntax: **rest must end a mapping pattern"},
        {"match x:\n    case {**_}:\n        pass\n",
         "2: Python would not compile this file: invalid syntax: a mapping pattern cannot capture **_"},
        {"match x:\n    case Foo(z=1, y):\n        pass\n",
         "2: Python would not compile this file: positional patterns follow keyword patterns"},
        {"match x:\n    case 42 as _:\n        pass\n", "2: Python would not compile this file: cannot use '_' as a target"},
        // tokens: numbers, escapes, control characters
        {"x = 1_000_\n", "1: Python would not compile this file: invalid decimal literal: '_' must stand between digits"},
        {"x = 1.5_\n", "1: Python would not compile this file: invalid decimal literal: '_' must stand between digits"},
        {"x = '\\U0001F60'\n", "1: Python would not compile this file: (unicode error) truncated \\UXXXXXXXX escape"},
        {"x = '\\xA'\n", "1: Python would not compile this file: (unicode error) truncated \\xXX escape"},
        {"x = b'\\x4'\n", "1: Python would not compile this file: (unicode error) truncated \\xXX escape"},
        {"x = '\\UFFFFFFFF'\n", "1: Python would not compile this file: (unicode error) illegal Unicode character"},
        {"x = '\\N'\n", "1: Python would not compile this file: (unicode error) malformed \\N character escape"},
        {"x = [\v1]\n", "1: Python would not compile this file: invalid non-printable character U+000B"},
        {"x = *a * b\n", "1: Python would not compile this file: can't use starred expression here"},
        {"x = f'{*a}'\n", "1: Python would not compile this file: f-string: cannot use starred expression here"},
        // a starred expression the grammar reads as `.name`, `[i]` or `(...)` applied to `*a` (mutation seed 210693)
        {"max_bs = (\n    * self.topk\n)\n", "1: Python would not compile this file: cannot use starred expression here"},
        {"x = 1\ny = (*a[0])\n", "2: Python would not compile this file: cannot use starred expression here"},
        {"x = *a.b\n", "1: Python would not compile this file: can't use starred expression here"},
        {"x = [*a.b for a in c]\n", "1: Python would not compile this file: iterable unpacking cannot be used in "
                                    "comprehension"},
        {"x = f'{*a.b}'\n", "1: Python would not compile this file: f-string: cannot use starred expression here"},
        {"x = a[*b.c:]\n", "1: Python would not compile this file: invalid syntax: a starred expression in a slice"},
        {"x = {1: *a.b}\n", "1: Python would not compile this file: cannot use a starred expression in a dictionary "
                            "value"},
        {"def f():\n    return (*a)\n", "2: Python would not compile this file: cannot use starred expression here"},
        {"x = a if *b else c\n", "1: Python would not compile this file: can't use starred expression here"},
        {"assert *a\n", "1: Python would not compile this file: can't use starred expression here"},
        {"x = (**a)\n", "1: Python would not compile this file: cannot use double starred expression here"},
        {"(*z) = [1]\n", "1: Python would not compile this file: cannot use starred expression here"},
        {"(*z.w) = [1]\n", "1: Python would not compile this file: cannot use starred expression here"},
        {"with (*a, b as c):\n    pass\n", "1: Python would not compile this file: can't use starred expression here"},
        {"match *a:\n    case _:\n        pass\n", "1: Python would not compile this file: can't use starred "
                                                     "expression here"},
        {"def f(x: *tuple[int, str]):\n    pass\n", "1: Python would not compile this file: invalid syntax: a starred "
                                                      "annotation is allowed only on *args"},
        {"p = C(target=f as z)\n", "1: Python would not compile this file: invalid syntax: 'as' binds a name only "
                                   "after with, except or case"},
        {"f(lambda: a.b as c.d)\n", "1: Python would not compile this file: invalid syntax: 'as' binds a name only "
                                    "after with, except or case"},
        {"y = [a as b]\n", "1: Python would not compile this file: invalid syntax: 'as' binds a name only after with, "
                           "except or case"},
        {"*delim = 'x'\n", "1: Python would not compile this file: starred assignment target must be in a list or tuple"},
        {"for *a in b:\n    pass\n", "1: Python would not compile this file: starred assignment target must be in a "
                                      "list or tuple"},
        {"import unittest,\n", "1: Python would not compile this file: invalid syntax: a trailing comma after an import"},
        {"def function_5[0](dummy):\n    pass\n", "1: Python would not compile this file: invalid syntax: a type "
                                                  "parameter must be a name"},
        {"class C[a.b]:\n    pass\n", "1: Python would not compile this file: invalid syntax: a type parameter must be "
                                     "a name"},
        {"type Y[0] = int\n", "1: Python would not compile this file: invalid syntax: a type parameter must be a name"},
        {"def f():\n    cfile := g(file)\n", "2: Python would not compile this file: invalid syntax: an assignment "
                                             "expression must be parenthesized here"},
        {"def f():\n    return x := 1\n", "2: Python would not compile this file: invalid syntax: an assignment "
                                          "expression must be parenthesized here"},
        {"f(a=x := 1)\n", "1: Python would not compile this file: invalid syntax: an assignment expression must be "
                          "parenthesized here"},
        // The grammar reads `x := a if c else b` as a conditional whose first operand is `x := a`; where it stands
        // is the conditional's place.
        {"y = x := 1 if c else 2\n", "1: Python would not compile this file: invalid syntax: an assignment expression "
                                     "must be parenthesized here"},
        {"def f():\n    x := 1 if c else 2 if d else 3\n", "2: Python would not compile this file: invalid syntax: an "
                                                           "assignment expression must be parenthesized here"},
        {"x -= skip_blambda: ack\n", "1: Python would not compile this file: invalid syntax: an augmented assignment "
                                     "takes one target"},
        {"x = y += 1\n", "1: Python would not compile this file: invalid syntax: an augmented assignment takes one "
                         "target"},
        // Python compiles these; the grammar reads `a,` and the next line as one statement (not Python's fault)
        {"*a, # c\nx = 1\n", "1: the tree-sitter-python 0.23.6 grammar misreads this file: it reads this line, which "
                              "ends in a comma, and the next as one statement where Python reads two"},
        {"a,\nx = 1\n", "1: the tree-sitter-python 0.23.6 grammar misreads this file"},
        {"def g():\n    x = [1, yield]\n", "2: Python would not compile this file: invalid syntax: a yield expression "
                                           "must be parenthesized here"},
        {"def g():\n    x = {yield}\n", "2: Python would not compile this file: invalid syntax: a yield expression "
                                        "must be parenthesized here"},
        {"async def g():\n    yield 1\n    return 2\n", "3: Python would not compile this file: 'return' with value "
                                                         "in async generator"},
        // PEP 572 in comprehensions
        {"y = [x := 1 for x in z]\n", "1: Python would not compile this file: assignment expression cannot rebind "
                                      "comprehension iteration variable 'x'"},
        {"y = [(j := 0) for i in a for j in b]\n", "1: Python would not compile this file: assignment expression "
                                                   "cannot rebind comprehension iteration variable 'j'"},
        {"y = {i for i in a if (j := 0) for j in b}\n", "1: Python would not compile this file: comprehension inner "
                                                         "loop cannot rebind assignment expression target 'j'"},
        {"y = [x for x in (d := data)]\n", "1: Python would not compile this file: assignment expression cannot be "
                                           "used in a comprehension iterable expression"},
    };
    check_refused(cases);
  }

  TEST_CASE("global and nonlocal declarations the symbol table rejects are refused") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"def f():\n    print(x)\n    global x\n",
         "3: Python would not compile this file: name 'x' is used prior to global declaration"},
        {"class A:\n    x = 1\n    global x\n",
         "3: Python would not compile this file: name 'x' is assigned to before global declaration"},
        {"def f(x):\n    global x\n", "2: Python would not compile this file: name 'x' is parameter and global"},
        {"def f():\n    x = 1\n    def g(x):\n        nonlocal x\n",
         "4: Python would not compile this file: name 'x' is parameter and nonlocal"},
        {"def f():\n    global x\n    x: int\n", "3: Python would not compile this file: annotated name 'x' can't be global"},
        {"x: int\nglobal x\n", "2: Python would not compile this file: annotated name 'x' can't be global"},
        {"def f():\n    x = 1\n    def g():\n        global x\n        nonlocal x\n",
         "5: Python would not compile this file: name 'x' is nonlocal and global"},
        {"nonlocal x\n", "1: Python would not compile this file: nonlocal declaration not allowed at module level"},
        {"def f():\n    global x\n    x = 1\n    global x\n",
         "4: Python would not compile this file: name 'x' is assigned to before global declaration"},
        {"def f():\n    nonlocal x\n", "2: Python would not compile this file: no binding for nonlocal 'x' found"},
        {"class A:\n    def f(self):\n        nonlocal __x\n",
         "3: Python would not compile this file: no binding for nonlocal '__x' found"},
        {"def f():\n    def g():\n        nonlocal y\n        y = 1\n",
         "3: Python would not compile this file: no binding for nonlocal 'y' found"},
    };
    check_refused(cases);
  }

  TEST_CASE("await, async for and yield outside the function kinds that allow them are refused") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"def f():\n    await g()\n", "2: Python would not compile this file: 'await' outside async function"},
        {"x = await g()\n", "1: Python would not compile this file: 'await' outside function"},
        {"async def f():\n    h = lambda: await g()\n",
         "2: Python would not compile this file: 'await' outside async function"},
        {"def f():\n    async for x in y:\n        pass\n",
         "2: Python would not compile this file: 'async for' outside async function"},
        {"def f():\n    async with y:\n        pass\n",
         "2: Python would not compile this file: 'async with' outside async function"},
        {"def f():\n    return [(yield x) for x in y]\n",
         "2: Python would not compile this file: 'yield' inside list comprehension"},
        {"def f():\n    from os import *\n", "2: Python would not compile this file: import * only allowed at module "
                                                 "level"},
        {"async def f():\n    yield from g()\n", "2: Python would not compile this file: 'yield from' inside async function"},
    };
    check_refused(cases);
  }

  TEST_CASE("the valid forms next to each refused one are accepted") {
    const std::vector<std::string> valid = {
        "if a: x = 1; y = 2\nz = 3\n",
        "from .a.b import (c, d as e)\nimport a.b.c as d\nimport a.b, c\nfrom . import x\n",
        "def f(a, /, b=1, *args, c, d=2, **kw):\n    return f(a, *args, b=1, *kw, **kw)\n",
        "def f(a, *, b=1, c):\n    pass\n",
        "def f(a: int = 1, *args: int, b: str, **kw: int) -> None:\n    pass\n",
        "f(a, *b, c=1, *d, **e, f=2)\n",
        "g = lambda x, y=1, *a, **k: x\n",
        "def print_exception(exc, /, value=None, tb=None, \\\n                    file=None):\n    pass\n",
        "x = f(a, b, \\\n      c=1)\n",
        "y = 1 + \\\n    2\n",
        "z = (1 +\n     2)\n",
        "s = '''\nmany\n  lines\n'''\n",
        "t = f'{a}\\n{b}'\n",
        "class A:\n    '''Doc\n    string.'''\n\n    # a comment at any indentation\n  # even here\n    x = 1\n",
        "@decorator(\n    arg)\n@other\ndef f():\n    pass\n",
        "class A:\n    @dec  # c\n\n    # a comment\n    @d2\n    def f(self):\n        pass\n",
        "def f():\n\tif a:\n\t\treturn 1\n\telse:\n\t\treturn 2\n",
        "try:\n    pass\nexcept (A,\n        B) as e:\n    pass\nelse:\n    pass\nfinally:\n    pass\n",
        "with (open(a) as f,\n      open(b) as g):\n    pass\n",
        "match x:\n    case [a, b]:\n        pass\n    case _:\n        pass\n",
        "for i in range(3):\n    pass\nelse:\n    pass\n",
        "while (a and\n       b):\n    break\n",
        "print >> sys.stderr, 'message'\n",
        "x: int = 1\nmatch = 2\ntype = 3\n",
        "if a:\n    pass\nelif b:\n    pass\n",
        "class A:\n    def f(self):\n        return 1\n",
        "def f():\n    g = lambda: (yield)\n    yield 1\n    return\n",
        "h = lambda: (yield)\n",
        "async def f():\n    for i in a:\n        if i:\n            continue\n        return i\n",
        "for i in a:\n    while b:\n        break\n    else:\n        continue\n",
        "while a:\n    try:\n        break\n    finally:\n        pass\n",
        "def f():\n    for i in a:\n        pass\n    else:\n        return\n",
        "# a comment\n'''Doc.'''\n\nfrom __future__ import annotations\nfrom __future__ import division\nimport torch\n",
        "from __future__ import (generator_stop as g,\n    print_function)\n",
        // next to the target, form, declaration and async checks
        "del a, (b), [c.d, e[0]], (f, g)\ndel ()\n",
        "with a as (b, c.d, e[0], *f):\n    pass\n",
        "(a) += 1\n(a): int = 1\nx.y: int\n",
        "x = obj.__debug__\nprint(__debug__)\n",
        "raise (X, Y)\nraise X from Y\n",
        "try:\n    pass\nexcept (A, B) as e:\n    pass\n",
        "try:\n    pass\nexcept* A:\n    pass\n",
        "try:\n    pass\nexcept *B:\n    pass\n",
        "f(x for x in a)\nf((x for x in a), 1)\ny = [x for x in (a, b)]\nz = [a for a, in w]\n",
        "from torch import (a,\n    b,)\nfrom . import c\n",
        "x = b'\\xff' rb'abc' B'x'\ny = 'caf\xc3\xa9' f'{a}' 'b'\n",
        "x[*a]\ny = a[1:2, *b]\nprint(*a, (*b,))\n",
        "x = [*a.b, *c.d()]\ny = {*a.b(c)[0].d}\nz = *a.b, 1\nw = (*a.b, 1)\nf(*a.b[0])\nv = a[*b.c]\n",
        "for y in *a.b, c:\n    pass\n[*z.w] = [1]\n*z.w, = [1]\n(*z,) = [1]\n",
        "with (*a, b):\n    pass\nwith (a, *b):\n    pass\nwith (*a,):\n    pass\nwith (*a, b) as c:\n    pass\n",
        "match *a, b:\n    case _:\n        pass\nmatch *a,:\n    case _:\n        pass\n",
        "try:\n    pass\nexcept *a.B as e:\n    pass\nexcept* C:\n    pass\n",
        "def f(*args: *tuple[int, str]):\n    pass\n",
        "*a,\n*a, b\n",
        "global x\nx: int = 1\n",
        "if x := 1:\n    pass\nelif y := 2:\n    pass\nwhile z := 3:\n    pass\nf(a := 1, b := 2)\n",
        "v = [w := 1, 2]\nu = a[i := 0]\nt = (s := 1, 2)\nr = [q := y for y in z]\n",
        "match m := 1:\n    case [a] if b := 1:\n        pass\n",
        "(x := 1 if c else 2)\nf(y := a if b else c)\nif z := a if b else c:\n    pass\nw = [u := a if v else b for v in z]\n",
        "def f[T: int, *Ts, **P](a):\n    pass\nclass D[T: (int, str)]:\n    pass\ntype Z[T] = dict[T, 0]\nx: list[0]\n",
        "for *a, b in c:\n    pass\n[*a] = b\n(*a, b) = c\na, (*b, c) = d\nf = lambda *a: a\nimport a, b\n",
        "def g():\n    x = yield\n    y += yield 1\n    z = [(yield)]\n    w = f'{yield}'\n    return (yield)\n",
        "async def g():\n    yield 1\n    return\n\nasync def h():\n    def k():\n        yield 1\n    return 2\n",
        "with (open(a) as f):\n    pass\nwith a as b, c as d:\n    pass\n",
        "match x:\n    case [a as b, (c as d)]:\n        pass\n    case {'k': e as f}:\n        pass\n",
        "def f(*args: *Ts):\n    pass\nx: tuple[*Ts]\n",
        "# a comment ending in a backslash \\\nx = 1\n",
        "def f(a, /):\n    pass\ng = lambda a, /, *, b: a\n",
        "def f():\n    global x\n    x = 1\n",
        "def f():\n    import x\n    a.x = 1\n    g(x=1)\n    [x for x in y]\n    global x\n",
        "def f():\n    x = 1\n    def g():\n        nonlocal x\n        x = 2\n",
        "def f(a):\n    class C:\n        nonlocal a\n",
        "class A:\n    def f(self):\n        nonlocal __class__\n",
        "async def f():\n    await g()\n    async for x in y:\n        pass\n    return [await x for x in y]\n",
        "def f():\n    return (i for i in range(3) if await g(i))\n",
        "def f():\n    return [x for x in (yield)]\n",
        "async def f():\n    yield 1\n",
        "print >> sys.stderr, 'm'\nprint -1\nprint (a), b\nexec('code')\n",
        "x = 0\ny = 00\nz = 0_0\nw = 0o777 + 0x1F + 0b1 + 010.5 + 01j + 0e1\n",
        "from os import *\ntry:\n    pass\nexcept ValueError:\n    pass\nexcept:\n    pass\n",
        "y = [*x, *z]\n*a, b = c\n",
        // Python 3.12's type parameters and f-strings, 3.14's unparenthesized exception types: not refused,
        // though CPython 3.11 would refuse them. A lambda is a scope of its own, where := may bind.
        "def f[T: int](x: T) -> T:\n    return x\n",
        "type A = lambda: (x := 1)\nclass B[T: (lambda: (y := 1))](C): pass\nclass D(E[(z := 1)]): pass\n",
        "x = f\"{a[\"k\"]}\" + f\"{'\\n'.join(b)}\" + f\"{f\"{c}\"}\"\n",
        "try:\n    pass\nexcept A, B:\n    pass\n",
        "x = y = 1\nz: int = 1\nw: int\n",
        "x = 1_000 + 0x_1f + 0b_1 + 1_0.5_0 + 1e1_0 + 1_0j\n",
        "x = r'\\U' + rb'\\x' + b'\\u12' + '\\d' + '\\N{DASH}' + '\\U0001F600' + '\\x41' + f'{a}\\x41'\n",
        "x = '\v'  # a vertical tab \v in a comment\n\fy = 1\n",
        "y = [*a, *b]\nprint(*a)\nz = f'{a!r:>{w}}'\n",
        "def f():\n    return [y := g(x) for x in data]\nz = [i for i in a if (n := i)]\n",
        "match x:\n    case {'a': 1, **rest}:\n        pass\n    case Foo(x, y=2) as z:\n        pass\n",
    };
    for (const std::string& code : valid) {
      CAPTURE(code);
      CHECK(refusal(code) == "");
    }
  }
}
