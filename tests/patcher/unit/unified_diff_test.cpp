// Unified diffs built from an EditSet: hunks, context, line numbers, missing final newlines.
#include <doctest/doctest.h>

#include "kvpatch/report.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
std::string diff_of(const std::string& code, const std::vector<Edit>& edits) {
  FileReport report;
  report.file = test::parse(code);
  for (const Edit& e : edits) report.edits.add(e);
  return unified_diff(report);
}

std::string numbered_lines(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += "x" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  return out;
}
}  // namespace

TEST_SUITE("unified_diff") {
  TEST_CASE("one replaced line gets three lines of context on each side") {
    const std::string code = numbered_lines(10);
    const std::size_t at = code.find("5\n");  // the value of x5
    CHECK(diff_of(code, {{at, at + 1, "50", "r"}}) ==
          "--- a/snippet.py\n+++ b/snippet.py\n@@ -2,7 +2,7 @@\n x2 = 2\n x3 = 3\n x4 = 4\n-x5 = 5\n+x5 = 50\n x6 = 6\n x7 = 7\n x8 = 8\n");
  }

  TEST_CASE("an insertion at a line's end shows only the new line; line numbers shift in later hunks") {
    const std::string code = numbered_lines(20);
    const std::size_t end_of_2 = code.find('\n', code.find("x2 =")); 
    const std::size_t at18 = code.find("18\n");
    CHECK(diff_of(code, {{end_of_2, end_of_2, "\ny = 0", "r"}, {at18, at18 + 2, "180", "r"}}) ==
          "--- a/snippet.py\n+++ b/snippet.py\n"
          "@@ -1,5 +1,6 @@\n x1 = 1\n x2 = 2\n+y = 0\n x3 = 3\n x4 = 4\n x5 = 5\n"
          "@@ -15,6 +16,6 @@\n x15 = 15\n x16 = 16\n x17 = 17\n-x18 = 18\n+x18 = 180\n x19 = 19\n x20 = 20\n");
  }

  TEST_CASE("changes close together share one hunk") {
    const std::string code = numbered_lines(12);
    const std::size_t a = code.find("3\n");
    const std::size_t b = code.find("8\n");
    const std::string d = diff_of(code, {{a, a + 1, "30", "r"}, {b, b + 1, "80", "r"}});
    CHECK(d.find("@@ -1,11 +1,11 @@\n") != std::string::npos);
    CHECK(d.find("@@", d.find("@@ -1,11") + 17) == std::string::npos);  // no second hunk
  }

  TEST_CASE("a multi-line cast collapsing to one line is a 3-line to 1-line change") {
    const std::string code = "def f(pool, q):\n    k = pool.get(\n        1\n    ).to(\n        q.dtype\n    )\n    return k\n";
    const std::size_t begin = code.find(".to(");
    const std::size_t end = code.find("    )\n    return") + 5;
    CHECK(diff_of(code, {{begin, end, "", "r"}}) ==
          "--- a/snippet.py\n+++ b/snippet.py\n@@ -1,7 +1,5 @@\n def f(pool, q):\n     k = pool.get(\n         1\n"
          "-    ).to(\n-        q.dtype\n     )\n     return k\n");
  }

  TEST_CASE("a missing final newline is marked on both sides") {
    const std::string code = "a = 1\nb = 2";
    CHECK(diff_of(code, {{10, 11, "3", "r"}}) ==
          "--- a/snippet.py\n+++ b/snippet.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n\\ No newline at end of file\n+b = 3\n\\ No newline at end of file\n");
  }

  TEST_CASE("CRLF lines keep their carriage returns; a BOM stays on line 1") {
    const std::string code = "\xEF\xBB\xBF" "a = 1\r\nb = 2\r\n";
    const std::string d = diff_of(code, {{4, 5, "9", "r"}});
    CHECK(d == "--- a/snippet.py\n+++ b/snippet.py\n@@ -1,2 +1,2 @@\n-\xEF\xBB\xBF" "a = 1\r\n+\xEF\xBB\xBF" "a = 9\r\n b = 2\r\n");
  }

  TEST_CASE("no edits, no diff") { CHECK(diff_of("a = 1\n", {}).empty()); }
}
