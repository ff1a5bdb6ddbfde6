#pragma once
// The rule engine: runs each kind of rule over one parsed file and collects findings and edits.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/dtype_roles.h"
#include "kvpatch/findings.h"
#include "kvpatch/flashinfer_version.h"
#include "kvpatch/ignore_comments.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/rule_set.h"
#include "kvpatch/wrapper_types.h"

namespace kvpatch {

// plan-site rules: every call that reaches the wrapper method (or an alias of it), bound and classified.
std::vector<PlanSite> find_plan_sites(const PlanSiteRule& rule, const ModuleFacts& facts);

// field rules: each class in scope, with its KV field present or the insertion that adds it.
std::vector<FieldFinding> check_fields(const FieldRule& rule, const PlanSiteRule& sites_rule, const ModuleFacts& facts,
                                       const std::vector<PlanSite>& sites);

// Gives each missing site of the rule its fix: the bound KV argument replaced (or added) with the
// KV field of the site's class, as the field rule found or adds it. field_anchor is that rule's anchor
// (`self.data_type`): it says which class's __init__ sets the field up when classes of the module inherit
// from each other ("" when the rule set has no such field rule: the site's own class then).
void plan_site_fixes(const PlanSiteRule& rule, const std::string& field_anchor, const ModuleFacts& facts,
                     const std::vector<FieldFinding>& fields, std::vector<PlanSite>& sites);

// The plan sites (indices into sites) that may plan the wrapper a consumer's receiver holds, by the
// attribute the receiver is read from (see WrapperChannel).
std::vector<std::size_t> sites_planning(const Fp8Consumer& consumer, const std::string& receiver_source,
                                        const std::vector<PlanSite>& sites);

// cast rules: each cast of a KV-cache value, redundant when every consumer accepts the KV dtype after the edits.
// Under a plan that names the KV-cache dtype only for one dtype (upstream form), a redundant cast is guarded
// so that it converts only the other caches; one already guarded that way is required (and agrees with the plan).
std::vector<CastFinding> check_casts(const CastRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                                     const std::vector<PlanSite>& sites, const std::vector<FieldFinding>& fields);

// The edits that remove a redundant cast: its call unwrapped and its removed_statements gone, each removal made
// knowing that `elsewhere` (the statements other casts' fixes remove) go in the same run.
std::vector<Edit> cast_removal(const SourceFile& source, const CastFinding& cast, const std::vector<TSNode>& elsewhere);

// A dtype local's statement as a cast finding names it among its unread_dtype_locals: "dtype = q.dtype at 12:9".
std::string dtype_local_text(const SourceFile& source, TSNode statement);

// The KV inputs of every run() on a wrapper whose plan sites are all threaded after the edits, traced back to
// a KV source: each conversion on the way that is not a cast the cast rules remove or guard
// (CastFinding::agrees_with_plan), and each value whose origin kvpatch cannot establish, is a finding.
std::vector<RunInputFinding> check_run_inputs(const CastRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                                              const std::vector<PlanSite>& sites, const std::vector<CastFinding>& casts);

// The consumers with kv_scales, on the same run() calls whose inputs all trace back unconverted: each passes
// the FP8 scales already (present) or gets them for an FP8 cache only (missing, with the fix). flashinfer says
// which FlashInfer release the findings assume, and why; the caller skips the check for releases before it.
std::vector<RunScaleFinding> check_run_scales(const CastRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                                              const std::vector<PlanSite>& sites, const std::vector<CastFinding>& casts,
                                              const std::string& flashinfer);

// Runs every rule that selects the file, in dependency order, and fills the edit set.
// Throws OverlappingEdit when two rules ask for clashing edits.
// target: the FlashInfer the file will run with, when known (FlashInfer 0.6.14 and later need FP8 scales in
// run(); earlier releases refuse them). Unknown: the rule files' newest behaviour is assumed, and said so, naming
// `unpinned` (what find_flashinfer_version passed over) when the file's requirement is a range.
// held: plan sites (by position) that another file's findings keep unthreaded, each with the reason it gives
// (cross_file.h); a held site keeps its status and loses its fix, as a site a run-input finding withholds.
struct HeldSite {
  int line = 0;
  int column = 0;
  std::string reason;
};
FileReport analyze_file(const RuleSet& rules, const std::shared_ptr<const ParsedFile>& file,
                        const std::optional<FlashInferVersion>& target = std::nullopt, const std::string& unpinned = "",
                        const std::vector<HeldSite>& held = {});

}  // namespace kvpatch
