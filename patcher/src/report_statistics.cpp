#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <vector>

#include "kvpatch/ignore_comments.h"
#include "kvpatch/report.h"

// ruff's --statistics: over a large tree, which kinds of finding there are and how many `apply` would fix, without
// a line per finding. The rows count exactly what makes the command exit 1 (has_findings), so their sum is
// finding_count().
namespace kvpatch {
namespace {
struct Row {
  std::string rule;
  std::string status;
  int count = 0;
  int fixable = 0;
};

std::vector<Row> statistics_rows(const Run& run) {
  std::map<std::pair<std::string, std::string>, Row> by_key;
  auto add = [&](const std::string& rule, const std::string& status, bool fixable) {
    Row& row = by_key[{rule, status}];
    row.rule = rule;
    row.status = status;
    ++row.count;
    row.fixable += fixable ? 1 : 0;
  };
  for (const ReportItem& item : report_items(run)) {
    if (item.finding) add(item.rule, item.status, item.fixable());
  }
  // Findings only under unused-ignores = "error"; apply removes no comment.
  if (run.ignore_problems_fail) {
    for (const FileReport& f : run.files) {
      for (const IgnoreProblem& p : f.ignore_problems) add(kIgnoreCommentRule, p.problem, false);
    }
  }
  std::vector<Row> rows;
  rows.reserve(by_key.size());
  for (auto& [key, row] : by_key) rows.push_back(std::move(row));
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.count > b.count; });
  return rows;
}

// "[*]" when apply has an edit for every one, "[ ]" for none, else how many of them.
std::string fix_mark(const Row& row) {
  if (row.fixable == row.count) return "[*]";
  if (row.fixable == 0) return "[ ]";
  return "[*] " + std::to_string(row.fixable) + " of " + std::to_string(row.count);
}
}  // namespace

std::string statistics_report(const Run& run, Extent extent) {
  const std::vector<Row> rows = statistics_rows(run);
  std::size_t count_width = 1, rule_width = 0, status_width = 0;
  int fixable = 0;
  for (const Row& row : rows) {
    count_width = std::max(count_width, std::to_string(row.count).size());
    rule_width = std::max(rule_width, row.rule.size());
    status_width = std::max(status_width, row.status.size());
    fixable += row.fixable;
  }
  std::ostringstream out;
  for (const Row& row : rows) {
    const std::string count = std::to_string(row.count);
    out << std::string(count_width - count.size(), ' ') << count << "  " << row.rule
        << std::string(rule_width - row.rule.size(), ' ') << "  " << row.status
        << std::string(status_width - row.status.size(), ' ') << "  " << fix_mark(row) << "\n";
  }
  if (fixable > 0 && extent == Extent::Everything) {
    out << "[*] " << fixable << (fixable == 1 ? " finding" : " findings") << " fixable with `kvpatch apply`\n";
  }
  if (extent == Extent::Everything) out << summary_line(summarize(run)) << "\n";
  return out.str();
}

std::string statistics_json(const Run& run) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Row& row : statistics_rows(run)) {
    rows.push_back({{"rule", row.rule}, {"status", row.status}, {"count", row.count}, {"fixable", row.fixable}});
  }
  return rows.dump(2) + "\n";
}

}  // namespace kvpatch
