// What the command line asked for, every subcommand's options in one struct that CLI11 fills
// (command_line.cpp), and the exit codes every subcommand shares.
#pragma once

#include <string>
#include <vector>

namespace kvpatch::cli {

inline constexpr int kClean = 0;
inline constexpr int kFindings = 1;      // findings remain (check, apply, pre-commit) or there are edits (diff)
inline constexpr int kUsageOrInput = 2;  // usage or input errors; also an internal error

struct Options {
  std::vector<std::string> paths;
  std::string rules_dir;
  std::vector<std::string> sets;
  std::string kv_dtype_form;
  std::string flashinfer_version;
  std::string format = "text";
  bool format_given = false;  // --format was on the command line: the settings file's output-format does not apply
  std::string root;
  std::string color = "auto";
  std::string output_file;  // check --output-file: the report goes there instead of stdout
  std::string stdin_filename;  // check/diff/apply --stdin-filename: the file PATH `-` (standard input) stands for
  std::string config;     // --config: the configuration file, instead of the one found
  bool isolated = false;  // --isolated: no configuration file
  bool show_settings = false;  // --show-settings: print what would be used, analyse nothing
  std::vector<std::string> exclude;         // --exclude: instead of the settings file's `exclude`
  std::vector<std::string> extend_exclude;  // --extend-exclude: besides it
  std::vector<std::string> per_file_ignores;         // --per-file-ignores PATTERN:ID[,ID]: instead of the file's
  std::vector<std::string> extend_per_file_ignores;  // --extend-per-file-ignores: besides them
  std::vector<std::string> select;  // --select ID[,ID] (ruff's): only these rules' findings count; instead of the file's
  std::vector<std::string> ignore;  // --ignore ID[,ID] (ruff's): these rules' findings are ignored in every file
  bool exit_zero = false;                   // --exit-zero: findings do not fail the command
  bool statistics = false;                  // check, pre-commit --statistics: counts per rule and status
  bool fix = false;                         // check --fix (ruff's): apply, then report what is left
  bool diff = false;                        // check --diff (ruff's): what diff prints, nothing written
  bool show_fixes = false;                  // apply, check --fix --show-fixes (ruff's): what the edits fixed
  bool no_show_fixes = false;               // --no-show-fixes: not even when the settings file's show-fixes is true
  bool exit_non_zero_on_fix = false;        // apply, check --fix (ruff's): exit 1 when a file was changed
  bool quiet = false;   // -q/--quiet (ruff's): findings, warnings and errors only (messages.h)
  bool silent = false;  // -s/--silent (ruff's): errors only; implies quiet
  std::string unused_ignores;               // --unused-ignores: warn or error; "" leaves it to the settings file
  std::string rule_id;  // rule: the finding id to explain
  std::string repo;   // pre-commit, install-hook, uninstall-hook
  bool all = false;   // pre-commit: every tracked file, not only the changed ones
  bool force = false; // install-hook: keep a foreign hook as the backup
  std::string argv0;
};

}  // namespace kvpatch::cli
