#include "kvpatch/git_hook.h"

#include <git2.h>

#include <algorithm>
#include <cctype>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kvpatch/input_error.h"
#include "kvpatch/replace_file.h"

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
constexpr const char* kMarker = "# kvpatch pre-commit hook: written by `kvpatch install-hook`";
constexpr const char* kBackupName = "pre-commit.kvpatch-backup";

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string errno_text() { return std::strerror(errno); }

bool exists_or_dangling(const fs::path& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() != fs::file_type::not_found && !ec;
}

// The hook's bytes; "" when it cannot be read (a dangling link, no permission): then it is not ours.
std::string read_hook(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return in ? out.str() : std::string();
}

fs::perms permissions_of(const fs::path& path) {
  std::error_code ec;
  return fs::status(path, ec).permissions() & fs::perms::mask;
}

// A temporary file beside the hook holding the script, mode 0755; returns its path.
fs::path write_temporary(const fs::path& hook, const std::string& content) {
  try {
    return write_temporary_beside(hook, content, 0755);
  } catch (const TemporaryFileError& e) {
    if (!e.created()) {
      throw InputError(hook.parent_path().string(), 0,
                       std::string("cannot create a file in the hooks directory: ") + e.what(),
                       "check the directory's permissions");
    }
    throw InputError(hook.string(), 0, std::string("cannot write the hook: ") + e.what(),
                     "check the disk and the hooks directory");
  }
}

void replace_with(const fs::path& temporary, const fs::path& hook) {
  if (::rename(temporary.c_str(), hook.c_str()) != 0) {
    const std::string failure = errno_text();
    ::unlink(temporary.c_str());
    throw InputError(hook.string(), 0, "cannot put the hook in place: " + failure, "check the hooks directory's permissions");
  }
}

fs::path git_path(git_buf& buffer) {
  fs::path p(buffer.ptr);
  git_buf_dispose(&buffer);
  return p;
}

// The repository's configuration as git reads it: with extensions.worktreeConfig, this worktree's
// config.worktree outranks the repository's config, which libgit2 1.5 does not know on its own.
git_config* configuration_snapshot(const GitRepository& repo) {
  auto fail = [&repo] {
    throw InputError(repo.git_dir().string(), 0, "cannot read the git configuration: " + last_git_error(),
                     "check that `git config --list` works there");
  };
  git_config* live = nullptr;  // owned by the repository
  if (git_repository_config(&live, repo.get()) != 0) fail();
  int worktree_config = 0;
  if (git_config_get_bool(&worktree_config, live, "extensions.worktreeConfig") != 0) worktree_config = 0;
  git_error_clear();
  if (worktree_config != 0) {
    const fs::path file = fs::path(git_repository_path(repo.get())) / "config.worktree";
    std::error_code error;
    if (fs::exists(file, error) && git_config_add_file_ondisk(live, file.c_str(), GIT_CONFIG_LEVEL_APP, repo.get(), 1) != 0) {
      fail();
    }
  }
  git_config* snapshot = nullptr;
  const int rc = git_config_snapshot(&snapshot, live);
  git_config_free(live);
  if (rc != 0) fail();
  return snapshot;
}
}  // namespace

std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::strchr("/._-+,:@%=", c) != nullptr;
  });
  return plain ? text : shell_quote(text);
}

HookPaths pre_commit_hook_paths(const GitRepository& repo) {
  git_config* config = configuration_snapshot(repo);
  git_buf buffer = GIT_BUF_INIT;
  const int rc = git_config_get_path(&buffer, config, "core.hooksPath");
  git_config_free(config);
  fs::path directory;
  if (rc == 0) directory = git_path(buffer);
  if (rc != 0 && rc != GIT_ENOTFOUND) {
    throw InputError(repo.git_dir().string(), 0, "cannot read core.hooksPath: " + last_git_error(),
                     "fix it with `git config core.hooksPath DIR`");
  }
  if (directory.empty()) {
    // Linked worktrees share the main repository's hooks: libgit2 resolves the common directory.
    if (git_repository_item_path(&buffer, repo.get(), GIT_REPOSITORY_ITEM_HOOKS) != 0) {
      throw InputError(repo.git_dir().string(), 0, "cannot find the hooks directory: " + last_git_error(),
                       "set core.hooksPath");
    }
    directory = git_path(buffer);
  } else if (directory.is_relative()) {
    // git runs hooks from the top of the work tree, so a relative core.hooksPath starts there.
    directory = repo.work_tree() / directory;
  }
  directory = directory.lexically_normal();
  if (!directory.has_filename()) directory = directory.parent_path();
  return {directory, directory / "pre-commit", directory / kBackupName};
}

std::string pre_commit_hook_line(const fs::path& kvpatch_binary) {
  return shell_quote(kvpatch_binary.string()) + " pre-commit || exit 1";
}

