#pragma once
// Which class's __init__ sets a field for the instances that run a class's methods, when the classes of one
// module inherit from each other: the field rule adds the KV dtype field there, and a plan site reads it there.
#include <string>
#include <vector>

#include "kvpatch/module_facts.h"

namespace kvpatch {

// The class whose __init__ assigns `anchor` (a rule's `self.x`, read through each __init__'s own instance
// parameter) for instances of cls: cls's own __init__ if it assigns it; else, going up cls's lineage, the next
// __init__ that runs, as long as each one passed over calls one further up (`super().__init__(...)`,
// `super(C, self).__init__(...)`, or `X.__init__(self, ...)` for any class X above it, which may pass over classes
// between) or the class has none. nullptr when no __init__ along the way assigns it.
const ClassFacts* init_holder(const ModuleFacts& facts, const ClassFacts& cls, const std::string& anchor);

// The holders (above) of every class whose instances run class_name's methods, each named once, in module order:
// the classes that must carry the field for a method of class_name to read it. Empty for an unknown class.
std::vector<std::string> field_holders(const ModuleFacts& facts, const std::string& class_name,
                                       const std::string& anchor);

// Whether holder is one of class_name's field holders (above): its field serves class_name's methods.
bool holds_field_for(const ModuleFacts& facts, const std::string& holder, const std::string& class_name,
                     const std::string& anchor);

}  // namespace kvpatch
