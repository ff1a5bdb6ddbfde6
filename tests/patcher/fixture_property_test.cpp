// Properties of `kvpatch apply` over the fixture named by KVPATCH_FIXTURE, on a scratch copy:
// the diff, our own application of it, `git apply` and `kvpatch apply` agree; a second apply is a
// no-op; bytes outside edited lines (CRLF, BOM, tabs, missing final newline) survive; the result
// reparses and compiles. Refused fixtures must leave the file untouched with exit 2.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/fixture.h"
#include "support/kvpatch_cli.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/unified_diff.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {

const std::string kBom = "\xEF\xBB\xBF";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Line-ending style of a file: how many terminated lines end in "\r\n" and in a bare "\n".
struct LineEndings {
  std::size_t crlf = 0;
  std::size_t lf = 0;
};

LineEndings count_line_endings(const std::string& bytes) {
  LineEndings e;
  for (const std::string& line : split_lines_keep_ends(bytes)) {
    if (ends_with(line, "\r\n")) {
      ++e.crlf;
    } else if (ends_with(line, "\n")) {
      ++e.lf;
    }
  }
  return e;
}

// True when some indented line starts with a tab and none starts with a space (a tab-indented file).
bool indents_with_tabs(const std::string& bytes) {
  bool tab = false;
  for (const std::string& line : split_lines_keep_ends(bytes)) {
    if (line.empty()) continue;
    if (line[0] == ' ') return false;
    if (line[0] == '\t') tab = true;
  }
  return tab;
}

std::string strip_prefix_b(const std::string& path) {
  REQUIRE_MESSAGE(path.rfind("b/", 0) == 0, "diff paths must carry git's b/ prefix (patch -p1), got: ", path);
  return path.substr(2);
}

void check_refused(const Fixture& fixture) {
  const std::string original = read_bytes(fixture.input_path());
  TempDir scratch("kvpatch-refused-" + fixture.name);
  const fs::path file = scratch.path() / fixture.input;
  write_bytes(file, original);
  for (const char* command : {"check", "diff", "apply"}) {
    const ProcessResult result = run_kvpatch(fixture.command(command, {fixture.input}), scratch.path());
    INFO("kvpatch ", command, " on refused fixture ", fixture.name);
    CHECK(result.exit_code == 2);
    CHECK_MESSAGE(!result.err.empty(), "a refusal must say why on stderr");
    if (std::string(command) == "diff") CHECK_MESSAGE(result.out.empty(), "a refused file must get no diff");
    const bool untouched = read_bytes(file) == original;
    CHECK_MESSAGE(untouched, "a refused file was modified");
  }
  // No temporary files left next to the input.
  std::size_t entries = std::distance(fs::directory_iterator(scratch.path()), fs::directory_iterator());
  CHECK(entries == 1);
}

}  // namespace

