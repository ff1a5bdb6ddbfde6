#pragma once
// Writes patched files in place: atomic per file, all-or-nothing across files.
#include <string>
#include <vector>

#include "kvpatch/findings.h"

namespace kvpatch {

struct AppliedFile {
  std::string display_path;
  int edits = 0;
  // Set when the original's owner or group could not be given to the new file (a user other than root
  // patching another user's file): what the file is owned by now.
  std::string ownership_changed;
};

struct ApplyResult {
  std::vector<AppliedFile> patched;  // in the order written
  std::vector<FileError> errors;     // non-empty: nothing was written
};

// First, every file's edits must leave code Python compiles (edited_code_check.h); if one does not, nothing is
// written. Then, for every file with edits: writes the new content to a temporary file in the same directory
// (flushed, synced, with the original mode, and its owner and group where this process may set them),
// then checks the original is unchanged since it was
// read (content and modification time) and renames every temporary over its original. If any step
// before the renames fails, every temporary is removed and no file is touched.
ApplyResult apply_files(const std::vector<const FileReport*>& files);

}  // namespace kvpatch
