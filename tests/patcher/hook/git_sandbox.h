// A scratch git repository driven through the git CLI, and the kvpatch binary run inside it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "support/fixture_sources.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace kvpatch_test {

// Runs `git <args...>` in dir; throws with git's stderr when it fails.
ProcessResult git_ok(const std::filesystem::path& dir, const std::vector<std::string>& args);
// Runs `git <args...>` in dir and returns whatever happened.
ProcessResult git_run(const std::filesystem::path& dir, const std::vector<std::string>& args);

class GitSandbox {
 public:
  // A fresh non-bare repository at <scratch>/repo with a committer identity and no hooks.
  GitSandbox();

  const std::filesystem::path& scratch() const { return scratch_.path(); }
  const std::filesystem::path& work_tree() const { return work_tree_; }

  // Writes a work-tree file (parents created); path is relative to the work tree.
  void write(const std::string& path, const std::string& bytes) const;
  std::string read(const std::string& path) const;
  // write + `git add`.
  void stage(const std::string& path, const std::string& bytes) const;
  ProcessResult git(const std::vector<std::string>& args) const { return git_ok(work_tree_, args); }
  // `kvpatch <args...>` with the work tree as the current directory.
  ProcessResult kvpatch(const std::vector<std::string>& args) const;
  // Commits what is staged without running hooks, to build history.
  void commit_without_hooks(const std::string& message) const;
  std::filesystem::path git_dir() const { return work_tree_ / ".git"; }
  // Number of commits on HEAD (0 before the first).
  int commit_count() const;

 private:
  TempDir scratch_;
  std::filesystem::path work_tree_;
};

// The path of the backend file inside every sandbox, as SGLang lays it out.
inline const std::string kBackendPath = "python/sglang/srt/layers/attention/flashinfer_mla_backend.py";

}  // namespace kvpatch_test
