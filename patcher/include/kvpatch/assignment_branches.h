#pragma once
// A choice between values written as statements rather than as `a if c else b`: one assignment of a name in
// each branch of an if statement, or a default assigned just before an if statement whose branches override it.
// Readers of a dtype (the classifier, the cast guard's plan-form reader) read it as the conditional it spells.
#include <optional>
#include <vector>

#include "kvpatch/module_facts.h"

namespace kvpatch {

struct AssignmentBranch {
  TSNode condition{};                   // the branch's test; null for the else, or for the default before the if
  const Assignment* assignment = nullptr;
};

// The branches, tests in source order (`if`, then each `elif`) and the else or the default last, when
// `assignments` (those of one name that reach `read`) are exactly one plain `x = v` statement in each branch of one
// if statement with an else; or, without an else, when `reaching` (the walk back from the read found them, so
// nothing else reaches it) and one more is `x = d` before the if statement in the same block. `read` must lie
// outside the if statement. nullopt for any other shape.
std::optional<std::vector<AssignmentBranch>> assignment_branches(const std::vector<const Assignment*>& assignments,
                                                                 TSNode read, bool reaching);

}  // namespace kvpatch
