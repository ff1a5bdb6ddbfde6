#pragma once
// The *.py files a commit would record: paths and blob ids from the index, never the work tree.
#include <string>
#include <vector>

#include "kvpatch/findings.h"
#include "kvpatch/git_repository.h"

namespace kvpatch {

struct StagedFile {
  std::string path;     // relative to the work tree, '/'-separated, as the index names it
  std::string blob_id;  // hex object id of the staged content
};

struct StagedFiles {
  std::vector<StagedFile> files;  // sorted by path
  std::vector<FileError> errors;  // unmerged paths, an unreadable HEAD
};

enum class StagedScope {
  Changed,  // added or modified against HEAD (every entry before the first commit)
  All,      // every tracked file in the index
};

// Regular *.py files only: deletions, symlinks, submodules and intent-to-add entries (`git add -N`,
// which a commit leaves out) are skipped. A rename is a deletion plus an added path, so the new
// path is checked.
StagedFiles staged_python_files(const GitRepository& repo, StagedScope scope);

// The *.py paths whose work-tree file may differ from the index (modified, deleted, type-changed), as
// `git diff-files` would list them: every other tracked *.py is in the work tree as staged, up to git's
// filters (line endings). Sorted. Throws InputError when the work tree cannot be compared.
std::vector<std::string> python_paths_changed_in_work_tree(const GitRepository& repo);

// The staged bytes of a file; throws InputError naming the path and the blob when it cannot be read.
std::string read_staged_blob(const GitRepository& repo, const StagedFile& file);

}  // namespace kvpatch
