// The CLI's diff and report coloring: which lines take which color, and that only escapes are added.
#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "terminal_color.h"

using kvpatch::cli::colorize_diff;
using kvpatch::cli::colorize_report;

namespace {
std::string strip_sgr(const std::string& text) {
  static const std::regex sgr("\033\\[[0-9;]*m");
  return std::regex_replace(text, sgr, "");
}
}  // namespace

TEST_SUITE("terminal_color") {
  TEST_CASE("a hunk's body is colored by its counts, so a removed \"-- x\" is red, not a header") {
    const std::string diff =
        "--- a/m.py\n"
        "+++ b/m.py\n"
        "@@ -1,3 +1,2 @@\n"
        " keep\n"
        "--- x\n"
        "-++ y\n"
        "+++ z\n"
        "--- a/n.py\n"
        "+++ b/n.py\n"
        "@@ -4,1 +4,1 @@\n"
        "-old\r\n"
        "+new\n"
        "\\ No newline at end of file\n";
    const std::string shown = colorize_diff(diff);
    CHECK(strip_sgr(shown) == diff);
    CHECK(shown ==
          "\033[1m--- a/m.py\033[0m\n"
          "\033[1m+++ b/m.py\033[0m\n"
          "\033[36m@@ -1,3 +1,2 @@\033[0m\n"
          " keep\n"
          "\033[31m--- x\033[0m\n"
          "\033[31m-++ y\033[0m\n"
          "\033[32m+++ z\033[0m\n"
          "\033[1m--- a/n.py\033[0m\n"
          "\033[1m+++ b/n.py\033[0m\n"
          "\033[36m@@ -4,1 +4,1 @@\033[0m\n"
          "\033[31m-old\033[0m\r\n"
          "\033[32m+new\033[0m\n"
          "\\ No newline at end of file\n");
  }

  TEST_CASE("the report's status word is colored, the rest of the line is not") {
    const std::string report = "m.py:3:5: missing: the message: with colons [rule]\n1 plan sites: 0 threaded\n";
    const std::string shown = colorize_report(report);
    CHECK(shown == "m.py:3:5: \033[31mmissing\033[0m: the message: with colons [rule]\n1 plan sites: 0 threaded\n");
  }

  TEST_CASE("--format full: a fix's lines red and green from the marker on, the caret red, the source left alone") {
    // A source line that itself reads like a fix or a caret (`- x`, `^`) is numbered and keeps its bytes.
    const std::string report =
        "m.py:9:5: redundant: a cast [rule]\n"
        "    |\n"
        " 9 | k = k.to(q.dtype)\n"
        "    |\t^\n"
        " 10 | - x\n"
        " 11 |   ^\n"
        "    = fix, as apply makes it:\n"
        "  9 - k = k.to(q.dtype)\r\n"
        " 10 -\n"
        "    + k = k\n"
        "    +\n"
        "    +x not a fix line\n"
        "1 plan sites: 0 threaded\n";
    const std::string shown = colorize_report(report);
    CHECK(strip_sgr(shown) == report);
    CHECK(shown ==
          "m.py:9:5: \033[31mredundant\033[0m: a cast [rule]\n"
          "    |\n"
          " 9 | k = k.to(q.dtype)\n"
          "    |\t\033[31m^\033[0m\n"
          " 10 | - x\n"
          " 11 |   ^\n"
          "    = fix, as apply makes it:\n"
          "  9 \033[31m- k = k.to(q.dtype)\033[0m\r\n"
          " 10 \033[31m-\033[0m\n"
          "    \033[32m+ k = k\033[0m\n"
          "    \033[32m+\033[0m\n"
          "    +x not a fix line\n"
          "1 plan sites: 0 threaded\n");
  }
}
