// Golden tests: for the fixture named by KVPATCH_FIXTURE, `check`, `check --format json` and `diff`
// print exactly the fixture's expected.* files and exit as its fixture.cfg says.
// With KVPATCH_UPDATE_GOLDENS=1 the outputs are written to the fixture instead (then review them).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/fixture.h"
#include "support/kvpatch_cli.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {

bool updating_goldens() {
  const char* flag = std::getenv("KVPATCH_UPDATE_GOLDENS");
  return flag != nullptr && std::string(flag) == "1";
}

struct GoldenCommand {
  std::string subcommand;
  std::vector<std::string> args;  // after the fixture's options, before the path
  std::string golden;             // file name inside the fixture directory
  int Fixture::*expected_exit;
};

}  // namespace

TEST_SUITE("golden") {
  TEST_CASE("check, check --format json and diff print the fixture's goldens") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    const std::string original = read_bytes(fixture.input_path());
    // A scratch copy: the tool runs on a tree of its own, outside any git checkout.
    TempDir scratch("kvpatch-golden-" + fixture.name);
    fixture.stage(scratch.path());

    const std::vector<GoldenCommand> commands = {
        {"check", {}, "expected.check.txt", &Fixture::check_exit},
        {"check", {"--format", "json"}, "expected.json", &Fixture::check_exit},
        {"diff", {}, "expected.diff", &Fixture::diff_exit},
    };
    for (const GoldenCommand& command : commands) {
      std::vector<std::string> rest = command.args;
      rest.push_back(".");  // a directory PATH: the tree root, as the README's demo runs it
      const std::vector<std::string> args = fixture.command(command.subcommand, rest);
      const ProcessResult result = run_kvpatch(args, scratch.path());
      const std::string rendered = render_for_golden(result, scratch.path());
      const fs::path golden = fixture.dir / command.golden;
      INFO("fixture ", fixture.name, ", ", describe(args, result), ", golden ", golden.string());
      CHECK_MESSAGE(result.exit_code == fixture.*command.expected_exit,
                    "exit code ", result.exit_code, "; stderr: ", result.err);
      if (updating_goldens()) {
        write_bytes(golden, rendered);
        MESSAGE("updated ", golden.string());
        continue;
      }
      REQUIRE_MESSAGE(fs::exists(golden), "missing golden; create it with KVPATCH_UPDATE_GOLDENS=1 and review it");
      const std::string expected = read_bytes(golden);
      const bool same = rendered == expected;
      CHECK_MESSAGE(same, first_difference(expected, rendered));
    }
    // check and diff never write.
    const bool untouched = read_bytes(scratch.path() / fixture.input) == original;
    CHECK_MESSAGE(untouched, "check or diff modified the input");
  }
}
