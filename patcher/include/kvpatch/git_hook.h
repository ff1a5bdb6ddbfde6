#pragma once
// `kvpatch install-hook` / `uninstall-hook`: the git pre-commit hook that runs `kvpatch pre-commit`.
#include <filesystem>
#include <string>

#include "kvpatch/git_repository.h"

namespace kvpatch {

struct HookPaths {
  std::filesystem::path directory;  // core.hooksPath (relative to the work tree), else the common git dir's hooks/
  std::filesystem::path hook;       // <directory>/pre-commit
  std::filesystem::path backup;     // <directory>/pre-commit.kvpatch-backup: the hook ours replaced
};

HookPaths pre_commit_hook_paths(const GitRepository& repo);

// The hook script: runs the backup (when there is one) with git's arguments, then kvpatch pre-commit.
std::string pre_commit_hook_script(const std::filesystem::path& kvpatch_binary);
// The line a user adds to a hook of their own instead.
std::string pre_commit_hook_line(const std::filesystem::path& kvpatch_binary);
// True for a script pre_commit_hook_script wrote (for any binary path).
bool is_kvpatch_hook(const std::string& content);

enum class HookChange {
  Installed,            // there was no hook
  InstalledWithBackup,  // --force: the user's hook became the backup, which ours runs first
  Updated,              // ours was there with other text (a moved binary)
  Unchanged,            // ours was there, byte for byte
  Removed,              // uninstall: ours removed, nothing to restore
  Restored,             // uninstall: the backup is the hook again
  Absent,               // uninstall: there was no hook
};

struct HookOutcome {
  HookChange change;
  HookPaths paths;
};

// Writes the hook atomically with mode 0755. A hook that is not ours is never overwritten: without
// force, or when the backup name is taken, it throws InputError naming the hook and the remedy.
HookOutcome install_pre_commit_hook(const GitRepository& repo, const std::filesystem::path& kvpatch_binary, bool force);

// Removes our hook and puts the backup back; a hook that is not ours is left alone (InputError).
HookOutcome uninstall_pre_commit_hook(const GitRepository& repo);

// text as one POSIX shell word, for commands printed to be pasted: unchanged when no character needs
// quoting, else single-quoted.
std::string shell_word(const std::string& text);

}  // namespace kvpatch
