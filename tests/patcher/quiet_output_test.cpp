// -q/--quiet and -s/--silent (ruff's). Per fixture (suite "formats"), each report form and each writing command is
// run three times, plain, -q and -s, on copies of one staged backend: the exit codes and the bytes written must be
// the same; -q must print exactly the plain run's output less what only says how the run went (a report's entries
// that are not findings, as --format github lists them apart, its summary line and --statistics' fixable count;
// "patched FILE" lines, --show-fixes lists, notes); -s must print nothing but the errors of a run that exits 2. Without a fixture (suite "quiet"): pre-commit and the hook commands, standard input,
// --output-file, and the warnings -q keeps and -s drops.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <regex>
#include <set>
#include <string>
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
// The lines of `text` that `dropped` does not match, each with its '\n'.
std::string kept_lines(const std::string& text, const std::function<bool(const std::string&)>& dropped) {
  std::string out;
  for (const std::string& line : lines_of(text)) {
    if (!dropped(line)) out += line + "\n";
  }
  return out;
}

// What a report for a person ends with: the summary line and, for --statistics, the count apply can fix.
bool closing_line(const std::string& line) {
  static const std::regex summary(R"(\d+ plan sites: .*; \d+ edits)");
  static const std::regex fixable(R"(\[\*\] \d+ findings? fixable with `kvpatch apply`)");
  return std::regex_match(line, summary) || std::regex_match(line, fixable);
}

// What apply says of how its writes went: "patched FILE" lines, the --show-fixes list, its notes.
bool progress_line(const std::string& line) {
  static const std::regex show_fixes(R"(fixed \d+ findings? in \d+ files?:|- .+:|    \d+ x [a-z0-9-]+ \([a-z-]+\))");
  return line.rfind("patched ", 0) == 0 || std::regex_match(line, show_fixes) ||
         line.rfind("kvpatch: note: ", 0) == 0 || line == "kvpatch: nothing to patch";
}

// A report entry's identity, from a text line (`FILE:LINE:COL: STATUS: MESSAGE [RULE]`) or a GitHub annotation:
// the file's name, the position, status and rule. Empty for any other line.
std::string entry_key(const std::string& line) {
  static const std::regex text(R"(([^ :][^:]*):(\d+):(\d+): ([a-z-]+): .* \[([a-z0-9-]+)\])");
  static const std::regex github(R"(::[a-z]+ file=([^,]+),line=(\d+),col=(\d+),title=kvpatch ([a-z-]+) \[([a-z0-9-]+)\]::.*)");
  std::smatch m;
  if (!std::regex_match(line, m, text) && !std::regex_match(line, m, github)) return "";
  return fs::path(m[1].str()).filename().string() + ":" + m[2].str() + ":" + m[3].str() + " " + m[4].str() + " [" +
         m[5].str() + "]";
}

// The findings of the files in `dir` as they are now, from --format github: the report that lists findings alone,
// made apart from the text reports -q shortens.
std::set<std::string> finding_keys(const Fixture& fixture, const fs::path& dir) {
  const ProcessResult github = run_kvpatch(fixture.command("check", {"--format", "github", "."}), dir);
  std::set<std::string> keys;
  for (const std::string& line : lines_of(github.out)) {
    if (const std::string key = entry_key(line); !key.empty()) keys.insert(key);
  }
  return keys;
}

// What -s leaves of a plain run's stderr: the errors, when they stopped it.
std::string silent_stderr(const ProcessResult& plain) {
  if (plain.exit_code != 2) return "";
  return kept_lines(plain.err, [](const std::string& line) { return line.rfind("kvpatch: error: ", 0) != 0; });
}

struct Form {
  std::vector<std::string> args;  // after the subcommand, before the path
  std::string subcommand;
  bool writes = false;
  bool closes_with_summary = false;  // its plain stdout ends with closing lines (a report for a person)
};

