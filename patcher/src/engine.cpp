#include <algorithm>

#include "kvpatch/rule_engine.h"

namespace kvpatch {

FileReport analyze_file(const RuleSet& rules, std::shared_ptr<const ParsedFile> file) {
  FileReport report;
  report.file = file;
  const ModuleFacts facts(*file);
  const std::string& text = file->source.text();

  // Plan sites first: field scopes and cast consumers depend on them.
  for (const PlanSiteRule& rule : rules.plan_site_rules) {
    if (!rule.files.matches(text)) continue;
    for (PlanSite& site : find_plan_sites(rule, facts)) report.plan_sites.push_back(std::move(site));
  }
  for (const FieldRule& rule : rules.field_rules) {
    const PlanSiteRule* sites_rule = rules.plan_site_rule(rule.sites_rule);
    if (sites_rule == nullptr || !rule.files.matches(text) || !sites_rule->files.matches(text)) continue;
    for (FieldFinding& f : check_fields(rule, *sites_rule, facts, report.plan_sites)) report.fields.push_back(std::move(f));
  }
  for (const PlanSiteRule& rule : rules.plan_site_rules) {
    if (rule.files.matches(text)) plan_site_fixes(rule, facts, report.fields, report.plan_sites);
  }
  // Casts last: they are redundant only if the plan sites are threaded once the fixes above are made.
  for (const CastRule& rule : rules.cast_rules) {
    if (!rule.files.matches(text)) continue;
    for (CastFinding& c : check_casts(rule, rules, facts, report.plan_sites)) report.casts.push_back(std::move(c));
  }

  // Two cast rules may select one file; a cast both report is kept once, required winning over redundant.
  std::vector<CastFinding> unique_casts;
  for (CastFinding& c : report.casts) {
    auto same = std::find_if(unique_casts.begin(), unique_casts.end(), [&](const CastFinding& u) {
      return u.line == c.line && u.column == c.column;
    });
    if (same == unique_casts.end()) unique_casts.push_back(std::move(c));
    else if (same->redundant && !c.redundant) *same = std::move(c);
  }
  report.casts = std::move(unique_casts);

  auto by_position = [](const auto& a, const auto& b) { return std::tie(a.line, a.column) < std::tie(b.line, b.column); };
  std::stable_sort(report.plan_sites.begin(), report.plan_sites.end(), by_position);
  std::stable_sort(report.fields.begin(), report.fields.end(), by_position);
  std::stable_sort(report.casts.begin(), report.casts.end(), by_position);

  for (const FieldFinding& f : report.fields) {
    if (f.fix) report.edits.add(*f.fix);
  }
  for (const PlanSite& s : report.plan_sites) {
    if (s.fix) report.edits.add(*s.fix);
  }
  for (const CastFinding& c : report.casts) {
    for (const Edit& e : c.fix) report.edits.add(e);
  }
  return report;
}

}  // namespace kvpatch
