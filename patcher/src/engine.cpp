#include <algorithm>

#include "kvpatch/edit_operations.h"
#include "kvpatch/field_holders.h"
#include "kvpatch/module_helper.h"
#include "kvpatch/rule_engine.h"

namespace kvpatch {

namespace {
bool holds(const std::vector<SourcePosition>& positions, SourcePosition p) {
  return std::any_of(positions.begin(), positions.end(),
                     [&](const SourcePosition& q) { return q.line == p.line && q.column == p.column; });
}

std::string position_list(const std::vector<SourcePosition>& positions) {
  std::string out;
  for (const SourcePosition& p : positions) {
    out += (out.empty() ? "" : ", ") + std::to_string(p.line) + ":" + std::to_string(p.column);
  }
  return out;
}

// A cast whose fix takes it away (neither kept nor guarded).
bool cast_goes(const CastFinding& c) { return c.redundant && c.guard_dtype.empty() && !c.fix.empty(); }

// A dtype local that several casts read (`dtype = q.dtype`, then `ckv.to(dtype)` and `kpe.to(dtype)`) goes when every
// one of them goes; the first of them takes its statements, so that each is removed once. Returns which casts took
// any.
std::vector<bool> take_shared_dtype_locals(const SourceFile& source, std::vector<CastFinding>& casts) {
  std::vector<bool> took(casts.size(), false);
  std::vector<TSNode> taken;
  for (std::size_t i = 0; i < casts.size(); ++i) {
    CastFinding& c = casts[i];
    if (!cast_goes(c) || c.shared_dtype_statements.empty()) continue;
    std::vector<std::string> readers;
    for (TSNode call : c.shared_dtype_casts) {
      auto other = std::find_if(casts.begin(), casts.end(),
                                [&](const CastFinding& o) { return cast_goes(o) && syntax::same(o.call, call); });
      if (other == casts.end()) break;
      readers.push_back(std::to_string(other->line) + ":" + std::to_string(other->column));
    }
    if (readers.size() != c.shared_dtype_casts.size()) continue;
    for (std::size_t s = 0; s < c.shared_dtype_statements.size(); ++s) {
      TSNode statement = c.shared_dtype_statements[s];
      if (std::any_of(taken.begin(), taken.end(), [&](TSNode t) { return syntax::same(t, statement); })) continue;
      taken.push_back(statement);
      c.removed_statements.push_back(statement);
      c.unread_dtype_locals.push_back(dtype_local_text(source, statement));
      took[i] = true;
    }
    if (took[i]) c.dtype_local_readers = readers;
  }
  return took;
}

// Each removal is made as if it were the only one; two or more can empty a block (a guard written
// `if k.dtype != q.dtype:` over two casts, or two guards that are all of a `with` body), which would leave a compound
// statement with no body. Each removal is made again knowing the others, wherever they are.
void remove_together(const SourceFile& source, std::vector<CastFinding>& casts) {
  const std::vector<bool> took = take_shared_dtype_locals(source, casts);
  auto removing = [](const CastFinding& c) { return !c.removed_statements.empty() && !c.fix.empty(); };
  for (std::size_t i = 0; i < casts.size(); ++i) {
    CastFinding& c = casts[i];
    if (!removing(c)) continue;
    std::vector<TSNode> going;
    for (const CastFinding& other : casts) {
      if (&other != &c && removing(other)) going.insert(going.end(), other.removed_statements.begin(), other.removed_statements.end());
    }
    if (!going.empty() || took[i]) c.fix = cast_removal(source, c, going);
  }
}

// Every cast rule's findings; a cast two rules report is kept once, required winning over redundant.
std::vector<CastFinding> casts_of(const RuleSet& rules, const ModuleFacts& facts, const std::vector<PlanSite>& sites,
                                  const std::vector<FieldFinding>& fields) {
  const std::string& text = facts.file().source.text();
  std::vector<CastFinding> unique_casts;
  for (const CastRule& rule : rules.cast_rules) {
    if (!rule.files.matches(text)) continue;
    for (CastFinding& c : check_casts(rule, rules, facts, sites, fields)) {
      auto same = std::find_if(unique_casts.begin(), unique_casts.end(), [&](const CastFinding& u) {
        return u.line == c.line && u.column == c.column;
      });
      if (same == unique_casts.end()) unique_casts.push_back(std::move(c));
      else if (same->redundant && !c.redundant) *same = std::move(c);
    }
  }
  remove_together(facts.file().source, unique_casts);
  return unique_casts;
}

// The site stays as it is (missing), and its reason says why apply leaves it.
void drop_fix(PlanSite& site, std::string reason) {
  site.fix.reset();
  site.fix_text.clear();
  site.fix_through_local.clear();
  site.fix_gated = false;
  site.fix_condition.clear();
  site.reason = std::move(reason);
}

// A site whose wrapper's run() would get converted or untraced KV data is not threaded by guess.
void withhold(PlanSite& site, const RunInputFinding& r) {
  if (r.consumer_rebinds) {
    drop_fix(site, r.consumer + ": " + r.why + "; planned for the KV dtype, it could be handed another dtype. Fix " +
                       "that call first");
    return;
  }
  drop_fix(site, r.consumer +
                     (r.status == RunInputStatus::Converted
                          ? " would get KV data converted by " + r.expr
                          : " would get KV data from " + r.expr + ", whose origin kvpatch cannot establish,") +
                     " at " + std::to_string(r.line) + ":" + std::to_string(r.column) +
                     "; planned for the KV dtype, it could be handed another dtype. Fix that input first");
}

std::string effect(const RunInputFinding& r, const std::vector<PlanSite>& sites, const std::vector<SourcePosition>& withheld) {
  if (r.ignored) {
    return "suppressed by kvpatch: ignore" + (r.ignore_reason.empty() ? "" : ": " + r.ignore_reason) +
           "; it keeps no plan site of the wrapper unthreaded";
  }
  std::vector<SourcePosition> left, already;
  for (const SourcePosition& p : r.wrapper_sites) {
    if (holds(withheld, p)) left.push_back(p);
    for (const PlanSite& s : sites) {
      if (s.line == p.line && s.column == p.column && s.status == SiteStatus::Threaded) already.push_back(p);
    }
  }
  std::string out;
  if (!left.empty()) out = "kvpatch leaves the wrapper's plan sites at " + position_list(left) + " unthreaded";
  if (!already.empty()) {
    out += (out.empty() ? "" : "; ") + std::string("the plan sites at ") + position_list(already) +
           " already plan the KV-cache dtype, so run() is handed another dtype than planned";
  }
  return out.empty() ? "the wrapper's plan sites are not threaded" : out;
}

// The FlashInfer a file runs with builds a BF16-query x FP8-KV plan only from the rule's fp8_kv_since on: against
// an older release (pinned, installed or given), that plan() fails (0.5.3 and 0.6.13 fail to compile it:
// kernels/bench/results/2026-11-30-h200-flashinfer-fp8-kv-by-release.log). So no site is threaded there, and a
// site already threaded or gated by hand with a model-dtype query is unbuildable. (A site planning the KV-cache
// dtype for the query as well, as SGLang 0.4.3.post3 to 0.4.6.post4 do at decode, plans FP8 x FP8: that pairing
// was not run, so nothing is said of it.) Unknown releases are taken to be new enough, as everywhere else (the
// findings say so).
void hold_to_flashinfer(const RuleSet& rules, const std::string& text, const std::optional<FlashInferVersion>& target,
                        std::vector<PlanSite>& sites, std::vector<SourcePosition>& withheld) {
  if (!target) return;
  for (const PlanSiteRule& rule : rules.plan_site_rules) {
    if (rule.fp8_kv_since.empty() || !rule.files.matches(text) || version_at_least(target->version, rule.fp8_kv_since)) {
      continue;
    }
    const std::string release = "FlashInfer " + target->version + " (" + target->evidence + ")";
    const std::string upgrade = "Upgrade FlashInfer to " + rule.fp8_kv_since + " or later";
    for (PlanSite& site : sites) {
      if (site.rule != rule.id) continue;
      if (site.fix) {
        drop_fix(site, release + " cannot build a plan with a BF16 query and an FP8 KV cache (releases before " +
                           rule.fp8_kv_since + " fail to compile it). " + upgrade +
                           " (say which with --flashinfer-version where the pin is not updated), then rerun");
        withheld.push_back({site.line, site.column});
      } else if ((site.status == SiteStatus::Threaded || site.status == SiteStatus::Gated) &&
                 site.q_dtype.role == DtypeRole::Model) {
        site.unbuildable = release + " cannot build this plan for an FP8 KV cache: releases before " +
                           rule.fp8_kv_since + " fail to compile a BF16-query x FP8-KV plan, so plan() raises. " +
                           upgrade + ", or plan the model dtype for the KV side here and keep its cast";
      }
    }
  }
}

// A field is added only for a class whose plan sites use it (those of the methods its instances run, inherited
// ones included): none does when every fix there was withheld.
void drop_unused_fields(const RuleSet& rules, const ModuleFacts& facts, std::vector<FieldFinding>& fields,
                        const std::vector<PlanSite>& sites, const std::vector<SourcePosition>& withheld) {
  for (FieldFinding& f : fields) {
    const FieldRule* rule = rules.field_rule(f.rule);
    if (!f.fix || rule == nullptr) continue;
    bool any_withheld = false, any_fixed = false;
    for (const PlanSite& s : sites) {
      if (s.rule != rule->sites_rule || !holds_field_for(facts, f.class_name, s.class_name, rule->anchor)) continue;
      any_withheld |= holds(withheld, {s.line, s.column});
      any_fixed |= s.fix.has_value();
    }
    if (!any_withheld || any_fixed) continue;
    f.fix.reset();
    f.field_text.clear();
    f.reason = "no plan site of " + f.class_name + " is threaded (see the reasons its plan sites give), so no field is added";
  }
}

// The scale findings of every cast rule's consumers that name kv_scales, for the FlashInfer the file runs with.
std::vector<RunScaleFinding> run_scales_of(const RuleSet& rules, const ModuleFacts& facts, const FileReport& report,
                                           const std::optional<FlashInferVersion>& target, const std::string& unpinned) {
  std::vector<RunScaleFinding> out;
  const std::string& text = facts.file().source.text();
  for (const CastRule& rule : rules.cast_rules) {
    if (!rule.files.matches(text)) continue;
    std::string since;
    for (const Fp8Consumer& c : rule.fp8_consumers) {
      if (c.kv_scales) since = c.kv_scales->since;
    }
    if (since.empty() || (target && !version_at_least(target->version, since))) continue;
    const std::string flashinfer =
        target ? "FlashInfer " + target->version + " (" + target->evidence + ")"
               : "FlashInfer " + since + " or later (assumed: " +
                     (unpinned.empty() ? std::string("no FlashInfer version found above the file")
                                       : unpinned + " names no single release") +
                     "; say which with --flashinfer-version)";
    for (RunScaleFinding& f : check_run_scales(rule, rules, facts, report.plan_sites, report.casts, flashinfer)) {
      out.push_back(std::move(f));
    }
  }
  return out;
}
}  // namespace

FileReport analyze_file(const RuleSet& rules, const std::shared_ptr<const ParsedFile>& file,
                        const std::optional<FlashInferVersion>& target, const std::string& unpinned,
                        const std::vector<HeldSite>& held) {
  FileReport report;
  report.file = file;
  report.flashinfer = target;
  report.flashinfer_unpinned = unpinned;
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
    if (!rule.files.matches(text)) continue;
    const FieldRule* field_rule = rules.field_rule(rule.field_rule);
    plan_site_fixes(rule, field_rule != nullptr ? field_rule->anchor : "", facts, report.fields, report.plan_sites);
  }
  // Casts last: they are redundant only if the plan sites are threaded once the fixes above are made. A run()
  // whose wrapper would then be planned for the KV dtype must get the KV data unconverted; where it would not,
  // that wrapper's sites keep their KV dtype unfixed, which can keep casts, which can reach other run()s: so
  // casts and run inputs are checked again until no more fixes are withheld (each round withholds one or more).
  std::vector<RunInputFinding> run_inputs;
  std::vector<SourcePosition> withheld;
  hold_to_flashinfer(rules, text, target, report.plan_sites, withheld);
  for (PlanSite& site : report.plan_sites) {
    for (const HeldSite& h : held) {
      if (!site.fix || site.line != h.line || site.column != h.column) continue;
      drop_fix(site, h.reason);
      withheld.push_back({site.line, site.column});
    }
  }
  for (;;) {
    report.casts = casts_of(rules, facts, report.plan_sites, report.fields);
    bool changed = false;
    for (const CastRule& rule : rules.cast_rules) {
      if (!rule.files.matches(text)) continue;
      for (RunInputFinding& r : check_run_inputs(rule, rules, facts, report.plan_sites, report.casts)) {
        for (PlanSite& site : report.plan_sites) {
          if (r.ignored || !site.fix || !holds(r.wrapper_sites, {site.line, site.column})) continue;
          withhold(site, r);
          withheld.push_back({site.line, site.column});
          changed = true;
        }
        const bool known = std::any_of(run_inputs.begin(), run_inputs.end(), [&](const RunInputFinding& k) {
          return k.line == r.line && k.column == r.column && k.ignored == r.ignored &&
                 syntax::same(k.consumer_call, r.consumer_call);
        });
        if (!known) run_inputs.push_back(std::move(r));
      }
    }
    if (!changed) break;
  }
  for (RunInputFinding& r : run_inputs) r.effect = effect(r, report.plan_sites, withheld);
  drop_unused_fields(rules, facts, report.fields, report.plan_sites, withheld);
  report.run_inputs = std::move(run_inputs);
  report.run_scales = run_scales_of(rules, facts, report, target, unpinned);

