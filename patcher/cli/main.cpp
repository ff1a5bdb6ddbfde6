// kvpatch: check, diff and apply the FlashInfer MLA kv_data_type patch; check staged content in a
// git pre-commit hook. Exit codes: 0 clean, 1 findings remain (check, pre-commit) or edits exist
// (diff), 2 usage or input errors.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "kvpatch/analyze.h"
#include "kvpatch/apply_files.h"
#include "kvpatch/edited_code_check.h"
#include "kvpatch/git_hook.h"
#include "kvpatch/git_pre_commit.h"
#include "kvpatch/ignore_comments.h"
#include "kvpatch/input_error.h"
#include "kvpatch/nearer_settings.h"
#include "kvpatch/project_config.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/report.h"
#include "terminal_color.h"

namespace {
using namespace kvpatch;

constexpr int kClean = 0;
constexpr int kFindings = 1;
constexpr int kUsageOrInput = 2;

struct Options {
  std::vector<std::string> paths;
  std::string rules_dir;
  std::vector<std::string> sets;
  std::string kv_dtype_form;
  std::string flashinfer_version;
  std::string format = "text";
  std::string root;
  std::string color = "auto";
  std::string config;     // --config: the configuration file, instead of the one found
  bool isolated = false;  // --isolated: no configuration file
  bool show_settings = false;  // --show-settings: print what would be used, analyse nothing
  std::vector<std::string> exclude;         // --exclude: instead of the settings file's `exclude`
  std::vector<std::string> extend_exclude;  // --extend-exclude: besides it
  bool exit_zero = false;                   // --exit-zero: findings do not fail the command
  std::string unused_ignores;               // --unused-ignores: warn or error; "" leaves it to the settings file
  std::string rule_id;  // rule: the finding id to explain
  std::string repo;   // pre-commit, install-hook, uninstall-hook
  bool all = false;   // pre-commit: every tracked file, not only the changed ones
  bool force = false; // install-hook: keep a foreign hook as the backup
  std::string argv0;
};

void print_error(const std::string& text) { std::cerr << "kvpatch: error: " << text << "\n"; }

void print_errors(const std::vector<FileError>& errors) {
  for (const FileError& e : errors) {
    print_error((e.line > 0 ? e.file + ":" + std::to_string(e.line) : e.file) + ": " + e.message +
                (e.remedy.empty() ? "" : "; " + e.remedy));
  }
}

// Where this very binary is, so the hook keeps working from any directory.
std::filesystem::path own_binary(const std::string& argv0) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::absolute(argv0) : self;
}

// $KVPATCH_RULES_DIR, else the rules installed beside this binary (`cmake --install`:
// <prefix>/bin/kvpatch reads <prefix>/share/kvpatch/rules), else the source tree it was built
// from. The installed copy comes first so that an installed kvpatch never depends on the checkout.
// Returns the directory and where it came from, for --show-settings.
std::pair<std::string, std::string> default_rules_dir(const Options& options) {
  const char* env = std::getenv("KVPATCH_RULES_DIR");
  if (env != nullptr && *env != '\0') return {env, "$KVPATCH_RULES_DIR"};
  std::error_code ec;
  const std::filesystem::path installed =
      own_binary(options.argv0).parent_path() / KVPATCH_INSTALLED_RULES_FROM_BINDIR;
  if (std::filesystem::is_directory(installed, ec)) {
    return {installed.lexically_normal().string(), "installed with kvpatch"};
  }
  return {KVPATCH_DEFAULT_RULES_DIR, "the source tree kvpatch was built from"};
}

const std::vector<std::string> kFormats = {"text", "json", "github", "sarif"};
constexpr const char* kFormatHelp =
    "report format: text, json, github (GitHub Actions annotations) or sarif (SARIF 2.1.0, for code scanning)";

// The report of a check or pre-commit run on stdout, in --format's form. The machine-read formats always
// print (an empty SARIF log is still a log); text only when `text_wanted`, github also for input errors (annotations).
void print_report(const Run& run, const RuleSet& rules, const Options& options, bool text_wanted) {
  if (options.format == "json") {
    std::cout << json_report(run);
  } else if (options.format == "sarif") {
    std::cout << sarif_report(run, rules, KVPATCH_VERSION);
  } else if (options.format == "github") {
    if (text_wanted || !run.errors.empty()) std::cout << github_report(run);
  } else if (text_wanted) {
    const std::string report = text_report(run);
    std::cout << (cli::color_wanted(options.color, STDOUT_FILENO) ? cli::colorize_report(report) : report);
  }
}

// Which FlashInfer release the files run with decides two things: before 0.6.14 it cannot build the FP8 KV plan
// (no site is threaded), and from 0.6.14 on run() needs FP8 scales.
void add_flashinfer_option(CLI::App* command, Options& options) {
  command->add_option("--flashinfer-version", options.flashinfer_version,
                      "the FlashInfer release the files run with, e.g. 0.7.2, or auto (the default: the pin in a "
                      "pyproject.toml or dist-info above each file); same as --set flashinfer_version=...");
}

