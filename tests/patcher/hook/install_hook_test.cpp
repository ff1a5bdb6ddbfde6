// `kvpatch install-hook` / `uninstall-hook`: where the hook goes, and never losing a hook of the user's.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "git_sandbox.h"
#include "support/files.h"

using kvpatch_test::GitSandbox;
using kvpatch_test::ProcessResult;
using kvpatch_test::read_bytes;
using kvpatch_test::write_bytes;
namespace fs = std::filesystem;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

unsigned mode_of(const fs::path& file) {
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

void write_user_hook(const fs::path& hook, const std::string& bytes) {
  fs::create_directories(hook.parent_path());
  write_bytes(hook, bytes);
  fs::permissions(hook, static_cast<fs::perms>(0700));
}

// Left-over temporary files of an interrupted or failed write.
int temporaries_in(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += contains(entry.path().filename().string(), ".pre-commit.kvpatch-");
  return n;
}

const std::string kUserHook = "#!/bin/sh\n# the team's own checks\nexit 0\n";
}  // namespace

TEST_SUITE("install_hook") {
  TEST_CASE("installs an executable hook that runs this kvpatch; installing again changes nothing") {
    GitSandbox repo;
    const fs::path hook = repo.git_dir() / "hooks" / "pre-commit";
    const ProcessResult first = repo.kvpatch({"install-hook"});
    CHECK(first.exit_code == 0);
    CHECK(contains(first.out, "installed " + hook.string()));
    const std::string script = read_bytes(hook);
    CHECK(script.rfind("#!/bin/sh\n", 0) == 0);
    CHECK(contains(script, "\nkvpatch='" + fs::canonical(kvpatch_test::required_env("KVPATCH_BIN")).string() + "'\n"));
    CHECK(contains(script, "\nexec \"$kvpatch\" pre-commit\n"));
    // The script is held to what lint.shell holds the tree's scripts to, where shellcheck is installed.
    const ProcessResult lint = kvpatch_test::run_process({"shellcheck", "-S", "warning", hook.string()}, {});
    if (lint.exit_code != 127) CHECK_MESSAGE(lint.exit_code == 0, lint.out);
    CHECK(mode_of(hook) == 0755);

    const ProcessResult second = repo.kvpatch({"install-hook"});
    CHECK(second.exit_code == 0);
    CHECK(contains(second.out, "nothing to do"));
    CHECK(read_bytes(hook) == script);
    CHECK(mode_of(hook) == 0755);
    CHECK(temporaries_in(hook.parent_path()) == 0);
    CHECK_FALSE(fs::exists(repo.git_dir() / "hooks" / "pre-commit.kvpatch-backup"));
  }

  TEST_CASE("an older kvpatch hook (other text, other mode) is rewritten") {
    GitSandbox repo;
    const fs::path hook = repo.git_dir() / "hooks" / "pre-commit";
    REQUIRE(repo.kvpatch({"install-hook"}).exit_code == 0);
    const std::string script = read_bytes(hook);
    const std::string binary = fs::canonical(kvpatch_test::required_env("KVPATCH_BIN")).string();
    write_bytes(hook, kvpatch_test::replace_all(script, binary, "/old/place/kvpatch"));
    fs::permissions(hook, static_cast<fs::perms>(0700));
    const ProcessResult result = repo.kvpatch({"install-hook"});
    CHECK(result.exit_code == 0);
    CHECK(contains(result.out, "updated " + hook.string()));
    CHECK(read_bytes(hook) == script);
    CHECK(mode_of(hook) == 0755);
  }

  TEST_CASE("a hook kvpatch did not write is never clobbered") {
    GitSandbox repo;
    const fs::path hook = repo.git_dir() / "hooks" / "pre-commit";
    write_user_hook(hook, kUserHook);
    const ProcessResult result = repo.kvpatch({"install-hook"});
    CHECK(result.exit_code == 2);
    CHECK(contains(result.err, hook.string()));
    CHECK(contains(result.err, "--force"));
    CHECK(contains(result.err, "pre-commit || exit 1"));  // the line to add by hand
    CHECK(read_bytes(hook) == kUserHook);
    CHECK(mode_of(hook) == 0700);
    CHECK_FALSE(fs::exists(repo.git_dir() / "hooks" / "pre-commit.kvpatch-backup"));
    CHECK(temporaries_in(hook.parent_path()) == 0);
    // Nor removed by uninstall.
    CHECK(repo.kvpatch({"uninstall-hook"}).exit_code == 2);
    CHECK(read_bytes(hook) == kUserHook);
  }

  TEST_CASE("--force keeps the user's hook as the backup; uninstall puts it back byte for byte") {
    GitSandbox repo;
    const fs::path hook = repo.git_dir() / "hooks" / "pre-commit";
    const fs::path backup = repo.git_dir() / "hooks" / "pre-commit.kvpatch-backup";
    write_user_hook(hook, kUserHook);
    const ProcessResult forced = repo.kvpatch({"install-hook", "--force"});
    CHECK(forced.exit_code == 0);
    CHECK(contains(forced.out, "kept as " + backup.string()));
    CHECK(read_bytes(backup) == kUserHook);
    CHECK(mode_of(backup) == 0700);
    CHECK(contains(read_bytes(hook), "pre-commit.kvpatch-backup"));
    CHECK(mode_of(hook) == 0755);

    // Idempotent, with or without --force: the backup is not replaced by our own hook.
    CHECK(repo.kvpatch({"install-hook", "--force"}).exit_code == 0);
    CHECK(repo.kvpatch({"install-hook"}).exit_code == 0);
    CHECK(read_bytes(backup) == kUserHook);

    const ProcessResult removed = repo.kvpatch({"uninstall-hook"});
    CHECK(removed.exit_code == 0);
    CHECK(contains(removed.out, "restored " + hook.string()));
    CHECK(read_bytes(hook) == kUserHook);
    CHECK(mode_of(hook) == 0700);
    CHECK_FALSE(fs::exists(backup));
  }

  TEST_CASE("--force refuses when the backup name is already taken") {
    GitSandbox repo;
    const fs::path hook = repo.git_dir() / "hooks" / "pre-commit";
    const fs::path backup = repo.git_dir() / "hooks" / "pre-commit.kvpatch-backup";
    write_user_hook(hook, kUserHook);
    write_user_hook(backup, "#!/bin/sh\n# an older backup\n");
    const ProcessResult result = repo.kvpatch({"install-hook", "--force"});
    CHECK(result.exit_code == 2);
    CHECK(contains(result.err, backup.string()));
    CHECK(read_bytes(hook) == kUserHook);
    CHECK(read_bytes(backup) == "#!/bin/sh\n# an older backup\n");
    CHECK(temporaries_in(hook.parent_path()) == 0);
  }

  TEST_CASE("uninstall removes our hook, and says so when there is none") {
    GitSandbox repo;
    const fs::path hook = repo.git_dir() / "hooks" / "pre-commit";
    const ProcessResult none = repo.kvpatch({"uninstall-hook"});
    CHECK(none.exit_code == 0);
    CHECK(contains(none.out, "nothing to do"));
    REQUIRE(repo.kvpatch({"install-hook"}).exit_code == 0);
    const ProcessResult removed = repo.kvpatch({"uninstall-hook"});
    CHECK(removed.exit_code == 0);
    CHECK(contains(removed.out, "removed " + hook.string()));
    CHECK_FALSE(fs::exists(hook));
  }

  TEST_CASE("core.hooksPath decides where the hook goes") {
    GitSandbox repo;
    SUBCASE("relative to the work tree") {
      repo.git({"config", "core.hooksPath", ".githooks"});
      const ProcessResult result = repo.kvpatch({"install-hook"});
      CHECK(result.exit_code == 0);
      CHECK(fs::exists(repo.work_tree() / ".githooks" / "pre-commit"));
    }
    SUBCASE("absolute") {
      const fs::path shared = repo.scratch() / "shared-hooks";
      repo.git({"config", "core.hooksPath", shared.string()});
      CHECK(repo.kvpatch({"install-hook", "--repo", repo.work_tree().string()}).exit_code == 0);
      CHECK(fs::exists(shared / "pre-commit"));
      CHECK(mode_of(shared / "pre-commit") == 0755);
    }
    CHECK_FALSE(fs::exists(repo.git_dir() / "hooks" / "pre-commit"));
  }

  TEST_CASE("with extensions.worktreeConfig, a `git config --worktree` core.hooksPath wins, as in git") {
    GitSandbox repo;
    repo.git({"config", "core.repositoryformatversion", "1"});  // libgit2 1.5 refused to open this before
    repo.git({"config", "extensions.worktreeConfig", "true"});
    repo.git({"config", "core.hooksPath", "repository-hooks"});
    repo.git({"config", "--worktree", "core.hooksPath", "worktree-hooks"});
    const ProcessResult result = repo.kvpatch({"install-hook"});
    CHECK(result.exit_code == 0);
    CHECK(fs::exists(repo.work_tree() / "worktree-hooks" / "pre-commit"));
    CHECK_FALSE(fs::exists(repo.work_tree() / "repository-hooks"));
    // Where git itself looks: `git rev-parse --git-path hooks` follows core.hooksPath.
    CHECK(contains(repo.git({"rev-parse", "--git-path", "hooks"}).out, "worktree-hooks"));
  }

  TEST_CASE("from a linked worktree the hook goes to the shared hooks directory") {
    GitSandbox repo;
    repo.stage("README.md", "notes\n");
    repo.commit_without_hooks("base");
    repo.git({"worktree", "add", "-q", (repo.scratch() / "linked").string()});
    const ProcessResult result = kvpatch_test::run_process(
        {kvpatch_test::required_env("KVPATCH_BIN"), "install-hook"}, {repo.scratch() / "linked", false});
    CHECK(result.exit_code == 0);
    CHECK(fs::exists(repo.git_dir() / "hooks" / "pre-commit"));
    CHECK_FALSE(fs::exists(repo.git_dir() / "worktrees" / "linked" / "hooks"));
  }
}
