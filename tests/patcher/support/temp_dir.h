// A scratch directory that removes itself; tests never edit the fixtures in the source tree.
#pragma once

#include <filesystem>
#include <string>

namespace kvpatch_test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Canonical path (symlinks such as /tmp -> /private/tmp resolved), so it matches what tools print.
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kvpatch_test
