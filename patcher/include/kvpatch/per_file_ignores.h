#pragma once
// `per-file-ignores` in a project's settings: rule ids whose findings are ignored throughout the files a pattern
// matches, as ruff's per-file-ignores are, for files such as tests that plan BF16 on purpose and are still worth
// checking for every other rule. Each finding so ignored says which entry ignored it.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "kvpatch/exclude_patterns.h"

namespace kvpatch {

struct RuleSet;

struct PerFileIgnores {
  // One pattern, relative to the settings file's directory (origin: that file) or, given as an option, to the
  // current directory (origin: the option and its text). None for an entry of every file.
  ExcludePatterns paths;
  std::vector<std::string> ids;
  int line = 0;  // the entry's line in the settings file; 0 for one given on the command line
  // The setting that made the entry: per-file-ignores, or ruff's `ignore` and `select`, whose entries hold in
  // every file (`select`'s ids being those it does not name).
  std::string key = "per-file-ignores";
  bool every_file = false;

  std::string origin() const { return line == 0 ? paths.origin : paths.origin + ":" + std::to_string(line); }
  // What an ignored finding says of it: "per-file-ignores at /repo/.kvpatch.toml:7", "ignore at --ignore ID".
  std::string reason() const { return key + " at " + origin(); }
};

// ruff's `ignore` (key "ignore") or `select` (key "select") as an entry of every file, from the settings file
// (origin: the file, with the key's line) or the command line (origin: the option and its ids, line 0). For
// select, the entry ignores every id the rules report that `ids` does not name, but for the cast rules'
// run-input ids, whose ignoring vouches for run() inputs; an id no rule reports is an InputError at the key's line
// either way (require_known_ids, for ignore).
PerFileIgnores every_file_entry(const std::string& key, const std::vector<std::string>& ids,
                                const std::string& origin, int line, const RuleSet& rules);

// One entry as the command line gives it, `PATTERN:RULE-ID[,RULE-ID...]`, relative to `base`; origin names the
// option and the text. Throws InputError for a text without a pattern or ids, or with an absolute pattern.
PerFileIgnores per_file_ignores_option(const std::string& option, const std::string& text,
                                       const std::filesystem::path& base);

// (rule id, reason) for each id the entries ignore in `file` (absolute or relative to the current directory); the
// first entry naming an id gives its reason.
std::vector<std::pair<std::string, std::string>> ignored_in_file(const std::vector<PerFileIgnores>& entries,
                                                                 const std::filesystem::path& file);

// Throws InputError at the entry's line for an id no rule of `rules` reports: a typo there would ignore nothing
// and say nothing, the silent hole an ignore comment's unknown-rule warning exists to close.
void require_known_ids(const std::vector<PerFileIgnores>& entries, const RuleSet& rules);

}  // namespace kvpatch