// Project settings (.kvpatch.toml, kvpatch.toml or pyproject.toml's [tool.kvpatch]) for every command that loads rules.
void add_config_options(CLI::App* command, Options& options) {
  CLI::Option* config = command->add_option(
      "--config", options.config,
      "read kvpatch settings from this file (.kvpatch.toml, kvpatch.toml or a pyproject.toml with [tool.kvpatch]) "
      "instead of the one found in or above the checked directory; options given on the command line win");
  command->add_flag("--isolated", options.isolated, "read no configuration file")->excludes(config);
}

// ruff's --exclude and --extend-exclude: patterns as the settings file's `exclude` takes them, relative to the
// current directory.
void add_exclude_options(CLI::App* command, Options& options) {
  command->add_option("--exclude", options.exclude,
                      "leave out files matching PATTERN (repeatable, or comma-separated), relative to the current directory, instead of "
                      "the settings file's exclude list; a file named as PATH is read anyway")
      ->allow_extra_args(false)  // one pattern per use, so that a PATH after it stays a PATH
      ->delimiter(',');
  command->add_option("--extend-exclude", options.extend_exclude,
                      "leave out files matching PATTERN (repeatable, or comma-separated) besides the settings file's exclude list")
      ->allow_extra_args(false)
      ->delimiter(',');
}

// ruff's --exit-zero: report, but let a CI step or a hook pass; input errors still exit 2.
void add_exit_zero_option(CLI::App* command, Options& options, const std::string& what) {
  command->add_flag("--exit-zero", options.exit_zero, "exit 0 even when " + what + " (errors still exit 2)");
}

// mypy's warn_unused_ignores, ruff's RUF100: a stale suppression is a hole in a completeness check, so a project can
// make each one fail the run instead of warning about it.
void add_unused_ignores_option(CLI::App* command, Options& options) {
  command->add_option("--unused-ignores", options.unused_ignores,
                      "what an ignore comment that suppresses nothing is: warn (the default: a warning on stderr, the "
                      "exit code as it is) or error (a finding, which fails the command); same as unused-ignores "
                      "in .kvpatch.toml")
      ->check(CLI::IsMember({"warn", "error"}));
}

void add_show_settings_option(CLI::App* command, Options& options) {
  command->add_flag("--show-settings", options.show_settings,
                    "print the settings file, rules directory, exclude patterns and rule parameters this run would use, "
                    "and where each came from; read no source file");
}

void add_common_options(CLI::App* command, Options& options) {
  command->add_option("PATH", options.paths, "Python files or directories (walked for *.py, hidden directories skipped)")
      ->required();
  command->add_option("--rules", options.rules_dir, "rules directory (default: $KVPATCH_RULES_DIR, the installed rules, or the source tree's rules/)");
  command->add_option("--set", options.sets, "override a rule parameter, NAME=VALUE (repeatable), e.g. kv_field=self.kv_dtype");
  command->add_option("--kv-dtype-form", options.kv_dtype_form,
                      "KV dtype expression for the added field: original (getattr kv_cache_dtype), upstream "
                      "(the KV dtype only when it is torch.float8_e4m3fn) or sm90 (as upstream, on SM90 GPUs only, "
                      "where FlashInfer serves that plan; casts stay, guarded, elsewhere); same as --set kv_dtype_form=...")
      ->check(CLI::IsMember({"original", "upstream", "sm90"}));
  add_flashinfer_option(command, options);
  command->add_option("--root", options.root,
                      "directory that report and diff paths are relative to (default: a single directory PATH "
                      "(not for --format github or sarif), else the git work tree holding the paths, else the "
                      "current directory)");
  add_config_options(command, options);
}

void add_color_option(CLI::App* command, Options& options, const std::string& what) {
  command->add_option("--color", options.color,
                      "color " + what + ": auto (the default: on a terminal, unless NO_COLOR is set), always or never")
      ->check(CLI::IsMember({"never", "auto", "always"}));
}

// The rule parameters given: the configuration file's, then --set, then the named options, each later one winning.
std::optional<std::map<std::string, ParameterOverride>> parameter_overrides(const Options& options,
                                                                            const std::optional<ProjectConfig>& config) {
  std::map<std::string, ParameterOverride> overrides;
  if (config) overrides = config->parameters;
  for (const std::string& s : options.sets) {
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      print_error("--set " + s + ": expected NAME=VALUE; e.g. --set kv_field=self.kv_data_type");
      return std::nullopt;
    }
    const std::string name = s.substr(0, eq);
    overrides[name] = {s.substr(eq + 1), "--set " + name, 0};
  }
  if (!options.kv_dtype_form.empty()) overrides["kv_dtype_form"] = {options.kv_dtype_form, "--kv-dtype-form", 0};
  if (!options.flashinfer_version.empty()) {
    overrides["flashinfer_version"] = {options.flashinfer_version, "--flashinfer-version", 0};
  }
  if (const auto v = overrides.find("flashinfer_version"); v != overrides.end()) {
    static const std::regex release(R"(auto|[0-9]+(\.[0-9]+)*([.+!]?[A-Za-z0-9]+)*)");
    if (!std::regex_match(v->second.value, release)) {
      const ParameterOverride& o = v->second;
      print_error(InputError(o.origin, o.line, "'" + o.value + "' is not a FlashInfer release",
                             "give a release number such as 0.7.2, or auto")
                      .formatted());
      return std::nullopt;
    }
  }
  return overrides;
}

