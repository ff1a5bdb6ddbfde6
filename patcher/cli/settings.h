// The settings a run uses and where each came from: the rules directory, the project's settings file
// (.kvpatch.toml, kvpatch.toml or pyproject.toml's [tool.kvpatch]), the exclude patterns, the rule parameters,
// unused-ignores and per-file-ignores, each given on the command line or in that file; printed by --show-settings.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/exclude_patterns.h"
#include "kvpatch/project_config.h"
#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"
#include "options.h"

namespace kvpatch::cli {

// Where this very binary is, so the hook keeps working from any directory.
std::filesystem::path own_binary(const std::string& argv0);

struct Loaded {
  RuleSet rules;
  std::optional<ProjectConfig> config;
  std::string rules_source;  // where the rules directory was chosen
  std::vector<ExcludePatterns> exclude;  // the settings file's (unless --exclude), --exclude's, --extend-exclude's
  bool unused_ignores_error = false;     // unused-ignores is "error": Run::ignore_problems_fail
  std::string unused_ignores_source;     // where that came from; "" for the default
};

// The grammar check and the rule set every analysing command starts from, with the settings of the configuration
// file found from `start`; nullopt after an error, which it has printed. The rules directory: --rules, the
// configuration's, then the default.
std::optional<Loaded> load_rules(const Options& options, const std::filesystem::path& start);

// The options a run acts on once its settings file is read: the command line's, with ruff's two report keys where
// the command line says nothing. output-format is the report's form unless --format was given; not for --diff,
// which prints no report, and with --statistics only json counts (its other forms being text), so that the key
// never makes refused a command line that is sound without it. show-fixes = true is --show-fixes unless
// --no-show-fixes (and means nothing where nothing is written).
Options run_options(const Options& given, const Loaded& loaded);

// --show-settings: what a run would use, and where each came from, without reading any source file.
void print_settings(const Loaded& loaded, const Options& options, const std::filesystem::path& start);

// A checked file with a settings file nearer to it than the one this run read would be judged by other settings when
// checked from its own directory, or by ruff's rules of lookup; say so rather than let the two disagree silently.
// check, diff and pre-commit warn; apply, which would write the files by settings not meant for them, refuses (the
// return value: whether any was found). Not when --config or --isolated chose the settings on purpose.
enum class SettingsUse { Report, Hook, Apply };
bool report_nearer_settings(const Run& run, const Options& options, const std::optional<ProjectConfig>& config,
                            SettingsUse use);

}  // namespace kvpatch::cli
