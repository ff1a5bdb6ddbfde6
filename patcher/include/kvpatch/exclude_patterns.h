#pragma once
// Files left out of a run: the `exclude` list of the project's settings file, relative to that file's directory,
// or --exclude / --extend-exclude on the command line, relative to the current directory (as ruff takes them).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kvpatch {

struct ExcludePatterns {
  std::filesystem::path base;         // the directory the patterns are relative to
  std::vector<std::string> patterns;  // fnmatch patterns (`*` and `?` stop at `/`; a whole segment `**` spans any
                                      // number of directories); one that matches a directory excludes all under it
  std::string origin;                 // the settings file, or the option, for messages and --show-settings
};

// The pattern as kept (a leading `./` and a trailing `/` dropped), or nullopt for one that is empty, `.` or
// absolute.
std::optional<std::string> exclude_pattern(const std::string& text);

// Whether the patterns leave `file` out (absolute or relative to the current directory). A file outside their
// base directory is never excluded.
bool excluded(const ExcludePatterns& exclude, const std::filesystem::path& file);

// The first of `excludes` that leaves `file` out, or nullptr.
const ExcludePatterns* excluded_by(const std::vector<ExcludePatterns>& excludes, const std::filesystem::path& file);

}  // namespace kvpatch
