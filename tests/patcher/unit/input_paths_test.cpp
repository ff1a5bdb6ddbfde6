// PATH arguments: directory walking, hidden directories, missing paths, and the report root.
#include <doctest/doctest.h>

#include <cstdlib>

#include "kvpatch/input_paths.h"
#include "test_support.h"

using namespace kvpatch;
namespace fs = std::filesystem;

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