// The configuration in force: --config's file, else the one found from `start` upward; none with --isolated.
std::optional<ProjectConfig> project_config(const Options& options, const std::filesystem::path& start) {
  if (options.isolated) return std::nullopt;
  const std::optional<std::filesystem::path> file =
      options.config.empty() ? find_project_config(start) : std::optional<std::filesystem::path>(options.config);
  if (!file) return std::nullopt;
  return read_project_config(*file);
}

struct Loaded {
  RuleSet rules;
  std::optional<ProjectConfig> config;
  std::string rules_source;  // where the rules directory was chosen
  std::vector<ExcludePatterns> exclude;  // the settings file's (unless --exclude), --exclude's, --extend-exclude's
  bool unused_ignores_error = false;     // unused-ignores is "error": Run::ignore_problems_fail
  std::string unused_ignores_source;     // where that came from; "" for the default
};

// What the run leaves out: --exclude instead of the settings file's list, --extend-exclude besides it. Throws
// InputError for a pattern that is empty or absolute.
std::vector<ExcludePatterns> run_exclude_patterns(const Options& options, const std::optional<ProjectConfig>& config) {
  std::vector<ExcludePatterns> out;
  if (options.exclude.empty() && config && !config->exclude.empty()) out.push_back(config_exclude_patterns(*config));
  for (const auto& [option, given] : {std::pair{"--exclude", &options.exclude},
                                      std::pair{"--extend-exclude", &options.extend_exclude}}) {
    ExcludePatterns set{std::filesystem::current_path(), {}, option};
    for (const std::string& p : *given) {
      const std::optional<std::string> kept = exclude_pattern(p);
      if (!kept) {
        throw InputError(std::string(option) + " " + p, 0, "the pattern is empty or absolute",
                         "give it relative to the current directory, e.g. " + std::string(option) + " test");
      }
      set.patterns.push_back(*kept);
    }
    if (!set.patterns.empty()) out.push_back(std::move(set));
  }
  return out;
}

// The grammar check and the rule set every analysing command starts from, with the settings of the configuration
// file found from `start`; nullopt after an error. The rules directory: --rules, the configuration's, then the
// default.
std::optional<Loaded> load_rules(const Options& options, const std::filesystem::path& start) {
  try {
    require_compatible_grammar();
  } catch (const std::exception& e) {
    print_error(e.what());
    return std::nullopt;
  }
  try {
    const std::optional<ProjectConfig> config = project_config(options, start);
    const auto overrides = parameter_overrides(options, config);
    if (!overrides) return std::nullopt;
    std::pair<std::string, std::string> dir{options.rules_dir, "--rules"};
    if (dir.first.empty() && config && !config->rules_dir.empty()) {
      dir = {config->rules_dir.string(), config->file.string()};
    }
    if (dir.first.empty()) dir = default_rules_dir(options);
    std::vector<ExcludePatterns> exclude = run_exclude_patterns(options, config);
    Loaded loaded{load_rule_set(dir.first, *overrides), config, dir.second, std::move(exclude), false, ""};
    if (!options.unused_ignores.empty()) {
      loaded.unused_ignores_error = options.unused_ignores == "error";
      loaded.unused_ignores_source = "--unused-ignores";
    } else if (config && !config->unused_ignores.empty()) {
      loaded.unused_ignores_error = config->unused_ignores == "error";
      loaded.unused_ignores_source = config->file.string() + ":" + std::to_string(config->unused_ignores_line);
    }
    return loaded;
  } catch (const InputError& e) {
    print_error(e.formatted());
    return std::nullopt;
  }
}

