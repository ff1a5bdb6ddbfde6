// `kvpatch rule [ID]`: what a finding id in a report means.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "kvpatch/ignore_comments.h"
#include "kvpatch/report.h"
#include "messages.h"
#include "settings.h"

namespace kvpatch::cli {
namespace {
// The first sentence of a rule's description, for the list.
std::string summary_of(const std::string& description) {
  std::string flat = description;
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  const std::size_t end = flat.find(". ");
  return end == std::string::npos ? flat : flat.substr(0, end + 1);
}

// One rule as `rule --output-format json` gives it: the id, the list's sentence and the whole description.
nlohmann::ordered_json rule_json(const std::string& id, const std::string& description) {
  std::string explanation = description;
  while (!explanation.empty() && explanation.back() == '\n') explanation.pop_back();
  return {{"id", id}, {"summary", summary_of(description)}, {"explanation", explanation}};
}
}  // namespace

// `kvpatch rule [ID]`: what a finding id in a report means, as ruff's `rule` command does; the rules are the
// ones check would load here (settings found from the current directory).
int run_rule_command(const Options& options) {
  const std::optional<Loaded> loaded = load_rules(options, std::filesystem::current_path());
  if (!loaded) return kUsageOrInput;
  auto ids = loaded->rules.finding_ids();
  ids.emplace_back(kIgnoreCommentRule, kIgnoreCommentDescription);  // kvpatch's own, for ignore comments
  ids.emplace_back(kInputErrorCheck, kInputErrorDescription);       // and for the input errors GitLab's report lists
  if (options.all && !options.rule_id.empty()) {
    print_error("--all lists every rule, an ID explains one; pass one of the two");
    return kUsageOrInput;
  }
  const bool json_wanted = options.format == "json";
  if (options.rule_id.empty()) {
    if (json_wanted) {
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (const auto& [id, description] : ids) all.push_back(rule_json(id, description));
      std::cout << all.dump(2) << "\n";
      return kClean;
    }
    for (const auto& [id, description] : ids) std::cout << id << "\n    " << summary_of(description) << "\n";
    return kClean;
  }
  for (const auto& [id, description] : ids) {
    if (id != options.rule_id) continue;
    if (json_wanted) {
      std::cout << rule_json(id, description).dump(2) << "\n";
      return kClean;
    }
    std::cout << id << "\n\n" << description << (description.empty() || description.back() != '\n' ? "\n" : "");
    return kClean;
  }
  std::string known;
  for (const auto& [id, description] : ids) known += (known.empty() ? "" : ", ") + id;
  print_error("unknown rule id '" + options.rule_id + "'; the rules in " + loaded->rules.directory.string() +
              " report " + known);
  return kUsageOrInput;
}

}  // namespace kvpatch::cli
