#pragma once
// The pipeline from inputs to a Run: read each file, keep those a rule selects, parse, run the rules.
#include "kvpatch/input_paths.h"
#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

// Input problems (unreadable, binary, syntax errors) become Run::errors; the other files are analysed.
Run analyze_inputs(const RuleSet& rules, const InputSet& inputs);

// Runs one rule file test case; returns what went wrong (empty when it passes).
std::vector<std::string> run_rule_test(const RuleSet& rules, const RuleTestCase& test);

}  // namespace kvpatch