// --show-settings: what a run would use, and where each came from, without reading any source file.
void print_settings(const Loaded& loaded, const Options& options, const std::filesystem::path& start) {
  std::cout << "settings file: "
            << (loaded.config ? loaded.config->file.string()
                : options.isolated ? std::string("none (--isolated)")
                                   : "none found in " + start.string() + " or above")
            << "\n";
  std::cout << "rules: " << loaded.rules.directory.string() << " (" << loaded.rules_source << ")\n";
  std::string exclude;
  for (const ExcludePatterns& set : loaded.exclude) {
    std::string patterns;
    for (const std::string& p : set.patterns) patterns += (patterns.empty() ? "" : ", ") + p;
    exclude += (exclude.empty() ? "" : "; ") + patterns + "  [" + set.origin + ", relative to " + set.base.string() + "]";
  }
  std::cout << "exclude: " << (exclude.empty() ? "none" : exclude) << "\n";
  std::cout << "unused ignores: " << (loaded.unused_ignores_error ? "error" : "warn")
            << (loaded.unused_ignores_source.empty() ? "  (the default)" : "  [" + loaded.unused_ignores_source + "]")
            << "\n";
  std::cout << "parameters (the rules' values unless a source is named):\n";
  for (const auto& [name, value] : loaded.rules.parameters) {
    std::string shown;
    for (const char c : value) shown += c == '\n' ? std::string("\n      ") : std::string(1, c);
    while (!shown.empty() && shown.back() == ' ') shown.pop_back();
    if (!shown.empty() && shown.back() == '\n') shown.pop_back();
    const auto origin = loaded.rules.parameter_origins.find(name);
    std::cout << "  " << name << " = " << (shown.empty() ? "\"\"" : shown)
              << (origin == loaded.rules.parameter_origins.end() ? "" : "  [" + origin->second + "]") << "\n";
  }
}

// A checked file with a settings file nearer to it than the one this run read would be judged by other settings when
// checked from its own directory, or by ruff's rules of lookup; say so rather than let the two disagree silently.
// check, diff and pre-commit warn; apply, which would write the files by settings not meant for them, refuses (the
// return value: whether any was found). Not when --config or --isolated chose the settings on purpose.
enum class SettingsUse { Report, Hook, Apply };
bool report_nearer_settings(const Run& run, const Options& options, const std::optional<ProjectConfig>& config,
                            SettingsUse use) {
  if (options.isolated || !options.config.empty()) return false;
  std::vector<CheckedSource> sources;
  for (const FileReport& f : run.files) sources.push_back({f.file->source.path(), f.file->source.display_path()});
  const std::optional<std::filesystem::path> in_force =
      config ? std::optional<std::filesystem::path>(config->file) : std::nullopt;
  const std::vector<NearerSettings> nearer = nearer_settings(sources, in_force);
  const std::string read = config ? config->file.string() : std::string("no settings file");
  const bool hook = use == SettingsUse::Hook, apply = use == SettingsUse::Apply;
  const std::string found_from = hook ? "the work tree's top" : "the paths' common directory";
  const std::string outcome = apply ? "apply would patch them" : "they were judged";
  for (const NearerSettings& n : nearer) {
    const std::string more =
        n.sources > 1 ? " and " + std::to_string(n.sources - 1) + " more checked file(s)" : std::string();
    std::string remedy = "Move the settings to the work tree's top, where pre-commit reads them";
    if (!hook) remedy = "Run kvpatch on their directory, or pass --config " + n.file.string();
    if (apply && config) remedy += " (or --config " + read + ")";
    std::cerr << "kvpatch: " << (apply ? "error: " : "warning: ") << n.file.string() << " holds kvpatch settings for "
              << n.first_source << more << ", but this run read " << read << ", found from " << found_from
              << "; kvpatch reads one settings file per run, so " << outcome << " by the run's settings, not by it. "
              << remedy << "\n";
  }
  return !nearer.empty();
}

std::optional<std::filesystem::path> repo_option(const Options& options) {
  return options.repo.empty() ? std::nullopt : std::optional<std::filesystem::path>(options.repo);
}

// Ignore comments that suppress nothing (ignore_comments.h): warnings by default, as ruff's unused-noqa is off by
// default and an exit code is what CI and hooks act on; errors, counted as findings by summarize(), when the run's
// unused-ignores setting is "error". The reports list them too.
void warn_ignore_comments(const Run& run) {
  for (const FileReport& f : run.files) {
    for (const IgnoreProblem& p : f.ignore_problems) {
      std::cerr << "kvpatch: " << ignore_problem_level(run) << ": " << f.file->source.display_path() << ":" << p.line << ":" << p.column << ": "
                << p.message << "\n";
    }
  }
}

