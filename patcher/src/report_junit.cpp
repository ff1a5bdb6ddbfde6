#include <map>
#include <pugixml.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kvpatch/ignore_comments.h"
#include "kvpatch/report.h"

// JUnit XML, the test report Jenkins, GitLab (`artifacts: reports: junit`), Azure Pipelines and most CI
// dashboards read: one test suite per checked file, one test case per entry of the report. Every plan site,
// field, cast and run() is a case, so a passing report still shows what was checked; a finding is a failure, an
// ignored finding a skipped case, and a file kvpatch could not read an error (JUnit's "the test could not run").
namespace kvpatch {

namespace {
// XML 1.0 allows neither C0 controls other than tab, newline and carriage return (not even as character
// references) nor malformed UTF-8. A path or source text may hold either; each becomes U+FFFD, so that one odd
// byte cannot make the whole report unreadable.
std::string xml_text(const std::string& text) {
  static const std::string kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') out += kReplacement;
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    // The length a lead byte announces, and the least code point that length may encode (no overlong forms).
    const std::size_t length = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? (c <= 0xEF ? 3 : 0) : c >= 0xC2 ? 2 : 0;
    bool valid = length > 0 && i + length <= text.size();
    unsigned code = length == 4 ? c & 0x07u : length == 3 ? c & 0x0Fu : c & 0x1Fu;
    for (std::size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xC0) == 0x80;
      code = (code << 6) | (next & 0x3Fu);
    }
    static const unsigned kLeast[5] = {0, 0, 0x80, 0x800, 0x10000};
    valid = valid && code >= kLeast[length] && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF) &&
            code != 0xFFFE && code != 0xFFFF;
    if (valid) {
      out.append(text, i, length);
      i += length;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

// The dotted name JUnit viewers group cases by: the file's path from the report's root without `.py`, as Python
// names the module (`python/sglang/srt/layers/attention/x.py` -> `python.sglang.srt.layers.attention.x`).
std::string module_name(const std::string& path) {
  std::string name = path.size() > 3 && path.ends_with(".py") ? path.substr(0, path.size() - 3) : path;
  for (char& c : name) {
    if (c == '/') c = '.';
  }
  return name;
}

// What a case that does not pass holds: JUnit's element for it, and the count it adds to.
enum class Outcome { Failure, Error, Skipped };
// A suite's counts, and the report's, in the attributes JUnit readers expect.
struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;

  void add_to(Counts& total) const {
    total.tests += tests;
    total.failures += failures;
    total.errors += errors;
    total.skipped += skipped;
  }
  void write(pugi::xml_node node) const {
    node.append_attribute("tests") = tests;
    node.append_attribute("failures") = failures;
    node.append_attribute("errors") = errors;
    node.append_attribute("skipped") = skipped;
  }
};

// One file's suite. A case is named by what it checks (the method and the rule), not by its line, so that CI
// dashboards that follow a test across pipelines still know it after the lines above it move; a second case of
// the same name in one file (two plan() calls of one method) is numbered.
class Suite {
public:
  Suite(pugi::xml_node node, const std::string& path) : node_(node), path_(path) {
    node_.append_attribute("name") = xml_text(path).c_str();
  }

  pugi::xml_node add_case(const std::string& name, int line) {
    const int seen = ++names_[name];
    pugi::xml_node test = node_.append_child("testcase");
    test.append_attribute("classname") = xml_text(module_name(path_)).c_str();
    test.append_attribute("name") = xml_text(seen == 1 ? name : name + " (" + std::to_string(seen) + ")").c_str();
    test.append_attribute("file") = xml_text(path_).c_str();
    if (line > 0) test.append_attribute("line") = line;
    ++counts_.tests;
    return test;
  }

  // The outcome's element on `test`, with `type` (none for a skipped case), `message` as its attribute and
  // `detail` as its text.
  void mark(pugi::xml_node test, Outcome outcome, const char* type, const std::string& message,
            const std::string& detail) {
    pugi::xml_node element = test.append_child(outcome == Outcome::Failure ? "failure"
                                               : outcome == Outcome::Error ? "error"
                                                                           : "skipped");
    if (type != nullptr) element.append_attribute("type") = type;
    element.append_attribute("message") = xml_text(message).c_str();
    element.text() = xml_text(detail).c_str();
    ++(outcome == Outcome::Failure ? counts_.failures : outcome == Outcome::Error ? counts_.errors : counts_.skipped);
  }

  // What stderr says of this file that is no test's outcome: ignore comments that suppress nothing, while they
  // are warnings.
  void add_warning(const std::string& line) { warnings_ += line + "\n"; }

  // Ends the suite: its warnings and its counts, which are added to the report's.
  void close(Counts& total) {
    if (!warnings_.empty()) node_.append_child("system-err").text() = xml_text(warnings_).c_str();
    counts_.write(node_);
    counts_.add_to(total);
  }

private:
  pugi::xml_node node_;
  std::string path_;
  std::map<std::string, int> names_;
  std::string warnings_;
  Counts counts_;
};
}  // namespace

std::string junit_report(const Run& run) {
  pugi::xml_document doc;
  pugi::xml_node root = doc.append_child("testsuites");
  root.append_attribute("name") = "kvpatch";

  // Suites in the order their files first appear: files kvpatch could not read, then the checked ones.
  std::vector<Suite> suites;
  std::map<std::string, std::size_t> suite_of_path;
  auto suite = [&](const std::string& path) -> Suite& {
    const auto [at, added] = suite_of_path.try_emplace(path, suites.size());
    if (added) suites.emplace_back(root.append_child("testsuite"), path);
    return suites[at->second];
  };

  for (const FileError& e : run.errors) {
    const std::string where = e.line > 0 ? e.file + ":" + std::to_string(e.line) : e.file;
    const std::string message = e.remedy.empty() ? e.message : e.message + "; " + e.remedy;
    Suite& s = suite(e.file);
    s.mark(s.add_case(kInputErrorCheck, e.line), Outcome::Error, "input error", message, where + ": " + message);
  }
  for (const ReportItem& item : report_items(run)) {
    Suite& s = suite(item.file);
    pugi::xml_node test = s.add_case(item.scope.empty() ? item.rule : item.scope + ": " + item.rule, item.line);
    const std::string text = text_line(item);
    if (item.finding) {
      s.mark(test, Outcome::Failure, finding_level(item), item.status + ": " + item.message, text);
    } else if (item.suppressed) {
      s.mark(test, Outcome::Skipped, nullptr, item.suppressed->empty() ? "ignored" : "ignored: " + *item.suppressed, text);
    } else {
      test.append_child("system-out").text() = xml_text(text).c_str();
    }
  }
  for (const FileReport& f : run.files) {
    const std::string path = f.file->source.display_path();
    for (const IgnoreProblem& p : f.ignore_problems) {
      const std::string text = path + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) +
                               ": ignore comment " + p.problem + ": " + p.message;
      if (run.ignore_problems_fail) {
        Suite& s = suite(path);
        s.mark(s.add_case(std::string(kIgnoreCommentRule) + ": " + p.problem, p.line), Outcome::Failure, "error",
               "ignore comment " + p.problem + ": " + p.message, text);
      } else {
        suite(path).add_warning("warning: " + text);
      }
    }
  }

  Counts total;
  for (Suite& s : suites) s.close(total);
  total.write(root);
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default | pugi::format_no_declaration, pugi::encoding_utf8);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + out.str();
}

}  // namespace kvpatch
