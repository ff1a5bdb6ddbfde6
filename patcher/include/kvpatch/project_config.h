#pragma once
// A project's kvpatch settings, kept beside its code so that check, apply, CI and the pre-commit hook all patch
// and judge it the same way: `.kvpatch.toml` or `kvpatch.toml` (keys at the top), or the [tool.kvpatch] table
// of a pyproject.toml, found the way ruff finds its own (the nearest directory upward that has one).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/exclude_patterns.h"
#include "kvpatch/per_file_ignores.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

// One `per-file-ignores` entry: the rule ids whose findings are ignored in every file the pattern matches.
struct PerFileIgnore {
  std::string pattern;  // as `exclude` takes it, relative to the file's directory
  std::vector<std::string> ids;
  int line = 0;
};

struct ProjectConfig {
  std::filesystem::path file;  // the file read
  // `rules`: a rules directory, resolved against the file's directory; empty when not given.
  std::filesystem::path rules_dir;
  // `kv-dtype-form`, `flashinfer-version` and the [parameters] table, as rule parameter overrides that name
  // the file and line they came from.
  std::map<std::string, ParameterOverride> parameters;
  // `exclude`: fnmatch patterns (`*` and `?` stop at `/`; a whole segment `**` spans any number of directories)
  // over paths relative to the file's directory; one that matches a directory excludes everything under it.
  std::vector<std::string> exclude;
  // `unused-ignores`: "warn" (the default: ignore comments that suppress nothing are warnings) or "error" (each is
  // a finding, as mypy's warn_unused_ignores makes them); empty when not given, with its line for --show-settings.
  std::string unused_ignores;
  int unused_ignores_line = 0;
  // `per-file-ignores`: a table of pattern = [rule ids], as ruff's per-file-ignores (TOML keeps it sorted by pattern).
  std::vector<PerFileIgnore> per_file_ignores;
  // `output-format` (ruff's key): the report form check and pre-commit print when --format is not given, one of
  // report_format_names() (`concise` read as text); empty when not given.
  std::string output_format;
  int output_format_line = 0;
  // `show-fixes` (ruff's key): apply and check --fix list what they fixed unless --no-show-fixes; nullopt when not
  // given.
  std::optional<bool> show_fixes;
  int show_fixes_line = 0;
  // `select` and `ignore` (ruff's keys): the rule ids whose findings count (nullopt when not given: all), and the
  // rule ids whose findings are ignored in every file, each with its line. Checked against the rules once loaded.
  std::optional<std::vector<std::string>> select;
  int select_line = 0;
  std::vector<std::string> ignore;
  int ignore_line = 0;
};

// The file's `exclude` list, relative to the directory the file was found in (not a symlink's target).
ExcludePatterns config_exclude_patterns(const ProjectConfig& config);

// The file's `per-file-ignores`, each pattern relative to the directory the file was found in.
std::vector<PerFileIgnores> config_per_file_ignores(const ProjectConfig& config);

// The configuration file that holds kvpatch settings for `start` (a directory): in start or the nearest
// directory above it that has one, checking `.kvpatch.toml`, `kvpatch.toml`, then a pyproject.toml with a
// [tool.kvpatch] table (a pyproject.toml without one is passed over, unparsed). nullopt when there is none.
std::optional<std::filesystem::path> find_project_config(const std::filesystem::path& start);

// Reads one configuration file; a pyproject.toml (by name) must hold [tool.kvpatch]. Throws InputError naming
// the file and line: malformed TOML, an unknown key, a value that is not a string.
ProjectConfig read_project_config(const std::filesystem::path& file);

}  // namespace kvpatch
