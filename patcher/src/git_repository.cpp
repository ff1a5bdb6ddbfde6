#include "kvpatch/git_repository.h"

#include <git2.h>
#include <git2/sys/repository.h>

#include <cstdlib>
#include <iterator>

#include "kvpatch/input_error.h"

namespace kvpatch {
namespace fs = std::filesystem;

GitLibrary::GitLibrary() {
  git_libgit2_init();
  // git sets extensions.worktreeConfig for per-worktree settings (`git config --worktree`, sparse
  // checkouts); libgit2 1.5 refuses to open such a repository (format version 1) although nothing kvpatch
  // reads from the index depends on it. Declared supported here; the one setting kvpatch reads,
  // core.hooksPath, is looked up in config.worktree as well (git_hook.cpp).
  const char* extensions[] = {"worktreeconfig"};
  git_libgit2_opts(GIT_OPT_SET_EXTENSIONS, extensions, std::size(extensions));
}
GitLibrary::~GitLibrary() { git_libgit2_shutdown(); }

void GitRepositoryFree::operator()(git_repository* repo) const { git_repository_free(repo); }
void GitIndexFree::operator()(git_index* index) const { git_index_free(index); }

std::string last_git_error() {
  const git_error* e = git_error_last();
  return e != nullptr && e->message != nullptr ? e->message : "unknown libgit2 error";
}

namespace {
// What to do when libgit2 cannot open a repository or read its index because git wrote a format that
// libgit2 1.5 cannot read: the git command that writes one it can. Nothing for any other failure.
std::optional<std::string> format_remedy(const std::string& libgit2_message) {
  if (libgit2_message.find("'link'") != std::string::npos) {
    return "the index is split (core.splitIndex), which libgit2 cannot read; write a whole one with "
           "`git config core.splitIndex false && git update-index --no-split-index`";
  }
  if (libgit2_message.find("'sdir'") != std::string::npos) {
    return "the index is a sparse index (index.sparse), which libgit2 cannot read; keep the sparse checkout "
           "with a full index: `git sparse-checkout reapply --no-sparse-index`";
  }
  if (libgit2_message.find("objectformat") != std::string::npos) {
    return "libgit2 reads SHA-1 repositories only; check the changed files with `kvpatch check PATH...` instead";
  }
  return std::nullopt;
}

constexpr const char* kCheckGitStatus = "check that `git status` works there";

const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

fs::path without_trailing_slash(const char* path) {
  fs::path p = fs::path(path).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

// The index a commit is made from: $GIT_INDEX_FILE when git set it (`commit -a`, `commit -- PATH`),
// else the repository's. Throws InputError naming the file and, for formats libgit2 cannot read, the fix.
git_index* read_index(git_repository* raw, const fs::path& git_dir) {
  git_index* index = nullptr;
  if (const char* index_file = environment("GIT_INDEX_FILE")) {
    // git names the index relative to the hook's working directory (the work tree's top).
    const fs::path path = fs::absolute(index_file);
    if (git_index_open(&index, path.c_str()) != 0) {
      const std::string message = last_git_error();
      throw InputError(path.string(), 0, "cannot read the index named by $GIT_INDEX_FILE: " + message,
                       format_remedy(message).value_or("unset GIT_INDEX_FILE or point it at an index file"));
    }
    if (git_repository_set_index(raw, index) != 0) {
      git_index_free(index);
      throw InputError(path.string(), 0, "cannot use the index named by $GIT_INDEX_FILE: " + last_git_error(),
                       "unset GIT_INDEX_FILE");
    }
    return index;
  }
  if (git_repository_index(&index, raw) != 0) {
    const std::string message = last_git_error();
    throw InputError(git_dir.string(), 0, "cannot read the index: " + message,
                     format_remedy(message).value_or(kCheckGitStatus));
  }
  return index;
}
}  // namespace

GitRepository GitRepository::open(const std::optional<fs::path>& dir, Index index_use) {
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
    const std::string message = last_git_error();
    throw InputError(where, 0, "cannot open the git repository: " + message,
                     format_remedy(message).value_or(kCheckGitStatus));
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

  try {
    result.index_.reset(read_index(raw, result.git_dir_));
  } catch (const InputError& problem) {
    if (index_use == Index::kRequired) throw;
    result.index_problem_ = problem;
  }
  return result;
}

}  // namespace kvpatch
