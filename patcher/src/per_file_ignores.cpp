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
    if (!entry.every_file && !excluded(entry.paths, file)) continue;
    for (const std::string& id : entry.ids) {
      const bool seen = std::any_of(out.begin(), out.end(), [&](const auto& known) { return known.first == id; });
      if (!seen) out.emplace_back(id, entry.reason());
    }
  }
  return out;
}

PerFileIgnores per_file_ignores_option(const std::string& option, const std::string& text, const fs::path& base) {
  const std::string origin = option + " " + text;
  const std::size_t colon = text.rfind(':');
  const std::optional<std::string> pattern =
      colon == std::string::npos ? std::nullopt : exclude_pattern(text.substr(0, colon));
  PerFileIgnores entry{{base, {}, origin}, {}, 0, "per-file-ignores", false};
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

namespace {
bool reported(const std::vector<std::pair<std::string, std::string>>& known, const std::string& id) {
  return std::any_of(known.begin(), known.end(), [&](const auto& k) { return k.first == id; });
}

void require_known(const std::vector<std::pair<std::string, std::string>>& known, const std::string& key,
                   const std::string& id, const std::string& origin, int line) {
  if (!reported(known, id)) {
    throw InputError(origin, line, key + " names rule id '" + id + "', which no rule reports",
                     unknown_rule_id_hint(id, known));
  }
}
}  // namespace

PerFileIgnores every_file_entry(const std::string& key, const std::vector<std::string>& ids, const std::string& origin,
                                int line, const RuleSet& rules) {
  PerFileIgnores entry{{{}, {}, origin}, {}, line, key, true};
  if (key != "select") {
    entry.ids = ids;  // checked with the other entries' (require_known_ids)
    return entry;
  }
  const std::vector<std::pair<std::string, std::string>> known = rules.finding_ids();
  for (const std::string& id : ids) require_known(known, key, id, origin, line);
  // Ignoring a run-input id vouches for what run() is handed, which lets apply plan FP8 for a run() that may still
  // get the BF16 cast: a choice to name (ignore, per-file-ignores, a comment), never one made by leaving it out.
  std::vector<std::string> vouching;
  for (const CastRule& rule : rules.cast_rules) {
    if (rule.run_input_id != rule.id) vouching.push_back(rule.run_input_id);
  }
  const auto named = [](const std::vector<std::string>& list, const std::string& id) {
    return std::find(list.begin(), list.end(), id) != list.end();
  };
  for (const auto& rule_id : known) {
    if (!named(ids, rule_id.first) && !named(vouching, rule_id.first)) entry.ids.push_back(rule_id.first);
  }
  return entry;
}

void require_known_ids(const std::vector<PerFileIgnores>& entries, const RuleSet& rules) {
  const std::vector<std::pair<std::string, std::string>> known = rules.finding_ids();
  for (const PerFileIgnores& entry : entries) {
    if (entry.key == "select") continue;  // its ids are the rules' own; every_file_entry checked what it names
    for (const std::string& id : entry.ids) require_known(known, entry.key, id, entry.paths.origin, entry.line);
  }
}

}  // namespace kvpatch
