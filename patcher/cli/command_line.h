// kvpatch's subcommands and their options, as CLI11 parses them into Options.
#pragma once

#include <CLI/CLI.hpp>

#include "options.h"

namespace kvpatch::cli {

struct Subcommands {
  CLI::App* check = nullptr;
  CLI::App* diff = nullptr;
  CLI::App* apply = nullptr;
  CLI::App* pre_commit = nullptr;
  CLI::App* install_hook = nullptr;
  CLI::App* uninstall_hook = nullptr;
  CLI::App* rule = nullptr;
};

// Adds every subcommand to `app`, each option writing into `options` (which must outlive the parse).
Subcommands define_subcommands(CLI::App& app, Options& options);

}  // namespace kvpatch::cli
