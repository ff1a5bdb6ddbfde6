// What each subcommand does once its options are parsed; each returns the exit code (options.h).
#pragma once

#include <string>

#include "options.h"

namespace kvpatch::cli {

// check, diff or apply over the PATHs.
int run_source_command(const std::string& command, const Options& options);
// pre-commit: the staged content of the repository.
int run_pre_commit(const Options& options);
// install-hook or uninstall-hook.
int run_hook_command(const std::string& command, const Options& options);
// rule [ID].
int run_rule_command(const Options& options);

}  // namespace kvpatch::cli
