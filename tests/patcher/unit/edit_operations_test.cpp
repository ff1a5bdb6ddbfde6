// The generic edit operations: replace an argument, add a keyword, insert after an anchor,
// unwrap a method call, remove a (guarded) statement, guard a statement. Each result must still parse.
#include <doctest/doctest.h>

#include "kvpatch/edit_operations.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
std::string edited(const ParsedFile& file, const std::vector<Edit>& edits) {
  EditSet set;
  for (const Edit& e : edits) set.add(e);
  std::string out = file.source.bom() + set.apply(file.source.text());
  PythonTree tree(out.substr(file.source.bom().size()));
  CHECK_MESSAGE(!first_syntax_error(tree.root()), "edited code does not parse:\n" << out);
  return out;
}

std::string edited(const ParsedFile& file, const Edit& edit) { return edited(file, std::vector<Edit>{edit}); }

TSNode statement_of(const ParsedFile& file, const std::string& starts) {
  return test::find_node(file, "expression_statement", starts);
}

// The code with its statement starting `k = k.to` removed.
std::string removed(const std::string& code) {
  auto file = test::parse(code);
  return edited(*file, remove_statement(file->source, statement_of(*file, "k = k.to"), "r"));
}

// The code with its statements starting `first` and `second` removed in one run, each removal told of the other.
std::string removed_together(const std::string& code, const std::string& first, const std::string& second) {
  auto file = test::parse(code);
  const TSNode a = statement_of(*file, first);
  const TSNode b = statement_of(*file, second);
  std::vector<Edit> edits = remove_statement(file->source, a, "r", {b});
  for (const Edit& e : remove_statement(file->source, b, "r", {a})) edits.push_back(e);
  return edited(*file, edits);
}
}  // namespace

