#include "messages.h"

#include <unistd.h>

#include <iostream>

#include "kvpatch/analyze.h"
#include "kvpatch/findings.h"
#include "kvpatch/input_error.h"
#include "kvpatch/report_file.h"
#include "terminal_color.h"

namespace kvpatch::cli {

std::ostream& discarded() {
  static std::ostream nowhere(nullptr);  // no buffer: every write is dropped
  return nowhere;
}

void print_error(const std::string& text) { std::cerr << "kvpatch: error: " << text << "\n"; }

void print_errors(const std::vector<FileError>& errors) {
  for (const FileError& e : errors) {
    print_error((e.line > 0 ? e.file + ":" + std::to_string(e.line) : e.file) + ": " + e.message +
                (e.remedy.empty() ? "" : "; " + e.remedy));
  }
}

bool print_report(const Run& run, const RuleSet& rules, const Options& options, bool text_wanted, int fd) {
  const bool to_file = !options.output_file.empty();
  if (!to_file && !says_what_is_wrong(options)) return true;
  const Extent extent = says_how_it_went(options) ? Extent::Everything : Extent::FindingsOnly;
  std::string report;
  if (options.statistics) {
    if (options.format == "json") report = statistics_json(run);
    else if (text_wanted) report = statistics_report(run, extent);
  } else if (options.format == "json") {
    report = json_report(run);
  } else if (options.format == "sarif") {
    report = sarif_report(run, rules, KVPATCH_VERSION);
  } else if (options.format == "gitlab") {
    report = gitlab_report(run);
  } else if (options.format == "rdjson") {
    report = rdjson_report(run);
  } else if (options.format == "junit") {
    report = junit_report(run);
  } else if (options.format == "github") {
    if (text_wanted || !run.errors.empty()) report = github_report(run, extent);
  } else if (text_wanted) {
    report = options.format == "full" ? full_report(run, extent) : text_report(run, extent);
    const bool color = to_file ? options.color == "always" : color_wanted(options.color, fd);
    if (color) report = colorize_report(report);
  }
  if (!to_file) {
    (fd == STDERR_FILENO ? std::cerr : std::cout) << report;
    return true;
  }
  try {
    write_report_file(options.output_file, report);
  } catch (const InputError& e) {
    print_errors({to_file_error(e)});
    return false;
  }
  return true;
}

void warn_ignore_comments(const Run& run, const Options& options) {
  if (!says_what_is_wrong(options)) return;
  for (const FileReport& f : run.files) {
    for (const IgnoreProblem& p : f.ignore_problems) {
      std::cerr << "kvpatch: " << ignore_problem_level(run) << ": " << f.file->source.display_path() << ":" << p.line
                << ":" << p.column << ": " << p.message << "\n";
    }
  }
}

}  // namespace kvpatch::cli
