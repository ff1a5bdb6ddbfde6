// Atomic apply: all-or-nothing across files, refusal of files changed after reading, mode and owner
// kept, and a second apply that changes nothing.
#include <doctest/doctest.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kvpatch/analyze.h"
#include "kvpatch/apply_files.h"
#include "kvpatch/rule_set.h"
#include "test_support.h"

using namespace kvpatch;
namespace fs = std::filesystem;

namespace {
// A small decode updater in generation B's shape: one plan() bound to the model dtype.
const char* kBackend =
    "from flashinfer import BatchMLAPagedAttentionWrapper\n"
    "\n"
    "\n"
    "class FlashInferMLAIndicesUpdaterDecode:\n"
    "    def __init__(self, model_runner):\n"
    "        self.data_type = model_runner.dtype\n"
    "\n"
    "    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, a, b, c, d):\n"
    "        wrapper.plan(a, b, c, d, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)\n";

struct Scratch {
  test::ScratchDir dir;
  fs::path first = dir.write("first/flashinfer_mla_backend.py", kBackend);
  fs::path second = dir.write("second/flashinfer_mla_backend.py", kBackend);
  RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);

  Run analyse() const { return analyze_inputs(rules, collect_inputs({first.string(), second.string()}, dir.path())); }
};

std::vector<const FileReport*> pointers(const Run& run) {
  std::vector<const FileReport*> out;
  for (const FileReport& f : run.files) out.push_back(&f);
  return out;
}

// Files in a directory whose names mark them as kvpatch temporaries.
int temporaries_in(const fs::path& dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    n += e.path().filename().string().find(".kvpatch-") != std::string::npos ? 1 : 0;
  }
  return n;
}
}  // namespace

