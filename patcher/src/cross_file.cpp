#include "kvpatch/cross_file.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "kvpatch/rule_engine.h"

namespace kvpatch {

namespace {
constexpr std::size_t kSitesNamed = 3;  // a message names this many of the other files' sites, then counts

std::string display_path(const FileReport& report) { return report.file->source.display_path(); }

std::string position(const FileReport& report, int line, int column) {
  return display_path(report) + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const CastRule* cast_rule(const RuleSet& rules, const std::string& id) {
  for (const CastRule& r : rules.cast_rules) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

// A required cast feeding a run() whose wrapper has no plan site in its file.
bool unplanned(const CastFinding& cast) { return !cast.unplanned_consumer.empty() && !cast.agrees_with_plan(); }

// A site that plans the KV dtype once the edits are made (under a condition or not).
bool plans_kv_dtype_after_edits(const PlanSite& site) {
  const SiteStatus s = site.status_after_edits();
  return s == SiteStatus::Threaded || s == SiteStatus::Gated;
}

bool is_held(const std::vector<HeldSite>& held, const PlanSite& site) {
  return std::any_of(held.begin(), held.end(), [&](const HeldSite& h) { return h.line == site.line && h.column == site.column; });
}

std::string named(const std::vector<std::string>& sites) {
  std::string out;
  for (std::size_t i = 0; i < std::min(sites.size(), kSitesNamed); ++i) out += (i == 0 ? "" : ", ") + sites[i];
  if (sites.size() > kSitesNamed) out += " and " + std::to_string(sites.size() - kSitesNamed) + " more";
  return out;
}

// A cast that holds sites of other files back: where it is, the run() it feeds, its run-input rule.
struct HoldingCast {
  std::string where;
  std::string consumer;
  std::string id;
  bool operator==(const HoldingCast&) const = default;
};

HoldingCast holding_cast(const RuleSet& rules, const FileReport& report, const CastFinding& cast) {
  const CastRule* rule = cast_rule(rules, cast.rule);
  return {position(report, cast.line, cast.column), cast.unplanned_consumer, rule != nullptr ? rule->run_input_id : cast.rule};
}

// Why a site of another file is left unthreaded: it may plan the wrapper each of these casts feeds. Every
// cast is named, so that one run lists all there is to settle.
std::string hold_reason(const std::vector<HoldingCast>& casts) {
  if (casts.size() == 1) {
    const HoldingCast& c = casts.front();
    return "kvpatch leaves it unthreaded: the cast at " + c.where + " feeds " + c.consumer +
           ", whose wrapper has no plan site in that file; if this site plans it, that run() would be handed the BF16 "
           "cast on an FP8 plan. If it does, remove that cast and pass run() the FP8 scales by hand; if not, mark the "
           "cast's line # kvpatch: ignore[" + c.id + "] <reason>; then rerun";
  }
  std::string each;
  for (std::size_t i = 0; i < casts.size(); ++i) {
    each += (i == 0 ? "" : i + 1 == casts.size() ? " and " : ", ") + casts[i].where + " (feeding " + casts[i].consumer +
            ", ignore[" + casts[i].id + "])";
  }
  return "kvpatch leaves it unthreaded: the casts at " + each +
         " feed run() calls whose wrappers have no plan site in their files; if this site plans one of them, that "
         "run() would be handed the BF16 cast on an FP8 plan. For each: if it does, remove that cast and pass run() "
         "the FP8 scales by hand; if not, mark the cast's line # kvpatch: ignore[<its id>] <reason>; then rerun";
}

// Holds back, in every other file, the fixes of the sites that may plan an unplanned cast's wrapper. A file
// whose fixes are held back is analysed again: its casts can change, and hold back sites elsewhere in turn.
// Sites only ever get held, so this ends. Only the first `edited` files are edited: the others (context) have
// nothing to hold back.
std::vector<std::vector<HeldSite>> hold_sites(const RuleSet& rules, Run& run, std::size_t edited) {
  std::vector<std::vector<HeldSite>> held(run.files.size());
  std::vector<std::vector<std::vector<HoldingCast>>> holding(run.files.size());  // parallel to held
  for (;;) {
    std::vector<bool> again(run.files.size(), false);
    for (const FileReport& report : run.files) {
      for (const CastFinding& cast : report.casts) {
        if (!unplanned(cast)) continue;
        const CastRule* rule = cast_rule(rules, cast.rule);
        if (rule == nullptr || suppression(report.file->source, cast.call, rule->run_input_id)) continue;
        for (std::size_t j = 0; j < edited; ++j) {
          if (&run.files[j] == &report) continue;
          for (const PlanSite& site : run.files[j].plan_sites) {
            if (site.rule != cast.unplanned_sites_rule) continue;
            const auto h = std::find_if(held[j].begin(), held[j].end(),
                                        [&](const HeldSite& x) { return x.line == site.line && x.column == site.column; });
            const HoldingCast by = holding_cast(rules, report, cast);
            if (h == held[j].end()) {
              if (!site.fix || !plans_kv_dtype_after_edits(site)) continue;
              held[j].push_back({site.line, site.column, hold_reason({by})});
              holding[j].push_back({by});
            } else {
              // Already held (its fix is gone now): name this cast too.
              std::vector<HoldingCast>& casts = holding[j][static_cast<std::size_t>(h - held[j].begin())];
              if (std::find(casts.begin(), casts.end(), by) != casts.end()) continue;
              casts.push_back(by);
              h->reason = hold_reason(casts);
            }
            again[j] = true;
          }
        }
      }
    }
    if (std::none_of(again.begin(), again.end(), [](bool b) { return b; })) return held;
    for (std::size_t j = 0; j < run.files.size(); ++j) {
      if (!again[j]) continue;
      const FileReport& old = run.files[j];
      run.files[j] = analyze_file(rules, old.file, old.flashinfer, old.flashinfer_unpinned, held[j]);
    }
  }
}
}  // namespace

bool may_link(const RuleSet& rules, const std::string& text) {
  auto planned = [](const CastRule& r) {
    return std::any_of(r.fp8_consumers.begin(), r.fp8_consumers.end(), [](const Fp8Consumer& c) { return !c.sites_rule.empty(); });
  };
  return std::any_of(rules.plan_site_rules.begin(), rules.plan_site_rules.end(),
                     [&](const PlanSiteRule& r) { return r.files.matches(text); }) ||
         std::any_of(rules.cast_rules.begin(), rules.cast_rules.end(),
                     [&](const CastRule& r) { return planned(r) && r.files.matches(text); });
}

namespace {
// Links every file of the run; the first `edited` are the ones apply may edit, the others context.
void link_all(const RuleSet& rules, Run& run, std::size_t edited) {
  const std::vector<std::vector<HeldSite>> held = hold_sites(rules, run, edited);
  for (FileReport& report : run.files) {
    bool added = false;
    for (const CastFinding& cast : report.casts) {
      if (!unplanned(cast)) continue;
      const CastRule* rule = cast_rule(rules, cast.rule);
      if (rule == nullptr) continue;
      // Sites already planning the KV dtype as written, and sites kvpatch holds back (or would thread).
      std::vector<std::string> threaded, unthreaded, planned_in;
      for (std::size_t j = 0; j < run.files.size(); ++j) {
        const FileReport& other = run.files[j];
        if (&other == &report) continue;
        for (const PlanSite& site : other.plan_sites) {
          if (site.rule != cast.unplanned_sites_rule) continue;
          const std::string where = position(other, site.line, site.column);
          if (site.status == SiteStatus::Threaded || site.status == SiteStatus::Gated) threaded.push_back(where);
          // A context file is not edited: what apply would thread there is not threaded by this run.
          else if (j < edited && (is_held(held[j], site) || plans_kv_dtype_after_edits(site))) unthreaded.push_back(where);
          else continue;
          if (planned_in.empty() || planned_in.back() != display_path(other)) planned_in.push_back(display_path(other));
        }
      }
      if (threaded.empty() && unthreaded.empty()) continue;

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
      f.planned_in = std::move(planned_in);
      std::string planning;
      if (!threaded.empty()) {
        planning = named(threaded) + (threaded.size() == 1 ? " plans" : " plan") + " one for the KV dtype";
      }
      if (!unthreaded.empty()) {
        planning += threaded.empty() ? named(unthreaded) + " would plan one for the KV dtype if threaded"
                                     : ", and " + named(unthreaded) + " would if threaded";
      }
      f.why = "its wrapper has no plan site in this file, while " + planning +
              "; kvpatch reads each file on its own and cannot tell whether that is this wrapper, which would then be "
              "handed this cast's BF16 copy on an FP8 plan";
      if (auto reason = suppression(report.file->source, cast.call, f.rule)) {
        f.ignored = true;
        f.ignore_reason = *reason;
        f.effect = "suppressed by kvpatch: ignore" + (reason->empty() ? "" : ": " + *reason);
      } else {
        f.effect = (unthreaded.empty() ? std::string()
                    : threaded.empty()   ? std::string("kvpatch leaves them unthreaded; ")
                                         : std::string("kvpatch leaves the unthreaded ones so; ")) +
                   "if one of them plans this wrapper, remove this cast and pass run() the FP8 scales by hand; "
                   "if none does, mark the cast's line # kvpatch: ignore[" + f.rule + "] <reason>";
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

// A context file cut down to what linking found in it that concerns the run's files: each cast whose run() they
// may plan, with its finding.
FileReport linked_part(FileReport report, const std::vector<std::string>& run_paths) {
  std::erase_if(report.run_inputs, [&](const RunInputFinding& r) {
    return std::none_of(r.planned_in.begin(), r.planned_in.end(), [&](const std::string& path) {
      return std::find(run_paths.begin(), run_paths.end(), path) != run_paths.end();
    });
  });
  std::erase_if(report.casts, [&](const CastFinding& c) {
    return std::none_of(report.run_inputs.begin(), report.run_inputs.end(),
                        [&](const RunInputFinding& r) { return r.line == c.line && r.column == c.column; });
  });
  report.plan_sites.clear();
  report.fields.clear();
  report.run_scales.clear();
  report.edits = EditSet();
  report.helper_edits.clear();
  return report;
}
}  // namespace

void link_files(const RuleSet& rules, Run& run, std::vector<FileReport> context) {
  const std::size_t edited = run.files.size();
  if (edited == 0 || context.empty()) return link_all(rules, run, edited);
  std::vector<std::string> run_paths;
  for (const FileReport& report : run.files) run_paths.push_back(display_path(report));
  std::move(context.begin(), context.end(), std::back_inserter(run.files));
  link_all(rules, run, edited);
  std::vector<FileReport> linked;
  for (std::size_t i = edited; i < run.files.size(); ++i) {
    FileReport part = linked_part(std::move(run.files[i]), run_paths);
    if (!part.run_inputs.empty()) linked.push_back(std::move(part));
  }
  run.files.resize(edited);
  std::move(linked.begin(), linked.end(), std::back_inserter(run.files));
}

}  // namespace kvpatch