TEST_SUITE("edit_operations") {
  TEST_CASE("replace a bound positional argument keeps everything around it") {
    auto file = test::parse("w.plan(\n    a,  # first\n    self.data_type,\n)\n");
    TSNode call = test::find_node(*file, "call");
    const auto args = call_arguments(file->source.text(), syntax::field(call, "arguments"));
    CHECK(edited(*file, replace_argument_value(args[1], "self.kv_data_type", "r")) ==
          "w.plan(\n    a,  # first\n    self.kv_data_type,\n)\n");
  }

  TEST_CASE("replace a keyword argument keeps the keyword") {
    auto file = test::parse("w.plan(a, kv_data_type=self.data_type)\n");
    TSNode call = test::find_node(*file, "call");
    const auto args = call_arguments(file->source.text(), syntax::field(call, "arguments"));
    CHECK(edited(*file, replace_argument_value(args[1], "self.kv_data_type", "r")) ==
          "w.plan(a, kv_data_type=self.kv_data_type)\n");
  }

  TEST_CASE("add a keyword argument follows the call's layout") {
    auto added = [](const std::string& code) {
      auto file = test::parse(code);
      TSNode list = syntax::field(test::find_node(*file, "call"), "arguments");
      return edited(*file, add_keyword_argument(file->source, list, "kv_data_type", "self.kv_data_type", "r"));
    };
    CHECK(added("f()\n") == "f(kv_data_type=self.kv_data_type)\n");
    CHECK(added("f(a, b)\n") == "f(a, b, kv_data_type=self.kv_data_type)\n");
    CHECK(added("f(a, b,)\n") == "f(a, b, kv_data_type=self.kv_data_type)\n");
    CHECK(added("f(\n    a,\n    b,\n)\n") == "f(\n    a,\n    b,\n    kv_data_type=self.kv_data_type,\n)\n");
    CHECK(added("f(\n    a,\n    b\n)\n") == "f(\n    a,\n    b,\n    kv_data_type=self.kv_data_type\n)\n");
    CHECK(added("f(\r\n\ta,\r\n)\r\n") == "f(\r\n\ta,\r\n\tkv_data_type=self.kv_data_type,\r\n)\r\n");
  }

  TEST_CASE("an added argument leaves a comment on the last argument's line, where it was written") {
    // An ignore comment vouches for the argument on its line; before 2026-12-02 the new argument went
    // between the comma and the comment, and took the comment with it.
    auto added = [](const std::string& code) {
      auto file = test::parse(code);
      TSNode list = syntax::field(test::find_node(*file, "call"), "arguments");
      return edited(*file, add_argument(file->source, list, "s=1.0", "r"));
    };
    CHECK(added("f(\n    a,\n    b,  # why b\n)\n") == "f(\n    a,\n    b,  # why b\n    s=1.0,\n)\n");
    CHECK(added("f(\n    a,\n    b  # why b\n)\n") == "f(\n    a,\n    b,  # why b\n    s=1.0\n)\n");
    CHECK(added("f(\r\n\ta,\t# why a\r\n)\r\n") == "f(\r\n\ta,\t# why a\r\n\ts=1.0,\r\n)\r\n");
    CHECK(added("f(\n    a(\n        x\n    ),  # why a\n)\n") ==
          "f(\n    a(\n        x\n    ),  # why a\n    s=1.0,\n)\n");
  }

  TEST_CASE("insert after an anchor uses its indentation and the file's line ending") {
    const std::string stmt = "self.kv_data_type = kv";
    SUBCASE("spaces and LF") {
      auto file = test::parse("class U:\n    def __init__(self):\n        self.data_type = d\n        self.x = 1\n");
      CHECK(edited(*file, insert_statement_after(file->source, statement_of(*file, "self.data_type"), stmt, "r")) ==
            "class U:\n    def __init__(self):\n        self.data_type = d\n        self.kv_data_type = kv\n        self.x = 1\n");
    }
    SUBCASE("tabs and CRLF") {
      auto file = test::parse("class U:\r\n\tdef __init__(self):\r\n\t\tself.data_type = d\r\n\t\tself.x = 1\r\n");
      CHECK(edited(*file, insert_statement_after(file->source, statement_of(*file, "self.data_type"), stmt, "r")) ==
            "class U:\r\n\tdef __init__(self):\r\n\t\tself.data_type = d\r\n\t\tself.kv_data_type = kv\r\n\t\tself.x = 1\r\n");
    }
    SUBCASE("a BOM is kept and offsets skip it") {
      auto file = test::parse("\xEF\xBB\xBFself.data_type = d\nx = 1\n");
      CHECK(file->source.bom() == "\xEF\xBB\xBF");
      CHECK(edited(*file, insert_statement_after(file->source, statement_of(*file, "self.data_type"), stmt, "r")) ==
            "\xEF\xBB\xBFself.data_type = d\nself.kv_data_type = kv\nx = 1\n");
    }
    SUBCASE("a trailing comment stays on the anchor's line; a multi-line anchor is passed whole") {
      auto file = test::parse("def f(self):\n    self.data_type = (\n        d\n    )  # model dtype\n    return 1\n");
      CHECK(edited(*file, insert_statement_after(file->source, statement_of(*file, "self.data_type"), stmt, "r")) ==
            "def f(self):\n    self.data_type = (\n        d\n    )  # model dtype\n    self.kv_data_type = kv\n    return 1\n");
    }
    SUBCASE("no final newline stays missing") {
      auto file = test::parse("def f(self):\n    self.data_type = d");
      CHECK(edited(*file, insert_statement_after(file->source, statement_of(*file, "self.data_type"), stmt, "r")) ==
            "def f(self):\n    self.data_type = d\n    self.kv_data_type = kv");
    }
    SUBCASE("an anchor sharing its line is refused") {
      auto file = test::parse("def f(self):\n    x = 1; self.data_type = d\n");
      TSNode anchor = test::find_node(*file, "assignment", "self.data_type");
      CHECK_THROWS_AS(insert_statement_after(file->source, anchor, stmt, "r"), EditNotPossible);
    }
  }

  TEST_CASE("unwrap a method call, on one line or across lines") {
    auto one = test::parse("k = pool.get_key_buffer(i).to(q.dtype)\n");
    CHECK(edited(*one, unwrap_method_call(test::find_node(*one, "call", "pool.get_key_buffer(i).to"), "r")) ==
          "k = pool.get_key_buffer(i)\n");
    auto three = test::parse("k = pool.get_key_buffer(i).to(\n    q_nope.dtype\n)\nrun(k)\n");
    CHECK(edited(*three, unwrap_method_call(test::find_node(*three, "call", "pool.get_key_buffer(i).to"), "r")) ==
          "k = pool.get_key_buffer(i)\nrun(k)\n");
    auto plain = test::parse("k = to(x)\n");
    CHECK_THROWS_AS(unwrap_method_call(test::find_node(*plain, "call"), "r"), EditNotPossible);
  }

  TEST_CASE("remove a guarded cast: the whole if or a last elif; elsewhere pass keeps the other branches' logic") {
    CHECK(removed("def f(k, q):\n    if k.dtype != q.dtype:\n        k = k.to(q.dtype)\n    return k\n") ==
          "def f(k, q):\n    return k\n");
    CHECK(removed("def f(k, q):\n    if k.dtype != q.dtype: k = k.to(q.dtype)\n    return k\n") ==
          "def f(k, q):\n    return k\n");
    CHECK(removed("def f(k, q):\n    if fast:\n        k = g(k)\n    elif k.dtype != q.dtype:\n        k = k.to(q.dtype)\n"
                  "    return k\n") ==
          "def f(k, q):\n    if fast:\n        k = g(k)\n    return k\n");
    // Deleting this elif would run the else body for FP8 KV.
    CHECK(removed("def f(k, q):\n    if fast:\n        k = g(k)\n    elif k.dtype != q.dtype:\n        k = k.to(q.dtype)\n"
                  "    else:\n        k = h(k)\n    return k\n") ==
          "def f(k, q):\n    if fast:\n        k = g(k)\n    elif k.dtype != q.dtype:\n        pass\n"
          "    else:\n        k = h(k)\n    return k\n");
    // ... and this one would let a later elif run in its place.
    CHECK(removed("def f(k, q):\n    if fast:\n        k = g(k)\n    elif k.dtype != q.dtype:\n        k = k.to(q.dtype)\n"
                  "    elif slow:\n        k = h(k)\n    return k\n") ==
          "def f(k, q):\n    if fast:\n        k = g(k)\n    elif k.dtype != q.dtype:\n        pass\n"
          "    elif slow:\n        k = h(k)\n    return k\n");
    // `if cast / elif slow: X` must not become `if slow: X`: X would now run for FP8 KV.
    CHECK(removed("def f(k, q):\n    if k.dtype != q.dtype:\n        k = k.to(q.dtype)\n    elif slow:\n        k = g(k)\n"
                  "    return k\n") ==
          "def f(k, q):\n    if k.dtype != q.dtype:\n        pass\n    elif slow:\n        k = g(k)\n    return k\n");
    CHECK(removed("def f(k, q):\n    if k.dtype != q.dtype:\n        k = k.to(q.dtype)\n    else:\n        k = g(k)\n") ==
          "def f(k, q):\n    if k.dtype != q.dtype:\n        pass\n    else:\n        k = g(k)\n");
    // A whole `if` that goes is removed as a statement of its own block: a `with` body it is all of keeps `pass`.
    CHECK(removed("def f(k, q):\n    with ctx():\n        if k.dtype != q.dtype:\n            k = k.to(q.dtype)\n"
                  "    return k\n") == "def f(k, q):\n    with ctx():\n        pass\n    return k\n");
    CHECK(removed("def f(k, q):\n    if c:\n        if k.dtype != q.dtype:\n            k = k.to(q.dtype)\n"
                  "    return k\n") == "def f(k, q):\n    return k\n");
    CHECK(removed("def f(k, q):\n    with ctx():\n        log(k)\n        if k.dtype != q.dtype:\n"
                  "            k = k.to(q.dtype)\n    return k\n") ==
          "def f(k, q):\n    with ctx():\n        log(k)\n    return k\n");
    // A last else clause that only casts goes.
    CHECK(removed("def f(k, q):\n    if same:\n        k = g(k)\n    else:\n        k = k.to(q.dtype)\n    return k\n") ==
          "def f(k, q):\n    if same:\n        k = g(k)\n    return k\n");
  }

  TEST_CASE("remove a statement among others deletes only its lines, CRLF included") {
    auto file = test::parse("def f(k, q):\r\n    log(k)\r\n    k = k.to(q.dtype)  # cast\r\n    return k\r\n");
    CHECK(edited(*file, remove_statement(file->source, statement_of(*file, "k = k.to"), "r")) ==
          "def f(k, q):\r\n    log(k)\r\n    return k\r\n");
    auto alone = test::parse("def f(k, q):\n    k = k.to(q.dtype)\n");
    CHECK(edited(*alone, remove_statement(alone->source, statement_of(*alone, "k = k.to"), "r")) ==
          "def f(k, q):\n    pass\n");
  }

  TEST_CASE("statements removed together never leave an empty block") {
    // Both casts go in one run: each removal is told of the other, and together they make the edits of
    // removing a branch's only statement (the first of them as `pass`, when the branch must stay).
    auto both_removed = [](const std::string& code) {
      return removed_together(code, "k = k.to(q.dtype)", "k = k.to(torch.bfloat16)");
    };
    CHECK(both_removed("def f(k, q):\n    if k.dtype != q.dtype:\n        k = k.to(q.dtype)\n"
                           "        k = k.to(torch.bfloat16)\n    return k\n") == "def f(k, q):\n    return k\n");
    CHECK(both_removed("def f(k, q):\n    if k.dtype != q.dtype:\n        k = k.to(q.dtype)\n"
                           "        k = k.to(torch.bfloat16)\n    else:\n        k = g(k)\n") ==
          "def f(k, q):\n    if k.dtype != q.dtype:\n        pass\n    else:\n        k = g(k)\n");
    CHECK(both_removed("def f(k, q):\n    if k.dtype != q.dtype: k = k.to(q.dtype); k = k.to(torch.bfloat16)\n"
                           "    return k\n") == "def f(k, q):\n    return k\n");
    CHECK(both_removed("def f(k, q):\n    k = k.to(q.dtype)\n    k = k.to(torch.bfloat16)\n") ==
          "def f(k, q):\n    pass\n");
    // Two guards that are all of a `with` body: the first becomes `pass`, the second goes.
    CHECK(both_removed("def f(k, q):\n    with ctx():\n        if k.dtype != q.dtype:\n            k = k.to(q.dtype)\n"
                           "        if k.dtype != D:\n            k = k.to(torch.bfloat16)\n    return k\n") ==
          "def f(k, q):\n    with ctx():\n        pass\n    return k\n");
    // A third statement stays: each goes on its own, as before.
    CHECK(both_removed("def f(k, q):\n    if c:\n        k = k.to(q.dtype)\n        log(k)\n"
                           "        k = k.to(torch.bfloat16)\n") == "def f(k, q):\n    if c:\n        log(k)\n");
  }

  TEST_CASE("a statement that shares its line through `;` goes with one semicolon, not as `pass`") {
    CHECK(removed("def f(k, q):\n    k = k.to(q.dtype); log(k)\n    return k\n") ==
          "def f(k, q):\n    log(k)\n    return k\n");
    CHECK(removed("def f(k, q):\n    log(k);k = k.to(q.dtype)  # cast\n    return k\n") ==
          "def f(k, q):\n    log(k)  # cast\n    return k\n");
    CHECK(removed("def f(k, q):\n    a = 1; k = k.to(q.dtype); b = 2\n    return k\n") ==
          "def f(k, q):\n    a = 1; b = 2\n    return k\n");
    CHECK(removed("def f(k, q):\n    log(k); k = k.to(q.dtype);\n    return k\n") ==
          "def f(k, q):\n    log(k);\n    return k\n");
    // All of a one-line body: `pass` keeps the block.
    CHECK(removed("def f(k, q):\n    with ctx(): k = k.to(q.dtype)\n    return k\n") ==
          "def f(k, q):\n    with ctx(): pass\n    return k\n");

    // Removed together (a dtype local and its cast): the line goes when they have it to themselves.
    auto both_removed = [](const std::string& code) { return removed_together(code, "d = q.dtype", "k = k.to(d)"); };
    CHECK(both_removed("def f(k, q):\n    d = q.dtype; k = k.to(d)\n    return k\n") ==
          "def f(k, q):\n    return k\n");
    CHECK(both_removed("def f(k, q):\n    d = q.dtype; k = k.to(d);  # cast\n    return k\n") ==
          "def f(k, q):\n    return k\n");
    CHECK(both_removed("def f(k, q):\n    a = 1; d = q.dtype; k = k.to(d); b = 2\n    return k\n") ==
          "def f(k, q):\n    a = 1; b = 2\n    return k\n");
    CHECK(both_removed("def f(k, q):\n    d = q.dtype; log(k); k = k.to(d)\n    return k\n") ==
          "def f(k, q):\n    log(k)\n    return k\n");
    // All of their block: the first becomes `pass`, the other goes with its semicolon.
    CHECK(both_removed("def f(k, q):\n    with ctx():\n        d = q.dtype; k = k.to(d)\n    return k\n") ==
          "def f(k, q):\n    with ctx():\n        pass\n    return k\n");
    CHECK(both_removed("def f(k, q):\n    if c: d = q.dtype; k = k.to(d)\n    else: pass\n") ==
          "def f(k, q):\n    if c: pass\n    else: pass\n");
    CHECK(both_removed("def f(k, q):\n    if c: d = q.dtype; k = k.to(d)\n    return k\n") ==
          "def f(k, q):\n    return k\n");
  }

  TEST_CASE("insert a block after an anchor: header at its indentation, body one step deeper") {
    auto block = [](const std::string& code) {
      auto file = test::parse(code);
      return edited(*file, insert_block_after(file->source, statement_of(*file, "k = pool"), "if k.dtype != D:",
                                              "k = k.to(q.dtype)", "r"));
    };
    CHECK(block("def f(pool, q):\n    k = pool.get()  # pool\n    return k\n") ==
          "def f(pool, q):\n    k = pool.get()  # pool\n    if k.dtype != D:\n        k = k.to(q.dtype)\n    return k\n");
    CHECK(block("class B:\r\n\tdef f(self, pool, q):\r\n\t\tk = pool.get()\r\n\t\treturn k\r\n") ==
          "class B:\r\n\tdef f(self, pool, q):\r\n\t\tk = pool.get()\r\n\t\tif k.dtype != D:\r\n\t\t\tk = k.to(q.dtype)\r\n\t\treturn k\r\n");
    // The step is the file's own: two spaces here.
    CHECK(block("def f(pool, q):\n  k = pool.get()\n") == "def f(pool, q):\n  k = pool.get()\n  if k.dtype != D:\n    k = k.to(q.dtype)\n");
  }

  TEST_CASE("conjoin a condition: appended after tight conditions, parenthesised after loose ones") {
    auto conjoined = [](const std::string& code) {
      auto file = test::parse(code);
      TSNode condition = syntax::field(test::find_node(*file, "if_statement"), "condition");
      return edited(*file, conjoin_condition(condition, "k.dtype != D", "r"));
    };
    CHECK(conjoined("if k.dtype != q.dtype:\n    k = k.to(q.dtype)\n") ==
          "if k.dtype != q.dtype and k.dtype != D:\n    k = k.to(q.dtype)\n");
    CHECK(conjoined("if a and b:\n    pass\n") == "if a and b and k.dtype != D:\n    pass\n");
    CHECK(conjoined("if a or b:\n    pass\n") == "if (a or b) and k.dtype != D:\n    pass\n");
    CHECK(conjoined("if (a or b):\n    pass\n") == "if (a or b) and k.dtype != D:\n    pass\n");
    CHECK(conjoined("if x if c else y:\n    pass\n") == "if (x if c else y) and k.dtype != D:\n    pass\n");
  }

  TEST_CASE("guard a statement: it moves under `if <condition>:`, continuation lines included") {
    auto guarded = [](const std::string& code) {
      auto file = test::parse(code);
      return edited(*file, guard_statement(file->source, statement_of(*file, "k = k.to"), "k.dtype != D", "r"));
    };
    CHECK(guarded("def f(k, q):\n    log(k)\n    k = k.to(q.dtype)  # cast\n    return k\n") ==
          "def f(k, q):\n    log(k)\n    if k.dtype != D:\n        k = k.to(q.dtype)  # cast\n    return k\n");
    CHECK(guarded("def f(k, q):\r\n\tk = k.to(\r\n\t\tq.dtype\r\n\t)\r\n") ==
          "def f(k, q):\r\n\tif k.dtype != D:\r\n\t\tk = k.to(\r\n\t\t\tq.dtype\r\n\t\t)\r\n");
    auto shared = test::parse("def f(k, q):\n    x = 1; k = k.to(q.dtype)\n");
    CHECK_THROWS_AS(guard_statement(shared->source, test::find_node(*shared, "expression_statement", "k = k.to"), "c", "r"),
                    EditNotPossible);
    auto text = test::parse("def f(k, q):\n    k = k.to(q.dtype, note=\"\"\"a\nb\"\"\")\n");
    CHECK_THROWS_AS(guard_statement(text->source, statement_of(*text, "k = k.to"), "c", "r"), EditNotPossible);
  }
}
