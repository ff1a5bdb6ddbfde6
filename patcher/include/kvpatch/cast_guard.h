#pragma once
// A cast under a plan that names the KV-cache dtype only for one dtype (upstream's
// `kv if kv == torch.float8_e4m3fn else model`): the cast must stay for the other caches, guarded.
#include <string>
#include <vector>

#include "kvpatch/findings.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

// The KV dtype a threaded plan site names once the edits are made.
struct KvPlanForm {
  // ModelDtype: what the site passes holds the model dtype for every cache (a field named as the KV-cache dtype
  // but assigned the model dtype), so run() still needs the cast.
  enum class Kind { CacheDtype, CacheDtypeOnlyFor, ModelDtype, Unclear };
  Kind kind = Kind::CacheDtype;
  std::string only_for;  // CacheDtypeOnlyFor: D of `kv if kv == D else model`, as one-line source text
  std::string why;       // Unclear and ModelDtype: why
};

// The form of a site's bound KV dtype (or, for a site the edits fix, of the field it gets), read through
// locals and the class's `self.<field> = ...` assignments, those that reach the read where that can be told.
// The upstream gate written as statements (`if kv == D:` x = kv, `else:` x = model; or x = model, then
// `if kv == D:` x = kv) is that form too. Any other choice between the KV-cache and the model dtype (say, on
// the GPU) is Unclear: no test of the cache's dtype can stand for it in a guard.
KvPlanForm kv_plan_form(const PlanSite& site, const PlanSiteRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                        const std::vector<FieldFinding>& fields);

// One form when every site agrees (no sites: CacheDtype); the first Unclear, or Unclear, otherwise.
KvPlanForm combined_plan_form(const std::vector<KvPlanForm>& forms);

// True when the cast only runs for a value whose `.dtype` is not `dtype`: inside `if <x>.dtype != D:` (or an
// `and` holding it), in an elif / else after `if <x>.dtype == D:`, or as `x if x.dtype == D else <cast>`.
bool cast_guarded_against(const ModuleFacts& facts, TSNode cast, const std::string& dtype);

// The edits that make the cast run only for values whose dtype is not `dtype`:
//   `x = x.to(..)` alone in an if / elif branch -> the condition gets `and x.dtype != D`;
//   `x = x.to(..)` elsewhere                    -> the statement goes under `if x.dtype != D:`;
//   `x = <src>.to(..)`                          -> `x = <src>` then `if x.dtype != D:` / `x = x.to(..)`;
//   `x.to(..)` inside an expression             -> `(x if x.dtype == D else x.to(..))`.
// Throws EditNotPossible (e.g. an inline cast of an expression that is not a name).
// `module_helpers` are module-level defs the edits add where missing (a rule's module_helper): the guard may call them.
std::vector<Edit> guard_cast(const ModuleFacts& facts, TSNode cast, const std::string& dtype, const std::string& rule,
                             const std::vector<std::string>& module_helpers = {});

}  // namespace kvpatch
