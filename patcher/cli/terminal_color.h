// ANSI colors for the text report and the unified diff, and when to use them (--color).
#pragma once

#include <string>

namespace kvpatch::cli {

// --color's choice for one stream: `always`, `never`, or `auto`: only when the stream is a terminal
// and NO_COLOR (https://no-color.org) is unset or empty, as git and ruff do.
bool color_wanted(const std::string& choice, int fd);

// The text report with each finding's status word colored (`file:l:c: status: ...`); under --format full also
// each fix's removed lines red, its added lines green and the caret red, the source's own lines left alone.
std::string colorize_report(const std::string& report);

// A unified diff colored as `git diff` colors one: file headers bold, hunk headers cyan, removed
// lines red, added lines green. Only escape codes are added; stripping them gives the input back.
std::string colorize_diff(const std::string& diff);

}  // namespace kvpatch::cli
