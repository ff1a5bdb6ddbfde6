// A strict reader of `kvpatch diff` output, so tests can apply it themselves and locate the edited lines.
#pragma once

#include <string>
#include <vector>

namespace kvpatch_test {

struct DiffLine {
  char kind;         // ' ' context, '-' removed, '+' added
  std::string text;  // the line with its own terminator ("\n", "\r\n", or none at end of file)
};

struct Hunk {
  int old_start = 0;  // 1-based, as in "@@ -old_start,old_count +new_start,new_count @@"
  int old_count = 0;
  int new_start = 0;
  int new_count = 0;
  std::vector<DiffLine> lines;
};

struct FilePatch {
  std::string old_path;  // as written after "--- " (with its a/ prefix)
  std::string new_path;  // as written after "+++ " (with its b/ prefix)
  std::vector<Hunk> hunks;
};

// Throws std::runtime_error naming the diff line when the text is not a well-formed unified diff.
std::vector<FilePatch> parse_unified_diff(const std::string& diff_text);

// Applies the patch to `original`; throws when a context or removed line does not match byte for byte.
std::string apply_patch(const std::string& original, const FilePatch& patch);

// The lines no hunk removes (from `original`) and no hunk adds (from `patched`), in order: a correct
// edit leaves these two sequences identical.
std::vector<std::string> untouched_old_lines(const std::string& original, const FilePatch& patch);
std::vector<std::string> untouched_new_lines(const std::string& patched, const FilePatch& patch);

}  // namespace kvpatch_test
