// The module-level helper a rule's edits may call: when it is added, where, and laid out like the file.
#include <doctest/doctest.h>

#include "kvpatch/module_helper.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const std::string kHelper =
    "@functools.lru_cache(maxsize=None)\n"
    "def _native():\n"
    "    # cached\n"
    "    return 1\n";

ModuleHelper helper() { return {kHelper, module_helper_name(kHelper), {"functools"}, "r"}; }

// The edits of a file that call the helper once (as an inserted guard would), plus the helper's own edit.
std::optional<std::string> with_helper(const std::string& code, bool called = true) {
  auto file = test::parse(code);
  const ModuleFacts facts(*file);
  EditSet edits;
  const std::size_t end = file->source.text().size();
  edits.add({end, end, called ? "x = _native()\n" : "x = 1\n", "r"});
  const std::optional<Edit> edit = module_helper_edit(helper(), facts, edits);
  if (!edit) return std::nullopt;
  edits.add(*edit);
  const std::string out = edits.apply(file->source.text());
  PythonTree tree(out);
  CHECK_MESSAGE(!first_syntax_error(tree.root()), "edited code does not parse:\n" << out);
  return out;
}
}  // namespace

TEST_SUITE("module_helper") {
  TEST_CASE("the def's name is read; anything but one top-level def is refused") {
    CHECK(module_helper_name(kHelper) == "_native");
    CHECK(module_helper_name("def f(a):\n    return a\n") == "f");
    CHECK(module_helper_name("").empty());
    CHECK(module_helper_name("x = 1\n").empty());
    CHECK(module_helper_name("def f():\n    pass\ndef g():\n    pass\n").empty());
    CHECK(module_helper_name("def f(:\n").empty());
  }

  TEST_CASE("added after the last top-level import, with the import it lacks and two blank lines") {
    const auto out = with_helper("import torch\nfrom a import b\n\n\nclass C:\n    pass\n");
    REQUIRE(out);
    CHECK(*out ==
          "import torch\nfrom a import b\nimport functools\n\n\n@functools.lru_cache(maxsize=None)\ndef _native():\n"
          "    # cached\n    return 1\n\n\nclass C:\n    pass\nx = _native()\n");
  }

  TEST_CASE("an import under if TYPE_CHECKING: or in a def is not the anchor; a bound functools is not imported again") {
    const auto out = with_helper("import functools\nimport torch  # note\n\nif X:\n    import y\n\n\ndef f():\n    import z\n");
    REQUIRE(out);
    CHECK(*out ==
          "import functools\nimport torch  # note\n\n\n@functools.lru_cache(maxsize=None)\ndef _native():\n"
          "    # cached\n    return 1\n\n\nif X:\n    import y\n\n\ndef f():\n    import z\nx = _native()\n");
  }

  TEST_CASE("functools imported only for type checkers is imported again; one imported in try/except is bound") {
    const auto typing_only = with_helper("import typing\n\nif typing.TYPE_CHECKING:\n    import functools\nx = 1\n");
    REQUIRE(typing_only);
    CHECK(typing_only->find("import typing\nimport functools\n\n\n@functools.lru_cache") == 0);
    const auto bare = with_helper("from typing import TYPE_CHECKING\nif (TYPE_CHECKING):\n    import functools\nelse:\n    pass\n");
    REQUIRE(bare);
    CHECK(bare->find("from typing import TYPE_CHECKING\nimport functools\n\n\n@functools.lru_cache") == 0);
    const auto guarded = with_helper("import torch\ntry:\n    import functools\nexcept ImportError:\n    raise\n");
    REQUIRE(guarded);
    CHECK(guarded->find("import functools\nimport functools") == std::string::npos);
    CHECK(guarded->find("import torch\n\n\n@functools.lru_cache") != std::string::npos);
  }

  TEST_CASE("two blank lines before what follows the import, counting those already there") {
    const auto one = with_helper("import torch\n\nif X:\n    pass\n");
    REQUIRE(one);
    CHECK(one->find("    return 1\n\n\nif X:\n") != std::string::npos);
    const auto none = with_helper("import torch\nx = 1\n");
    REQUIRE(none);
    CHECK(none->find("    return 1\n\n\nx = 1\n") != std::string::npos);
    const auto three = with_helper("import torch\n\n\n\nx = 1\n");
    REQUIRE(three);
    CHECK(three->find("    return 1\n\n\n\nx = 1\n") != std::string::npos);  // nothing added, nothing taken
  }

  TEST_CASE("CRLF line endings and tab indentation are the file's") {
    const auto out = with_helper("import torch\r\n\r\n\r\nclass C:\r\n\tdef f(self):\r\n\t\treturn 0\r\n");
    REQUIRE(out);
    CHECK(out->find("import torch\r\nimport functools\r\n\r\n\r\n@functools.lru_cache(maxsize=None)\r\ndef _native():\r\n"
                    "\t# cached\r\n\treturn 1\r\n\r\n\r\nclass C:") == 0);
  }

  TEST_CASE("without a top-level import: before the first statement after the docstring") {
    const auto out = with_helper("\"\"\"Doc.\"\"\"\nx = 0\n");
    REQUIRE(out);
    CHECK(*out == "\"\"\"Doc.\"\"\"\nimport functools\n\n\n@functools.lru_cache(maxsize=None)\ndef _native():\n"
                  "    # cached\n    return 1\n\n\nx = 0\nx = _native()\n");
  }

  TEST_CASE("not added when no edit calls it or when the module binds the name") {
    CHECK_FALSE(with_helper("import torch\n", false));
    CHECK_FALSE(with_helper("import torch\n\n\ndef _native():\n    return 2\n"));
    CHECK_FALSE(with_helper("from m import _native\n"));
  }
}
