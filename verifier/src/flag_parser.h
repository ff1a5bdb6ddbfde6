// Hand-written command-line parser for kvverify (no CLI library on the GPU machine).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "options.h"

namespace kvverify {

// A bad flag or value; what() names the flag and the fix. kvverify exits 2 on it.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses argv[1..] ("--flag value" or "--flag=value"); throws UsageError.
Options parse_flags(const std::vector<std::string>& args);

// --help text, exit codes included.
std::string help_text();

}  // namespace kvverify