int run_pre_commit(const Options& options) {
  Run run;
  std::optional<Loaded> loaded;
  try {
    const GitRepository repo = GitRepository::open(repo_option(options));
    // Settings from the work tree, as the files a commit is made from sit there (git runs hooks at its top).
    loaded = load_rules(options, repo.work_tree());
    if (!loaded) return kUsageOrInput;
    if (options.show_settings) {
      print_settings(*loaded, options, repo.work_tree());
      return kClean;
    }
    StagedFiles staged = staged_python_files(repo, options.all ? StagedScope::All : StagedScope::Changed);
    // The other tracked files, to link a staged plan() with a run() elsewhere (and back): git_pre_commit.h.
    StagedFiles context;
    if (!options.all) {
      context.files = staged_python_files(repo, StagedScope::All).files;
      // Both lists are sorted by path.
      auto by_path = [](const StagedFile& a, const StagedFile& b) { return a.path < b.path; };
      std::erase_if(context.files, [&](const StagedFile& f) {
        return std::binary_search(staged.files.begin(), staged.files.end(), f, by_path);
      });
    }
    auto is_excluded = [&](const StagedFile& f) {
      return excluded_by(loaded->exclude, repo.work_tree() / f.path) != nullptr;
    };
    std::erase_if(staged.files, is_excluded);
    std::erase_if(context.files, is_excluded);
    run = analyze_staged(loaded->rules, repo, staged, context);
    run.ignore_problems_fail = loaded->unused_ignores_error;
  } catch (const InputError& e) {
    print_error(e.formatted());
    return kUsageOrInput;
  }
  print_errors(run.errors);
  warn_ignore_comments(run);
  report_nearer_settings(run, options, loaded->config, SettingsUse::Hook);
  // Text stays quiet when the commit holds no file the rules select, as hooks should.
  print_report(run, loaded->rules, options, !run.files.empty());
  if (!run.errors.empty()) return kUsageOrInput;
  const Summary summary = summarize(run);
  if (!has_findings(summary)) return kClean;
  std::string paths;
  for (const FileReport& f : run.files) {
    if (!f.edits.empty()) paths += " " + shell_word(f.file->source.display_path());
  }
  std::string remedy = paths.empty() ? "" : "run `kvpatch apply" + paths + "` and `git add" + paths + "`";
  if (summary.unknown > 0) {
    remedy += (remedy.empty() ? "" : "; ") +
              std::string("review each unknown site by hand or mark it `# kvpatch: ignore[RULE-ID] reason`");
  }
  if (summary.unbuildable > 0) {
    remedy += (remedy.empty() ? "" : "; ") +
              std::string("upgrade FlashInfer where a site is unbuildable (its message names the release)");
  }
  if (summary.run_inputs_converted + summary.run_inputs_unknown > 0) {
    remedy += (remedy.empty() ? "" : "; ") +
              std::string("fix each run() input by hand as its message says, or mark it `# kvpatch: ignore[RULE-ID] reason`");
  }
  if (summary.ignore_problems_failing > 0) {
    remedy += (remedy.empty() ? "" : "; ") +
              std::string("remove or move each ignore comment that suppresses nothing, as its error above says");
  }
  if (remedy.empty()) remedy = "fix them by hand";
  std::cout << std::flush;  // the report first, then the remedy, when both go to one terminal
  std::cerr << "kvpatch: the staged content has findings; " << remedy
            << (options.exit_zero ? " (--exit-zero: the commit goes ahead)\n"
                                  : " (or skip this check once with `git commit --no-verify`)\n");
  return options.exit_zero ? kClean : kFindings;
}

// The first sentence of a rule's description, for the list.
std::string summary_of(const std::string& description) {
  std::string flat = description;
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  const std::size_t end = flat.find(". ");
  return end == std::string::npos ? flat : flat.substr(0, end + 1);
}

// `kvpatch rule [ID]`: what a finding id in a report means, as ruff's `rule` command does; the rules are the
// ones check would load here (settings found from the current directory).
int run_rule_command(const Options& options) {
  const std::optional<Loaded> loaded = load_rules(options, std::filesystem::current_path());
  if (!loaded) return kUsageOrInput;
  auto ids = loaded->rules.finding_ids();
  ids.emplace_back(kIgnoreCommentRule, kIgnoreCommentDescription);  // kvpatch's own, for ignore comments
  if (options.rule_id.empty()) {
    for (const auto& [id, description] : ids) std::cout << id << "\n    " << summary_of(description) << "\n";
    return kClean;
  }
  for (const auto& [id, description] : ids) {
    if (id != options.rule_id) continue;
    std::cout << id << "\n\n" << description << (description.empty() || description.back() != '\n' ? "\n" : "");
    return kClean;
  }
  std::string known;
  for (const auto& [id, description] : ids) known += (known.empty() ? "" : ", ") + id;
  print_error("unknown rule id '" + options.rule_id + "'; the rules in " + loaded->rules.directory.string() +
              " report " + known);
  return kUsageOrInput;
}

int run_hook_command(const std::string& command, const Options& options) {
  try {
    // The hook commands do not read the index; one libgit2 cannot read is a warning for install-hook.
    const GitRepository repo = GitRepository::open(repo_option(options), GitRepository::Index::kOptional);
    if (command == "install-hook") {
      const std::filesystem::path binary = own_binary(options.argv0);
      const HookOutcome outcome = install_pre_commit_hook(repo, binary, options.force);
      const std::string hook = outcome.paths.hook.string();
      switch (outcome.change) {
        case HookChange::Installed: std::cout << "installed " << hook << "\n"; break;
        case HookChange::InstalledWithBackup:
          std::cout << "installed " << hook << "; the previous hook is kept as " << outcome.paths.backup.string()
                    << " and runs first\n";
          break;
        case HookChange::Updated: std::cout << "updated " << hook << "\n"; break;
        default: std::cout << hook << " is already the kvpatch hook; nothing to do\n"; break;
      }
      std::cout << "it runs " << binary.string() << " pre-commit on the staged content of every commit\n";
      if (const auto& problem = repo.index_problem()) {
        std::cerr << "kvpatch: warning: " << problem->formatted()
                  << "; until then the hook refuses every commit (exit 2)\n";
      }
      return kClean;
    }
    const HookOutcome outcome = uninstall_pre_commit_hook(repo);
    const std::string hook = outcome.paths.hook.string();
    switch (outcome.change) {
      case HookChange::Restored:
        std::cout << "restored " << hook << " from " << outcome.paths.backup.string() << "\n";
        break;
      case HookChange::Removed: std::cout << "removed " << hook << "\n"; break;
      default: std::cout << "no pre-commit hook at " << hook << "; nothing to do\n"; break;
    }
    return kClean;
  } catch (const InputError& e) {
    print_error(e.formatted());
    return kUsageOrInput;
  }
}

