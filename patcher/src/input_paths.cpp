#include "kvpatch/input_paths.h"

#include <git2.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>
#include <unordered_set>

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
fs::path absolute_normal(const fs::path& p) {
  std::error_code ec;
  fs::path out = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal() : out;
}

bool is_within(const fs::path& path, const fs::path& dir) {
  const fs::path rel = path.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

// The work tree of the git repository holding path, or empty.
fs::path git_work_tree(const fs::path& path) {
  git_libgit2_init();
  fs::path found;
  git_buf buffer = GIT_BUF_INIT;
  const fs::path start = fs::is_directory(path) ? path : path.parent_path();
  if (git_repository_discover(&buffer, start.c_str(), 0, nullptr) == 0) {
    git_repository* repo = nullptr;
    if (git_repository_open(&repo, buffer.ptr) == 0) {
      if (const char* workdir = git_repository_workdir(repo)) found = absolute_normal(workdir);
      git_repository_free(repo);
    }
    git_buf_dispose(&buffer);
  }
  git_libgit2_shutdown();
  return found;
}

std::string display(const fs::path& path, const fs::path& root) {
  const fs::path rel = path.lexically_relative(root);
  return rel.empty() ? path.string() : rel.generic_string();
}

// A symbolic link that leads nowhere (dangling, or a loop) holds no code, so a walk passes it by.
bool dead_link(const std::error_code& ec) {
  return ec == std::errc::no_such_file_or_directory || ec == std::errc::too_many_symbolic_link_levels;
}

// Whether this process may list a directory and enter it. The walk's own skip_permission_denied
// would pass an unreadable directory by without a word, and a completeness check must not vouch
// for files it never saw; root passes every time, so the refusal is only seen by other users.
std::error_code walk_refused(const fs::path& dir) {
  if (::access(dir.c_str(), R_OK | X_OK) == 0) return {};
  return {errno, std::generic_category()};
}

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 1 && name[0] == '.';
}

// The context: each named file's directory, listed once, less the files the set holds.
void add_siblings(InputSet& set) {
  std::unordered_set<std::string> held, listed;
  for (const InputFile& f : set.files) held.insert(f.path.string());
  std::vector<fs::path> found;
  for (const InputFile& f : set.files) {
    if (!f.named || !listed.insert(f.path.parent_path().string()).second) continue;
    std::error_code ec;
    for (auto it = fs::directory_iterator(f.path.parent_path(), fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code entry_ec;
      if (it->path().extension() == ".py" && it->is_regular_file(entry_ec) && !held.contains(it->path().string())) {
        found.push_back(it->path());
      }
    }
  }
  std::sort(found.begin(), found.end());
  for (const fs::path& p : found) set.context.push_back({p, display(p, set.root), false});
}
}  // namespace

InputSet collect_inputs(const std::vector<std::string>& paths, const std::optional<fs::path>& root,
                        bool repository_paths) {
  InputSet set;
  std::vector<fs::path> existing;
  std::vector<std::string> as_given;  // beside existing: errors about a named path name it as typed
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      // ec is set where the path's status cannot be read (a symbolic-link loop, a permission), not
      // where the path is simply absent.
      if (ec) {
        set.errors.push_back({p, 0, 0, "cannot read it: " + ec.message(), "fix or remove the path, or leave it out"});
      } else {
        set.errors.push_back({p, 0, 0, "no such file or directory", "check the path"});
      }
      continue;
    }
    existing.push_back(absolute_normal(p));
    as_given.push_back(p);
  }

  if (root) {
    set.root = absolute_normal(*root);
  } else if (!repository_paths && existing.size() == 1 && paths.size() == 1 && fs::is_directory(existing.front())) {
    set.root = existing.front();
  } else {
    fs::path tree = existing.empty() ? fs::path() : git_work_tree(existing.front());
    const bool holds_all = !tree.empty() && std::all_of(existing.begin(), existing.end(), [&](const fs::path& p) {
      return is_within(p, tree) || p == tree;
    });
    set.root = holds_all ? tree : absolute_normal(fs::current_path());
  }

  for (size_t i = 0; i < existing.size(); ++i) {
    const fs::path& p = existing[i];
    if (!fs::is_directory(p)) {
      set.files.push_back({p, display(p, set.root), true});
      continue;
    }
    std::vector<fs::path> found;
    if (const std::error_code refused = walk_refused(p)) {
      set.errors.push_back({as_given[i], 0, 0, "cannot walk the directory: " + refused.message(),
                            "fix its permissions, or pass the other paths only"});
      continue;
    }
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      // The non-throwing queries: an entry whose status cannot be read must not end the walk.
      std::error_code entry_ec;
      if (it->is_directory(entry_ec) && !it->is_symlink(entry_ec)) {
        // Hidden directories (.git, .venv) are not the project's; __pycache__ holds bytecode only.
        if (hidden(it->path()) || it->path().filename() == "__pycache__") {
          it.disable_recursion_pending();
          continue;
        }
        if (const std::error_code refused = walk_refused(it->path())) {
          set.errors.push_back({display(it->path(), set.root), 0, 0, "cannot walk the directory: " + refused.message(),
                                "fix its permissions, or pass the other paths only"});
          it.disable_recursion_pending();
          continue;
        }
      }
      entry_ec.clear();
      const bool python = it->path().extension() == ".py";
      if (it->is_regular_file(entry_ec) && python) {
        found.push_back(it->path());
      } else if (entry_ec && python && !dead_link(entry_ec)) {
        // A *.py whose status cannot be read may hold a plan() call: the run cannot vouch for it.
        set.errors.push_back({display(it->path(), set.root), 0, 0, "cannot read it: " + entry_ec.message(),
                              "fix its permissions, or pass the other paths only"});
      }
    }
    if (ec) set.errors.push_back({display(p, set.root), 0, 0, "cannot walk the directory: " + ec.message(), "check its permissions"});
    std::sort(found.begin(), found.end());
    for (const fs::path& f : found) set.files.push_back({f, display(f, set.root), false});
  }
  // A file named twice (directly and through a directory) is read once. A set, not a scan of what was
  // kept: a checkout walks to thousands of files, and the scan made this step quadratic.
  std::vector<InputFile> unique;
  std::unordered_set<std::string> seen;
  for (InputFile& f : set.files) {
    if (seen.insert(f.path.string()).second) unique.push_back(std::move(f));
  }
  set.files = std::move(unique);
  add_siblings(set);
  return set;
}

InputSet stdin_inputs(const fs::path& filename, std::string content, const std::optional<fs::path>& root) {
  InputSet set;
  const fs::path path = absolute_normal(filename.empty() ? fs::path("-") : filename);
  if (root) {
    set.root = absolute_normal(*root);
  } else if (filename.empty()) {
    set.root = absolute_normal(fs::current_path());
  } else {
    // The file may be new (a buffer not yet saved): the repository is found from its nearest directory that exists.
    fs::path existing = path.parent_path();
    std::error_code ec;
    while (!fs::is_directory(existing, ec) && existing != existing.parent_path()) existing = existing.parent_path();
    const fs::path tree = git_work_tree(existing);
    set.root = !tree.empty() && is_within(path, tree) ? tree : absolute_normal(fs::current_path());
  }
  InputFile file{path, filename.empty() ? "-" : display(path, set.root), true, std::move(content)};
  set.files.push_back(std::move(file));
  if (!filename.empty()) add_siblings(set);
  return set;
}

}  // namespace kvpatch
