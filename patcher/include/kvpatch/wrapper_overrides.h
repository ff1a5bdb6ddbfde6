#pragma once
// A wrapper subclass's own def of a method kvpatch binds (plan(), and consumers such as run()): whether a call on its
// instances may be bound as a call of the wrapper's method is. kvpatch binds `w.plan(...)` and `w.run(...)` against
// the wrapper's parameters; an override that takes other ones (`def plan(self, tag, *args, **kwargs)`) shifts every
// argument: the plan fix would replace whichever argument lands on kv_data_type (the query's dtype, with a tag in
// front), and a run() call's KV inputs would be read from the wrong arguments. Calls that may run such an override
// are never bound.
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/method_references.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/rule_set.h"
#include "kvpatch/signature.h"
#include "kvpatch/wrapper_types.h"

namespace kvpatch {

// A wrapper method as kvpatch binds its calls: its name, the wrapper's parameters after the instance, how many of
// them (from the first) kvpatch reads a call's arguments into by position, and the keywords a call may pass or a fix
// may add that the def must take too (by name, or through **kwargs).
struct WrapperMethod {
  std::string name;
  const Signature* signature = nullptr;
  std::size_t positional = 0;
  std::vector<std::string> keywords;
  // The parameters a def that takes them must hand on unchanged (a consumer's KV inputs): a def that converts one
  // before the wrapper's method gets it does not bind, whatever its parameters.
  std::vector<std::string> handed_on;
};

// plan(): its parameters through the query's and the KV dtype's.
WrapperMethod plan_method(const PlanSiteRule& rule);
// A consumer (run()): its parameters through the last KV one a call may pass by position; its keyword-only KV
// parameters (kv_cache) and the FP8 scales a fix adds by keyword.
WrapperMethod consumer_method(const Fp8Consumer& consumer);

// `super().<method>(*args, **kwargs)` in a wrapper subclass's own `def <method>(self, *args, **kwargs)` that reads
// either name nowhere else (so neither is bound again nor changed, as by `kwargs.update(...)`): it hands the wrapper's
// method exactly what each call of the override passes.
bool forwards_to_base(TSNode call, const std::vector<CallArgument>& arguments, const std::string& method,
                      const FunctionFacts* scope, const WrapperTypes& types, const ModuleFacts& facts);

// Whether a call of this def binds as a call of the wrapper's method would: its parameters after the instance are the
// wrapper's, by name and position, through method.positional, and it takes method.keywords; or it only forwards them
// to the wrapper's (forwards_to_base).
bool binds_as_wrapper(const FunctionFacts& def, const WrapperMethod& method, const WrapperTypes& types,
                      const ModuleFacts& facts);

// What such a def does with a parameter of method.handed_on besides passing it, as itself, in its own place (the
// same position, or the same keyword) to the wrapper's method (`super().run(...)`, or `Base.run(self, ...)` through a
// base of its class): "" when nothing. A def that converts the KV cache before handing it on (`super().run(q_nope,
// q_pe, ckv_cache.to(q_nope.dtype), ...)`) would hand an FP8-planned run() the model dtype once the plan is threaded.
std::string altered_input(const FunctionFacts& def, const WrapperMethod& method, const ModuleFacts& facts);

// A wrapper class whose instances run a def of the method that does not bind as the wrapper's.
struct RebindingOverride {
  std::string class_name;  // the class (of this module, or the name another module's class is imported under)
  OverrideDef def;
};

// The override that instances of a wrapper class of the module run, when it does not bind as the wrapper's: the def
// its lineage in the module finds, or else that of a base imported from the run's other modules.
std::optional<RebindingOverride> class_override(const ClassFacts& cls, const WrapperMethod& method,
                                               const WrapperTypes& types, const ModuleFacts& facts);

// Those of the module's own wrapper subclasses (through their bases in the module), and those imported from the
// run's other modules (ProjectClass::rebinding).
std::vector<RebindingOverride> rebinding_overrides(const WrapperMethod& method, const std::string& wrapper_class,
                                                   const WrapperTypes& types, const ModuleFacts& facts);

// Whether the receiver is `super()` (or `super(C, self)`) in a def of the method itself in a wrapper subclass C: the
// call runs the def C's bases find, the wrapper's own or a base's override (override_run() tells which).
bool super_in_override(TSNode receiver, const FunctionFacts* scope, const std::string& method, const WrapperTypes& types,
                       const ModuleFacts& facts);

// The override of those that a call of the method on the wrapper may run; nullptr where none may. Through the wrapper
// class itself (`W.plan(w, ...)`) the wrapper's own runs; through `super()` in an override (super_in_override), the
// def its class's bases find; on an instance of a known class of the module, the defs its class and subclasses find;
// on any other receiver (a parameter, a field), any of them may.
const RebindingOverride* override_run(const MethodCall& call, TSNode callee, const std::string& method,
                                      const std::vector<RebindingOverride>& overrides, const std::string& wrapper_class,
                                      const WrapperTypes& types, const FunctionFacts* scope, const ModuleFacts& facts);

// Why such a call cannot be bound, for messages: `w may be a TaggedWrapper, whose own run(self, tag, *args, **kwargs)
// (backend.py:5) neither takes the wrapper's parameters in their order nor only hands them on`, or, for one that does
// take them, what it does with a KV input (OverrideDef::why).
std::string override_reason(const std::string& receiver, const std::string& method, const RebindingOverride& o);

}  // namespace kvpatch
