#include "terminal_color.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

namespace kvpatch::cli {
namespace {
constexpr std::string_view kReset = "\033[0m";

std::string sgr(std::string_view code) { return "\033[" + std::string(code) + "m"; }

// Calls `visit(line)` for each line of `text`, its newline included.
template <typename Visit>
std::string map_lines(const std::string& text, Visit visit) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    out += visit(text.substr(start, end - start));
    start = end;
  }
  return out;
}

// Wraps a line's text, not its line ending, so that a terminal never carries a color past it.
std::string wrap(const std::string& line, std::string_view code) {
  std::size_t body = line.size();
  while (body > 0 && (line[body - 1] == '\n' || line[body - 1] == '\r')) --body;
  if (body == 0) return line;
  return sgr(code) + line.substr(0, body) + std::string(kReset) + line.substr(body);
}

// A line --format full prints under a finding (report_full.cpp): `NN - old` (red) and `   + new` (green) of a fix,
// from the marker on, as ruff colors its fixes, and the caret under the finding's column (red). The gutter, the
// source line itself and `= fix` are left as they are: a source line is `NN | text`, so its text, whatever it
// holds, never reaches the marker test.
std::string colorize_context_line(const std::string& line) {
  std::size_t at = line.find_first_not_of(" 0123456789");
  if (at == std::string::npos || at == 0 || line[at - 1] != ' ') return line;
  const char marker = line[at];
  if (marker == '-' || marker == '+') {
    const bool alone = at + 1 == line.size() || line[at + 1] == '\n' || line[at + 1] == '\r';
    if (!alone && line[at + 1] != ' ') return line;
    return line.substr(0, at) + wrap(line.substr(at), marker == '-' ? "31" : "32");
  }
  // The caret's line has no number: a numbered `NN |     ^` is a source line that holds a caret itself.
  if (marker != '|' || line.find_first_not_of(' ') != at) return line;
  const std::size_t caret = line.find_first_not_of(" \t", at + 1);
  if (caret == std::string::npos || line[caret] != '^' || line.find_first_not_of("\r\n", caret + 1) != std::string::npos) {
    return line;
  }
  return line.substr(0, caret) + wrap(line.substr(caret), "31");
}
}  // namespace

bool color_wanted(const std::string& choice, int fd) {
  if (choice == "always") return true;
  if (choice != "auto") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  return ::isatty(fd) != 0;
}

std::string colorize_report(const std::string& report) {
  static const std::map<std::string, std::string> colors = {
      {"threaded", "32"}, {"present", "32"}, {"missing", "31"}, {"unknown", "35"},
      {"redundant", "31"}, {"gated", "33"}, {"required", "36"}, {"ignored", "90"},
      {"run-input-converted", "31"}, {"run-input-unknown", "35"}};
  return map_lines(report, [&](std::string line) {
    if (line.starts_with(' ')) return colorize_context_line(line);  // --format full's lines under a finding
    for (const auto& [word, code] : colors) {
      const std::string marker = ": " + word + ": ";
      const std::size_t at = line.find(marker);
      if (at != std::string::npos) {
        line.replace(at + 2, word.size(), sgr(code) + word + std::string(kReset));
        break;
      }
    }
    return line;
  });
}

std::string colorize_diff(const std::string& diff) {
  // Inside a hunk every line is a body line, even one reading "--- x" (a removed "-- x"), so the
  // hunk header's counts say where the body ends.
  long old_left = 0;
  long new_left = 0;
  return map_lines(diff, [&](const std::string& line) {
    const std::string_view view(line);
    if (old_left > 0 || new_left > 0) {
      if (view.starts_with("-")) {
        --old_left;
        return wrap(line, "31");
      }
      if (view.starts_with("+")) {
        --new_left;
        return wrap(line, "32");
      }
      if (view.starts_with(" ")) --old_left, --new_left;
      return line;  // context, or "\\ No newline at end of file"
    }
    if (view.starts_with("@@ ")) {
      long old_start = 0;
      long new_start = 0;
      if (std::sscanf(line.c_str(), "@@ -%ld,%ld +%ld,%ld @@", &old_start, &old_left, &new_start, &new_left) != 4) {
        old_left = new_left = 0;
      }
      return wrap(line, "36");
    }
    if (view.starts_with("--- ") || view.starts_with("+++ ")) return wrap(line, "1");
    return line;
  });
}

}  // namespace kvpatch::cli
