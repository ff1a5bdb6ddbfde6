#include "kvpatch/git_repository.h"

#include <git2.h>
#include <git2/sys/repository.h>

#include <cstdlib>

#include "kvpatch/input_error.h"

namespace kvpatch {
namespace fs = std::filesystem;

GitLibrary::GitLibrary() { git_libgit2_init(); }
GitLibrary::~GitLibrary() { git_libgit2_shutdown(); }

void GitRepositoryFree::operator()(git_repository* repo) const { git_repository_free(repo); }
void GitIndexFree::operator()(git_index* index) const { git_index_free(index); }

std::string last_git_error() {
  const git_error* e = git_error_last();
  return e != nullptr && e->message != nullptr ? e->message : "unknown libgit2 error";
}

namespace {
const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

fs::path without_trailing_slash(const char* path) {
  fs::path p = fs::path(path).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}
}  // namespace

GitRepository GitRepository::open(const std::optional<fs::path>& dir) {
  GitRepository result;
  result.library_ = std::make_shared<GitLibrary>();
  git_repository* raw = nullptr;
  const char* git_dir_env = dir ? nullptr : environment("GIT_DIR");
  const std::string where = dir ? dir->string() : git_dir_env != nullptr ? git_dir_env : fs::current_path().string();
  const int rc = git_dir_env != nullptr
                     ? git_repository_open_ext(&raw, git_dir_env, GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr)
                     : git_repository_open_ext(&raw, where.c_str(), 0, environment("GIT_CEILING_DIRECTORIES"));
  if (rc == GIT_ENOTFOUND) {
    throw InputError(where, 0, "not in a git repository",
                     dir ? "pass --repo a directory inside a git work tree" : "run it inside a git work tree or pass --repo DIR");
  }
  if (rc != 0) {
    throw InputError(where, 0, "cannot open the git repository: " + last_git_error(),
                     "check that `git status` works there");
  }
  result.repo_.reset(raw);
  if (const char* work_tree = git_dir_env != nullptr ? environment("GIT_WORK_TREE") : nullptr) {
    if (git_repository_set_workdir(raw, work_tree, 0) != 0) {
      throw InputError(work_tree, 0, "cannot use $GIT_WORK_TREE: " + last_git_error(), "unset GIT_WORK_TREE or fix it");
    }
  }
  result.git_dir_ = without_trailing_slash(git_repository_path(raw));
  if (git_repository_is_bare(raw) != 0 || git_repository_workdir(raw) == nullptr) {
    throw InputError(result.git_dir_.string(), 0, "bare repository: it has no work tree and nothing is committed from it",
                     "run kvpatch in a clone with a work tree");
  }
  result.work_tree_ = without_trailing_slash(git_repository_workdir(raw));

  git_index* index = nullptr;
  if (const char* index_file = environment("GIT_INDEX_FILE")) {
    // git names the index relative to the hook's working directory (the work tree's top).
    const fs::path path = fs::absolute(index_file);
    if (git_index_open(&index, path.c_str()) != 0) {
      throw InputError(path.string(), 0, "cannot read the index named by $GIT_INDEX_FILE: " + last_git_error(),
                       "unset GIT_INDEX_FILE or point it at an index file");
    }
    result.index_.reset(index);
    if (git_repository_set_index(raw, index) != 0) {
      throw InputError(path.string(), 0, "cannot use the index named by $GIT_INDEX_FILE: " + last_git_error(),
                       "unset GIT_INDEX_FILE");
    }
  } else {
    if (git_repository_index(&index, raw) != 0) {
      throw InputError(result.git_dir_.string(), 0, "cannot read the index: " + last_git_error(),
                       "check that `git status` works there");
    }
    result.index_.reset(index);
  }
  return result;
}

}  // namespace kvpatch