// A PATH that yields no file a rule selects would pass silently; a CI user should see that nothing was checked,
// and why when the project's `exclude` left files out there.
void warn_unselected_paths(const std::vector<std::string>& paths, const Run& run,
                           const std::vector<InputFile>& left_out, const std::vector<ExcludePatterns>& exclude) {
  for (const std::string& p : paths) {
    std::error_code ec;
    const std::filesystem::path given = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
    if (ec || !std::filesystem::exists(given, ec)) continue;
    const bool selected = std::any_of(run.files.begin(), run.files.end(), [&](const FileReport& f) {
      const std::filesystem::path rel = f.file->source.path().lexically_relative(given);
      return !rel.empty() && *rel.begin() != "..";
    });
    if (!selected) {
      const auto first_left_out = std::find_if(left_out.begin(), left_out.end(), [&](const InputFile& f) {
        const std::filesystem::path rel = f.path.lexically_relative(given);
        return !rel.empty() && *rel.begin() != "..";
      });
      const ExcludePatterns* by =
          first_left_out == left_out.end() ? nullptr : excluded_by(exclude, first_left_out->path);
      std::cerr << "kvpatch: warning: " << p << ": no file here uses BatchMLAPagedAttentionWrapper"
                << (by != nullptr ? " outside those excluded by " + by->origin : std::string())
                << "; nothing checked\n";
    }
  }
}

// FlashInfer (0.6.14 and later; older releases cannot build it at all) serves the plan apply just threaded, a BF16
// query with an FP8 KV cache, on SM90 GPUs only: elsewhere the patched backend fails at plan(). Only the sm90 form
// gates it; with the others the user should know before deploying. The original form also plans an E5M2 cache as
// E5M2, which FlashInfer 0.6.14 to 0.7.4 refused on the H200 for SGLang 0.5.16-0.5.23
// (tests/kernels/sglang_release_backend_test.py); the other two forms keep the cast for it.
void note_where_the_plan_runs(const Run& run, const RuleSet& rules) {
  const auto form = rules.parameters.find("kv_dtype_form");
  if (form != rules.parameters.end() && form->second == "sm90") return;
  const bool original_form = form == rules.parameters.end() || form->second == "original";
  const bool threaded = std::any_of(run.files.begin(), run.files.end(), [](const FileReport& f) {
    return std::any_of(f.plan_sites.begin(), f.plan_sites.end(),
                       [](const PlanSite& s) { return s.fix.has_value() && !s.fix_gated; });
  });
  if (!threaded) return;
  std::cerr << "kvpatch: note: the threaded plan() calls plan an FP8 KV cache as FP8 on every GPU, and FlashInfer "
               "serves that plan on SM90 GPUs only: on any other GPU the patched backend fails at its first plan(). "
               "To serve other GPUs as well, patch the original files with --kv-dtype-form sm90 (or kv-dtype-form = "
               "\"sm90\" in the project's .kvpatch.toml), which keeps the casts there (patcher/README.md, \"Where the "
               "patched backend runs\")\n";
  if (original_form) {
    std::cerr << "kvpatch: note: this form (original) also plans an FP8 E5M2 cache as E5M2, which FlashInfer's MLA "
                 "wrapper refuses with a BF16 query (0.6.14 to 0.7.4 refused it; their fa2 and fa3 take FP16, BF16 and "
                 "E4M3 KV only): a server run with --kv-cache-dtype fp8_e5m2 fails at its first plan(). The upstream "
                 "and sm90 forms keep the cast for such caches\n";
  }
}

// The deepest directory that holds every PATH (a file counts as its directory): where the configuration is looked for.
std::filesystem::path common_directory(const std::vector<std::string>& paths) {
  std::optional<std::filesystem::path> common;
  for (const std::string& p : paths) {
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
    if (!std::filesystem::is_directory(dir, ec)) dir = dir.parent_path();
    if (!common) {
      common = dir;
      continue;
    }
    std::filesystem::path shared;
    for (auto a = common->begin(), b = dir.begin(); a != common->end() && b != dir.end() && *a == *b; ++a, ++b) {
      shared /= *a;
    }
    common = shared;
  }
  return common ? *common : std::filesystem::current_path();
}

