#include "settings.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <regex>
#include <utility>

#include "kvpatch/input_error.h"
#include "kvpatch/nearer_settings.h"
#include "kvpatch/python_syntax.h"
#include "messages.h"

namespace kvpatch::cli {
namespace {
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

// What the run ignores per file: --per-file-ignores instead of the settings file's entries, --extend-per-file-ignores
// besides them, as --exclude and --extend-exclude do.
std::vector<PerFileIgnores> run_per_file_ignores(const Options& options, const std::optional<ProjectConfig>& config) {
  std::vector<PerFileIgnores> out;
  if (options.per_file_ignores.empty() && config) out = config_per_file_ignores(*config);
  for (const auto& [option, given] : {std::pair{"--per-file-ignores", &options.per_file_ignores},
                                      std::pair{"--extend-per-file-ignores", &options.extend_per_file_ignores}}) {
    for (const std::string& text : *given) {
      out.push_back(per_file_ignores_option(option, text, std::filesystem::current_path()));
    }
  }
  return out;
}

// ruff's select and ignore as entries of every file, in ruff's order: --select replaces the settings file's select
// and its ignore, --ignore adds to what is left. Throws InputError for an id no rule reports.
std::vector<PerFileIgnores> run_rule_selection(const Options& options, const std::optional<ProjectConfig>& config,
                                               const RuleSet& rules) {
  const auto given = [](const std::string& option, const std::vector<std::string>& ids) {
    std::string text = option + " ";
    for (std::size_t i = 0; i < ids.size(); ++i) text += (i == 0 ? "" : ",") + ids[i];
    return text;
  };
  std::vector<PerFileIgnores> out;
  if (!options.select.empty()) {
    out.push_back(every_file_entry("select", options.select, given("--select", options.select), 0, rules));
  } else if (config) {
    const std::string file = config->file.string();
    if (config->select) out.push_back(every_file_entry("select", *config->select, file, config->select_line, rules));
    if (!config->ignore.empty()) {
      out.push_back(every_file_entry("ignore", config->ignore, file, config->ignore_line, rules));
    }
  }
  if (!options.ignore.empty()) {
    out.push_back(every_file_entry("ignore", options.ignore, given("--ignore", options.ignore), 0, rules));
  }
  return out;
}
}  // namespace

std::filesystem::path own_binary(const std::string& argv0) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::absolute(argv0) : self;
}

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
    loaded.rules.per_file_ignores = run_per_file_ignores(options, config);
    for (PerFileIgnores& entry : run_rule_selection(options, config, loaded.rules)) {
      loaded.rules.per_file_ignores.push_back(std::move(entry));
    }
    require_known_ids(loaded.rules.per_file_ignores, loaded.rules);
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

Options run_options(const Options& given, const Loaded& loaded) {
  Options options = given;
  if (!loaded.config) return options;
  const ProjectConfig& config = *loaded.config;
  if (!given.format_given && !given.diff && !config.output_format.empty()) {
    options.format = given.statistics && config.output_format != "json" ? "text" : config.output_format;
  }
  if (!given.show_fixes && !given.no_show_fixes && config.show_fixes) options.show_fixes = *config.show_fixes;
  return options;
}

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
  // The two report keys, as this command would use them.
  const Options used = run_options(options, loaded);
  const auto key_origin = [&](int line) { return loaded.config->file.string() + ":" + std::to_string(line); };
  const bool format_from_file = loaded.config && !options.format_given && used.format == loaded.config->output_format;
  std::cout << "output format: " << used.format
            << (options.format_given     ? "  [--format]"
                : format_from_file       ? "  [" + key_origin(loaded.config->output_format_line) + "]"
                                         : std::string("  (the default)"))
            << "\n";
  const bool fixes_from_file = loaded.config && loaded.config->show_fixes && !options.show_fixes && !options.no_show_fixes;
  std::cout << "show fixes: " << (used.show_fixes ? "true" : "false")
            << (options.show_fixes      ? "  [--show-fixes]"
                : options.no_show_fixes ? "  [--no-show-fixes]"
                : fixes_from_file       ? "  [" + key_origin(loaded.config->show_fixes_line) + "]"
                                        : std::string("  (the default)"))
            << "\n";
  std::cout << "per-file ignores:" << (loaded.rules.per_file_ignores.empty() ? " none" : "") << "\n";
  for (const PerFileIgnores& entry : loaded.rules.per_file_ignores) {
    std::string ids;
    for (const std::string& id : entry.ids) ids += (ids.empty() ? "" : ", ") + id;
    if (ids.empty()) ids = "(none)";  // a select of every rule
    if (entry.every_file) {
      std::cout << "  every file: " << ids << "  [" << entry.reason() << "]\n";
    } else {
      std::cout << "  " << entry.paths.patterns.front() << ": " << ids << "  [" << entry.origin() << ", relative to "
                << entry.paths.base.string() << "]\n";
    }
  }
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
    if (!apply && !says_what_is_wrong(options)) continue;  // a warning: -s drops it; apply's error stops the run
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

}  // namespace kvpatch::cli
