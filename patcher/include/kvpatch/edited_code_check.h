#pragma once
// kvpatch's edits must leave code that Python compiles. Each edit keeps valid Python on its own, and their
// combinations are tested, but a combination no test foresaw (two removed casts that emptied an `if`'s body) once
// made apply write a file Python refused: a server that no longer starts, from a tool meant to fix it. So the
// patched text of every file is parsed and checked as an input would be before apply writes it or diff prints it;
// a failure there is kvpatch's bug, reported as such, and nothing is written.
#include <optional>
#include <string>

#include "kvpatch/findings.h"

namespace kvpatch {

// nullopt when the file's edits leave code Python would compile (or there are none); else the error, naming the
// line of the patched text and what is wrong there; its remedy starts with `outcome` ("nothing was written").
std::optional<FileError> code_broken_by_edits(const FileReport& report, const std::string& outcome);

}  // namespace kvpatch
