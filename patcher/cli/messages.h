// What every subcommand prints besides its own output: errors, the report in --format's form, and the
// ignore comments that suppress nothing.
#pragma once

#include <unistd.h>

#include <ostream>
#include <string>
#include <vector>

#include "kvpatch/findings.h"
#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"
#include "options.h"

namespace kvpatch::cli {

// -q/--quiet and -s/--silent, as ruff has them: what a run prints besides its findings and errors. Without either,
// everything; -q drops what only tells a person how the run went (entries that are not findings, summary lines,
// "patched FILE" lines, --show-fixes lists, notes, hints), leaving what is wrong: findings, warnings, errors. -s
// drops the findings and warnings too, leaving the exit code and the errors that stop a run (exit 2), which nothing
// silences. Data a command exists to
// print (apply -'s patched text, --show-settings, a report written with --output-file) is printed either way.
inline bool says_how_it_went(const Options& options) { return !options.quiet && !options.silent; }
inline bool says_what_is_wrong(const Options& options) { return !options.silent; }
// Where such a line goes when it is not wanted.
std::ostream& discarded();

// `kvpatch: error: TEXT` on stderr.
void print_error(const std::string& text);
// Each as `kvpatch: error: FILE[:LINE]: MESSAGE; REMEDY`.
void print_errors(const std::vector<FileError>& errors);

// The report of a check or pre-commit run on stdout (on stderr for `fd` STDERR_FILENO: check --fix -, whose stdout
// is the patched text), in --format's form, or into --output-file (whole or not at
// all; colored only with --color always). The machine-read formats always print (an empty SARIF log is still a
// log); text only when `text_wanted`, github also for input errors (annotations). Under -q a report for a person
// lists findings alone, without the summary line; under -s nothing is printed (a file is still written). False,
// with the error printed, when the file could not be written.
bool print_report(const Run& run, const RuleSet& rules, const Options& options, bool text_wanted,
                  int fd = STDOUT_FILENO);

// Ignore comments that suppress nothing (ignore_comments.h) on stderr: warnings by default, as ruff's unused-noqa
// is off by default and an exit code is what CI and hooks act on; errors, counted as findings by summarize(), when
// the run's unused-ignores setting is "error". The reports list them too.
// Nothing under -s, where the exit code alone says the run failed on them.
void warn_ignore_comments(const Run& run, const Options& options);

}  // namespace kvpatch::cli
