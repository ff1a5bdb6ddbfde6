#pragma once
// Turns PATH arguments into the Python files to read and the root that reports are relative to.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/findings.h"

namespace kvpatch {

struct InputFile {
  std::filesystem::path path;
  std::string display_path;  // relative to the root
  bool named = false;        // given on the command line (not found by walking a directory)
  // The file's bytes when they were read from standard input (PATH `-`), not from `path`, which need not exist.
  std::optional<std::string> content = std::nullopt;
};

struct InputSet {
  std::filesystem::path root;  // absolute
  std::vector<InputFile> files;
  std::vector<FileError> errors;  // missing or unreadable paths, directories the user may not enter
  // The *.py files beside a named file that `files` does not hold: read only to link the named file with the
  // other modules of its package (cross_file.h), never reported in full. Unreadable ones are passed by.
  std::vector<InputFile> context;
};

// Files are taken as given; directories are walked for *.py, skipping hidden directories and
// __pycache__; a directory this process may not enter is an error, never a silent gap. A named file's
// directory is listed (not walked) for the context.
// Root: --root if given; else a single directory argument (unless repository_paths); else the git
// work tree holding every path; else the current directory. repository_paths is for reports read
// against a repository (GitHub annotations, SARIF), whose paths must start at its top.
InputSet collect_inputs(const std::vector<std::string>& paths, const std::optional<std::filesystem::path>& root,
                        bool repository_paths = false);

// Source text read from standard input, checked as the file at `filename` (as an editor hands a linter an unsaved
// buffer): reported by that name, from the root collect_inputs would give that one file, and linked with the other
// *.py of its directory when that exists. An empty filename reports the text as `-`, from the current directory,
// with no context.
InputSet stdin_inputs(const std::filesystem::path& filename, std::string content,
                      const std::optional<std::filesystem::path>& root);

}  // namespace kvpatch
