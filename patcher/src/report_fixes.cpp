// --show-fixes: after `apply` or `check --fix` has written the edits, which findings they fixed, as ruff's option of
// that name lists them, so that a log shows what changed and not only that files did.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kvpatch/report.h"

namespace kvpatch {
namespace {
struct Row {
  std::string rule;
  std::string status;
  int count = 0;
};

std::string plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}
}  // namespace

std::string fixes_report(const Run& run, const std::vector<std::string>& patched) {
  std::map<std::string, std::map<std::pair<std::string, std::string>, int>> by_file;
  for (const ReportItem& item : report_items(run)) {
    if (item.fixable()) ++by_file[item.file][{item.rule, item.status}];
  }
  std::ostringstream body;
  int findings = 0;
  int files = 0;
  for (const std::string& file : patched) {
    const auto counts = by_file.find(file);
    if (counts == by_file.end()) continue;
    std::vector<Row> rows;
    for (const auto& [key, count] : counts->second) rows.push_back({key.first, key.second, count});
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.count > b.count; });
    body << "- " << file << ":\n";
    for (const Row& row : rows) {
      body << "    " << row.count << " x " << row.rule << " (" << row.status << ")\n";
      findings += row.count;
    }
    ++files;
  }
  if (findings == 0) return "";
  return "fixed " + plural(findings, "finding", "findings") + " in " + plural(files, "file", "files") + ":\n" +
         body.str();
}

}  // namespace kvpatch
