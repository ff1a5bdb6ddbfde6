#pragma once
// Where code reaches a wrapper method other than by writing `<receiver>.<method>(...)`. The first manual
// fix of the KV cast missed a plan() call; a call kvpatch cannot see is the same miss, so every read of
// `<receiver>.<method>` is accounted for: a call through parentheses or getattr() is a call like any
// other, a local name bound to the method and only ever called makes each of its calls one, and a
// method handed on as a value (to partial(), into a container, a conditional, a walrus) is reported,
// since the calls made through it cannot be bound.
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"

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

// Every read of `r.m` (or `getattr(r, "m")`) that is not a callee, an assignment target, or only
// inspected (an attribute of it read, compared, or handed to isinstance() / callable() and the like).
std::vector<MethodValue> method_values(const std::string& method, const ModuleFacts& facts);

// Reads of the module-level function `name` as a value (`partial(name, w)`, `self.f = name`): not a call of
// it, not its def, not an assignment to it, and not only inspected. Each with what takes it, as above.
std::vector<MethodValue> function_values(const std::string& name, const ModuleFacts& facts);

}  // namespace kvpatch
