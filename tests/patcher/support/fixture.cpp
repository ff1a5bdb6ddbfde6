#include "fixture.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "files.h"

namespace kvpatch_test {
namespace {

std::string trim(const std::string& s) {
  const char* space = " \t\r\n";
  std::size_t b = s.find_first_not_of(space);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(space) + 1 - b);
}

int exit_code_value(const std::string& where, const std::string& key, const std::string& value) {
  if (value == "0" || value == "1" || value == "2") return value[0] - '0';
  throw std::runtime_error(where + ": " + key + " must be 0, 1 or 2, not '" + value + "'");
}

}  // namespace

Fixture load_fixture(const std::filesystem::path& dir) {
  const std::filesystem::path cfg = dir / "fixture.cfg";
  std::map<std::string, std::string> values;
  int line_no = 0;
  for (const std::string& raw : split_lines_keep_ends(read_bytes(cfg))) {
    ++line_no;
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    std::size_t eq = line.find('=');
    if (eq == std::string::npos) {
      throw std::runtime_error(cfg.string() + ":" + std::to_string(line_no) + ": expected key = value");
    }
    values[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  auto take = [&](const std::string& key) {
    auto it = values.find(key);
    if (it == values.end()) throw std::runtime_error(cfg.string() + ": missing key '" + key + "'");
    return it->second;
  };
  Fixture f;
  f.dir = std::filesystem::absolute(dir);
  f.name = f.dir.filename().string();
  f.input = take("input");
  f.source_dir = f.dir;
  if (auto it = values.find("input_from"); it != values.end()) f.source_dir = f.dir.parent_path() / it->second;
  f.check_exit = exit_code_value(cfg.string(), "check_exit", take("check_exit"));
  f.diff_exit = exit_code_value(cfg.string(), "diff_exit", take("diff_exit"));
  f.apply_exit = exit_code_value(cfg.string(), "apply_exit", take("apply_exit"));
  f.recheck_exit = exit_code_value(cfg.string(), "recheck_exit", take("recheck_exit"));
  if (auto it = values.find("options"); it != values.end()) {
    std::istringstream words(it->second);
    for (std::string word; words >> word;) f.options.push_back(word);
  }
  if (!std::filesystem::is_regular_file(f.input_path())) {
    throw std::runtime_error(cfg.string() + ": input file " + f.input_path().string() + " does not exist");
  }
  return f;
}

std::vector<std::string> Fixture::command(const std::string& subcommand, const std::vector<std::string>& rest) const {
  std::vector<std::string> args{subcommand};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

void Fixture::stage(const std::filesystem::path& into) const {
  write_bytes(into / input, read_bytes(input_path()));
  if (std::filesystem::exists(dir / "pyproject.toml")) {
    write_bytes(into / "pyproject.toml", read_bytes(dir / "pyproject.toml"));
  }
}

}  // namespace kvpatch_test