// What -q leaves out of the form's output: the closing lines of a report for a person and the entries there that
// are not findings; for the writing commands, the lines saying how the writes went.
std::function<bool(const std::string&)> quiet_drops(const Form& form, const std::set<std::string>& findings) {
  return [&form, &findings](const std::string& line) {
    if (form.writes && progress_line(line)) return true;
    if (!form.closes_with_summary) return false;
    const std::string key = entry_key(line);
    return closing_line(line) || (!key.empty() && findings.count(key) == 0);
  };
}

const std::vector<Form>& forms() {
  static const std::vector<Form> all = {
      {{"--format", "text"}, "check", false, true},
      {{"--format", "full"}, "check", false, true},
      {{"--format", "github"}, "check", false, true},
      {{"--statistics"}, "check", false, true},
      {{"--format", "json"}, "check", false, false},
      {{"--format", "sarif"}, "check", false, false},
      {{}, "diff", false, false},
      {{}, "apply", true, false},
      {{"--show-fixes"}, "apply", true, false},
      {{"--fix"}, "check", true, true},
      {{"--fix", "--show-fixes"}, "check", true, true},
      {{"--fix", "--show-fixes", "--format", "json"}, "check", true, false},
  };
  return all;
}
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("-q prints the plain run's output less how it went, -s only errors; both exit and write as it does") {
    const Fixture fixture = load_fixture(required_env("KVPATCH_FIXTURE"));
    for (const Form& form : forms()) {
      CAPTURE(form.subcommand);
      CAPTURE(form.args);
      const TempDir plain_top("kvpatch-quiet-plain-" + fixture.name);
      const TempDir quiet_top("kvpatch-quiet-q-" + fixture.name);
      const TempDir silent_top("kvpatch-quiet-s-" + fixture.name);
      // Read-only forms run all three in one copy; the writing ones each in its own.
      const fs::path plain_dir = stage_in_repository(fixture, plain_top.path());
      const fs::path quiet_dir = form.writes ? stage_in_repository(fixture, quiet_top.path()) : plain_dir;
      const fs::path silent_dir = form.writes ? stage_in_repository(fixture, silent_top.path()) : plain_dir;
      const auto run = [&](const std::string& flag, const fs::path& dir) {
        std::vector<std::string> args = form.args;
        if (!flag.empty()) args.push_back(flag);
        args.push_back(".");
        ProcessResult r = run_kvpatch(fixture.command(form.subcommand, args), dir);
        // Messages name the FlashInfer pin's file by its absolute path, JSON the root.
        r.out = replace_all(r.out, dir.parent_path().string(), "<top>");
        r.err = replace_all(r.err, dir.parent_path().string(), "<top>");
        return r;
      };
      const ProcessResult plain = run("", plain_dir);
      const ProcessResult quiet = run("-q", quiet_dir);
      const ProcessResult silent = run("--silent", silent_dir);

      CHECK_MESSAGE(quiet.exit_code == plain.exit_code, quiet.err);
      CHECK_MESSAGE(silent.exit_code == plain.exit_code, silent.err);
      if (form.writes) {
        const std::string written = read_bytes(plain_dir / fixture.input);
        CHECK(read_bytes(quiet_dir / fixture.input) == written);
        CHECK(read_bytes(silent_dir / fixture.input) == written);
      }
      // Each form this test drops lines from must print them plainly, or the -q checks below could not fail.
      if (form.closes_with_summary) {
        const std::vector<std::string> lines = lines_of(plain.out);
        REQUIRE_MESSAGE(!lines.empty(), plain.err);
        CHECK_MESSAGE(closing_line(lines.back()), plain.out);
      }
      if (form.writes && plain.exit_code != 2 && !fixture.refused()) {
        const bool said = plain.out.find("patched ") != std::string::npos ||
                          plain.err.find("patched ") != std::string::npos ||
                          plain.err.find("kvpatch: nothing to patch\n") != std::string::npos;
        CHECK_MESSAGE(said, std::string(plain.out + plain.err));
      }
      // After the plain run's writes, as its report is made.
      const std::set<std::string> findings = finding_keys(fixture, plain_dir);
      CHECK(quiet.out == kept_lines(plain.out, quiet_drops(form, findings)));
      CHECK(quiet.err == kept_lines(plain.err, quiet_drops(form, findings)));
      CHECK(silent.out.empty());
      CHECK(silent.err == silent_stderr(plain));
    }
  }
}

