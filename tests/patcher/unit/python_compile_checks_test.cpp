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
    for (const auto& c : cases) {
      CAPTURE(c.first);
      CHECK(refusal(c.first).rfind(c.second, 0) == 0);
    }
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
        {"from __future__ import division, annotatins\n",
         "1: Python would not compile this file: future feature annotatins is not defined"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.first);
      CHECK(refusal(c.first).rfind(c.second, 0) == 0);
    }
  }

  TEST_CASE("the valid forms next to each refused one are accepted") {
    const std::vector<std::string> valid = {
        "if a: x = 1; y = 2\nz = 3\n",
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
    };
    for (const std::string& code : valid) {
      CAPTURE(code);
      CHECK(refusal(code) == "");
    }
  }
}