// The inputs the PATHs name, less the files the project's `exclude` leaves out of the directories walked (a file
// named on the command line is read anyway, as ruff does); `left_out` gets those.
InputSet project_inputs(const Options& options, const std::vector<ExcludePatterns>& exclude, bool repository_paths,
                        std::vector<InputFile>* left_out = nullptr) {
  const std::optional<std::filesystem::path> root =
      options.root.empty() ? std::nullopt : std::optional<std::filesystem::path>(options.root);
  InputSet inputs = collect_inputs(options.paths, root, repository_paths);
  if (exclude.empty()) return inputs;
  std::erase_if(inputs.files, [&](const InputFile& f) {
    const bool out = !f.named && excluded_by(exclude, f.path) != nullptr;
    if (out && left_out != nullptr) left_out->push_back(f);
    return out;
  });
  std::erase_if(inputs.context, [&](const InputFile& f) { return excluded_by(exclude, f.path) != nullptr; });
  return inputs;
}

int run_command(const std::string& command, const Options& options) {
  const std::filesystem::path start = common_directory(options.paths);
  const std::optional<Loaded> loaded = load_rules(options, start);
  if (!loaded) return kUsageOrInput;
  if (options.show_settings) {
    print_settings(*loaded, options, start);
    return kClean;
  }
  const RuleSet& rules = loaded->rules;
  const bool repository_paths = options.format == "github" || options.format == "sarif";
  std::vector<InputFile> left_out;
  const InputSet inputs = project_inputs(options, loaded->exclude, repository_paths, &left_out);
  Run run = analyze_inputs(rules, inputs);
  // diff's exit code says only whether there are edits, so there they stay warnings whatever the setting.
  run.ignore_problems_fail = command != "diff" && loaded->unused_ignores_error;
  print_errors(run.errors);
  const bool input_errors = !run.errors.empty();
  if (!input_errors) warn_unselected_paths(options.paths, run, left_out, loaded->exclude);
  warn_ignore_comments(run);
  const bool nearer = report_nearer_settings(run, options, loaded->config,
                                             command == "apply" ? SettingsUse::Apply : SettingsUse::Report);

  if (command == "check") {
    print_report(run, rules, options, true);
    if (input_errors) return kUsageOrInput;
    return has_findings(summarize(run)) && !options.exit_zero ? kFindings : kClean;
  }
  if (command == "diff") {
    // diff prints what apply would write, and apply writes nothing while an input cannot be read: a partial diff
    // piped to `git apply` would be the partial multi-file apply that apply refuses. The other files' edits could
    // also change once the unread file is seen (a cast there can hold their plan sites back).
    if (input_errors) {
      print_error("no diff was printed; fix the errors above and run diff again");
      return kUsageOrInput;
    }
    // Nor a diff that would break a file: `git apply` would write what apply refuses to (edited_code_check.h).
    bool broken = false;
    for (const FileReport& f : run.files) {
      if (auto error = code_broken_by_edits(f, "no diff was printed")) {
        print_errors({*error});
        broken = true;
      }
    }
    if (broken) return kUsageOrInput;
    const bool color = cli::color_wanted(options.color, STDOUT_FILENO);
    bool any = false;
    for (const FileReport& f : run.files) {
      const std::string diff = unified_diff(f);
      any |= !diff.empty();
      std::cout << (color ? cli::colorize_diff(diff) : diff);
    }
    return any && !options.exit_zero ? kFindings : kClean;
  }
  // apply: nothing is written unless every input is readable, every file can be patched, and by its own settings.
  if (input_errors || nearer) {
    print_error("nothing was written; fix the errors above and run apply again");
    return kUsageOrInput;
  }
  std::vector<const FileReport*> reports;
  for (const FileReport& f : run.files) reports.push_back(&f);
  const ApplyResult result = apply_files(reports);
  print_errors(result.errors);
  for (const AppliedFile& p : result.patched) {
    std::cout << "patched " << p.display_path << " (" << p.edits << (p.edits == 1 ? " edit)" : " edits)") << "\n";
  }
  for (const AppliedFile& p : result.patched) {
    if (!p.ownership_changed.empty()) std::cerr << "kvpatch: warning: " << p.display_path << ": " << p.ownership_changed << "\n";
  }
  std::cout.flush();  // the notes below go to stderr: keep them after these lines when both streams share a log
  if (!result.errors.empty()) return kUsageOrInput;
  if (result.patched.empty()) std::cerr << "kvpatch: nothing to patch\n";
  note_where_the_plan_runs(run, rules);
  // What apply cannot fix (unknown sites, sites blocked by required casts or run() inputs) is still a finding.
  Run after = result.patched.empty() ? run : analyze_inputs(rules, project_inputs(options, loaded->exclude, false));
  after.ignore_problems_fail = loaded->unused_ignores_error;
  const Summary left = summarize(after);
  if (!has_findings(left)) return kClean;
  const int count = finding_count(left);
  std::cerr << "kvpatch: " << count << (count == 1 ? " finding remains" : " findings remain")
            << " that apply cannot fix; run kvpatch check to see them\n";
  return options.exit_zero ? kClean : kFindings;
}
}  // namespace

