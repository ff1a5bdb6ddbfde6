#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kvpatch/ignore_comments.h"
#include "kvpatch/report.h"

// GitLab's Code Quality report: a JSON array of issues, each with a description, a check name, a fingerprint, a
// severity (info, minor, major, critical or blocker) and a location (a path from the repository's top and a
// line). GitLab shows a merge request the issues whose fingerprints the target branch's report lacks, so a
// fingerprint must stay the same while the finding does, even when lines above it move, and differ between two
// findings of one report.
namespace kvpatch {
using json = nlohmann::ordered_json;

namespace {
// What identifies a finding apart from where it stands: the digits of the message (the line:column of the run()
// a cast feeds, the FlashInfer version a pin names) become '#' and the run's root, which messages may name
// through a pyproject.toml's absolute path, is dropped, so that neither moving code nor another checkout
// directory makes an old finding look new.
std::string fingerprint_text(const std::string& check, const std::string& path, const std::string& what,
                             const std::string& root) {
  std::string message = what;
  if (!root.empty()) {
    for (std::size_t at = message.find(root); at != std::string::npos; at = message.find(root, at)) {
      message.erase(at, root.size());
    }
  }
  std::string key = check + '\0' + path + '\0';
  bool in_digits = false;
  for (char c : message) {
    const bool digit = c >= '0' && c <= '9';
    if (!digit) key += c;
    else if (!in_digits) key += '#';
    in_digits = digit;
  }
  return key;
}

// FNV-1a, 64 bits: stable across compilers and runs (std::hash is neither), and ample for one report's issues.
std::string hex_hash(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

class Issues {
public:
  explicit Issues(std::string root) : root_(std::move(root)) {}

  void add(const std::string& check, const std::string& description, const char* severity, const std::string& path,
           int line) {
    // Two findings alike but for their digits (two plan() calls of one method, each missing kv_data_type) are
    // told apart by their order, as a linter's duplicate diagnostics are.
    const std::string key = fingerprint_text(check, path, description, root_);
    const int seen = occurrences_[key]++;
    issues_.push_back({{"description", description},
                       {"check_name", check},
                       {"fingerprint", hex_hash(key + '\0' + std::to_string(seen))},
                       {"severity", severity},
                       {"location", {{"path", path}, {"lines", {{"begin", line > 0 ? line : 1}}}}}});
  }

  std::string dump() const { return issues_.dump(2) + "\n"; }

private:
  std::string root_;
  std::map<std::string, int> occurrences_;
  json issues_ = json::array();
};

// kvpatch's levels on GitLab's scale: an error (what the patch exists to fix) is major, a warning (what kvpatch
// cannot judge, or an ignore comment that suppresses nothing) minor.
const char* severity(const std::string& level) { return level == "error" ? "major" : "minor"; }
}  // namespace

std::string gitlab_report(const Run& run) {
  std::string root = run.root.string();
  if (!root.empty() && root.back() != '/') root += '/';
  Issues issues(root);
  // A file kvpatch could not read was not checked at all: critical, above any finding.
  for (const FileError& e : run.errors) {
    issues.add(kInputErrorCheck, "input error: " + (e.remedy.empty() ? e.message : e.message + "; " + e.remedy),
               "critical", e.file, e.line);
  }
  // Findings only: an ignored finding has no place in GitLab's format, which knows no suppressions.
  for (const ReportItem& item : report_items(run)) {
    if (!item.finding) continue;
    issues.add(item.rule, item.status + ": " + item.message, severity(finding_level(item)), item.file, item.line);
  }
  for (const FileReport& f : run.files) {
    for (const IgnoreProblem& p : f.ignore_problems) {
      issues.add(kIgnoreCommentRule, "ignore comment " + p.problem + ": " + p.message,
                 severity(ignore_problem_level(run)), f.file->source.display_path(), p.line);
    }
  }
  return issues.dump();
}

}  // namespace kvpatch
