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
    if (line.starts_with(' ')) return line;  // --format full's source lines and fixes: the source's own text
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
