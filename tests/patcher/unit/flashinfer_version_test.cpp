// Which FlashInfer a file runs with: release order, and the pins read above the file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kvpatch/flashinfer_version.h"
#include "test_support.h"

namespace fs = std::filesystem;
using kvpatch::find_flashinfer_version;
using kvpatch::flashinfer_target;
using kvpatch::version_at_least;

namespace {
// What find_flashinfer_version passes over when it finds no release.
std::string unpinned_flashinfer_requirement(const fs::path& file) {
  std::string unpinned;
  find_flashinfer_version(file, &unpinned);
  return unpinned;
}

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

std::string found(const fs::path& file) {
  const auto v = find_flashinfer_version(file);
  return v ? v->version : "none";
}
}  // namespace

TEST_SUITE("flashinfer_version") {
  TEST_CASE("release order is numeric on the leading components") {
    CHECK(version_at_least("0.6.14", "0.6.14"));
    CHECK(version_at_least("0.6.18.post1", "0.6.14"));
    CHECK(version_at_least("0.7.1", "0.6.14"));
    CHECK(version_at_least("0.10.0", "0.6.14"));  // not string order
    CHECK(version_at_least("1", "0.6.14"));
    CHECK_FALSE(version_at_least("0.6.13", "0.6.14"));
    CHECK_FALSE(version_at_least("0.6.9", "0.6.14"));
    CHECK_FALSE(version_at_least("0.2.14.post1", "0.6.14"));
  }

  TEST_CASE("the nearest pin above the file wins; an installed dist-info before a pyproject pin") {
    kvpatch::test::ScratchDir root;
    const fs::path checkout = root.path() / "sglang";
    write(checkout / "python" / "sglang" / "srt" / "backend.py", "");
    CHECK(found(checkout / "python" / "sglang" / "srt" / "backend.py") == "none");

    write(checkout / "pyproject.toml", "dependencies = [\"flashinfer_python==0.6.12\"]\n");
    write(checkout / "python" / "sglang" / "srt" / "other.py", "");
    CHECK(found(checkout / "python" / "sglang" / "srt" / "other.py") == "0.6.12");

    write(checkout / "python" / "pyproject.toml",
          "[project]\ndependencies = [\n  \"torch\",\n  \"flashinfer-python[cu13] == 0.7.2\",\n]\n");
    write(checkout / "python" / "sglang" / "layers" / "b.py", "");
    const auto pinned = find_flashinfer_version(checkout / "python" / "sglang" / "layers" / "b.py");
    REQUIRE(pinned);
    CHECK(pinned->version == "0.7.2");
    CHECK(pinned->evidence.find((checkout / "python" / "pyproject.toml").string()) != std::string::npos);

    // A site-packages install: the installed FlashInfer, else the pin SGLang's METADATA states.
    const fs::path site = root.path() / "site-packages";
    write(site / "sglang-0.5.23.dist-info" / "METADATA", "Requires-Dist: flashinfer_python[cu13]==0.7.2\n");
    write(site / "sglang" / "a.py", "");
    CHECK(found(site / "sglang" / "a.py") == "0.7.2");
    const fs::path site2 = root.path() / "site2";
    write(site2 / "sglang-0.5.23.dist-info" / "METADATA", "Requires-Dist: flashinfer_python[cu13]==0.7.2\n");
    fs::create_directories(site2 / "flashinfer_python-0.6.13.dist-info");
    write(site2 / "sglang" / "a.py", "");
    CHECK(found(site2 / "sglang" / "a.py") == "0.6.13");
  }

  TEST_CASE("a range is not a pin; --flashinfer-version outranks what is on disk") {
    kvpatch::test::ScratchDir root;
    write(root.path() / "pyproject.toml", "dependencies = [\"flashinfer_python>=0.6.14\"]\n");
    write(root.path() / "pkg" / "a.py", "");
    CHECK(found(root.path() / "pkg" / "a.py") == "none");
    write(root.path() / "pinned" / "pyproject.toml", "dependencies = [\"flashinfer_python==0.7.2\"]\n");
    write(root.path() / "pinned" / "a.py", "");
    const auto given = flashinfer_target({{"flashinfer_version", "0.6.13"}}, root.path() / "pinned" / "a.py");
    REQUIRE(given);
    CHECK(given->version == "0.6.13");
    const auto automatic = flashinfer_target({{"flashinfer_version", "auto"}}, root.path() / "pinned" / "a.py");
    REQUIRE(automatic);
    CHECK(automatic->version == "0.7.2");
  }

  TEST_CASE("a requirement that pins no release is named where no release is found, markers left out") {
    kvpatch::test::ScratchDir root;
    write(root.path() / "a.py", "");
    CHECK(unpinned_flashinfer_requirement(root.path() / "a.py").empty());
    write(root.path() / "pyproject.toml", "dependencies = [\n  \"torch\",\n  \"flashinfer_python>=0.2.1.post1\",\n]\n");
    CHECK(found(root.path() / "a.py") == "none");
    CHECK(unpinned_flashinfer_requirement(root.path() / "a.py") ==
          "flashinfer_python>=0.2.1.post1 in " + (root.path() / "pyproject.toml").string());
    write(root.path() / "pyproject.toml", "dependencies = [\"flashinfer-python[cu12] >=0.6, <0.8\"]\n");
    CHECK(unpinned_flashinfer_requirement(root.path() / "a.py") ==
          "flashinfer_python[cu12]>=0.6, <0.8 in " + (root.path() / "pyproject.toml").string());
    // An installed SGLang's METADATA, with its environment marker; the nearest directory wins.
    write(root.path() / "site" / "sglang-0.4.3.dist-info" / "METADATA",
          "Requires-Dist: flashinfer_python>=0.2.1.post1; extra == \"srt\"\n");
    write(root.path() / "site" / "sglang" / "b.py", "");
    CHECK(unpinned_flashinfer_requirement(root.path() / "site" / "sglang" / "b.py") ==
          "flashinfer_python>=0.2.1.post1 required by " +
              (root.path() / "site" / "sglang-0.4.3.dist-info" / "METADATA").string());
  }

  TEST_CASE("a run's lookup answers as find_flashinfer_version does, reading each directory once") {
    kvpatch::test::ScratchDir root;
    write(root.path() / "python" / "pyproject.toml", "dependencies = [\"flashinfer_python>=0.2.1.post1\"]\n");
    write(root.path() / "python" / "sglang" / "a.py", "");
    write(root.path() / "python" / "sglang" / "b.py", "");
    write(root.path() / "pinned" / "pyproject.toml", "dependencies = [\"flashinfer_python==0.7.2\"]\n");
    write(root.path() / "pinned" / "c.py", "");
    kvpatch::FlashInferLookup lookup;
    std::string unpinned;
    CHECK_FALSE(lookup.find(root.path() / "python" / "sglang" / "a.py", &unpinned));
    CHECK(unpinned == unpinned_flashinfer_requirement(root.path() / "python" / "sglang" / "a.py"));
    CHECK(unpinned.rfind("flashinfer_python>=0.2.1.post1 in ", 0) == 0);
    std::string again;  // the same directories, now from the lookup's own record
    CHECK_FALSE(lookup.find(root.path() / "python" / "sglang" / "b.py", &again));
    CHECK(again == unpinned);
    const auto pinned = kvpatch::flashinfer_target({{"flashinfer_version", "auto"}}, root.path() / "pinned" / "c.py",
                                                   {}, nullptr, &lookup);
    REQUIRE(pinned);
    CHECK(pinned->version == "0.7.2");
    // What the lookup read stands for its run: a pin written afterwards is seen by a new lookup only.
    write(root.path() / "python" / "pyproject.toml", "dependencies = [\"flashinfer_python==0.6.14\"]\n");
    CHECK_FALSE(lookup.find(root.path() / "python" / "sglang" / "b.py"));
    CHECK(found(root.path() / "python" / "sglang" / "b.py") == "0.6.14");
  }
}
