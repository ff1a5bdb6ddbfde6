#include "command_line.h"

#include <map>
#include <string>
#include <vector>

#include "kvpatch/report.h"

namespace kvpatch::cli {
namespace {
constexpr const char* kFormatHelp =
    "report format (--output-format: the same, as ruff spells it; default: the settings file's output-format, else text): text (or concise, ruff's name), full (text with each finding's source line and apply's fix for it), json, github (GitHub "
    "Actions annotations), gitlab (GitLab Code Quality), junit (JUnit XML, for CI test reports), rdjson (reviewdog, "
    "with apply's edits as suggested changes) or sarif (SARIF 2.1.0, for code scanning)";

// --format, also under ruff's name for it, --output-format, and with ruff's name for the one-line form, concise.
void add_format_option(CLI::App* command, Options& options) {
  command->add_option("--format,--output-format", options.format, kFormatHelp)
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"concise", "text"}}))
      ->check(CLI::IsMember(report_format_names()));
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
  // ruff's options of these names: one PATTERN:RULE-ID[,RULE-ID] per use, so the ids' commas are no delimiter.
  command->add_option("--per-file-ignores", options.per_file_ignores,
                      "PATTERN:RULE-ID[,RULE-ID...]: ignore those rules' findings in the files PATTERN matches, "
                      "relative to the current directory (repeatable), instead of the settings file's per-file-ignores")
      ->allow_extra_args(false);
  command->add_option("--extend-per-file-ignores", options.extend_per_file_ignores,
                      "PATTERN:RULE-ID[,RULE-ID...]: the same, besides the settings file's per-file-ignores")
      ->allow_extra_args(false);
  // ruff's --select and --ignore, in its order: --select replaces the settings file's select and ignore, --ignore
  // adds to what is left. The rules still run whole, so an edit never rests on a finding left unreported.
  command->add_option("--select", options.select,
                      "RULE-ID[,RULE-ID...]: only these rules' findings count (repeatable); the others' are "
                      "reported ignored, but for flashinfer-mla-kv-run-input, which only --ignore leaves out; instead "
                      "of the settings file's select and ignore")
      ->allow_extra_args(false)
      ->delimiter(',');
  command->add_option("--ignore", options.ignore,
                      "RULE-ID[,RULE-ID...]: these rules' findings are reported ignored in every file (repeatable), "
                      "besides the settings file's ignore")
      ->allow_extra_args(false)
      ->delimiter(',');
}

// ruff's --exit-zero: report, but let a CI step or a hook pass; input errors still exit 2.
void add_exit_zero_option(CLI::App* command, Options& options, const std::string& what) {
  command->add_flag("--exit-zero", options.exit_zero, "exit 0 even when " + what + " (errors still exit 2)");
}

// ruff's --exit-non-zero-on-fix: for a CI step that fixes and must still fail, so that the fix is committed rather
// than made on every run. It contradicts --exit-zero, as in ruff.
void add_exit_non_zero_on_fix_option(CLI::App* command, Options& options, const std::string& when) {
  CLI::Option* flag = command->add_flag("--exit-non-zero-on-fix", options.exit_non_zero_on_fix,
                                        "exit 1 when the edits changed a file (or standard input's text), even if no "
                                        "finding remains" + when);
  flag->excludes(command->get_option("--exit-zero"));
}

// ruff's --statistics: the shape of a large tree's findings at a glance, and how many apply would fix.
void add_statistics_option(CLI::App* command, Options& options) {
  command->add_flag("--statistics", options.statistics,
                    "print one line per rule and status with findings instead of one per finding: the count and how "
                    "many apply has an edit for ([*] all, [ ] none), then the summary line (with --format json: an "
                    "array of {rule, status, count, fixable}); text and json only");
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

// ruff's -q and -s, for scripts and hooks that act on the exit code: messages.h says what each leaves out.
// `still_given`: what -s leaves alone in this command, since it was asked for (a report file, patched text).
void add_quiet_options(CLI::App* command, Options& options, const std::string& still_given) {
  command->add_flag("-q,--quiet", options.quiet,
                    "print only what is wrong (findings, warnings, errors): a report for a person lists its findings "
                    "alone, without the summary line; no \"patched FILE\" lines, --show-fixes list, notes or hints");
  command->add_flag("-s,--silent", options.silent,
                    "print only the errors that stop the command (exit 2): the exit code says the rest" + still_given);
}

void add_show_settings_option(CLI::App* command, Options& options) {
  command->add_flag("--show-settings", options.show_settings,
                    "print the settings file, rules directory, exclude patterns and rule parameters this run would use, "
                    "and where each came from; read no source file");
}

void add_common_options(CLI::App* command, Options& options) {
  command->add_option("PATH", options.paths,
                      "Python files or directories (walked for *.py, hidden directories skipped), or - alone: one "
                      "file's source from standard input (see --stdin-filename; apply prints it patched)")
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
                      "(not for --format github, gitlab, junit, rdjson or sarif), else the git work tree holding the paths, else the "
                      "current directory)");
  add_config_options(command, options);
}

void add_color_option(CLI::App* command, Options& options, const std::string& what) {
  command->add_option("--color", options.color,
                      "color " + what + ": auto (the default: on a terminal, unless NO_COLOR is set), always or never")
      ->check(CLI::IsMember({"never", "auto", "always"}));
}
}  // namespace

