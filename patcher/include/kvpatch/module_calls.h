#pragma once
// Values that cross a call into a def of the same module, and back out of it. Moving a plan() or run() call, or
// the read of the KV cache, into a helper method is a refactor that changes nothing at run time, so it must change
// nothing in kvpatch's verdicts either: a dtype or KV data read from a helper's parameter is what the helper's calls
// pass it, a KV value passed to a helper goes on to wherever the helper reads that parameter, and a helper's call
// holds what the helper returns. All hold only where the module shows the calls: `<self>.m(...)` in a method (m
// found along the instance's classes), `f(...)` for a module-level function, and `f(...)` for a def nested in the
// function making the call (or one enclosing it) whose name that function uses only to call it.
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"

namespace kvpatch {

// The method Python runs for `<self>.name(...)` on an instance of cls, the first def of it along cls's lineage;
// nullptr where the module does not show it.
const FunctionFacts* method_found(const ModuleFacts& facts, const ClassFacts& cls, const std::string& name);

// Every call of the function in this module. nullopt where the module may not show every call: a static or class
// method, the function read as a value (handed to partial(), stored), a method called on something other than the
// caller's own instance, or a nested def whose name its enclosing def uses other than to call it (or binds again,
// or decorates). An empty vector: no call at all.
std::optional<std::vector<TSNode>> known_calls(const ModuleFacts& facts, const FunctionFacts& function);

// What one call of a function binds to one of its parameters.
struct ParameterBinding {
  TSNode call{};
  const FunctionFacts* caller = nullptr;   // the function the call is written in; nullptr at module level
  TSNode value{};                          // the argument, or null when the call passes none
  std::optional<std::string> default_text; // with no argument: the default the call leaves the parameter to
  std::string failure;                     // with neither: why the call binds it to nothing known ("" when unsaid)
};

// Every call of the function in this module (known_calls), with what each binds to the parameter. nullopt where
// the module may not show every call, and so does not decide the parameter's value, and for a method's receiver.
std::optional<std::vector<ParameterBinding>> parameter_bindings(const ModuleFacts& facts, const FunctionFacts& function,
                                                                const std::string& parameter);

// A parameter of a def a call may run.
struct ReceivingParameter {
  const FunctionFacts* function = nullptr;
  std::string name;
  TSNode node{};  // the parameter's name in the def
};

// The parameter that receives `argument` (a value in the call's argument list) in each def the call may run
// (defs_called). Empty when that is not known: no def known, a call that unpacks *x or **x, an argument that *args
// or **kwargs collects.
std::vector<ReceivingParameter> receiving_parameters(const ModuleFacts& facts, TSNode call, TSNode argument);

// The defs the call may run: for `<self>.m(...)` in a method, m as every class whose instances run that method
// finds it (a subclass's override too); for `f(...)`, the def f nested in the nearest enclosing function that binds
// f, else the module-level def f. Empty when that is not known: a def the module does not show, a static or class
// method, a name bound otherwise than by one def whose calls are all shown (known_calls).
std::vector<const FunctionFacts*> defs_called(const ModuleFacts& facts, TSNode call);

// The values the def returns, each `return` of its own body (not of a def nested in it); nullopt for a generator,
// whose call returns no value of these, and for a def whose end can be reached (syntax::never_reaches_end), which
// returns None there.
std::optional<std::vector<TSNode>> returned_values(const FunctionFacts& function);

// One value a def returns, with the def it is returned from.
struct ReturnedValue {
  TSNode value{};
  const FunctionFacts* function = nullptr;
};

// For `a, b = <call>` (statement, an assignment whose targets are names only, none starred) and one of its names:
// the element each `return` of each def the call may run gives that name. nullopt unless every def is known
// (defs_called) and each of its returns is a tuple or list literal of as many elements as there are names.
std::optional<std::vector<ReturnedValue>> unpacked_returns(const ModuleFacts& facts, TSNode statement,
                                                           const std::string& name);

// The string "L:C" of a node's start, 1-based, for messages.
std::string position_text(TSNode node);

}  // namespace kvpatch
