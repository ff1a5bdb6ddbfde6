#pragma once
// Where a function reads a local, and the local that one read alone uses: what a fix that changes or removes that
// read must take along so that no assignment is left unread (ruff's F841).
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"

namespace kvpatch {

// The identifiers spelling `name` in the function's body, nested functions and lambdas included, other than those in
// `not_reads` (an assignment's targets, the read in hand) and those that name no variable (`x.name`, `f(name=...)`):
// every place that reads the local, or binds it some other way (a `global`, a nested def's parameter).
std::vector<TSNode> local_reads(const ModuleFacts& facts, const FunctionFacts& function, const std::string& name,
                                const std::vector<TSNode>& not_reads);

// The expression statement of `name = value` standing alone: a plain assignment to one name, not `a = b = value` or
// `a, b = value`, with no other statement in it. A fix may then change or remove that statement without touching
// another binding. Null otherwise.
TSNode lone_name_assignment(const Assignment& a);

// A name or a chain of attributes on one (`q`, `self.q`): evaluating it runs no code but attribute lookups.
bool pure_reference(TSNode node);

// `name = value`, standing alone (lone_name_assignment) in the function of `read` (an identifier), that is the only
// assignment of the name there, gives it a pure reference, and reaches `read`, which is the only place the function
// reads it.
struct SoleLocal {
  TSNode statement;  // the expression statement
  TSNode value;
};
std::optional<SoleLocal> sole_local(const ModuleFacts& facts, TSNode read);

}  // namespace kvpatch
