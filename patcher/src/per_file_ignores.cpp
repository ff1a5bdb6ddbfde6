#include "kvpatch/per_file_ignores.h"

#include <algorithm>

#include "kvpatch/ignore_comments.h"
#include "kvpatch/input_error.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {
namespace fs = std::filesystem;

std::vector<std::pair<std::string, std::string>> ignored_in_file(const std::vector<PerFileIgnores>& entries,
                                                                 const fs::path& file) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const PerFileIgnores& entry : entries) {
    if (!excluded(entry.paths, file)) continue;
    for (const std::string& id : entry.ids) {
      const bool seen = std::any_of(out.begin(), out.end(), [&](const auto& known) { return known.first == id; });
      if (!seen) out.emplace_back(id, entry.origin());
    }
  }
  return out;
}

void require_known_ids(const std::vector<PerFileIgnores>& entries, const RuleSet& rules) {
  const std::vector<std::pair<std::string, std::string>> known = rules.finding_ids();
  std::string listed;
  for (const auto& [id, description] : known) listed += (listed.empty() ? "" : ", ") + id;
  for (const PerFileIgnores& entry : entries) {
    for (const std::string& id : entry.ids) {
      if (std::any_of(known.begin(), known.end(), [&](const auto& k) { return k.first == id; })) continue;
      const std::string nearest = nearest_rule_id(id, known);
      throw InputError(entry.paths.origin, entry.line,
                       "per-file-ignores names rule id '" + id + "', which no rule reports",
                       (nearest.empty() ? std::string() : "did you mean " + nearest + "? ") + "the ids are " + listed);
    }
  }
}

}  // namespace kvpatch
