#pragma once
// Which assignments of a local name can give it its value where it is read: a read inside one branch of an
// `if` sees that branch's assignment, not the other branch's, and `x = a` followed by `if c: x = b` leaves two.
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"

namespace kvpatch {

// The assignments of `assignments` (every assignment of the plain name `name` in one function, as
// ModuleFacts::local_assignments gives them) that can reach `read`, in module order, found by walking the
// function's statements backwards from the read. A read in a def nested in the function (a closure) sees what
// reaches the calls of that def, when the function itself makes every one of them (known_calls). nullopt when the
// walk cannot tell (then any of them can): fewer than two assignments; a read in another function (but such a
// closure), a lambda or a generator expression; an assignment
// inside a loop, try or match around or before the read; a walrus, or an assignment that is not a statement of
// its own; a name bound some other way (import, def, del, global, nonlocal); no assignment before the read.
std::optional<std::vector<const Assignment*>> reaching_assignments(const ModuleFacts& facts,
                                                                   const std::vector<const Assignment*>& assignments,
                                                                   const std::string& name, TSNode read);

// The same for what the function leaves behind when it returns (an `__init__`'s `self.x = ...`, read later by other
// methods): the assignments of `target` that reach the end of its body. nullopt when the walk cannot tell, as
// above, or the function can return before its end (a return statement, or a yield).
std::optional<std::vector<const Assignment*>> reaching_end(const ModuleFacts& facts,
                                                           const std::vector<const Assignment*>& assignments,
                                                           const std::string& target);

// The same for a read of `self.<attr>` (`target` its text), given the assignments that can set it
// (ModuleFacts::self_attribute_assignments), all in one function: read in that function, those that reach the read;
// read in another method, when the one function is `__init__` and it calls no method of its own instance (which could
// read what it has set so far), those it leaves at its end. nullopt when neither applies or the walk cannot tell.
std::optional<std::vector<const Assignment*>> attribute_assignments_reaching(
    const ModuleFacts& facts, const std::vector<const Assignment*>& assignments, const std::string& target, TSNode read);

// True when there is at least one assignment and every one is made in a method named `__init__` (of the class or a
// base): what the attribute holds once the instance is built, the same for every other method that reads it.
bool set_only_in_init(const ModuleFacts& facts, const std::vector<const Assignment*>& assignments);

// The function's assignments of the plain name (ModuleFacts::local_assignments), narrowed to those that reach
// `read` where the walk can tell.
std::vector<const Assignment*> assignments_reaching(const ModuleFacts& facts, const FunctionFacts& function,
                                                   const std::string& name, TSNode read);

}  // namespace kvpatch
