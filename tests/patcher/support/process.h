// Runs a child process (the kvpatch binary, git, python3) and captures what it printed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kvpatch_test {

struct ProcessResult {
  int exit_code = -1;  // the child's exit status; 128 + signal when it was killed by one
  std::string out;     // everything written to stdout
  std::string err;     // everything written to stderr
};

struct ProcessOptions {
  std::filesystem::path working_dir;  // empty: inherit
  bool drop_root_privileges = false;   // when run as root, run the child as nobody (permission tests)
  std::optional<std::string> stdin_text = std::nullopt;  // what the child reads on standard input; nullopt: /dev/null
};

// Runs argv[0] (a path, or a name looked up in PATH) with the rest as arguments.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// One line for a failure message: the command, its exit code, and its stderr.
std::string describe(const std::vector<std::string>& argv, const ProcessResult& result);

}  // namespace kvpatch_test
