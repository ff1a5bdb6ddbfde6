// `kvpatch check --fix` and `check --diff`, ruff's spellings of apply and diff. Per fixture (suite "formats"):
// --fix writes exactly what apply writes and then reports, in each form, exactly what check reports after apply,
// with its exit code; a refused input gets check's report and nothing is written. Without a fixture (suite
// "check_fix"): --diff is diff, and the combinations that cannot mean anything are refused before any file is read.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "support/files.h"
#include "support/fixture.h"
#include "support/json_expectations.h"
#include "support/kvpatch_cli.h"
#include "support/process.h"
#include "support/scratch_backend.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {
// A run's output with its scratch directory's path written as <tmp>: messages name the FlashInfer pin's file by its
// absolute path, and the two runs compared here are staged in two directories.
struct Seen {
  int exit_code;
  std::string out;
  std::string err;
};
Seen seen(const ProcessResult& r, const fs::path& scratch) {
  return {r.exit_code, replace_all(r.out, scratch.string(), "<tmp>"), replace_all(r.err, scratch.string(), "<tmp>")};
}
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("check --fix writes what apply writes, then reports what check reports after apply") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    const std::vector<std::vector<std::string>> report_forms = {
        {"--format", "text"}, {"--format", "json"}, {"--format", "sarif"}, {"--statistics"}};
    for (const std::vector<std::string>& form : report_forms) {
      CAPTURE(form.back());
      const TempDir fixed_top("kvpatch-check-fix-" + fixture.name);
      const TempDir applied_top("kvpatch-check-fix-apply-" + fixture.name);
      const fs::path fixed = stage_in_repository(fixture, fixed_top.path());
      const fs::path applied = stage_in_repository(fixture, applied_top.path());
      const std::string original = read_bytes(fixed / fixture.input);

      std::vector<std::string> fix_args = {"--fix"};
      fix_args.insert(fix_args.end(), form.begin(), form.end());
      fix_args.push_back(".");
      std::vector<std::string> check_args = form;
      check_args.push_back(".");
      const Seen fix = seen(run_kvpatch(fixture.command("check", fix_args), fixed), fixed_top.path());
      const Seen apply = seen(run_kvpatch(fixture.command("apply", {"."}), applied), applied_top.path());
      const Seen after = seen(run_kvpatch(fixture.command("check", check_args), applied), applied_top.path());

      CHECK_MESSAGE(read_bytes(fixed / fixture.input) == read_bytes(applied / fixture.input), fix.err);
      if (fixture.refused()) {
        CHECK(fix.exit_code == 2);
        CHECK(read_bytes(fixed / fixture.input) == original);
        CHECK_MESSAGE(fix.out == after.out, "a refused input is reported as check reports it");
        CHECK(fix.err.find("kvpatch: error: nothing was written; fix the errors above and run check again\n") !=
              std::string::npos);
        continue;
      }
      CHECK_MESSAGE(fix.exit_code == fixture.recheck_exit, fix.err);
      CHECK(after.exit_code == fixture.recheck_exit);
      // apply's stdout is its "patched FILE (N edits)" lines: before a text report (statistics too), as ruff prints
      // its fixes; on stderr when stdout holds a report that a program reads. A CI format names files from the
      // repository's top, so there they are below pkg/.
      const auto as_named_here = [&](const std::string& line, const std::string& before_path) {
        return (form.back() == "sarif" ? replace_all(line, before_path, before_path + "pkg/") : line) + "\n";
      };
      std::string patched_names;
      for (const std::string& line : lines_of(apply.out)) patched_names += as_named_here(line, "patched ");
      if (form.back() == "text" || form.back() == "--statistics") {
        CHECK(fix.out == patched_names + after.out);
      } else {
        CHECK(fix.out == after.out);
        CHECK_MESSAGE(fix.err.find(patched_names) != std::string::npos, fix.err);
      }
      // apply's warnings and notes, all but its count of what is left, which the report now shows.
      for (const std::string& line : lines_of(apply.err)) {
        if (line.find(" that apply cannot fix; run kvpatch check to see them") != std::string::npos) continue;
        CHECK_MESSAGE(fix.err.find(as_named_here(line, "warning: ")) != std::string::npos, line, "\n", fix.err);
      }

      // A second run finds nothing to write and reports the same.
      const Seen again = seen(run_kvpatch(fixture.command("check", fix_args), fixed), fixed_top.path());
      CHECK(again.exit_code == fixture.recheck_exit);
      CHECK(again.out == after.out);
      CHECK(again.err.find("kvpatch: nothing to patch\n") != std::string::npos);
      CHECK(read_bytes(fixed / fixture.input) == read_bytes(applied / fixture.input));
    }
  }
}