namespace {
int run_main(int argc, char** argv) {
  CLI::App app{"kvpatch: thread kv_data_type into FlashInfer MLA plan() calls and drop the redundant KV casts"};
  app.set_version_flag("--version", std::string("kvpatch ") + KVPATCH_VERSION);
  app.require_subcommand(1);
  Options options;
  options.argv0 = argc > 0 ? argv[0] : "kvpatch";
  CLI::App* check = app.add_subcommand("check", "report every MLA plan() site, KV field and KV cast (exit 1 when findings remain)");
  CLI::App* diff = app.add_subcommand("diff", "print the edits as a unified diff; no file is touched (exit 1 when there are edits)");
  CLI::App* apply = app.add_subcommand(
      "apply", "write the edits in place, atomically and all-or-nothing (exit 1 when findings remain that it cannot fix)");
  for (CLI::App* command : {check, diff, apply}) {
    add_common_options(command, options);
    add_show_settings_option(command, options);
  }
  for (CLI::App* command : {check, diff, apply}) add_exclude_options(command, options);
  add_exit_zero_option(check, options, "findings remain");
  add_exit_zero_option(diff, options, "there are edits");
  add_exit_zero_option(apply, options, "findings remain that it cannot fix");
  for (CLI::App* command : {check, apply}) add_unused_ignores_option(command, options);
  check->add_option("--format", options.format, kFormatHelp)->check(CLI::IsMember(kFormats));
  add_color_option(check, options, "the text report's status words");
  add_color_option(diff, options, "the diff as git does");
  CLI::App* pre_commit = app.add_subcommand(
      "pre-commit", "check the STAGED content of the added and modified *.py files (exit 1 when findings remain)");
  CLI::App* install_hook = app.add_subcommand(
      "install-hook", "write the git pre-commit hook that runs `kvpatch pre-commit` (never over a hook of yours)");
  CLI::App* uninstall_hook =
      app.add_subcommand("uninstall-hook", "remove the kvpatch pre-commit hook and restore the hook it replaced");
  for (CLI::App* command : {pre_commit, install_hook, uninstall_hook}) {
    command->add_option("--repo", options.repo, "a directory in the git work tree (default: $GIT_DIR, else the current directory)");
  }
  pre_commit->add_option("--rules", options.rules_dir, "rules directory (default: $KVPATCH_RULES_DIR, the installed rules, or the source tree's rules/)");
  pre_commit->add_option("--set", options.sets, "override a rule parameter, NAME=VALUE (repeatable)");
  add_flashinfer_option(pre_commit, options);
  add_config_options(pre_commit, options);
  add_show_settings_option(pre_commit, options);
  pre_commit->add_option("--format", options.format, kFormatHelp)->check(CLI::IsMember(kFormats));
  add_color_option(pre_commit, options, "the text report's status words");
  pre_commit->add_flag("--all", options.all, "check every tracked *.py in the index, not only the staged changes");
  add_exclude_options(pre_commit, options);
  add_exit_zero_option(pre_commit, options, "the staged content has findings (report only; the commit goes ahead)");
  add_unused_ignores_option(pre_commit, options);
  CLI::App* rule = app.add_subcommand("rule", "explain a finding id from a report (all of them, one line each, without ID)");
  rule->add_option("ID", options.rule_id, "a finding id, e.g. flashinfer-mla-kv-run-input");
  rule->add_option("--rules", options.rules_dir, "rules directory (default: as for check)");
  add_config_options(rule, options);
  install_hook->add_flag("--force", options.force,
                         "keep an existing hook as pre-commit.kvpatch-backup and run it before kvpatch");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsageOrInput;
  }
  if (app.got_subcommand(pre_commit)) return run_pre_commit(options);
  if (app.got_subcommand(rule)) return run_rule_command(options);
  if (app.got_subcommand(install_hook)) return run_hook_command("install-hook", options);
  if (app.got_subcommand(uninstall_hook)) return run_hook_command("uninstall-hook", options);
  const std::string command = app.got_subcommand(check) ? "check" : app.got_subcommand(diff) ? "diff" : "apply";
  return run_command(command, options);
}
}  // namespace

// Bad input is reported where it is found, as InputError with file, line and remedy. Anything else that
// reaches here is a kvpatch bug: say so in one line and exit 2, as ruff does, rather than abort with
// std::terminate's message and a core dump.
int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kvpatch: internal error: " << e.what()
              << "; this is a bug in kvpatch: please report it with the command that caused it\n";
  } catch (...) {
    std::cerr << "kvpatch: internal error (a non-standard exception); this is a bug in kvpatch: please report it"
                 " with the command that caused it\n";
  }
  return kUsageOrInput;
}
