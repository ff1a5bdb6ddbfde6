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
};

struct InputSet {
  std::filesystem::path root;  // absolute
  std::vector<InputFile> files;
  std::vector<FileError> errors;  // missing paths
};

// Files are taken as given; directories are walked for *.py, skipping hidden directories.
// Root: --root if given; else a single directory argument; else the git work tree holding every
// path; else the current directory.
InputSet collect_inputs(const std::vector<std::string>& paths, const std::optional<std::filesystem::path>& root);

}  // namespace kvpatch
