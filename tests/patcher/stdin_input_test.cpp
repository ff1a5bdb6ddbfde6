// PATH `-` with --stdin-filename, as editors run a linter or fixer on an unsaved buffer: check and diff read the
// source from standard input and say exactly what they would say of that file on disk (its name, its settings and
// FlashInfer pin, the other modules of its package), apply prints what it would write there, and nothing on disk
// is read in its place or written.
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/fixture.h"
#include "support/fixture_sources.h"
#include "support/kvpatch_cli.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every fixture of the tree (a folder with a fixture.cfg), for the cases that hold `-` to a file on all of them.
std::vector<Fixture> all_fixtures() {
  std::vector<Fixture> out;
  for (const fs::directory_entry& entry : fs::directory_iterator(required_env("KVPATCH_FIXTURES_DIR"))) {
    if (fs::exists(entry.path() / "fixture.cfg")) out.push_back(load_fixture(entry.path()));
  }
  return out;
}

// A git repository whose package holds generation B's backend cut in two modules (the casts and run() calls in
// one, every plan() call in the other) beside the fixture's FlashInfer pin; `updaters` is the module's text.
struct Checkout {
  TempDir top{"kvpatch-stdin"};
  fs::path package = top.path() / "pkg";
  std::string updaters;

  Checkout() {
    const std::string source = fixture_source("gen-b-unpatched");
    const std::size_t cut = source.find("class FlashInferMLAIndicesUpdaterDecode:");
    const std::size_t imports_end = source.find("@dataclass");
    REQUIRE(cut != std::string::npos);
    REQUIRE(imports_end != std::string::npos);
    fs::create_directories(package);
    write_bytes(package / "flashinfer_mla_backend.py",
                source.substr(0, cut) + "from pkg.flashinfer_mla_updaters import FlashInferMLAIndicesUpdaterDecode\n");
    write_bytes(package / "pyproject.toml", read_fixture_file("gen-b-unpatched", "pyproject.toml"));
    updaters = source.substr(0, imports_end) + source.substr(cut);
    REQUIRE(run_process({required_env("KVPATCH_GIT"), "init", "-q", top.path().string()}).exit_code == 0);
  }

  ProcessResult kvpatch(const std::vector<std::string>& args, const std::optional<std::string>& input = {}) const {
    ProcessOptions options;
    options.stdin_text = input;
    return run_kvpatch(args, top.path(), options);
  }
};
}  // namespace

