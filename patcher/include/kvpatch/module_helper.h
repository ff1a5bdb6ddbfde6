#pragma once
// A module-level definition that a rule's inserted code calls (the sm90 form's cached platform test), added
// once per module when an edit calls it and the module does not define it.
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/edit_set.h"
#include "kvpatch/module_facts.h"

namespace kvpatch {

struct ModuleHelper {
  std::string definition;            // Python source of one top-level def (decorators allowed), 4-space indented
  std::string name;                  // the def's name, read from `definition`
  std::vector<std::string> imports;  // modules the definition needs bound (`import X` is added when one is not)
  std::string rule;                  // the rule whose edits call it
};

// The def's name in `definition`, or "" when it is not exactly one top-level (decorated) function definition.
std::string module_helper_name(const std::string& definition);

// The insertion that defines `helper` in the module, when some edit in `edits` calls it (`name(`) and the module
// binds no such name; nullopt otherwise. It goes after the last top-level import (else before the first statement
// after the docstring), with the file's line ending and indentation step, any import it lacks, and blank lines.
std::optional<Edit> module_helper_edit(const ModuleHelper& helper, const ModuleFacts& facts, const EditSet& edits);

}  // namespace kvpatch
