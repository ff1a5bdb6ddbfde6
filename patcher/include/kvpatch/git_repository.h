#pragma once
// A git repository opened with libgit2 the way git finds it, with the index a commit is made from.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "kvpatch/input_error.h"

struct git_repository;
struct git_index;

namespace kvpatch {

// Keeps libgit2 initialised for as long as it lives (libgit2 counts nested inits).
class GitLibrary {
public:
  GitLibrary();
  ~GitLibrary();
  GitLibrary(const GitLibrary&) = delete;
  GitLibrary& operator=(const GitLibrary&) = delete;
};

struct GitRepositoryFree {
  void operator()(git_repository* repo) const;
};
struct GitIndexFree {
  void operator()(git_index* index) const;
};

class GitRepository {
public:
  // dir (--repo): the repository holding dir, searched upward. Without it: $GIT_DIR (and
  // $GIT_WORK_TREE) when git set them, as it does for hooks in a linked worktree; else the repository
  // holding the current directory. The search stops at $GIT_CEILING_DIRECTORIES.
  // $GIT_INDEX_FILE, which git sets for `commit -a` and `commit -- PATH`, picks the index.
  // Throws InputError when no repository is found, it cannot be opened, or it is bare, and when the
  // index cannot be read unless `index` is kOptional (the hook commands, which do not read it): then
  // index() is null and index_problem() says why.
  enum class Index { kRequired, kOptional };
  static GitRepository open(const std::optional<std::filesystem::path>& dir, Index index = Index::kRequired);

  git_repository* get() const { return repo_.get(); }
  git_index* index() const { return index_.get(); }
  const std::optional<InputError>& index_problem() const { return index_problem_; }
  const std::filesystem::path& work_tree() const { return work_tree_; }
  const std::filesystem::path& git_dir() const { return git_dir_; }

private:
  GitRepository() = default;
  std::shared_ptr<GitLibrary> library_;
  std::unique_ptr<git_repository, GitRepositoryFree> repo_;
  std::unique_ptr<git_index, GitIndexFree> index_;
  std::filesystem::path work_tree_;
  std::filesystem::path git_dir_;
  std::optional<InputError> index_problem_;
};

// libgit2's message for the last failed call, or "unknown libgit2 error".
std::string last_git_error();

}  // namespace kvpatch
