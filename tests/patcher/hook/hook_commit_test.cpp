// Real `git commit`s through the installed hook: refused while the staged backend has findings.
#include <doctest/doctest.h>

#include "git_sandbox.h"
#include "support/files.h"

using kvpatch_test::fixture_source;
using kvpatch_test::git_run;
using kvpatch_test::GitSandbox;
using kvpatch_test::kBackendPath;
using kvpatch_test::ProcessResult;
namespace fs = std::filesystem;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kMissingDecodeSite = kBackendPath + ":139:13: missing:";

// gen-b-unpatched as `kvpatch apply` fixes it, made in a scratch repository.
std::string patched_backend() {
  GitSandbox scratch;
  scratch.write(kBackendPath, fixture_source("gen-b-unpatched"));
  const ProcessResult applied = scratch.kvpatch({"apply", kBackendPath});
  if (applied.exit_code != 0) throw std::runtime_error("kvpatch apply failed: " + applied.err);
  return scratch.read(kBackendPath);
}
}  // namespace

TEST_SUITE("hook_commit") {
  TEST_CASE("git commit is refused while the staged backend has findings, and allowed after the fix") {
    GitSandbox repo;
    REQUIRE(repo.kvpatch({"install-hook"}).exit_code == 0);
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    const ProcessResult refused = git_run(repo.work_tree(), {"commit", "-q", "-m", "unpatched backend"});
    CHECK(refused.exit_code != 0);
    CHECK(contains(refused.err, kMissingDecodeSite));  // git shows the hook's output on stderr
    CHECK(repo.commit_count() == 0);

    repo.stage(kBackendPath, patched_backend());
    const ProcessResult allowed = git_run(repo.work_tree(), {"commit", "-q", "-m", "patched backend"});
    CHECK(allowed.exit_code == 0);
    CHECK(repo.commit_count() == 1);
  }

  TEST_CASE("when the kvpatch the hook names is gone, commits are refused with what to do") {
    GitSandbox repo;
    const fs::path copy = repo.scratch() / "moved" / "kvpatch";
    fs::create_directories(copy.parent_path());
    fs::copy_file(kvpatch_test::required_env("KVPATCH_BIN"), copy);
    const ProcessResult installed =
        kvpatch_test::run_process({copy.string(), "install-hook"}, {repo.work_tree(), false});
    REQUIRE(installed.exit_code == 0);
    fs::remove(copy);
    repo.stage("README.md", "notes\n");
    const ProcessResult refused = git_run(repo.work_tree(), {"commit", "-q", "-m", "docs"});
    CHECK(refused.exit_code != 0);
    CHECK(contains(refused.err, copy.string() + " is gone; run `kvpatch install-hook` again"));
    CHECK(repo.commit_count() == 0);
    // Installing with the kvpatch in use now mends it.
    REQUIRE(repo.kvpatch({"install-hook"}).exit_code == 0);
    CHECK(git_run(repo.work_tree(), {"commit", "-q", "-m", "docs"}).exit_code == 0);
  }

  TEST_CASE("commit -a and commit -- PATH are checked on the index they commit from") {
    GitSandbox repo;
    REQUIRE(repo.kvpatch({"install-hook"}).exit_code == 0);
    repo.stage(kBackendPath, patched_backend());
    REQUIRE(git_run(repo.work_tree(), {"commit", "-q", "-m", "patched"}).exit_code == 0);

    // The regression sits in the work tree only; the real index still holds the good file.
    repo.write(kBackendPath, fixture_source("gen-b-unpatched"));
    const ProcessResult all = git_run(repo.work_tree(), {"commit", "-q", "-a", "-m", "regress (all)"});
    CHECK(all.exit_code != 0);
    CHECK(contains(all.err, kMissingDecodeSite));
    const ProcessResult only = git_run(repo.work_tree(), {"commit", "-q", "-m", "regress (path)", "--", kBackendPath});
    CHECK(only.exit_code != 0);
    CHECK(contains(only.err, kMissingDecodeSite));
    CHECK(repo.commit_count() == 1);

    // A commit that leaves the unstaged regression out goes through.
    repo.stage("README.md", "notes\n");
    CHECK(git_run(repo.work_tree(), {"commit", "-q", "-m", "docs"}).exit_code == 0);
    CHECK(repo.commit_count() == 2);
  }

  TEST_CASE("with --force the user's hook runs first and can still refuse the commit") {
    GitSandbox repo;
    const fs::path hook = repo.git_dir() / "hooks" / "pre-commit";
    const fs::path marker = repo.scratch() / "user-hook-ran";
    fs::create_directories(hook.parent_path());
    kvpatch_test::write_bytes(hook, "#!/bin/sh\necho ran >> '" + marker.string() + "'\nexit 0\n");
    fs::permissions(hook, static_cast<fs::perms>(0755));
    REQUIRE(repo.kvpatch({"install-hook", "--force"}).exit_code == 0);

    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    const ProcessResult refused = git_run(repo.work_tree(), {"commit", "-q", "-m", "unpatched"});
    CHECK(refused.exit_code != 0);
    CHECK(contains(refused.err, kMissingDecodeSite));
    CHECK(kvpatch_test::read_bytes(marker) == "ran\n");

    repo.stage(kBackendPath, patched_backend());
    CHECK(git_run(repo.work_tree(), {"commit", "-q", "-m", "patched"}).exit_code == 0);
    CHECK(kvpatch_test::read_bytes(marker) == "ran\nran\n");

    // The user's hook refusing is enough to stop the commit.
    kvpatch_test::write_bytes(repo.git_dir() / "hooks" / "pre-commit.kvpatch-backup",
                              "#!/bin/sh\necho 'team check failed' >&2\nexit 3\n");
    repo.stage("README.md", "notes\n");
    const ProcessResult user_refused = git_run(repo.work_tree(), {"commit", "-q", "-m", "docs"});
    CHECK(user_refused.exit_code != 0);
    CHECK(contains(user_refused.err, "team check failed"));
    CHECK(repo.commit_count() == 1);
  }

  TEST_CASE("a hook installed under core.hooksPath is the one git runs") {
    GitSandbox repo;
    repo.git({"config", "core.hooksPath", ".githooks"});
    REQUIRE(repo.kvpatch({"install-hook"}).exit_code == 0);
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    const ProcessResult refused = git_run(repo.work_tree(), {"commit", "-q", "-m", "unpatched"});
    CHECK(refused.exit_code != 0);
    CHECK(contains(refused.err, kMissingDecodeSite));
    CHECK(repo.commit_count() == 0);
  }

  TEST_CASE("a commit in a linked worktree runs the shared hook on that worktree's index") {
    GitSandbox repo;
    repo.stage("README.md", "notes\n");
    repo.commit_without_hooks("base");
    REQUIRE(repo.kvpatch({"install-hook"}).exit_code == 0);
    const fs::path linked = repo.scratch() / "linked";
    repo.git({"worktree", "add", "-q", "-b", "feature", linked.string()});
    fs::create_directories((linked / kBackendPath).parent_path());
    kvpatch_test::write_bytes(linked / kBackendPath, fixture_source("gen-b-unpatched"));
    kvpatch_test::git_ok(linked, {"add", "--", kBackendPath});
    const ProcessResult refused = git_run(linked, {"commit", "-q", "-m", "unpatched"});
    CHECK(refused.exit_code != 0);
    CHECK(contains(refused.err, kMissingDecodeSite));

    kvpatch_test::write_bytes(linked / kBackendPath, patched_backend());
    kvpatch_test::git_ok(linked, {"add", "--", kBackendPath});
    CHECK(git_run(linked, {"commit", "-q", "-m", "patched"}).exit_code == 0);
    CHECK(kvpatch_test::git_ok(linked, {"rev-list", "--count", "HEAD"}).out == "2\n");
  }
}
