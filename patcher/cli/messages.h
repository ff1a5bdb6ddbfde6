// What every subcommand prints besides its own output: errors, the report in --format's form, and the
// ignore comments that suppress nothing.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

#include "kvpatch/findings.h"
#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"
#include "options.h"

namespace kvpatch::cli {

// `kvpatch: error: TEXT` on stderr.
void print_error(const std::string& text);
// Each as `kvpatch: error: FILE[:LINE]: MESSAGE; REMEDY`.
void print_errors(const std::vector<FileError>& errors);

// The report of a check or pre-commit run on stdout (on stderr for `fd` STDERR_FILENO: check --fix -, whose stdout
// is the patched text), in --format's form, or into --output-file (whole or not at
// all; colored only with --color always). The machine-read formats always print (an empty SARIF log is still a
// log); text only when `text_wanted`, github also for input errors (annotations). False, with the error printed,
// when the file could not be written.
bool print_report(const Run& run, const RuleSet& rules, const Options& options, bool text_wanted,
                  int fd = STDOUT_FILENO);

// Ignore comments that suppress nothing (ignore_comments.h) on stderr: warnings by default, as ruff's unused-noqa
// is off by default and an exit code is what CI and hooks act on; errors, counted as findings by summarize(), when
// the run's unused-ignores setting is "error". The reports list them too.
void warn_ignore_comments(const Run& run);

}  // namespace kvpatch::cli
