// A PATH that yields no file a rule selects is named in a warning on stderr, so a CI run that checked
// nothing says so; the exit code stays 0 and files that are selected are not warned about.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/fixture_sources.h"
#include "support/kvpatch_cli.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {
std::string warning_for(const std::string& path) {
  return "kvpatch: warning: " + path + ": no file here uses BatchMLAPagedAttentionWrapper; nothing checked\n";
}
}  // namespace

TEST_SUITE("unselected_paths") {
  TEST_CASE("a directory with no .py file and a file without the wrapper: one warning each, exit 0") {
    TempDir scratch("kvpatch-unselected");
    fs::create_directories(scratch.path() / "empty");
    write_bytes(scratch.path() / "empty" / "notes.txt", "BatchMLAPagedAttentionWrapper\n");
    write_bytes(scratch.path() / "other.py", "import torch\n");
    for (const char* command : {"check", "diff", "apply"}) {
      CAPTURE(command);
      const ProcessResult r = run_kvpatch({command, "empty", "other.py"}, scratch.path());
      CHECK(r.exit_code == 0);
      CHECK(r.err.find(warning_for("empty")) != std::string::npos);
      CHECK(r.err.find(warning_for("other.py")) != std::string::npos);
    }
    CHECK(read_bytes(scratch.path() / "other.py") == "import torch\n");
  }

  TEST_CASE("a path holding a selected file is not warned about, the one beside it is") {
    TempDir scratch("kvpatch-unselected");
    fs::create_directories(scratch.path() / "backend");
    fs::create_directories(scratch.path() / "other");
    write_bytes(scratch.path() / "backend" / "flashinfer_mla_backend.py", fixture_source("gen-b-unpatched"));
    write_bytes(scratch.path() / "other" / "helpers.py", "def f():\n    return 1\n");
    const ProcessResult r = run_kvpatch({"check", "backend", "other"}, scratch.path());
    CHECK(r.exit_code == 1);  // the backend has findings
    CHECK(r.err.find("backend:") == std::string::npos);
    CHECK(r.err == warning_for("other"));
  }
}