  auto by_position = [](const auto& a, const auto& b) { return std::tie(a.line, a.column) < std::tie(b.line, b.column); };
  std::stable_sort(report.plan_sites.begin(), report.plan_sites.end(), by_position);
  std::stable_sort(report.fields.begin(), report.fields.end(), by_position);
  std::stable_sort(report.casts.begin(), report.casts.end(), by_position);
  std::stable_sort(report.run_inputs.begin(), report.run_inputs.end(), by_position);
  std::stable_sort(report.run_scales.begin(), report.run_scales.end(), by_position);

  for (const FieldFinding& f : report.fields) {
    if (f.fix) report.edits.add(*f.fix);
  }
  for (const PlanSite& s : report.plan_sites) {
    if (s.fix) report.edits.add(*s.fix);
  }
  for (const CastFinding& c : report.casts) {
    for (const Edit& e : c.fix) report.edits.add(e);
  }
  for (const RunScaleFinding& r : report.run_scales) {
    if (r.fix) report.edits.add(*r.fix);
  }
  // Last: a module-level helper that the edits above call (the sm90 form's cached platform test).
  for (const FieldRule& rule : rules.field_rules) {
    if (rule.module_helper_name.empty() || !rule.files.matches(text)) continue;
    const ModuleHelper helper{rule.module_helper, rule.module_helper_name, rule.module_helper_imports, rule.id};
    if (auto edit = module_helper_edit(helper, facts, report.edits); edit && report.edits.fits(*edit)) {
      report.edits.add(*edit);
      report.helper_edits.emplace_back(helper.name, *edit);
    }
  }
  return report;
}

}  // namespace kvpatch
