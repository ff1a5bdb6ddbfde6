// A scratch directory holding one fixture's backend as backend.py, and kvpatch run inside it: the setting of
// the CLI tests that need a single file with findings (the default, gen-b-unpatched, has missing sites and
// redundant casts, so check and diff exit 1 there).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "process.h"
#include "temp_dir.h"

namespace kvpatch_test {

class ScratchBackend {
 public:
  explicit ScratchBackend(const std::string& tag, const std::string& fixture = "gen-b-unpatched");

  // `kvpatch <args...>` with the scratch directory as the current directory.
  ProcessResult run(const std::vector<std::string>& args) const;
  std::filesystem::path at(const std::string& relative) const { return scratch_.path() / relative; }
  const std::filesystem::path& dir() const { return scratch_.path(); }

 private:
  TempDir scratch_;
};

}  // namespace kvpatch_test
