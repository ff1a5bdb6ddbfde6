// A fixture directory (fixtures/<name>/) and the expectations in its fixture.cfg.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kvpatch_test {

struct Fixture {
  std::string name;            // the directory name
  std::filesystem::path dir;   // absolute path of fixtures/<name>
  std::string input;           // the backend source file's name
  // Where the input is read: dir, or with `input_from = <fixture>` that fixture's directory, for a fixture that
  // runs another's backend under other options or another FlashInfer pin (no copy of the source to drift).
  std::filesystem::path source_dir;
  int check_exit = -1;         // `kvpatch check` on the fixture as written
  int diff_exit = -1;          // `kvpatch diff`
  int apply_exit = -1;         // `kvpatch apply`
  int recheck_exit = -1;       // `kvpatch check` after apply (1 when unknown sites remain)
  std::vector<std::string> options;  // extra options for every command, e.g. --kv-dtype-form upstream

  // Refused inputs (syntax errors, bad encodings): every command exits 2 and nothing is edited.
  bool refused() const { return check_exit == 2; }
  std::filesystem::path input_path() const { return source_dir / input; }

  // Writes the input into dir, with the fixture's pyproject.toml beside it when it has one: the FlashInfer
  // pin kvpatch reads, as it reads python/pyproject.toml in an SGLang checkout.
  void stage(const std::filesystem::path& into) const;

  // argv after the binary: the subcommand, the fixture's options, then the extra arguments and path.
  std::vector<std::string> command(const std::string& subcommand, const std::vector<std::string>& rest) const;
};

// Reads dir/fixture.cfg; throws naming file and line on a malformed or incomplete one.
Fixture load_fixture(const std::filesystem::path& dir);

}  // namespace kvpatch_test