Subcommands define_subcommands(CLI::App& app, Options& options) {
  Subcommands s;
  s.check = app.add_subcommand("check", "report every MLA plan() site, KV field and KV cast (exit 1 when findings remain)");
  s.diff = app.add_subcommand("diff", "print the edits as a unified diff; no file is touched (exit 1 when there are edits)");
  s.apply = app.add_subcommand(
      "apply", "write the edits in place, atomically and all-or-nothing (exit 1 when findings remain that it cannot fix)");
  for (CLI::App* command : {s.check, s.diff, s.apply}) {
    add_common_options(command, options);
    add_show_settings_option(command, options);
  }
  for (CLI::App* command : {s.check, s.diff, s.apply}) add_exclude_options(command, options);
  add_exit_zero_option(s.check, options, "findings remain");
  add_exit_zero_option(s.diff, options, "there are edits");
  add_exit_zero_option(s.apply, options, "findings remain that it cannot fix");
  for (CLI::App* command : {s.check, s.apply}) add_unused_ignores_option(command, options);
  add_exit_non_zero_on_fix_option(s.apply, options, "");
  add_exit_non_zero_on_fix_option(s.check, options, " (with --fix)");
  add_format_option(s.check, options);
  s.check->add_option("-o,--output-file", options.output_file,
                       "write the report to this file instead of stdout, whole or not at all (text uncolored unless "
                       "--color always); the exit code is as without it");
  add_color_option(s.check, options, "the text report's status words");
  add_statistics_option(s.check, options);
  // ruff's and clang-tidy's spelling of "fix what you can": for users whose hands type `check --fix`.
  s.check->add_flag("--fix", options.fix,
                    "write the edits as apply does (all files or none), then report what is left in --format's form; "
                    "exit 1 when findings remain");
  // ruff's --show-fixes: which findings the written edits fixed, where the "patched FILE" lines say only where.
  for (CLI::App* command : {s.check, s.apply}) {
    CLI::Option* show = command->add_flag(
        "--show-fixes", options.show_fixes,
        std::string(command == s.check ? "with --fix, list" : "list") +
            " the findings the edits fixed, per file, rule and status, after the patched files (show-fixes = true "
            "in the settings file: the same)");
    command->add_flag("--no-show-fixes", options.no_show_fixes, "do not, whatever the settings file's show-fixes says")
        ->excludes(show);
  }
  s.check->add_flag("--diff", options.diff,
                    "print the edits as a unified diff instead of a report, as diff does; nothing is written (exit 1 "
                    "when there are edits)");
  add_color_option(s.diff, options, "the diff as git does");
  for (CLI::App* command : {s.check, s.diff, s.apply}) {
    command->add_option("--stdin-filename", options.stdin_filename,
                        "with PATH -, the file the source read from standard input stands for (an editor's unsaved "
                        "buffer): reports name it, its settings and FlashInfer pin are looked up from it, and the "
                        "other modules of its directory are linked with it");
  }
  s.pre_commit = app.add_subcommand(
      "pre-commit", "check the STAGED content of the added and modified *.py files (exit 1 when findings remain)");
  s.install_hook = app.add_subcommand(
      "install-hook", "write the git pre-commit hook that runs `kvpatch pre-commit` (never over a hook of yours)");
  s.uninstall_hook =
      app.add_subcommand("uninstall-hook", "remove the kvpatch pre-commit hook and restore the hook it replaced");
  for (CLI::App* command : {s.pre_commit, s.install_hook, s.uninstall_hook}) {
    command->add_option("--repo", options.repo, "a directory in the git work tree (default: $GIT_DIR, else the current directory)");
  }
  s.pre_commit->add_option("--rules", options.rules_dir, "rules directory (default: $KVPATCH_RULES_DIR, the installed rules, or the source tree's rules/)");
  s.pre_commit->add_option("--set", options.sets, "override a rule parameter, NAME=VALUE (repeatable)");
  add_flashinfer_option(s.pre_commit, options);
  add_config_options(s.pre_commit, options);
  add_show_settings_option(s.pre_commit, options);
  add_format_option(s.pre_commit, options);
  add_color_option(s.pre_commit, options, "the text report's status words");
  add_statistics_option(s.pre_commit, options);
  s.pre_commit->add_flag("--all", options.all, "check every tracked *.py in the index, not only the staged changes");
  add_exclude_options(s.pre_commit, options);
  add_exit_zero_option(s.pre_commit, options, "the staged content has findings (report only; the commit goes ahead)");
  add_unused_ignores_option(s.pre_commit, options);
  s.rule = app.add_subcommand("rule", "explain a finding id from a report (all of them, one line each, without ID)");
  s.rule->add_option("ID", options.rule_id, "a finding id, e.g. flashinfer-mla-kv-run-input");
  s.rule->add_option("--rules", options.rules_dir, "rules directory (default: as for check)");
  // ruff's `rule --all` and `rule --output-format json`: what an editor shows on hover, read by a program.
  s.rule->add_flag("--all", options.all, "every finding id (what no ID prints), as ruff's rule --all");
  s.rule->add_option("--output-format,--format", options.format,
                     "text (the default) or json: an array of {id, summary, explanation} (with an ID, that one "
                     "object)")
      ->check(CLI::IsMember({"text", "json"}));
  add_config_options(s.rule, options);
  add_quiet_options(s.check, options,
                    "; --output-file is still written (in -q's form), and with --fix - the patched text printed");
  add_quiet_options(s.apply, options, "; apply - still prints the patched text");
  for (CLI::App* command : {s.diff, s.pre_commit, s.install_hook, s.uninstall_hook}) {
    add_quiet_options(command, options, "");
  }
  s.install_hook->add_flag("--force", options.force,
                           "keep an existing hook as pre-commit.kvpatch-backup and run it before kvpatch");
  return s;
}

}  // namespace kvpatch::cli
