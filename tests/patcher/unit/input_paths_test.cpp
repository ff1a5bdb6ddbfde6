// PATH arguments: directory walking, hidden directories, missing paths, and the report root.
#include <doctest/doctest.h>

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "kvpatch/input_paths.h"
#include "test_support.h"

using namespace kvpatch;
namespace fs = std::filesystem;

namespace {
// collect_inputs as a user who may not enter a mode-000 directory. Root enters any directory, so a
// root process forks and drops to nobody (65534) first; the child reports the errors and the files
// it found on a pipe, one per line.
std::string collect_as_unprivileged(const fs::path& dir) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    std::string out;
    const InputSet set = collect_inputs({dir.string()}, std::nullopt);
    for (const auto& e : set.errors) out += "error " + e.file + ": " + e.message + "\n";
    for (const auto& f : set.files) out += "file " + f.display_path + "\n";
    const bool written = ::write(fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size());
    ::_exit(written ? 0 : 4);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return out;
}
}  // namespace

TEST_SUITE("input_paths") {
  TEST_CASE("a directory is walked for *.py in name order, hidden directories skipped; it is the root") {
    test::ScratchDir dir;
    dir.write("b.py", "");
    dir.write("a/z.py", "");
    dir.write("a/notes.txt", "");
    dir.write(".venv/lib/site.py", "");
    const InputSet set = collect_inputs({dir.path().string()}, std::nullopt);
    CHECK(set.errors.empty());
    CHECK(set.root == fs::weakly_canonical(dir.path()));
    REQUIRE(set.files.size() == 2);
    CHECK(set.files[0].display_path == "a/z.py");
    CHECK(set.files[1].display_path == "b.py");
    CHECK_FALSE(set.files[0].named);
  }

  TEST_CASE("--root wins; a file named twice is read once; a missing path is an error") {
    test::ScratchDir dir;
    const fs::path file = dir.write("pkg/m.py", "");
    const InputSet set = collect_inputs({file.string(), (dir.path() / "pkg").string(), (dir.path() / "nope.py").string()},
                                        dir.path());
    CHECK(set.root == fs::weakly_canonical(dir.path()));
    REQUIRE(set.files.size() == 1);
    CHECK(set.files[0].display_path == "pkg/m.py");
    CHECK(set.files[0].named);
    REQUIRE(set.errors.size() == 1);
    CHECK(set.errors[0].message == "no such file or directory");
  }

  TEST_CASE("links that lead nowhere are passed by in a walk; a linked file is read; naming a loop is an error") {
    test::ScratchDir dir;
    dir.write("real.py", "");
    dir.write("sub/other.py", "");
    fs::create_symlink("loop.py", dir.path() / "loop.py");  // ELOOP: it used to abort the whole run
    fs::create_symlink("loop", dir.path() / "loop");
    fs::create_symlink("missing.py", dir.path() / "gone.py");
    fs::create_symlink("sub/other.py", dir.path() / "linked.py");
    fs::create_directory_symlink("..", dir.path() / "sub" / "up");  // not followed: no cycle
    const InputSet set = collect_inputs({dir.path().string()}, std::nullopt);
    CHECK(set.errors.empty());
    REQUIRE(set.files.size() == 3);
    CHECK(set.files[0].display_path == "linked.py");
    CHECK(set.files[1].display_path == "real.py");
    CHECK(set.files[2].display_path == "sub/other.py");

    const InputSet named = collect_inputs({(dir.path() / "loop.py").string()}, dir.path());
    CHECK(named.files.empty());
    REQUIRE(named.errors.size() == 1);
    CHECK(named.errors[0].message.rfind("cannot read it: ", 0) == 0);
    CHECK(named.errors[0].message != "cannot read it: ");
  }

  TEST_CASE("a directory the user may not enter is an error naming it, not a silent gap; __pycache__ is not walked") {
    test::ScratchDir dir;
    dir.write("open.py", "");
    dir.write("locked/hidden_plan.py", "");
    dir.write("__pycache__/stale.py", "");
    fs::permissions(dir.path() / "locked", fs::perms::none);
    const std::string walked = collect_as_unprivileged(dir.path());
    const std::string named = collect_as_unprivileged(dir.path() / "locked");
    fs::permissions(dir.path() / "locked", fs::perms::owner_all);
    CHECK(walked == "error locked: cannot walk the directory: Permission denied\nfile open.py\n");
    CHECK(named == "error " + (dir.path() / "locked").string() + ": cannot walk the directory: Permission denied\n");
  }

  TEST_CASE("files inside a git work tree are named relative to it") {
    test::ScratchDir dir;
    const fs::path file = dir.write("python/sglang/backend.py", "");
    REQUIRE(std::system(("git init -q " + dir.path().string()).c_str()) == 0);
    const InputSet set = collect_inputs({file.string()}, std::nullopt);
    CHECK(set.root == fs::weakly_canonical(dir.path()));
    REQUIRE(set.files.size() == 1);
    CHECK(set.files[0].display_path == "python/sglang/backend.py");
  }
}