TEST_SUITE("stdin") {
  TEST_CASE("check - reports standard input as check reports the file --stdin-filename names") {
    Checkout checkout;
    const std::string name = "pkg/flashinfer_mla_updaters.py";
    // On disk the module is an older text, or absent: what is checked is what standard input holds.
    for (const bool on_disk : {true, false}) {
      CAPTURE(on_disk);
      if (on_disk) write_bytes(checkout.top.path() / name, "import torch\n");
      for (const char* format : {"text", "json", "github"}) {
        CAPTURE(format);
        const ProcessResult piped =
            checkout.kvpatch({"check", "--format", format, "--stdin-filename", name, "-"}, checkout.updaters);
        // The same text saved there, in the same place: messages name the pin by its absolute path.
        const std::string before = on_disk ? read_bytes(checkout.top.path() / name) : "";
        write_bytes(checkout.top.path() / name, checkout.updaters);
        const ProcessResult saved = checkout.kvpatch({"check", "--format", format, name});
        if (on_disk) write_bytes(checkout.top.path() / name, before);
        else fs::remove(checkout.top.path() / name);
        CHECK_MESSAGE(piped.exit_code == 1, describe({"kvpatch", "check", "-"}, piped));
        CHECK(piped.exit_code == saved.exit_code);
        CHECK(piped.out == saved.out);
        // The pin beside the file, and the backend module beside it, count as they do for the file.
        if (std::string(format) == "text") {
          CHECK(piped.out.rfind("pkg/flashinfer_mla_updaters.py:30:9: missing: ", 0) == 0);
          CHECK(contains(piped.out, "leaves it unthreaded: the casts at pkg/flashinfer_mla_backend.py:87:9"));
        }
      }
      if (on_disk) fs::remove(checkout.top.path() / name);
    }
    // The FlashInfer pin is looked for from the named file's directory, not from the current one.
    write_bytes(checkout.package / "pyproject.toml", read_fixture_file("old-flashinfer", "pyproject.toml"));
    const ProcessResult pinned = checkout.kvpatch({"check", "--stdin-filename", name, "-"}, checkout.updaters);
    CHECK(contains(pinned.out, "pkg/flashinfer_mla_updaters.py:47:13: missing: "));
    CHECK(contains(pinned.out, "FlashInfer 0.6.12 (flashinfer_python==0.6.12 in " +
                                   (fs::canonical(checkout.package) / "pyproject.toml").string() + ") cannot build"));
  }

  TEST_CASE("diff - prints standard input's edits under the file's name; nothing on disk is written") {
    TempDir dir("kvpatch-stdin-diff");
    const std::string source = fixture_source("gen-b-unpatched");
    ProcessOptions piped_options;
    piped_options.stdin_text = source;
    const ProcessResult piped =
        run_kvpatch({"diff", "--isolated", "--stdin-filename", "backend.py", "-"}, dir.path(), piped_options);
    CHECK(fs::is_empty(dir.path()));
    write_bytes(dir.path() / "backend.py", source);
    const ProcessResult saved = run_kvpatch({"diff", "--isolated", "backend.py"}, dir.path());
    CHECK(piped.exit_code == 1);
    CHECK(piped.out == saved.out);
    CHECK(contains(piped.out, "--- a/backend.py\n+++ b/backend.py\n"));
    CHECK(read_bytes(dir.path() / "backend.py") == source);
  }

  TEST_CASE("apply - prints what apply writes to the file, for every fixture, and writes nothing") {
    const std::vector<Fixture> fixtures = all_fixtures();
    CHECK(fixtures.size() >= 20);
    for (const Fixture& fixture : fixtures) {
      CAPTURE(fixture.name);
      TempDir written("kvpatch-stdin-apply-" + fixture.name);
      TempDir piped("kvpatch-stdin-piped-" + fixture.name);
      fixture.stage(written.path());
      fixture.stage(piped.path());
      const std::string source = read_bytes(piped.path() / fixture.input);
      const ProcessResult applied = run_kvpatch(fixture.command("apply", {fixture.input}), written.path());
      ProcessOptions options;
      options.stdin_text = source;
      const ProcessResult printed = run_kvpatch(
          fixture.command("apply", {"--stdin-filename", fixture.input, "-"}), piped.path(), options);
      CHECK_MESSAGE(printed.exit_code == fixture.apply_exit, describe({"kvpatch", "apply", "-"}, printed));
      CHECK(printed.exit_code == applied.exit_code);
      // Refused input prints nothing; otherwise the whole text, patched or, with nothing to patch, as it came.
      CHECK(printed.out == (fixture.refused() ? "" : read_bytes(written.path() / fixture.input)));
      CHECK(read_bytes(piped.path() / fixture.input) == source);
    }
  }

  TEST_CASE("check --fix - prints what apply - prints, and on stderr the report check makes of that text") {
    const std::vector<Fixture> fixtures = all_fixtures();
    CHECK(fixtures.size() >= 20);
    for (const Fixture& fixture : fixtures) {
      CAPTURE(fixture.name);
      TempDir dir("kvpatch-stdin-check-fix-" + fixture.name);
      fixture.stage(dir.path());
      const std::string source = read_bytes(dir.path() / fixture.input);
      ProcessOptions options;
      options.stdin_text = source;
      const std::vector<std::string> piped_args = {"--fix",           "--show-fixes", "--format", "json",
                                                   "--stdin-filename", fixture.input, "-"};
      const ProcessResult fixed = run_kvpatch(fixture.command("check", piped_args), dir.path(), options);
      const ProcessResult printed =
          run_kvpatch(fixture.command("apply", {"--stdin-filename", fixture.input, "-"}), dir.path(), options);
      CHECK(read_bytes(dir.path() / fixture.input) == source);  // nothing on disk was written
      CHECK(fixed.out == printed.out);
      if (fixture.refused()) {
        CHECK(fixed.exit_code == 2);
        CHECK(contains(fixed.err, "kvpatch: error: nothing was printed; fix the errors above and run check again\n"));
      } else {
        // The same text written to the file, and checked there: the report is the one check makes of it, on stderr.
        write_bytes(dir.path() / fixture.input, printed.out);
        const ProcessResult after = run_kvpatch(fixture.command("check", {"--format", "json", fixture.input}), dir.path());
        CHECK_MESSAGE(fixed.exit_code == fixture.recheck_exit, describe({"kvpatch", "check", "--fix", "-"}, fixed));
        CHECK(fixed.exit_code == after.exit_code);
        CHECK_MESSAGE(contains(fixed.err, after.out), fixed.err);
        // --show-fixes names the file standard input stands for, on stderr, when the text changed.
        CHECK(contains(fixed.err, "- " + fixture.input + ":\n") == (printed.out != source));
      }
    }
  }

  TEST_CASE("without --stdin-filename the text is reported as -") {
    TempDir dir("kvpatch-stdin-bare");
    ProcessOptions options;
    options.stdin_text = fixture_source("gen-b-unpatched");
    const ProcessResult r = run_kvpatch({"check", "--isolated", "-"}, dir.path(), options);
    CHECK(r.exit_code == 1);
    CHECK(r.out.rfind("-:87:9: redundant: ", 0) == 0);
  }

  TEST_CASE("misuses of - are refused, naming the remedy, and bad bytes are named by line") {
    Checkout checkout;
    const std::string name = "pkg/flashinfer_mla_updaters.py";
    write_bytes(checkout.top.path() / name, checkout.updaters);
    struct Misuse {
      std::vector<std::string> args;
      std::string says;
    };
    const std::vector<Misuse> misuses = {
        {{"check", "-", "pkg"}, "- (standard input) must be the only PATH"},
        {{"check", "--stdin-filename", name, name}, "--stdin-filename names the file that standard input stands for"},
        {{"diff", "--stdin-filename", "pkg", "-"}, "--stdin-filename pkg is a directory"},
        {{"apply", "-", name}, "- (standard input) must be the only PATH"},
    };
    for (const Misuse& m : misuses) {
      const ProcessResult r = checkout.kvpatch(m.args, checkout.updaters);
      CHECK_MESSAGE(r.exit_code == 2, describe(m.args, r));
      CHECK_MESSAGE(contains(r.err, "kvpatch: error: " + m.says), r.err);
      CHECK(r.out.empty());
    }
    CHECK(read_bytes(checkout.top.path() / name) == checkout.updaters);

    for (const char* command : {"check", "apply"}) {
      const ProcessResult bad = checkout.kvpatch({command, "--stdin-filename", name, "-"}, "import torch\nx = '\xff'\n");
      CHECK(bad.exit_code == 2);
      CHECK(contains(bad.err, "kvpatch: error: " + name + ":2: not valid UTF-8"));
      if (std::string(command) == "apply") CHECK(bad.out.empty());  // nothing printed: an editor keeps its buffer
    }
  }
}
