#include "kvpatch/project_config.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>
#include <vector>

#include "kvpatch/input_error.h"
#include "kvpatch/report.h"

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
const char* const kKeys =
    "kv-dtype-form, flashinfer-version, rules, exclude, unused-ignores, output-format, show-fixes, parameters, "
    "per-file-ignores, select, ignore";

std::string read_text(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    throw InputError(file.string(), 0, "no such configuration file", "check the path given to --config");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), 0, "cannot read the kvpatch configuration", "check the file's permissions");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool is_pyproject(const fs::path& file) { return file.filename() == "pyproject.toml"; }

// Whether a pyproject.toml holds kvpatch settings. One that never mentions kvpatch is not parsed, so that a TOML
// quirk in another project's file never stops a run that does not concern it; one that mentions kvpatch but does
// not parse counts, so that reading it reports where it is broken.
bool holds_kvpatch_settings(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return false;
  std::string text;
  try {
    text = read_text(file);
  } catch (const InputError&) {
    return false;
  }
  if (text.find("kvpatch") == std::string::npos) return false;
  try {
    return toml::parse(text, file.string())["tool"]["kvpatch"].is_table();
  } catch (const toml::parse_error&) {
    return true;
  }
}

int line_of(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

// The string a key holds; anything else is an error at its line.
std::string string_value(const fs::path& file, const std::string& key, const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  throw InputError(file.string(), line_of(node), "'" + key + "' must be a string", "quote the value, e.g. " + key +
                                                                                       " = \"...\"");
}

class Reader {
public:
  explicit Reader(fs::path file) : file_(std::move(file)) { config_.file = file_; }

  ProjectConfig read(const toml::table& settings) {
    for (auto&& [key, node] : settings) {
      const std::string name(key.str());
      const int line = static_cast<int>(key.source().begin.line);
      if (name == "kv-dtype-form") {
        add("kv_dtype_form", string_value(file_, name, node), line, name);
      } else if (name == "flashinfer-version") {
        add("flashinfer_version", string_value(file_, name, node), line, name);
      } else if (name == "rules") {
        const fs::path dir = string_value(file_, name, node);
        config_.rules_dir = dir.is_absolute() ? dir : (file_.parent_path() / dir).lexically_normal();
        std::error_code ec;
        if (!fs::is_directory(config_.rules_dir, ec)) {
          throw InputError(file_.string(), line, "rules directory " + config_.rules_dir.string() + " not found",
                           "give a directory of kvpatch rule files, relative to this file");
        }
      } else if (name == "exclude") {
        const toml::array* patterns = node.as_array();
        if (patterns == nullptr) {
          throw InputError(file_.string(), line, "'exclude' must be a list of path patterns",
                           "write exclude = [\"test\", \"benchmark/*.py\"]");
        }
        for (const toml::node& p : *patterns) {
          const std::string pattern = string_value(file_, "exclude", p);
          const std::optional<std::string> kept = exclude_pattern(pattern);
          if (!kept) {
            throw InputError(file_.string(), line_of(p), "exclude pattern '" + pattern + "' is empty or absolute",
                             "write it relative to this file's directory, e.g. \"test\"");
          }
          config_.exclude.push_back(*kept);
        }
      } else if (name == "unused-ignores") {
        config_.unused_ignores = string_value(file_, name, node);
        config_.unused_ignores_line = line;
        if (config_.unused_ignores != "warn" && config_.unused_ignores != "error") {
          throw InputError(file_.string(), line, "'unused-ignores' is '" + config_.unused_ignores + "'",
                           "write unused-ignores = \"warn\" (the default) or \"error\" (each ignore comment that "
                           "suppresses nothing is a finding)");
        }
      } else if (name == "output-format") {
        output_format(node, line);
      } else if (name == "show-fixes") {
        const auto* flag = node.as_boolean();
        if (flag == nullptr) {
          throw InputError(file_.string(), line, "'show-fixes' must be true or false",
                           "write show-fixes = true (unquoted), as ruff's key of that name");
        }
        config_.show_fixes = flag->get();
        config_.show_fixes_line = line;
      } else if (name == "per-file-ignores") {
        per_file_ignores(node, line);
      } else if (name == "select") {
        config_.select = rule_ids(name, node, line);
        config_.select_line = line;
      } else if (name == "ignore") {
        config_.ignore = rule_ids(name, node, line);
        config_.ignore_line = line;
      } else if (name == "parameters") {
        const toml::table* table = node.as_table();
        if (table == nullptr) {
          throw InputError(file_.string(), line, "'parameters' must be a table of rule parameters",
                           "write [" + std::string(is_pyproject(file_) ? "tool.kvpatch." : "") +
                               "parameters] and NAME = \"VALUE\" lines under it");
        }
        for (auto&& [parameter, value] : *table) {
          const std::string p(parameter.str());
          add(p, string_value(file_, p, value), static_cast<int>(parameter.source().begin.line), "parameters." + p);
        }
      } else {
        std::string dashed = name;
        std::replace(dashed.begin(), dashed.end(), '_', '-');
        if (dashed == "format") dashed = "output-format";  // the command line's --format
        const bool known = dashed == "kv-dtype-form" || dashed == "flashinfer-version" ||
                           dashed == "unused-ignores" || dashed == "per-file-ignores" ||
                           dashed == "output-format" || dashed == "show-fixes";
        throw InputError(file_.string(), line, "unknown kvpatch setting '" + name + "'",
                         known ? "write it " + dashed +
                                     (dashed == "per-file-ignores" || dashed == "output-format" ||
                                              dashed == "show-fixes"
                                          ? ", as ruff spells its own"
                                                                   : ", as the command-line option is spelled")
                               : std::string("the settings are ") + kKeys +
                                     " (other rule parameters go in the parameters table)");
      }
    }
    return config_;
  }

private:
  // output-format: one of the report forms, as --format takes them; ruff's `concise` is kvpatch's text.
  void output_format(const toml::node& node, int line) {
    std::string format = string_value(file_, "output-format", node);
    if (format == "concise") format = "text";
    const std::vector<std::string>& names = report_format_names();
    if (std::find(names.begin(), names.end(), format) == names.end()) {
      std::string listed;
      for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
      throw InputError(file_.string(), line, "'output-format' is '" + format + "', which kvpatch does not print",
                       "write one of " + listed + " (or concise, ruff's name for text)");
    }
    config_.output_format = format;
    config_.output_format_line = line;
  }

  // [per-file-ignores]: "pattern" = ["RULE-ID", ...]. Whether each id is one a rule reports is known only once
  // the rules are loaded (per_file_ignores.h).
  void per_file_ignores(const toml::node& node, int line) {
    const std::string table = is_pyproject(file_) ? "tool.kvpatch.per-file-ignores" : "per-file-ignores";
    const toml::table* entries = node.as_table();
    if (entries == nullptr) {
      throw InputError(file_.string(), line, "'per-file-ignores' must be a table of path patterns",
                       "write [" + table + "] and \"PATTERN\" = [\"RULE-ID\"] lines under it");
    }
    for (auto&& [key, value] : *entries) {
      const std::string pattern(key.str());
      const int at = static_cast<int>(key.source().begin.line);
      const std::optional<std::string> kept = exclude_pattern(pattern);
      if (!kept) {
        throw InputError(file_.string(), at, "per-file-ignores pattern '" + pattern + "' is empty or absolute",
                         "write it relative to this file's directory, e.g. \"test/**\"");
      }
      const toml::array* ids = value.as_array();
      if (ids == nullptr || ids->empty()) {
        throw InputError(file_.string(), at, "per-file-ignores \"" + pattern + "\" must list rule ids",
                         "write \"" + pattern + "\" = [\"RULE-ID\"] (`kvpatch rule` lists the ids)");
      }
      PerFileIgnore entry{*kept, {}, at};
      for (const toml::node& id : *ids) entry.ids.push_back(string_value(file_, "per-file-ignores", id));
      config_.per_file_ignores.push_back(std::move(entry));
    }
  }

  // select / ignore: a list of rule ids (`kvpatch rule` lists them); whether each is one a rule reports is known
  // only once the rules are loaded (per_file_ignores.h). An empty select selects nothing, as ruff's does.
  std::vector<std::string> rule_ids(const std::string& key, const toml::node& node, int line) {
    const toml::array* ids = node.as_array();
    if (ids == nullptr) {
      throw InputError(file_.string(), line, "'" + key + "' must be a list of rule ids",
                       "write " + key + " = [\"flashinfer-mla-run-kv-scales\"] (`kvpatch rule` lists the ids)");
    }
    std::vector<std::string> out;
    for (const toml::node& id : *ids) out.push_back(string_value(file_, key, id));
    return out;
  }

  // kv-dtype-form and parameters.kv_dtype_form name one parameter: given both ways, which wins would be a guess.
  void add(const std::string& parameter, const std::string& value, int line, const std::string& key) {
    auto [it, added] = config_.parameters.emplace(parameter, ParameterOverride{value, file_.string(), line});
    if (!added) {
      throw InputError(file_.string(), line, "'" + key + "' sets rule parameter " + parameter + ", already set at line " +
                                                 std::to_string(it->second.line),
                       "keep one of the two");
    }
  }

  fs::path file_;
  ProjectConfig config_;
};
}  // namespace

