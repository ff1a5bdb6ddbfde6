// Runs the kvpatch binary under test (path from KVPATCH_BIN) and renders its output for goldens.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "process.h"

namespace kvpatch_test {

// `kvpatch <args...>` with `working_dir` as the current directory.
ProcessResult run_kvpatch(const std::vector<std::string>& args, const std::filesystem::path& working_dir,
                          const ProcessOptions& extra = {});

// What a golden file holds: stdout, then stderr after a marker line when there is any, with the
// scratch directory's absolute path replaced by "<tmp>" so goldens do not depend on where they ran.
std::string render_for_golden(const ProcessResult& result, const std::filesystem::path& scratch_dir);

// "line N: expected <...> / actual <...>" for the first differing line, or "" when equal.
std::string first_difference(const std::string& expected, const std::string& actual);

}  // namespace kvpatch_test
