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
