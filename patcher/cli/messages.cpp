#include "messages.h"

#include <unistd.h>

#include <iostream>

#include "kvpatch/findings.h"
#include "terminal_color.h"

namespace kvpatch::cli {

void print_error(const std::string& text) { std::cerr << "kvpatch: error: " << text << "\n"; }

void print_errors(const std::vector<FileError>& errors) {
  for (const FileError& e : errors) {
    print_error((e.line > 0 ? e.file + ":" + std::to_string(e.line) : e.file) + ": " + e.message +
                (e.remedy.empty() ? "" : "; " + e.remedy));
  }
}

void print_report(const Run& run, const RuleSet& rules, const Options& options, bool text_wanted) {
  if (options.format == "json") {
    std::cout << json_report(run);
  } else if (options.format == "sarif") {
    std::cout << sarif_report(run, rules, KVPATCH_VERSION);
  } else if (options.format == "github") {
    if (text_wanted || !run.errors.empty()) std::cout << github_report(run);
  } else if (text_wanted) {
    const std::string report = text_report(run);
    std::cout << (color_wanted(options.color, STDOUT_FILENO) ? colorize_report(report) : report);
  }
}

void warn_ignore_comments(const Run& run) {
  for (const FileReport& f : run.files) {
    for (const IgnoreProblem& p : f.ignore_problems) {
      std::cerr << "kvpatch: " << ignore_problem_level(run) << ": " << f.file->source.display_path() << ":" << p.line
                << ":" << p.column << ": " << p.message << "\n";
    }
  }
}

}  // namespace kvpatch::cli