TEST_SUITE("properties") {
  TEST_CASE("apply agrees with diff, is idempotent and preserves every byte outside its edits") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    if (fixture.refused()) {
      check_refused(fixture);
      return;
    }
    const std::string original = read_bytes(fixture.input_path());
    TempDir scratch("kvpatch-props-" + fixture.name);
    const fs::path file = scratch.path() / fixture.input;
    fixture.stage(scratch.path());
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);

    const ProcessResult diff = run_kvpatch(fixture.command("diff", {fixture.input}), scratch.path());
    REQUIRE_MESSAGE(diff.exit_code == fixture.diff_exit, describe({"kvpatch", "diff"}, diff));
    const std::vector<FilePatch> patches = parse_unified_diff(diff.out);
    REQUIRE(patches.size() <= 1);

    const ProcessResult apply = run_kvpatch(fixture.command("apply", {fixture.input}), scratch.path());
    REQUIRE_MESSAGE(apply.exit_code == fixture.apply_exit, describe({"kvpatch", "apply"}, apply));
    const std::string patched = read_bytes(file);

    SUBCASE("the file keeps its mode and no temporary file is left behind") {
      CHECK((fs::status(file).permissions() & fs::perms::all) ==
            (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
      std::size_t entries = std::distance(fs::directory_iterator(scratch.path()), fs::directory_iterator());
      CHECK(entries == (fs::exists(fixture.dir / "pyproject.toml") ? 2u : 1u));  // the input, and its pin
    }

    SUBCASE("apply says where the plan it threads runs, unless the sm90 form gates it") {
      // The golden check report says whether any plan site gets the KV field (not a copied platform gate).
      bool threads = false;
      for (const std::string& line : split_lines_keep_ends(read_bytes(fixture.dir / "expected.check.txt"))) {
        threads |= line.find(": missing: ") != std::string::npos &&
                   line.find("; fix: kv_data_type=") != std::string::npos &&
                   line.find("(the gate of the class's other sites)") == std::string::npos;
      }
      const bool gated_form = std::find(fixture.options.begin(), fixture.options.end(), "sm90") != fixture.options.end();
      const bool noted = apply.err.find("kvpatch: note: the threaded plan() calls plan an FP8 KV cache as FP8 on "
                                        "every GPU") != std::string::npos;
      CHECK_MESSAGE(noted == (threads && !gated_form), "apply's stderr: ", apply.err);
      // The original form (no --kv-dtype-form given, or "original") also plans E5M2 caches as E5M2.
      const bool other_form = gated_form || std::find(fixture.options.begin(), fixture.options.end(), "upstream") !=
                                                fixture.options.end();
      const bool noted_e5m2 = apply.err.find("kvpatch: note: this form (original) also plans an FP8 E5M2 cache") !=
                              std::string::npos;
      CHECK_MESSAGE(noted_e5m2 == (threads && !other_form), "apply's stderr: ", apply.err);
    }

    SUBCASE("diff, applied by the test itself, gives exactly what apply wrote") {
      if (patches.empty()) {
        CHECK_MESSAGE((patched == original), "apply changed a file for which diff printed nothing: ",
                      first_difference(original, patched));
      } else {
        CHECK(strip_prefix_b(patches[0].new_path) == fixture.input);
        const std::string by_test = apply_patch(original, patches[0]);
        CHECK_MESSAGE((by_test == patched), first_difference(by_test, patched));
      }
    }

    SUBCASE("a second apply changes nothing and diff is then empty") {
      const ProcessResult again = run_kvpatch(fixture.command("apply", {fixture.input}), scratch.path());
      CHECK_MESSAGE(again.exit_code == fixture.apply_exit, describe({"kvpatch", "apply"}, again));
      const std::string twice = read_bytes(file);
      CHECK_MESSAGE((twice == patched), first_difference(patched, twice));
      const ProcessResult rediff = run_kvpatch(fixture.command("diff", {fixture.input}), scratch.path());
      CHECK_MESSAGE(rediff.exit_code == 0, describe({"kvpatch", "diff"}, rediff));
      CHECK_MESSAGE(rediff.out.empty(), "diff after apply: ", rediff.out);
    }

    SUBCASE("check after apply reparses the result and reports only what cannot be fixed") {
      const ProcessResult recheck = run_kvpatch(fixture.command("check", {fixture.input}), scratch.path());
      CHECK_MESSAGE(recheck.exit_code == fixture.recheck_exit, describe({"kvpatch", "check"}, recheck));
    }

    SUBCASE("lines outside the hunks are byte-identical; BOM, line endings, final newline, indentation kept") {
      if (!patches.empty()) {
        const std::vector<std::string> kept_before = untouched_old_lines(original, patches[0]);
        const std::vector<std::string> kept_after = untouched_new_lines(patched, patches[0]);
        std::string joined_before, joined_after;
        for (const std::string& l : kept_before) joined_before += l;
        for (const std::string& l : kept_after) joined_after += l;
        CHECK_MESSAGE((kept_before == kept_after), "outside the hunks: ", first_difference(joined_before, joined_after));
      }
      CHECK((original.rfind(kBom, 0) == 0) == (patched.rfind(kBom, 0) == 0));
      CHECK(ends_with(original, "\n") == ends_with(patched, "\n"));
      const LineEndings before = count_line_endings(original);
      const LineEndings after = count_line_endings(patched);
      if (before.lf == 0) CHECK_MESSAGE(after.lf == 0, "a CRLF file gained LF-only lines");
      if (before.crlf == 0) CHECK_MESSAGE(after.crlf == 0, "an LF file gained CRLF lines");
      if (indents_with_tabs(original)) CHECK_MESSAGE(indents_with_tabs(patched), "inserted lines indent with spaces");
    }

    SUBCASE("python3 -m py_compile accepts the result") {
      const std::vector<std::string> argv{required_env("KVPATCH_PYTHON"), "-m", "py_compile", file.string()};
      const ProcessResult compiled = run_process(argv);
      CHECK_MESSAGE(compiled.exit_code == 0, describe(argv, compiled));
    }

    SUBCASE("git apply accepts the diff and produces the same bytes as kvpatch apply") {
      if (patches.empty()) return;
      TempDir repo("kvpatch-gitapply-" + fixture.name);
      const std::string git = required_env("KVPATCH_GIT");
      const std::vector<std::string> init{git, "init", "-q", repo.path().string()};
      REQUIRE_MESSAGE(run_process(init).exit_code == 0, "git init failed");
      const fs::path target = repo.path() / strip_prefix_b(patches[0].new_path);
      fs::create_directories(target.parent_path());
      fixture.stage(target.parent_path());
      write_bytes(repo.path() / ".git" / "kvpatch.diff", diff.out);
      for (bool check_only : {true, false}) {
        std::vector<std::string> argv{git, "-c", "core.autocrlf=false", "apply", "--whitespace=nowarn"};
        if (check_only) argv.push_back("--check");
        argv.push_back(".git/kvpatch.diff");
        const ProcessResult applied = run_process(argv, ProcessOptions{repo.path()});
        REQUIRE_MESSAGE(applied.exit_code == 0, describe(argv, applied));
      }
      const std::string by_git = read_bytes(target);
      CHECK_MESSAGE((by_git == patched), first_difference(by_git, patched));
    }
  }
}
