#include "kvpatch/cross_file.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "kvpatch/rule_engine.h"

namespace kvpatch {

namespace {
constexpr std::size_t kSitesNamed = 3;  // a message names this many of the other files' sites, then counts

std::string display_path(const FileReport& report) { return report.file->source.display_path(); }

const CastRule* cast_rule(const RuleSet& rules, const std::string& id) {
  for (const CastRule& r : rules.cast_rules) {
    if (r.id == id) return &r;
  }
  return nullptr;
}
}  // namespace

void link_files(const RuleSet& rules, Run& run) {
  for (FileReport& report : run.files) {
    bool added = false;
    for (const CastFinding& cast : report.casts) {
      if (cast.unplanned_consumer.empty() || cast.agrees_with_plan()) continue;
      const CastRule* rule = cast_rule(rules, cast.rule);
      if (rule == nullptr) continue;
      std::vector<std::string> elsewhere;
      for (const FileReport& other : run.files) {
        if (&other == &report) continue;
        for (const PlanSite& site : other.plan_sites) {
          if (site.rule == cast.unplanned_sites_rule && site.threaded_after_edits()) {
            elsewhere.push_back(display_path(other) + ":" + std::to_string(site.line) + ":" + std::to_string(site.column));
          }
        }
      }
      if (elsewhere.empty()) continue;
      std::string sites;
      for (std::size_t i = 0; i < std::min(elsewhere.size(), kSitesNamed); ++i) sites += (i == 0 ? "" : ", ") + elsewhere[i];
      if (elsewhere.size() > kSitesNamed) sites += " and " + std::to_string(elsewhere.size() - kSitesNamed) + " more";

      RunInputFinding f;
      f.rule = rule->run_input_id;
      f.line = cast.line;
      f.column = cast.column;
      f.class_name = cast.class_name;
      f.method = cast.method;
      f.status = RunInputStatus::Unknown;
      f.expr = one_line(cast.expr);
      f.consumer = cast.unplanned_consumer;
      f.consumer_call = cast.call;
      f.why = "its wrapper has no plan site in this file, while " + sites + " plan one for the KV dtype (" +
              (elsewhere.size() == 1 ? "it is" : "they are") +
              " threaded, or will be by apply); kvpatch reads each file on its own and cannot tell whether that is "
              "this wrapper, which would then be handed this cast's BF16 copy on an FP8 plan";
      if (auto reason = suppression(report.file->source, cast.call, f.rule)) {
        f.ignored = true;
        f.ignore_reason = *reason;
        f.effect = "suppressed by kvpatch: ignore" + (reason->empty() ? "" : ": " + *reason);
      } else {
        f.effect = "if one of them plans this wrapper, remove this cast and pass run() the FP8 scales by hand; "
                   "either way mark the cast's line # kvpatch: ignore[" + f.rule + "] <reason>";
      }
      report.run_inputs.push_back(std::move(f));
      added = true;
    }
    if (added) {
      std::stable_sort(report.run_inputs.begin(), report.run_inputs.end(), [](const auto& a, const auto& b) {
        return std::tie(a.line, a.column) < std::tie(b.line, b.column);
      });
    }
  }
}

}  // namespace kvpatch