std::optional<fs::path> find_project_config(const fs::path& start) {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(start, ec), ec);
  if (ec) dir = start;
  for (;;) {
    for (const char* name : {".kvpatch.toml", "kvpatch.toml"}) {
      if (fs::is_regular_file(dir / name, ec)) return dir / name;
    }
    if (holds_kvpatch_settings(dir / "pyproject.toml")) return dir / "pyproject.toml";
    if (!dir.has_parent_path() || dir.parent_path() == dir) return std::nullopt;
    dir = dir.parent_path();
  }
}

ExcludePatterns config_exclude_patterns(const ProjectConfig& config) {
  return {fs::absolute(config.file).parent_path(), config.exclude, config.file.string()};
}

std::vector<PerFileIgnores> config_per_file_ignores(const ProjectConfig& config) {
  std::vector<PerFileIgnores> out;
  const fs::path base = fs::absolute(config.file).parent_path();
  for (const PerFileIgnore& entry : config.per_file_ignores) {
    out.push_back({{base, {entry.pattern}, config.file.string()}, entry.ids, entry.line, "per-file-ignores", false});
  }
  return out;
}

ProjectConfig read_project_config(const fs::path& file) {
  const std::string text = read_text(file);
  toml::table doc;
  try {
    doc = toml::parse(text, file.string());
  } catch (const toml::parse_error& e) {
    throw InputError(file.string(), static_cast<int>(e.source().begin.line),
                     "malformed TOML: " + std::string(e.description()), "fix the TOML syntax",
                     static_cast<int>(e.source().begin.column));
  }
  if (!is_pyproject(file)) return Reader(file).read(doc);
  const toml::node_view<toml::node> settings = doc["tool"]["kvpatch"];
  if (!settings) {
    throw InputError(file.string(), 0, "no [tool.kvpatch] table", "add one, or name another configuration file");
  }
  if (!settings.is_table()) {
    throw InputError(file.string(), line_of(*settings.node()), "tool.kvpatch must be a table",
                     "write the settings under [tool.kvpatch]");
  }
  return Reader(file).read(*settings.as_table());
}

}  // namespace kvpatch