std::string pre_commit_hook_script(const fs::path& kvpatch_binary) {
  return std::string("#!/bin/sh\n") + kMarker + "; `kvpatch uninstall-hook` removes it.\n" +
         "# It refuses a commit whose staged FlashInfer MLA backend leaves a plan() site without kv_data_type\n"
         "# or keeps a redundant KV cast.\n"
         "backup=\"$(dirname \"$0\")/" + kBackupName + "\"\n"
         "# The hook this one replaced (install-hook --force) runs first, with git's arguments.\n"
         "if [ -x \"$backup\" ]; then\n"
         "\t\"$backup\" \"$@\" || exit $?\n"
         "fi\n"
         "kvpatch=" + shell_quote(kvpatch_binary.string()) + "\n"
         "# A moved or removed kvpatch must not let commits through unchecked, nor fail with only `not found`.\n"
         "if [ ! -x \"$kvpatch\" ]; then\n"
         "\techo \"kvpatch pre-commit hook: $kvpatch is gone; run \\`kvpatch install-hook\\` again with the kvpatch\" >&2\n"
         "\techo \"you use now, or \\`kvpatch uninstall-hook\\` (skip this check once with \\`git commit --no-verify\\`)\" >&2\n"
         "\texit 1\n"
         "fi\n"
         "exec \"$kvpatch\" pre-commit\n";
}

bool is_kvpatch_hook(const std::string& content) {
  return content.rfind("#!/bin/sh\n", 0) == 0 && content.find(std::string("\n") + kMarker) != std::string::npos;
}

HookOutcome install_pre_commit_hook(const GitRepository& repo, const fs::path& kvpatch_binary, bool force) {
  const HookPaths paths = pre_commit_hook_paths(repo);
  std::error_code ec;
  fs::create_directories(paths.directory, ec);
  if (ec) {
    throw InputError(paths.directory.string(), 0, "cannot create the hooks directory: " + ec.message(),
                     "check its parent's permissions");
  }
  const std::string script = pre_commit_hook_script(kvpatch_binary);
  if (!exists_or_dangling(paths.hook)) {
    replace_with(write_temporary(paths.hook, script), paths.hook);
    return {HookChange::Installed, paths};
  }
  if (fs::is_directory(paths.hook, ec)) {
    throw InputError(paths.hook.string(), 0, "is a directory, not a hook", "move it away and run install-hook again");
  }
  const std::string existing = read_hook(paths.hook);
  if (is_kvpatch_hook(existing)) {
    if (existing == script && permissions_of(paths.hook) == static_cast<fs::perms>(0755)) {
      return {HookChange::Unchanged, paths};
    }
    replace_with(write_temporary(paths.hook, script), paths.hook);
    return {HookChange::Updated, paths};
  }
  if (!force) {
    throw InputError(paths.hook.string(), 0, "a pre-commit hook that kvpatch did not write is already there; left untouched",
                     "rerun with --force to keep it as " + paths.backup.string() +
                         " and run it before kvpatch, or add this line to it yourself: " +
                         pre_commit_hook_line(kvpatch_binary));
  }
  if (exists_or_dangling(paths.backup)) {
    throw InputError(paths.backup.string(), 0, "the backup name is taken, so --force would lose a hook",
                     "move " + paths.backup.string() + " away (or merge it into " + paths.hook.string() +
                         ") and run install-hook --force again");
  }
  const fs::path temporary = write_temporary(paths.hook, script);
  // A second name for the user's hook first, so there is never a moment without a hook.
  if (::link(paths.hook.c_str(), paths.backup.c_str()) != 0) {
    const std::string failure = errno_text();
    ::unlink(temporary.c_str());
    throw InputError(paths.backup.string(), 0, "cannot keep the existing hook as a backup: " + failure,
                     "check the hooks directory's permissions, or add this line to the hook yourself: " +
                         pre_commit_hook_line(kvpatch_binary));
  }
  replace_with(temporary, paths.hook);
  return {HookChange::InstalledWithBackup, paths};
}

HookOutcome uninstall_pre_commit_hook(const GitRepository& repo) {
  const HookPaths paths = pre_commit_hook_paths(repo);
  const bool hook_exists = exists_or_dangling(paths.hook);
  if (hook_exists && !is_kvpatch_hook(read_hook(paths.hook))) {
    throw InputError(paths.hook.string(), 0, "is not the kvpatch hook; left untouched",
                     "remove the kvpatch line from it by hand if it has one");
  }
  if (exists_or_dangling(paths.backup)) {
    if (::rename(paths.backup.c_str(), paths.hook.c_str()) != 0) {
      throw InputError(paths.backup.string(), 0, "cannot restore the backup: " + errno_text(),
                       "rename it to " + paths.hook.string() + " by hand");
    }
    return {HookChange::Restored, paths};
  }
  if (!hook_exists) return {HookChange::Absent, paths};
  if (::unlink(paths.hook.c_str()) != 0) {
    throw InputError(paths.hook.string(), 0, "cannot remove the hook: " + errno_text(),
                     "check the hooks directory's permissions");
  }
  return {HookChange::Removed, paths};
}

}  // namespace kvpatch