TEST_SUITE("apply_files") {
  TEST_CASE("both files are patched, their modes kept, and a second apply has nothing to do") {
    Scratch s;
    fs::permissions(s.first, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    const Run run = s.analyse();
    REQUIRE(run.errors.empty());
    REQUIRE(run.files.size() == 2);
    CHECK(run.files[0].edits.size() == 2);  // the field and the plan site
    const ApplyResult result = apply_files(pointers(run));
    CHECK(result.errors.empty());
    REQUIRE(result.patched.size() == 2);
    CHECK(result.patched[0].display_path == "first/flashinfer_mla_backend.py");
    CHECK(result.patched[0].edits == 2);
    const std::string patched = test::read_file(s.first);
    CHECK(patched.find("self.kv_data_type = getattr(model_runner") != std::string::npos);
    CHECK(patched.find("self.data_type, self.kv_data_type)") != std::string::npos);
    CHECK(test::read_file(s.second) == patched);
    CHECK(fs::status(s.first).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
    CHECK(temporaries_in(s.first.parent_path()) == 0);

    const Run again = s.analyse();
    REQUIRE(again.errors.empty());
    for (const FileReport& f : again.files) CHECK(f.edits.empty());
    CHECK(apply_files(pointers(again)).patched.empty());
    CHECK(test::read_file(s.first) == patched);
  }

  TEST_CASE("a file changed after it was read stops every write") {
    Scratch s;
    const Run run = s.analyse();
    REQUIRE(run.files.size() == 2);
    std::string changed = std::string(kBackend) + "# edited by someone else meanwhile\n";
    { std::ofstream(s.second, std::ios::binary) << changed; }
    const ApplyResult result = apply_files(pointers(run));
    REQUIRE(result.errors.size() == 1);
    CHECK(result.errors[0].file == "second/flashinfer_mla_backend.py");
    CHECK(result.errors[0].message.find("refusing to patch") != std::string::npos);
    CHECK(result.patched.empty());
    CHECK(test::read_file(s.first) == kBackend);
    CHECK(test::read_file(s.second) == changed);
    CHECK(temporaries_in(s.first.parent_path()) == 0);
    CHECK(temporaries_in(s.second.parent_path()) == 0);
  }

  TEST_CASE("edits that would leave code Python does not compile stop every write, and say whose bug it is") {
    Scratch s;
    Run run = s.analyse();
    REQUIRE(run.files.size() == 2);
    // Stand-in for a faulty combination of edits: a header with no body before the first line.
    run.files[1].edits.add({0, 0, "if ready:\n", "r"});
    const ApplyResult result = apply_files(pointers(run));
    REQUIRE(result.errors.size() == 1);
    CHECK(result.errors[0].file == "second/flashinfer_mla_backend.py");
    CHECK(result.errors[0].message.find("kvpatch's edits would leave code Python does not compile (line 1 of the "
                                        "patched text: ") != std::string::npos);
    CHECK(result.errors[0].message.find("this is a kvpatch bug") != std::string::npos);
    CHECK(result.errors[0].remedy.find("nothing was written") == 0);
    CHECK(result.patched.empty());
    CHECK(test::read_file(s.first) == kBackend);
    CHECK(test::read_file(s.second) == kBackend);
    CHECK(temporaries_in(s.first.parent_path()) == 0);
    CHECK(temporaries_in(s.second.parent_path()) == 0);
  }

  TEST_CASE("a file that cannot be written stops every write") {
    Scratch s;
    const Run run = s.analyse();
    REQUIRE(run.files.size() == 2);
    if (::geteuid() != 0) {
      fs::permissions(s.second.parent_path(), fs::perms::owner_read | fs::perms::owner_exec);
    } else {
      // Root ignores permissions: take the directory away, so no temporary can be made there.
      fs::remove_all(s.second.parent_path());
    }
    const ApplyResult result = apply_files(pointers(run));
    CHECK(result.errors.size() >= 1);
    CHECK(result.patched.empty());
    CHECK(test::read_file(s.first) == kBackend);
    CHECK(temporaries_in(s.first.parent_path()) == 0);
    fs::permissions(s.dir.path(), fs::perms::owner_all, fs::perm_options::add);
  }

  TEST_CASE("a read-only file is refused when permissions apply") {
    if (::geteuid() == 0) return;  // root may write any file; the directory case above covers root
    Scratch s;
    fs::permissions(s.second, fs::perms::owner_read);
    const Run run = s.analyse();
    const ApplyResult result = apply_files(pointers(run));
    REQUIRE(result.errors.size() == 1);
    CHECK(result.errors[0].message.find("not writable") != std::string::npos);
    CHECK(test::read_file(s.first) == kBackend);
  }

  TEST_CASE("a symlinked file is patched through the link") {
    Scratch s;
    const fs::path link = s.dir.path() / "link.py";
    fs::create_symlink(s.first, link);
    const RuleSet& rules = s.rules;
    const Run run = analyze_inputs(rules, collect_inputs({link.string()}, s.dir.path()));
    REQUIRE(run.files.size() == 1);
    CHECK(apply_files(pointers(run)).errors.empty());
    CHECK(fs::is_symlink(link));
    CHECK(test::read_file(s.first).find("self.kv_data_type") != std::string::npos);
  }

  // Run as root (as CI is); elsewhere the owner cannot be set to another user's, so there is nothing to test.
  TEST_CASE("the owner and group are kept; a user who cannot keep them is told who owns the file now") {
    if (::geteuid() != 0) {
      MESSAGE("not root: skipped");
      return;
    }
    Scratch s;
    REQUIRE(::chown(s.first.c_str(), 65534, 65534) == 0);
    REQUIRE(::chown(s.second.c_str(), 0, 65534) == 0);
    const ApplyResult result = apply_files(pointers(s.analyse()));
    REQUIRE(result.errors.empty());
    REQUIRE(result.patched.size() == 2);
    struct stat first {}, second {};
    REQUIRE(::stat(s.first.c_str(), &first) == 0);
    REQUIRE(::stat(s.second.c_str(), &second) == 0);
    CHECK(first.st_uid == 65534);
    CHECK(first.st_gid == 65534);
    CHECK(second.st_uid == 0);
    CHECK(second.st_gid == 65534);
    CHECK(result.patched[0].ownership_changed.empty());
    CHECK(result.patched[1].ownership_changed.empty());

    // nobody patching root's world-writable file in a world-writable directory: the new file is nobody's.
    Scratch shared;
    fs::permissions(shared.dir.path(), fs::perms::all);
    fs::permissions(shared.first.parent_path(), fs::perms::all);
    fs::permissions(shared.first, static_cast<fs::perms>(0666));
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
      const Run run = analyze_inputs(shared.rules, collect_inputs({shared.first.string()}, shared.dir.path()));
      const ApplyResult as_nobody = apply_files(pointers(run));
      if (!as_nobody.errors.empty() || as_nobody.patched.size() != 1) ::_exit(4);
      const std::string& told = as_nobody.patched[0].ownership_changed;
      ::_exit(told.find("now owned by uid 65534 gid 65534 (it was uid 0 gid 0)") != std::string::npos ? 0 : 5);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    struct stat now {};
    REQUIRE(::stat(shared.first.c_str(), &now) == 0);
    CHECK(now.st_uid == 65534);
    CHECK(test::read_file(shared.first).find("self.kv_data_type") != std::string::npos);
  }
}
