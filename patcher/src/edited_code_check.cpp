#include "kvpatch/edited_code_check.h"

#include "kvpatch/input_error.h"
#include "kvpatch/python_syntax.h"

namespace kvpatch {

std::optional<FileError> code_broken_by_edits(const FileReport& report, const std::string& outcome) {
  if (report.edits.empty()) return std::nullopt;
  const SourceFile& source = report.file->source;
  try {
    parse_source_file(SourceFile(source.path(), source.display_path(), source.bom() + report.edits.apply(source.text())));
  } catch (const InputError& e) {
    // The parse error speaks of an input ("...; the file is not edited"); here the text is kvpatch's own.
    std::string problem = e.what();
    const std::string input_ending = "; the file is not edited";
    if (problem.ends_with(input_ending)) problem.resize(problem.size() - input_ending.size());
    return FileError{source.display_path(), 0, 0,
                     "kvpatch's edits would leave code Python does not compile (line " + std::to_string(e.line()) +
                         " of the patched text: " + problem + "); this is a kvpatch bug",
                     outcome + "; report it with this file, and make the fix by hand until it is fixed "
                               "(kvpatch check lists what to change)"};
  }
  return std::nullopt;
}

}  // namespace kvpatch
