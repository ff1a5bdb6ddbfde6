#pragma once
// Where code reaches a wrapper method other than by writing `<receiver>.<method>(...)`. The first manual
// fix of the KV cast missed a plan() call; a call kvpatch cannot see is the same miss, so every read of
// `<receiver>.<method>` is accounted for: a call through parentheses or getattr() is a call like any
// other, a local name bound to the method and only ever called makes each of its calls one, and a
// method handed on as a value (to partial(), into a container, a conditional, a walrus) is reported,
// since the calls made through it cannot be bound.
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"
#include "kvpatch/wrapper_types.h"

namespace kvpatch {

struct MethodValue {
  TSNode node{};      // the `r.m` attribute or `getattr(r, "m")` call, read as a value
  TSNode receiver{};  // r
  std::string alias;  // the local it is bound to when that local is only ever called; "" otherwise
  std::vector<TSNode> alias_calls;  // then: the calls of that local, each a call of the method
  std::string context;  // for a value that escapes: what takes it, e.g. "passed to partial()"
};

// The receiver `r` of a call of the method: `r.m(...)`, `(r.m)(...)`, `getattr(r, "m")(...)`, or a call of a
// local alias of `r.m` (`values`: method_values() for the same method); a null node for any other call.
TSNode method_call_receiver(TSNode call, const std::string& method, const std::vector<MethodValue>& values,
                            const ModuleFacts& facts);

// A call of the method as the rules see it: on which instance, and whether that is known to be the wrapper.
struct MethodCall {
  // The instance the method runs on; for a call through a class (`W.m(r, ...)`, `type(x).m(r, ...)`, a local alias
  // of `W.m`) the first argument r, which Python passes as the method's first parameter, or null when the call does
  // not pass one first by position.
  TSNode receiver{};
  bool through_class = false;  // then the call's other arguments bind after the instance
  TypeVerdict verdict = TypeVerdict::Unknown;  // what the receiver holds (through W itself: the wrapper)
};

// The call as a call of the method (method_call_receiver(), then the class it may be called through); nullopt for
// any other call.
std::optional<MethodCall> wrapper_method_call(TSNode call, const std::string& method, const std::vector<MethodValue>& values,
                                              const WrapperTypes& types, const FunctionFacts* scope,
                                              const ModuleFacts& facts);

// Whether a read of the method as a value (`values`' receiver) is on a wrapper instance or through the wrapper's class.
bool read_on_wrapper(const MethodValue& value, const WrapperTypes& types, const FunctionFacts* scope);

// Every read of `r.m` (or `getattr(r, "m")`) that is not a callee, an assignment target, or only
// inspected (an attribute of it read, compared, or handed to isinstance() / callable() and the like).
std::vector<MethodValue> method_values(const std::string& method, const ModuleFacts& facts);

// Reads of the module-level function `name` as a value (`partial(name, w)`, `self.f = name`): not a call of
// it, not its def, not an assignment to it, and not only inspected. Each with what takes it, as above.
std::vector<MethodValue> function_values(const std::string& name, const ModuleFacts& facts);

}  // namespace kvpatch
