#pragma once
// The pipeline from inputs to a Run: read each file, keep those a rule selects, parse, run the rules.
#include "kvpatch/edit_set.h"
#include "kvpatch/flashinfer_version.h"
#include "kvpatch/input_error.h"
#include "kvpatch/input_paths.h"
#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"
#include "kvpatch/source_file.h"

namespace kvpatch {

// Input problems (unreadable, binary, syntax errors) become Run::errors; the other files are analysed.
// inputs.context is read, once a file is analysed, only to link files (cross_file.h); every file of the set, context
// included, is searched first for the wrapper subclasses the others may import (project_classes.h).
Run analyze_inputs(const RuleSet& rules, const InputSet& inputs);

// A file's problem as a Run::errors entry: an input error, or rules that asked for clashing edits in it.
FileError to_file_error(const InputError& e);
FileError clashing_edits_error(const std::string& display_path, const OverlappingEdit& e);

// Whether any rule selects a file of this text (by the rules' content_contains).
bool rules_select(const RuleSet& rules, const std::string& text);

// Parses a loaded file and runs the rules against the FlashInfer found above its path (flashinfer_target(),
// through the run's `lookup` when given). Throws InputError (the file does not parse) and OverlappingEdit.
FileReport analyze_source(const RuleSet& rules, SourceFile source, FlashInferLookup* lookup = nullptr);

// Runs one rule file test case; returns what went wrong (empty when it passes).
std::vector<std::string> run_rule_test(const RuleSet& rules, const RuleTestCase& test);

}  // namespace kvpatch