TEST_SUITE("quiet") {
  TEST_CASE("pre-commit -q prints the report without its summary and no remedy; -s nothing; all exit 1") {
    const ScratchBackend backend{"kvpatch-quiet-pre-commit"};
    const std::string git = required_env("KVPATCH_GIT");
    REQUIRE(run_process({git, "init", "-q", backend.dir().string()}).exit_code == 0);
    REQUIRE(run_process({git, "-C", backend.dir().string(), "add", "."}).exit_code == 0);
    for (const std::vector<std::string>& format : {std::vector<std::string>{"--format", "text"},
                                                   std::vector<std::string>{"--format", "json"},
                                                   std::vector<std::string>{"--statistics"}}) {
      CAPTURE(format);
      std::vector<std::string> args = {"pre-commit"};
      args.insert(args.end(), format.begin(), format.end());
      const ProcessResult plain = backend.run(args);
      args.push_back("-q");
      const ProcessResult quiet = backend.run(args);
      args.back() = "-s";
      const ProcessResult silent = backend.run(args);
      REQUIRE_MESSAGE(plain.exit_code == 1, plain.err);
      CHECK(quiet.exit_code == 1);
      CHECK(silent.exit_code == 1);
      CHECK_MESSAGE(plain.err.find("kvpatch: the staged content has findings; run `kvpatch apply") != std::string::npos,
                    plain.err);
      CHECK(quiet.out == kept_lines(plain.out, closing_line));
      if (format.back() != "json") CHECK(quiet.out != plain.out);
      CHECK(quiet.err.empty());
      CHECK(silent.out.empty());
      CHECK(silent.err.empty());
    }
  }

  TEST_CASE("install-hook and uninstall-hook -q and -s do their work and print nothing") {
    for (const char* flag : {"-q", "--silent"}) {
      CAPTURE(flag);
      const ScratchBackend backend{"kvpatch-quiet-hook"};
      REQUIRE(run_process({required_env("KVPATCH_GIT"), "init", "-q", backend.dir().string()}).exit_code == 0);
      const fs::path hook = backend.at(".git/hooks/pre-commit");
      const ProcessResult install = backend.run({"install-hook", flag});
      CHECK_MESSAGE(install.exit_code == 0, install.err);
      CHECK(install.out.empty());
      CHECK(install.err.empty());
      CHECK(read_bytes(hook).find("pre-commit") != std::string::npos);
      const ProcessResult uninstall = backend.run({"uninstall-hook", flag});
      CHECK_MESSAGE(uninstall.exit_code == 0, uninstall.err);
      CHECK(uninstall.out.empty());
      CHECK(uninstall.err.empty());
      CHECK(!fs::exists(hook));
    }
    const ScratchBackend backend{"kvpatch-quiet-hook-plain"};
    REQUIRE(run_process({required_env("KVPATCH_GIT"), "init", "-q", backend.dir().string()}).exit_code == 0);
    CHECK(backend.run({"install-hook"}).out.rfind("installed ", 0) == 0);
  }

  TEST_CASE("-q keeps warnings, -s drops them; neither changes the exit code") {
    const ScratchBackend backend{"kvpatch-quiet-warnings"};
    fs::create_directories(backend.at("empty"));
    // A stale suppression: the line holds no finding of that rule.
    const std::string source = read_bytes(backend.at("backend.py"));
    write_bytes(backend.at("backend.py"), source + "import os  # kvpatch: ignore[flashinfer-mla-kv-cast] not a cast\n");
    const ProcessResult plain = backend.run({"check", "backend.py", "empty"});
    const ProcessResult quiet = backend.run({"check", "-q", "backend.py", "empty"});
    const ProcessResult silent = backend.run({"check", "-s", "backend.py", "empty"});
    REQUIRE_MESSAGE(plain.exit_code == 1, plain.err);
    CHECK(quiet.exit_code == 1);
    CHECK(silent.exit_code == 1);
    CHECK_MESSAGE(plain.err.find("kvpatch: warning: empty: no file here uses BatchMLAPagedAttentionWrapper") !=
                      std::string::npos,
                  plain.err);
    CHECK_MESSAGE(plain.err.find("kvpatch: warning: backend.py:" + std::to_string(lines_of(source).size() + 1) + ":") !=
                      std::string::npos,
                  plain.err);
    CHECK(quiet.err == plain.err);
    CHECK(silent.err.empty());
    CHECK(silent.out.empty());
    // Made an error by the setting, the stale comment is a finding: -s leaves its word to the exit code.
    const ProcessResult failing = backend.run({"check", "-s", "--unused-ignores", "error", "backend.py"});
    CHECK(failing.exit_code == 1);
    CHECK(failing.out.empty());
    CHECK(failing.err.empty());
  }

  TEST_CASE("-s still writes --output-file and apply -'s text; -q shortens the file's report as it does stdout's") {
    const ScratchBackend backend{"kvpatch-quiet-data"};
    const ProcessResult plain = backend.run({"check", "-o", "plain.txt", "backend.py"});
    const ProcessResult silent = backend.run({"check", "-s", "-o", "silent.txt", "backend.py"});
    const ProcessResult quiet = backend.run({"check", "-q", "-o", "quiet.txt", "backend.py"});
    CHECK(plain.exit_code == 1);
    CHECK(silent.exit_code == 1);
    CHECK(quiet.exit_code == 1);
    // -s is -q that prints nothing: the file is -q's.
    CHECK(read_bytes(backend.at("silent.txt")) == read_bytes(backend.at("quiet.txt")));
    CHECK(read_bytes(backend.at("quiet.txt")) == kept_lines(read_bytes(backend.at("plain.txt")), closing_line));
    CHECK(read_bytes(backend.at("quiet.txt")) != read_bytes(backend.at("plain.txt")));

    const std::string source = read_bytes(backend.at("backend.py"));
    ProcessOptions from_stdin;
    from_stdin.working_dir = backend.dir();
    from_stdin.stdin_text = source;
    const ProcessResult text = run_kvpatch({"apply", "--stdin-filename", "backend.py", "-"}, backend.dir(), from_stdin);
    const ProcessResult text_silent =
        run_kvpatch({"apply", "-s", "--stdin-filename", "backend.py", "-"}, backend.dir(), from_stdin);
    REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    CHECK(text.out != source);
    CHECK(text_silent.exit_code == 0);
    CHECK(text_silent.out == text.out);
    CHECK(text_silent.err.empty());
    CHECK(!text.err.empty());  // its notes, which -s dropped
    // check --fix -: the text on stdout, the report of what is left on stderr, without its summary under -q.
    const ProcessResult fixed =
        run_kvpatch({"check", "--fix", "--stdin-filename", "backend.py", "-"}, backend.dir(), from_stdin);
    const ProcessResult fixed_quiet =
        run_kvpatch({"check", "--fix", "-q", "--stdin-filename", "backend.py", "-"}, backend.dir(), from_stdin);
    CHECK(fixed_quiet.exit_code == fixed.exit_code);
    CHECK(fixed_quiet.out == text.out);
    CHECK(!fixed.err.empty());           // the entries left, all patched, and the summary line
    CHECK(fixed_quiet.err.empty());      // none of them a finding
    CHECK(read_bytes(backend.at("backend.py")) == source);
  }

  TEST_CASE("diff -s prints nothing and exits 1 while there are edits, 0 after apply") {
    const ScratchBackend backend{"kvpatch-quiet-diff"};
    const ProcessResult before = backend.run({"diff", "-s", "backend.py"});
    CHECK(before.exit_code == 1);
    CHECK(before.out.empty());
    CHECK(before.err.empty());
    REQUIRE(backend.run({"apply", "-s", "backend.py"}).exit_code == 0);
    const ProcessResult after = backend.run({"diff", "-s", "backend.py"});
    CHECK(after.exit_code == 0);
    CHECK(after.out.empty());
  }
}
