#include "kvpatch/git_staged.h"

#include <git2.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "kvpatch/git_hook.h"
#include "kvpatch/input_error.h"

namespace kvpatch {

namespace {
template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using TreePtr = std::unique_ptr<git_tree, Deleter<git_tree, git_tree_free>>;
using DiffPtr = std::unique_ptr<git_diff, Deleter<git_diff, git_diff_free>>;
using BlobPtr = std::unique_ptr<git_blob, Deleter<git_blob, git_blob_free>>;

bool is_python_path(const char* path) {
  const std::string_view p(path);
  return p.size() > 3 && p.substr(p.size() - 3) == ".py";
}

bool is_regular_blob(uint32_t mode) { return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE; }

bool intent_to_add(const git_index_entry& entry) { return (entry.flags_extended & GIT_INDEX_ENTRY_INTENT_TO_ADD) != 0; }

std::string hex(const git_oid& oid) {
  char buffer[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buffer, sizeof buffer, &oid);
  return buffer;
}

FileError unmerged(const std::string& path) {
  return {path, 0, 0, "unmerged in the index (a conflict is not resolved)",
          "resolve the conflict and `git add` the file"};
}

// GIT_DIFF_OPTIONS_INIT leaves its last fields to zero-initialisation, which clang reports under
// -Wmissing-field-initializers; the library's own initialiser sets every field, in any libgit2 version.
git_diff_options default_diff_options() {
  git_diff_options options;
  if (git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION) != 0) {
    throw std::logic_error("libgit2 refused its own git_diff_options version: " + last_git_error());
  }
  return options;
}

// The tree HEAD points at; null before the first commit.
TreePtr head_tree(const GitRepository& repo) {
  if (git_repository_head_unborn(repo.get()) == 1) return nullptr;
  git_object* object = nullptr;
  if (git_revparse_single(&object, repo.get(), "HEAD^{tree}") != 0) {
    throw InputError(repo.git_dir().string(), 0, "cannot read HEAD's tree: " + last_git_error(),
                     "check the repository with `git fsck`");
  }
  return TreePtr(reinterpret_cast<git_tree*>(object));
}

void add_changed(const GitRepository& repo, StagedFiles& out) {
  const TreePtr tree = head_tree(repo);
  git_diff_options options = default_diff_options();
  git_diff* raw = nullptr;
  if (git_diff_tree_to_index(&raw, repo.get(), tree.get(), repo.index(), &options) != 0) {
    throw InputError(repo.git_dir().string(), 0, "cannot compare the index with HEAD: " + last_git_error(),
                     "check that `git diff --cached` works there");
  }
  const DiffPtr diff(raw);
  for (std::size_t i = 0, n = git_diff_num_deltas(diff.get()); i < n; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    const git_diff_file& file = delta->new_file;
    if (!is_python_path(file.path)) continue;
    if (delta->status == GIT_DELTA_CONFLICTED) {
      out.errors.push_back(unmerged(file.path));
      continue;
    }
    const bool recorded = delta->status == GIT_DELTA_ADDED || delta->status == GIT_DELTA_MODIFIED ||
                          delta->status == GIT_DELTA_TYPECHANGE;
    if (!recorded || !is_regular_blob(file.mode)) continue;
    const git_index_entry* entry = git_index_get_bypath(repo.index(), file.path, 0);
    if (entry == nullptr || intent_to_add(*entry)) continue;
    out.files.push_back({file.path, hex(file.id)});
  }
}

void add_all(const GitRepository& repo, StagedFiles& out) {
  for (std::size_t i = 0, n = git_index_entrycount(repo.index()); i < n; ++i) {
    const git_index_entry* entry = git_index_get_byindex(repo.index(), i);
    if (!is_python_path(entry->path)) continue;
    if (GIT_INDEX_ENTRY_STAGE(entry) != 0) {
      // Stages 1-3 of one path sit next to each other: report the path once.
      if (out.errors.empty() || out.errors.back().file != entry->path) out.errors.push_back(unmerged(entry->path));
      continue;
    }
    if (!is_regular_blob(entry->mode) || intent_to_add(*entry)) continue;
    out.files.push_back({entry->path, hex(entry->id)});
  }
}
}  // namespace

StagedFiles staged_python_files(const GitRepository& repo, StagedScope scope) {
  StagedFiles out;
  if (scope == StagedScope::All) {
    add_all(repo, out);
  } else {
    add_changed(repo, out);
  }
  std::sort(out.files.begin(), out.files.end(), [](const StagedFile& a, const StagedFile& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> python_paths_changed_in_work_tree(const GitRepository& repo) {
  git_diff_options options = default_diff_options();
  char pattern[] = "*.py";
  char* patterns[] = {pattern};
  options.pathspec = {patterns, 1};
  git_diff* raw = nullptr;
  if (git_diff_index_to_workdir(&raw, repo.get(), repo.index(), &options) != 0) {
    throw InputError(repo.work_tree().string(), 0, "cannot compare the work tree with the index: " + last_git_error(),
                     "check that `git diff` works there");
  }
  const DiffPtr diff(raw);
  std::vector<std::string> out;
  for (std::size_t i = 0, n = git_diff_num_deltas(diff.get()); i < n; ++i) {
    out.emplace_back(git_diff_get_delta(diff.get(), i)->old_file.path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_staged_blob(const GitRepository& repo, const StagedFile& file) {
  git_oid oid;
  git_blob* raw = nullptr;
  if (git_oid_fromstr(&oid, file.blob_id.c_str()) != 0 || git_blob_lookup(&raw, repo.get(), &oid) != 0) {
    throw InputError(file.path, 0, "cannot read the staged blob " + file.blob_id + ": " + last_git_error(),
                     "check the repository with `git fsck`, then stage the file again with `git add " + shell_word(file.path) + "`");
  }
  const BlobPtr blob(raw);
  const auto* bytes = static_cast<const char*>(git_blob_rawcontent(blob.get()));
  return std::string(bytes, static_cast<std::size_t>(git_blob_rawsize(blob.get())));
}

}  // namespace kvpatch
