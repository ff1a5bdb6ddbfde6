// --color: `check` colors each finding's status word, `diff` colors as `git diff` does, `auto` (the
// default) colors a terminal only and honours NO_COLOR, and colors never change the text beneath.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "support/files.h"
#include "support/scratch_backend.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {
const std::string kEscape = "\033[";

std::string strip_sgr(const std::string& text) {
  static const std::regex sgr("\033\\[[0-9;]*m");
  return std::regex_replace(text, sgr, "");
}

bool has_escape(const std::string& text) { return text.find(kEscape) != std::string::npos; }

// `command` run under a pseudo-terminal by util-linux `script`, so that stdout is a terminal.
ProcessResult run_on_terminal(const ScratchBackend& backend, const std::string& command) {
  return run_process({"script", "-qec", command, "/dev/null"}, ProcessOptions{backend.dir()});
}

// `command --color never` and `--color always` on the backend: both exit 1 (findings), the first prints no
// escape code, and the second prints the first's text once its escape codes are stripped. {plain, colored}.
std::pair<std::string, std::string> plain_and_colored(const ScratchBackend& backend, const std::string& command) {
  const ProcessResult plain = backend.run({command, "--color", "never", "backend.py"});
  const ProcessResult colored = backend.run({command, "--color", "always", "backend.py"});
  CHECK(plain.exit_code == 1);
  CHECK(colored.exit_code == 1);
  CHECK_FALSE(has_escape(plain.out));
  CHECK(strip_sgr(colored.out) == plain.out);
  return {plain.out, colored.out};
}
}  // namespace

TEST_SUITE("color") {
  TEST_CASE("check --color always colors each status word and nothing else") {
    const ScratchBackend backend{"kvpatch-color"};
    const auto [plain, colored] = plain_and_colored(backend, "check");
    CHECK(colored.find(": \033[31mmissing\033[0m: ") != std::string::npos);
    CHECK(colored.find(": \033[31mredundant\033[0m: ") != std::string::npos);
  }

  TEST_CASE("diff --color always colors headers, hunk headers, removed and added lines as git does") {
    const ScratchBackend backend{"kvpatch-color"};
    const auto [plain, colored] = plain_and_colored(backend, "diff");
    const std::vector<std::string> plain_lines = split_lines_keep_ends(plain);
    const std::vector<std::string> colored_lines = split_lines_keep_ends(colored);
    REQUIRE(plain_lines.size() == colored_lines.size());
    int added = 0;
    int removed = 0;
    for (std::size_t i = 0; i < plain_lines.size(); ++i) {
      const std::string& line = plain_lines[i];
      const std::string& shown = colored_lines[i];
      CAPTURE(line);
      if (line.starts_with("--- ") || line.starts_with("+++ ")) {
        CHECK(shown.starts_with("\033[1m"));
      } else if (line.starts_with("@@ ")) {
        CHECK(shown.starts_with("\033[36m"));
      } else if (line.starts_with("-")) {
        CHECK(shown.starts_with("\033[31m"));
        ++removed;
      } else if (line.starts_with("+")) {
        CHECK(shown.starts_with("\033[32m"));
        ++added;
      } else {
        CHECK(shown == line);  // context lines stay as they are
      }
      if (shown != line) CHECK(shown.ends_with("\033[0m\n"));  // a color ends before its line's newline
    }
    CHECK(added > 0);
    CHECK(removed > 0);
  }

  TEST_CASE("check --format full --color always colors the status words, each fix's lines and the carets only") {
    const ScratchBackend backend{"kvpatch-color"};
    const ProcessResult plain = backend.run({"check", "--format", "full", "--color", "never", "backend.py"});
    const ProcessResult colored = backend.run({"check", "--format", "full", "--color", "always", "backend.py"});
    CHECK(plain.exit_code == 1);
    CHECK(colored.exit_code == 1);
    CHECK_FALSE(has_escape(plain.out));
    CHECK(strip_sgr(colored.out) == plain.out);
    const std::vector<std::string> plain_lines = split_lines_keep_ends(plain.out);
    const std::vector<std::string> colored_lines = split_lines_keep_ends(colored.out);
    REQUIRE(plain_lines.size() == colored_lines.size());
    static const std::regex removed(R"(^ +[0-9]+ -( .*)?\n$)");
    static const std::regex added(R"(^ + \+( .*)?\n$)");
    static const std::regex caret(R"(^ +\|[ \t]*\^\n$)");
    int fix_lines = 0;
    int carets = 0;
    for (std::size_t i = 0; i < plain_lines.size(); ++i) {
      const std::string& line = plain_lines[i];
      const std::string& shown = colored_lines[i];
      CAPTURE(line);
      if (std::regex_match(line, removed) || std::regex_match(line, added)) {
        const std::size_t marker = line.find_first_not_of(" 0123456789");
        CHECK(shown == line.substr(0, marker) + (line[marker] == '-' ? "\033[31m" : "\033[32m") +
                           line.substr(marker, line.size() - marker - 1) + "\033[0m\n");
        ++fix_lines;
      } else if (std::regex_match(line, caret)) {
        CHECK(shown == line.substr(0, line.size() - 2) + "\033[31m^\033[0m\n");
        ++carets;
      } else if (line.starts_with(" ")) {
        CHECK(shown == line);  // the gutter, the source lines and `= fix` stay as they are
      }
    }
    CHECK(fix_lines > 0);
    CHECK(carets > 0);
  }

  TEST_CASE("auto, the default, colors a terminal only, and NO_COLOR turns it off") {
    const ScratchBackend backend{"kvpatch-color"};
    // Through a pipe (as in CI and in these tests): no escape codes.
    CHECK_FALSE(has_escape(backend.run({"check", "backend.py"}).out));
    CHECK_FALSE(has_escape(backend.run({"diff", "backend.py"}).out));
    const std::string kvpatch = required_env("KVPATCH_BIN");
    // On a terminal: colored, unless NO_COLOR is set; --color always outranks NO_COLOR.
    CHECK(has_escape(run_on_terminal(backend, kvpatch + " check backend.py").out));
    CHECK(has_escape(run_on_terminal(backend, kvpatch + " diff backend.py").out));
    CHECK_FALSE(has_escape(run_on_terminal(backend, "env NO_COLOR=1 " + kvpatch + " check backend.py").out));
    CHECK_FALSE(has_escape(run_on_terminal(backend, "env NO_COLOR=1 " + kvpatch + " diff backend.py").out));
    CHECK(has_escape(run_on_terminal(backend, "env NO_COLOR=1 " + kvpatch + " check --color always backend.py").out));
    CHECK_FALSE(has_escape(run_on_terminal(backend, kvpatch + " check --color never backend.py").out));
  }

  TEST_CASE("machine-read formats are never colored") {
    const ScratchBackend backend{"kvpatch-color"};
    for (const char* format : {"json", "github", "sarif"}) {
      CAPTURE(format);
      CHECK_FALSE(has_escape(backend.run({"check", "--format", format, "--color", "always", "backend.py"}).out));
    }
  }
}
