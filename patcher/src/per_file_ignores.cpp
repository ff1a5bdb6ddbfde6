#include "kvpatch/per_file_ignores.h"

#include <algorithm>
#include <optional>

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

PerFileIgnores per_file_ignores_option(const std::string& option, const std::string& text, const fs::path& base) {
  const std::string origin = option + " " + text;
  const std::size_t colon = text.rfind(':');
  const std::optional<std::string> pattern =
      colon == std::string::npos ? std::nullopt : exclude_pattern(text.substr(0, colon));
  PerFileIgnores entry{{base, {}, origin}, {}, 0};
  if (colon != std::string::npos) {
    std::size_t start = colon + 1;
    for (std::size_t comma; start <= text.size(); start = comma + 1) {
      comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      std::string id = text.substr(start, comma - start);
      id.erase(0, id.find_first_not_of(' '));
      id.erase(id.find_last_not_of(' ') + 1);
      if (!id.empty()) entry.ids.push_back(id);
    }
  }
  if (!pattern || entry.ids.empty()) {
    throw InputError(origin, 0, "expected PATTERN:RULE-ID[,RULE-ID...] with a relative pattern",
                     "e.g. " + option + " 'test/**:flashinfer-mla-plan-kv-dtype' (`kvpatch rule` lists the ids)");
  }
  entry.paths.patterns.push_back(*pattern);
  return entry;
}

void require_known_ids(const std::vector<PerFileIgnores>& entries, const RuleSet& rules) {
  const std::vector<std::pair<std::string, std::string>> known = rules.finding_ids();
  for (const PerFileIgnores& entry : entries) {
    for (const std::string& id : entry.ids) {
      if (std::any_of(known.begin(), known.end(), [&](const auto& k) { return k.first == id; })) continue;
      throw InputError(entry.paths.origin, entry.line,
                       "per-file-ignores names rule id '" + id + "', which no rule reports",
                       unknown_rule_id_hint(id, known));
    }
  }
}

}  // namespace kvpatch
