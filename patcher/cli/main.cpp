// kvpatch: check, diff and apply the FlashInfer MLA kv_data_type patch; check staged content in a
// git pre-commit hook. Exit codes: 0 clean, 1 findings remain (check, pre-commit) or edits exist
// (diff), 2 usage or input errors.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>

#include "command_line.h"
#include "commands.h"
#include "messages.h"
#include "options.h"

namespace {
using namespace kvpatch::cli;

int run_main(int argc, char** argv) {
  CLI::App app{"kvpatch: thread kv_data_type into FlashInfer MLA plan() calls and drop the redundant KV casts"};
  app.set_version_flag("--version", std::string("kvpatch ") + KVPATCH_VERSION);
  app.require_subcommand(1);
  Options options;
  options.argv0 = argc > 0 ? argv[0] : "kvpatch";
  const Subcommands s = define_subcommands(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsageOrInput;
  }
  // A settings file's output-format gives way to --format (settings.h).
  for (const CLI::App* command : app.get_subcommands()) {
    if (const CLI::Option* format = command->get_option_no_throw("--format")) options.format_given = format->count() > 0;
  }
  // Statistics are rows of counts: the CI formats' readers want findings at lines.
  if (options.statistics && options.format != "text" && options.format != "json") {
    print_error("--statistics prints text or JSON, not --format " + options.format + "; drop one of the two");
    return kUsageOrInput;
  }
  if (app.got_subcommand(s.pre_commit)) return run_pre_commit(options);
  if (app.got_subcommand(s.rule)) return run_rule_command(options);
  if (app.got_subcommand(s.install_hook)) return run_hook_command("install-hook", options);
  if (app.got_subcommand(s.uninstall_hook)) return run_hook_command("uninstall-hook", options);
  const std::string command = app.got_subcommand(s.check) ? "check" : app.got_subcommand(s.diff) ? "diff" : "apply";
  return run_source_command(command, options);
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
