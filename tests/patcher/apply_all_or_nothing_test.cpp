// `kvpatch apply` over two files is all-or-nothing: when the second cannot be patched (its directory is
// read-only, it is missing, or it does not parse), the command exits 2 and the first file is untouched;
// `kvpatch diff` then prints no hunk for the first file either.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/fixture_sources.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {

const char* kBackend = "flashinfer_mla_backend.py";

// A bool, so a failure prints the message rather than two whole files.
bool holds(const fs::path& file, const std::string& bytes) { return read_bytes(file) == bytes; }

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

// Two tree roots first/ and second/, each with a generation-B backend that needs edits, plus a copy of
// kvpatch and its rules under tool/: when we are root the permission case runs kvpatch as nobody, who
// may not be able to reach the build tree (a checkout under /root, say).
struct TwoTrees {
  TempDir scratch{"kvpatch-all-or-nothing"};
  fs::path first = scratch.path() / "first";
  fs::path second = scratch.path() / "second";
  fs::path tool = scratch.path() / "tool";
  std::string source = fixture_source("gen-b-unpatched");

  TwoTrees() {
    fs::create_directories(first);
    fs::create_directories(second);
    write_bytes(first / kBackend, source);
    write_bytes(second / kBackend, source);
    fs::create_directories(tool);
    fs::copy_file(required_env("KVPATCH_BIN"), tool / "kvpatch");
    fs::copy(required_env("KVPATCH_RULES_DIR"), tool / "rules", fs::copy_options::recursive);
    const fs::perms rw_all = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::group_write | fs::perms::others_read | fs::perms::others_write;
    for (const fs::path& p : {scratch.path(), first, second, tool}) fs::permissions(p, fs::perms::all);
    for (const fs::path& p : {first / kBackend, second / kBackend}) fs::permissions(p, rw_all);
    for (const auto& entry : fs::recursive_directory_iterator(tool)) {
      fs::permissions(entry.path(), entry.is_directory() ? fs::perms::all : rw_all);
    }
    fs::permissions(tool / "kvpatch", fs::perms::all);
  }

  ProcessResult run(const std::string& command, const std::string& second_arg, bool as_nobody = false) const {
    ProcessOptions options;
    options.working_dir = scratch.path();
    options.drop_root_privileges = as_nobody;
    const std::vector<std::string> argv{(tool / "kvpatch").string(), command, "--rules", (tool / "rules").string(),
                                        "first/" + std::string(kBackend), second_arg};
    return run_process(argv, options);
  }

  ProcessResult apply(const std::string& second_arg, bool as_nobody = false) const {
    return run("apply", second_arg, as_nobody);
  }
};

}  // namespace

TEST_SUITE("all_or_nothing") {
  TEST_CASE("control: both files writable, both are patched") {
    TwoTrees trees;
    const ProcessResult result = trees.apply("second/" + std::string(kBackend), true);
    REQUIRE_MESSAGE(result.exit_code == 0, "stderr: ", result.err);
    CHECK_MESSAGE(!holds(trees.first / kBackend, trees.source), "first/ was not patched");
    CHECK_MESSAGE(!holds(trees.second / kBackend, trees.source), "second/ was not patched");
  }

  TEST_CASE("second file's directory is read-only: exit 2, first file untouched, no temporary files") {
    TwoTrees trees;
    fs::permissions(trees.second, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                      fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    const ProcessResult result = trees.apply("second/" + std::string(kBackend), true);
    CHECK_MESSAGE(result.exit_code == 2, "stderr: ", result.err);
    CHECK_MESSAGE(!result.err.empty(), "the failure must be explained on stderr");
    CHECK_MESSAGE(holds(trees.first / kBackend, trees.source), "first/ was written although second/ failed");
    CHECK_MESSAGE(holds(trees.second / kBackend, trees.source), "second/ was written");
    CHECK(names_in(trees.first) == std::set<std::string>{kBackend});
  }

  TEST_CASE("second path is missing: exit 2, first file untouched") {
    TwoTrees trees;
    const ProcessResult result = trees.apply("second/no_such_backend.py");
    CHECK_MESSAGE(result.exit_code == 2, "stderr: ", result.err);
    CHECK_MESSAGE(holds(trees.first / kBackend, trees.source), "first/ was written although second/ failed");
    CHECK(names_in(trees.first) == std::set<std::string>{kBackend});
  }

  TEST_CASE("second file has a syntax error: exit 2, first file untouched") {
    TwoTrees trees;
    const std::string broken = fixture_source("syntax-error");
    write_bytes(trees.second / kBackend, broken);
    const ProcessResult result = trees.apply("second/" + std::string(kBackend));
    CHECK_MESSAGE(result.exit_code == 2, "stderr: ", result.err);
    CHECK_MESSAGE(holds(trees.first / kBackend, trees.source), "first/ was written although second/ failed");
    CHECK_MESSAGE(holds(trees.second / kBackend, broken), "the broken file was written");
    CHECK(names_in(trees.first) == std::set<std::string>{kBackend});
  }

  TEST_CASE("second file has a syntax error: diff prints nothing for the first either") {
    // Piped to `git apply`, a diff of the first file alone would be the partial apply that apply refuses.
    TwoTrees trees;
    write_bytes(trees.second / kBackend, fixture_source("syntax-error"));
    const ProcessResult result = trees.run("diff", "second/" + std::string(kBackend));
    CHECK_MESSAGE(result.exit_code == 2, "stderr: ", result.err);
    CHECK_MESSAGE(result.out.empty(), "a diff was printed: ", result.out);
    CHECK(result.err.find("second/flashinfer_mla_backend.py:36: syntax error") != std::string::npos);
    CHECK(result.err.find("no diff was printed") != std::string::npos);
    // The control: with the second file whole, the first file's hunks are printed.
    write_bytes(trees.second / kBackend, trees.source);
    CHECK(trees.run("diff", "second/" + std::string(kBackend)).out.find("+++ b/first/") != std::string::npos);
  }
}
