#include <sstream>

#include "kvpatch/report.h"

// GitHub Actions reads `::error file=F,line=L,col=C,title=T::MESSAGE` lines from a step's output and
// shows each as an annotation on that line of the pull request. Its escaping rules: in the message
// `%`, CR and LF are percent-encoded; in a property value `:` and `,` are too.
namespace kvpatch {
namespace {
std::string escape_data(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '%': out += "%25"; break;
      case '\r': out += "%0D"; break;
      case '\n': out += "%0A"; break;
      default: out += c;
    }
  }
  return out;
}

std::string escape_property(const std::string& text) {
  std::string out;
  for (char c : escape_data(text)) {
    switch (c) {
      case ':': out += "%3A"; break;
      case ',': out += "%2C"; break;
      default: out += c;
    }
  }
  return out;
}

std::string location(const std::string& file, int line, int column) {
  std::string out = "file=" + escape_property(file);
  if (line > 0) out += ",line=" + std::to_string(line);
  if (column > 0) out += ",col=" + std::to_string(column);
  return out;
}
}  // namespace

std::string github_report(const Run& run, Extent extent) {
  std::ostringstream out;
  for (const FileError& e : run.errors) {
    out << "::error " << location(e.file, e.line, e.column) << ",title=kvpatch input error::"
        << escape_data(e.remedy.empty() ? e.message : e.message + "; " + e.remedy) << "\n";
  }
  for (const ReportItem& item : report_items(run)) {
    if (!item.finding) continue;
    out << "::" << finding_level(item) << " " << location(item.file, item.line, item.column)
        << ",title=" << escape_property("kvpatch " + item.status + " [" + item.rule + "]") << "::"
        << escape_data(item.message) << "\n";
  }
  // Findings only under unused-ignores = "error", but a pull request is where a stale suppression should be seen
  // either way (ignore_comments.h).
  for (const FileReport& f : run.files) {
    for (const IgnoreProblem& p : f.ignore_problems) {
      out << "::" << ignore_problem_level(run) << " " << location(f.file->source.display_path(), p.line, p.column)
          << ",title=" << escape_property("kvpatch ignore comment " + p.problem) << "::" << escape_data(p.message)
          << "\n";
    }
  }
  if (extent == Extent::Everything) out << summary_line(summarize(run)) << "\n";
  return out.str();
}

}  // namespace kvpatch