TEST_SUITE("check_fix") {
  TEST_CASE("check --diff prints what diff prints, with its exit code, and writes nothing") {
    const ScratchBackend backend{"kvpatch-check-diff"};
    const std::string original = read_bytes(backend.at("backend.py"));
    const ProcessResult diff = backend.run({"diff", "backend.py"});
    const ProcessResult check_diff = backend.run({"check", "--diff", "backend.py"});
    REQUIRE(diff.exit_code == 1);
    CHECK(check_diff.exit_code == diff.exit_code);
    CHECK(check_diff.out == diff.out);
    CHECK(check_diff.err == diff.err);
    CHECK(backend.run({"check", "--diff", "--exit-zero", "backend.py"}).exit_code == 0);
    CHECK(read_bytes(backend.at("backend.py")) == original);
  }

  TEST_CASE("--fix with --exit-zero exits 0 whatever is left; the file is patched") {
    const ScratchBackend backend{"kvpatch-check-fix", "fork"};  // apply leaves findings in the fork's backend
    const std::string original = read_bytes(backend.at("backend.py"));
    const ProcessResult fixed = backend.run({"check", "--fix", "--exit-zero", "backend.py"});
    CHECK_MESSAGE(fixed.exit_code == 0, fixed.err);
    CHECK(read_bytes(backend.at("backend.py")) != original);
    const ProcessResult left = backend.run({"check", "backend.py"});
    CHECK(left.exit_code == 1);
    CHECK(fixed.out.find(left.out) != std::string::npos);
  }

  TEST_CASE("--exit-non-zero-on-fix: exit 1 when the edits changed something, even with nothing left") {
    const ScratchBackend backend{"kvpatch-exit-on-fix"};  // gen-b: apply fixes every finding
    const std::string original = read_bytes(backend.at("backend.py"));
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"apply"}, std::vector<std::string>{"check", "--fix"}}) {
      CAPTURE(command);
      write_bytes(backend.at("backend.py"), original);
      std::vector<std::string> args = command;
      args.insert(args.end(), {"--exit-non-zero-on-fix", "backend.py"});
      const ProcessResult fixed = backend.run(args);
      CHECK_MESSAGE(fixed.exit_code == 1, fixed.err);
      CHECK(read_bytes(backend.at("backend.py")) != original);
      CHECK(backend.run({"check", "backend.py"}).exit_code == 0);  // nothing left: the 1 was for the fix
      const ProcessResult again = backend.run(args);
      CHECK_MESSAGE(again.exit_code == 0, again.err);  // nothing changed this time
      // Standard input: changed text is a fix as a changed file is.
      std::vector<std::string> from_stdin = command;
      from_stdin.insert(from_stdin.end(), {"--exit-non-zero-on-fix", "--stdin-filename", "backend.py", "-"});
      ProcessOptions unpatched;
      unpatched.stdin_text = original;
      CHECK(run_kvpatch(from_stdin, backend.dir(), unpatched).exit_code == 1);
      ProcessOptions patched;
      patched.stdin_text = read_bytes(backend.at("backend.py"));
      CHECK(run_kvpatch(from_stdin, backend.dir(), patched).exit_code == 0);
      // Without it, the same fix exits 0.
      write_bytes(backend.at("backend.py"), original);
      CHECK(backend.run(command.size() == 1 ? std::vector<std::string>{"apply", "backend.py"}
                                            : std::vector<std::string>{"check", "--fix", "backend.py"})
                .exit_code == 0);
    }
    // With --exit-zero it means nothing: refused by the command line, nothing written.
    write_bytes(backend.at("backend.py"), original);
    const ProcessResult both = backend.run({"apply", "--exit-non-zero-on-fix", "--exit-zero", "backend.py"});
    CHECK(both.exit_code == 2);
    CHECK(both.err.find("--exit-zero excludes --exit-non-zero-on-fix") != std::string::npos);
    CHECK(read_bytes(backend.at("backend.py")) == original);
    // Findings left after the fix exit 1 as they would without it.
    const ScratchBackend fork{"kvpatch-exit-on-fix-fork", "fork"};
    CHECK(fork.run({"apply", "--exit-non-zero-on-fix", "backend.py"}).exit_code == 1);
    CHECK(fork.run({"apply", "--exit-non-zero-on-fix", "backend.py"}).exit_code == 1);
  }

  TEST_CASE("--fix -o FILE: a report that cannot be written stops it before any source is touched") {
    const ScratchBackend backend{"kvpatch-check-fix"};
    const std::string original = read_bytes(backend.at("backend.py"));
    fs::create_directory(backend.at("reports"));
    write_bytes(backend.at("blocker"), "a file where a directory is wanted\n");
    for (const std::string report : {"reports", "blocker/report.json"}) {
      CAPTURE(report);
      const ProcessResult r = backend.run({"check", "--fix", "--format", "json", "-o", report, "backend.py"});
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK_MESSAGE(r.err.find("kvpatch: error: " + report + ": ") != std::string::npos, r.err);
      CHECK(r.err.find("kvpatch: error: nothing was written; fix the error above and run check again\n") !=
            std::string::npos);
      CHECK(read_bytes(backend.at("backend.py")) == original);
    }
    CHECK(fs::is_empty(backend.at("reports")));
    // Into a directory the checkout lacks, the report of what is left is written, whole, after the fix.
    const ProcessResult fixed = backend.run({"check", "--fix", "--format", "json", "-o", "out/report.json", "backend.py"});
    CHECK_MESSAGE(fixed.exit_code == 0, fixed.err);
    CHECK(read_bytes(backend.at("out/report.json")) == backend.run({"check", "--format", "json", "backend.py"}).out);
    CHECK(read_bytes(backend.at("backend.py")) != original);
  }

  TEST_CASE("ruff's spellings --output-format and concise print what --format and text print") {
    const ScratchBackend backend{"kvpatch-output-format"};
    const std::string git = required_env("KVPATCH_GIT");  // pre-commit reads what the index stages
    REQUIRE(run_process({git, "init", "-q", backend.dir().string()}).exit_code == 0);
    REQUIRE(run_process({git, "-C", backend.dir().string(), "add", "."}).exit_code == 0);
    for (const char* command : {"check", "pre-commit"}) {
      CAPTURE(command);
      for (const auto& [ruff, ours] : std::vector<std::pair<std::string, std::string>>{
               {"concise", "text"}, {"full", "full"}, {"json", "json"}, {"sarif", "sarif"}}) {
        const std::vector<std::string> paths = std::string(command) == "check" ? std::vector<std::string>{"backend.py"}
                                                                               : std::vector<std::string>{"--all"};
        std::vector<std::string> as_ruff = {command, "--output-format", ruff};
        std::vector<std::string> as_ours = {command, "--format", ours};
        as_ruff.insert(as_ruff.end(), paths.begin(), paths.end());
        as_ours.insert(as_ours.end(), paths.begin(), paths.end());
        const ProcessResult a = backend.run(as_ruff);
        const ProcessResult b = backend.run(as_ours);
        CHECK_MESSAGE(a.exit_code == b.exit_code, a.err);
        CHECK(a.out == b.out);
        CHECK(a.err == b.err);
        CHECK(!a.out.empty());
      }
    }
    const ProcessResult bad = backend.run({"check", "--output-format", "grouped", "backend.py"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("grouped") != std::string::npos);
  }

  TEST_CASE("combinations that cannot mean anything are exit 2, naming the remedy; nothing is written") {
    const ScratchBackend backend{"kvpatch-check-fix"};
    const std::string original = read_bytes(backend.at("backend.py"));
    const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
        {{"check", "--fix", "--diff", "backend.py"},
         "--fix writes the edits and --diff only prints them; pass one of the two"},
        {{"check", "--diff", "--format", "json", "backend.py"},
         "--diff prints a unified diff, not a report: drop --format, --statistics and --output-file, or --diff"},
        {{"check", "--diff", "--statistics", "backend.py"}, "drop --format, --statistics and --output-file"},
        {{"check", "--diff", "-o", "report.txt", "backend.py"}, "drop --format, --statistics and --output-file"},
        {{"check", "--show-fixes", "backend.py"},
         "--show-fixes lists what --fix fixed; pass --fix too, or drop --show-fixes"},
        {{"check", "--diff", "--show-fixes", "backend.py"}, "pass --fix too, or drop --show-fixes"},
        {{"check", "--exit-non-zero-on-fix", "backend.py"},
         "--exit-non-zero-on-fix sets the exit code of --fix; pass --fix too, or drop --exit-non-zero-on-fix"},
    };
    for (const auto& entry : refused) {  // not a structured binding: CAPTURE's lambda cannot capture one in C++20
      const std::vector<std::string>& args = entry.first;
      const std::string& message = entry.second;
      CAPTURE(args);
      const ProcessResult r = backend.run(args);
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK_MESSAGE(r.err.rfind("kvpatch: error: ", 0) == 0, r.err);
      CHECK_MESSAGE(r.err.find(message) != std::string::npos, r.err);
    }
    CHECK(read_bytes(backend.at("backend.py")) == original);
    CHECK(!fs::exists(backend.at("report.txt")));
  }
}
