// check --output-file: the report goes into the file, byte for byte what stdout would hold, with the same exit
// code; directories above it are made, a link is followed, an existing file keeps its mode, and a file that cannot
// be written is exit 2 naming it, with nothing left behind.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/scratch_backend.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {
// The names in a directory, so that a test can see no temporary file was left there.
std::vector<std::string> names_in(const fs::path& directory) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(directory)) out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_SUITE("output_file") {
  TEST_CASE("each format goes into the file as stdout would hold it, with the same exit code; stdout stays empty") {
    const ScratchBackend backend{"kvpatch-output-file"};
    for (const std::string format : {"text", "json", "github", "sarif"}) {
      CAPTURE(format);
      const ProcessResult shown = backend.run({"check", "--format", format, "backend.py"});
      const std::string file = "reports/" + format + "/kvpatch.out";  // directories the checkout lacks
      const ProcessResult written = backend.run({"check", "--format", format, "--output-file", file, "backend.py"});
      CHECK(shown.exit_code == 1);
      CHECK(written.exit_code == shown.exit_code);
      CHECK(written.out.empty());
      CHECK(written.err == shown.err);
      CHECK(read_bytes(backend.at(file)) == shown.out);
      CHECK(names_in(backend.at(file).parent_path()) == std::vector<std::string>{"kvpatch.out"});
    }
    // -o is the short form; --exit-zero still decides the exit code alone.
    CHECK(backend.run({"check", "-o", "r.txt", "--exit-zero", "backend.py"}).exit_code == 0);
    CHECK(read_bytes(backend.at("r.txt")) == backend.run({"check", "backend.py"}).out);
  }

  TEST_CASE("text in a file is uncolored unless --color always") {
    const ScratchBackend backend{"kvpatch-output-file"};
    CHECK(backend.run({"check", "-o", "auto.txt", "backend.py"}).exit_code == 1);
    CHECK(read_bytes(backend.at("auto.txt")).find("\033[") == std::string::npos);
    CHECK(backend.run({"check", "-o", "always.txt", "--color", "always", "backend.py"}).exit_code == 1);
    CHECK(read_bytes(backend.at("always.txt")).find(": \033[31mmissing\033[0m: ") != std::string::npos);
  }

  TEST_CASE("an existing file is replaced whole and keeps its mode; a link is followed and stays a link") {
    const ScratchBackend backend{"kvpatch-output-file"};
    write_bytes(backend.at("old.json"), "an older report that is longer than nothing\n");
    fs::permissions(backend.at("old.json"), fs::perms::owner_read | fs::perms::owner_write);
    CHECK(backend.run({"check", "--format", "json", "-o", "old.json", "backend.py"}).exit_code == 1);
    CHECK(read_bytes(backend.at("old.json")) == backend.run({"check", "--format", "json", "backend.py"}).out);
    CHECK((fs::status(backend.at("old.json")).permissions() & fs::perms::mask) ==
          (fs::perms::owner_read | fs::perms::owner_write));
    fs::create_directory(backend.at("kept"));
    fs::create_symlink("kept/report.txt", backend.at("latest.txt"));
    CHECK(backend.run({"check", "-o", "latest.txt", "backend.py"}).exit_code == 1);
    CHECK(fs::is_symlink(backend.at("latest.txt")));
    CHECK(read_bytes(backend.at("kept/report.txt")) == backend.run({"check", "backend.py"}).out);
  }

  TEST_CASE("a file that cannot be written is exit 2, naming it and why; nothing is left behind") {
    const ScratchBackend backend{"kvpatch-output-file"};
    fs::create_directory(backend.at("reports"));
    const ProcessResult directory = backend.run({"check", "-o", "reports", "backend.py"});
    CHECK(directory.exit_code == 2);
    CHECK(directory.out.empty());
    CHECK(directory.err.find("kvpatch: error: reports: --output-file names a directory; name a file, e.g. "
                             "reports/kvpatch.sarif\n") != std::string::npos);
    CHECK(names_in(backend.at("reports")).empty());
    write_bytes(backend.at("blocker"), "a file where a directory is wanted\n");
    const ProcessResult blocked = backend.run({"check", "--exit-zero", "-o", "blocker/report.txt", "backend.py"});
    CHECK(blocked.exit_code == 2);  // not a finding: --exit-zero does not cover it
    CHECK(blocked.err.find("kvpatch: error: blocker/report.txt: cannot write the report: cannot make the directory "
                           "blocker: ") != std::string::npos);
    CHECK(read_bytes(backend.at("blocker")) == "a file where a directory is wanted\n");
    CHECK(names_in(backend.dir()) == std::vector<std::string>{"backend.py", "blocker", "reports"});
  }
}
