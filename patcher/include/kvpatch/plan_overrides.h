#pragma once
// A wrapper subclass's own plan(): whether a call on its instances may be bound as the wrapper's plan() is. kvpatch
// binds `w.plan(...)` against the wrapper's parameters; an override that takes other ones (`def plan(self, tag,
// *args, **kwargs)`) shifts every argument, and the fix would then replace whichever argument lands on kv_data_type
// (the query's dtype, with a tag in front). Calls that may run such an override are never bound.
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"
#include "kvpatch/rule_set.h"
#include "kvpatch/signature.h"
#include "kvpatch/wrapper_types.h"

namespace kvpatch {

// `super().plan(*args, **kwargs)` in a wrapper subclass's own `def plan(self, *args, **kwargs)` that reads either
// name nowhere else (so neither is bound again nor changed, as by `kwargs.update(...)`): it hands the wrapper's
// plan() exactly what each call of the override passes.
bool forwards_to_base(TSNode call, const std::vector<CallArgument>& arguments, const PlanSiteRule& rule,
                      const FunctionFacts* scope, const WrapperTypes& types, const ModuleFacts& facts);

// Whether a call of this def of the rule's method binds its dtypes as a call of the wrapper's would: its parameters
// after the instance are the wrapper's, by name and position, up to the KV dtype's, or it only forwards them to the
// wrapper's (forwards_to_base).
bool binds_as_wrapper(const FunctionFacts& method, const PlanSiteRule& rule, const WrapperTypes& types,
                      const ModuleFacts& facts);

// A wrapper class whose instances run a def of the method that does not bind as the wrapper's.
struct RebindingOverride {
  std::string class_name;  // the class (of this module, or the name another module's class is imported under)
  std::string where;       // the def: `file.py:line`
  std::string parameters;  // its parameter list as written, `(self, tag, *args, **kwargs)`
};

// The override that instances of a wrapper class of the module run, when it does not bind as the wrapper's: the def
// its lineage in the module finds, or else that of a base imported from the run's other modules.
std::optional<RebindingOverride> class_override(const ClassFacts& cls, const PlanSiteRule& rule,
                                               const WrapperTypes& types, const ModuleFacts& facts);

// Those of the module's own wrapper subclasses (through their bases in the module), and those imported from the
// run's other modules (ProjectClass::rebinding).
std::vector<RebindingOverride> rebinding_overrides(const PlanSiteRule& rule, const WrapperTypes& types,
                                                   const ModuleFacts& facts);

}  // namespace kvpatch
