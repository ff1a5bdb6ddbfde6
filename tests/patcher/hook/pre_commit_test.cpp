// `kvpatch pre-commit`: what is staged is what is checked; paths and lines come from the staged blob.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "git_sandbox.h"
#include "support/files.h"
#include "support/kvpatch_cli.h"

using kvpatch_test::fixture_source;
using kvpatch_test::GitSandbox;
using kvpatch_test::kBackendPath;
using kvpatch_test::read_fixture_file;
using kvpatch_test::ProcessResult;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The updaters module as apply threads it with no module beside it: a fix made by hand, as far as kvpatch can
// tell (apply in the repository links it with the run() module and leaves its plans).
std::string threaded_alone(const GitSandbox& repo, const std::string& path) {
  const std::filesystem::path lone = repo.scratch() / "lone";
  std::filesystem::create_directories(lone);
  kvpatch_test::write_bytes(lone / "updaters.py", repo.read(path));
  REQUIRE(kvpatch_test::run_kvpatch({"apply", "--isolated", "updaters.py"}, lone).exit_code == 0);
  return kvpatch_test::read_bytes(lone / "updaters.py");
}

// The decode plan() site of gen-b-unpatched that the rules report missing.
const std::string kMissingDecodeSite = kBackendPath + ":139:13: missing:";
}  // namespace

TEST_SUITE("pre_commit") {
  TEST_CASE("the FlashInfer pin is read from the work tree above the staged file") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    const ProcessResult unpinned = repo.kvpatch({"pre-commit"});
    CHECK(contains(unpinned.out, "FlashInfer 0.6.14 or later (assumed"));
    CHECK(contains(unpinned.out, "2 FP8 run() calls: 0 with scales, 2 without"));
    // A range is named as what was found, not taken for a release.
    repo.write("python/pyproject.toml", "dependencies = [\"flashinfer_python>=0.2.1.post1\"]\n");
    CHECK(contains(repo.kvpatch({"pre-commit"}).out,
                   "FlashInfer 0.6.14 or later (assumed: flashinfer_python>=0.2.1.post1 in " +
                       (repo.work_tree() / "python" / "pyproject.toml").string() + " names no single release;"));
    repo.write("python/pyproject.toml", "dependencies = [\"flashinfer_python==0.6.13\"]\n");
    const ProcessResult old = repo.kvpatch({"pre-commit"});
    CHECK_FALSE(contains(old.out, "FP8 run() calls"));
    // That release cannot build the FP8 KV plan, so the sites get no fix, and the reason names the pin.
    CHECK(old.exit_code == 1);
    CHECK(contains(old.out, "no fix: FlashInfer 0.6.13 (flashinfer_python==0.6.13 in " +
                                (repo.work_tree() / "python" / "pyproject.toml").string() +
                                ") cannot build a plan with a BF16 query and an FP8 KV cache"));
    CHECK(contains(old.out, "3 plan sites: 0 threaded, 3 missing, 0 gated, 0 unknown, 0 ignored; 2 casts: 0 redundant, 2 required; 0 edits"));
    repo.write("python/pyproject.toml", "dependencies = [\"flashinfer-python[cu13] == 0.7.2\"]\n");
    const ProcessResult pinned = repo.kvpatch({"pre-commit"});
    CHECK(contains(pinned.out, "FlashInfer 0.7.2 (flashinfer_python==0.7.2 in " +
                                   (repo.work_tree() / "python" / "pyproject.toml").string() + ")"));
    CHECK(repo.kvpatch({"pre-commit", "--flashinfer-version", "0.6.13"}).out.find("FP8 run() calls") ==
          std::string::npos);
  }

  TEST_CASE("the staged blob is checked, not the work tree") {
    GitSandbox repo;
    const std::string unpatched = fixture_source("gen-b-unpatched");
    repo.stage(kBackendPath, unpatched);

    // Fix the work tree only: the commit would still record the unpatched file.
    REQUIRE(repo.kvpatch({"apply", kBackendPath}).exit_code == 0);
    REQUIRE(repo.read(kBackendPath) != unpatched);
    ProcessResult staged_unpatched = repo.kvpatch({"pre-commit"});
    CHECK(staged_unpatched.exit_code == 1);
    CHECK(contains(staged_unpatched.out, kMissingDecodeSite));
    CHECK(contains(staged_unpatched.out, "3 plan sites: 0 threaded, 3 missing"));
    CHECK(contains(staged_unpatched.err, "kvpatch apply " + kBackendPath));
    CHECK(repo.kvpatch({"check", kBackendPath}).exit_code == 0);  // the work tree itself is clean

    // Stage the fix: pre-commit passes.
    repo.git({"add", "--", kBackendPath});
    ProcessResult staged_fixed = repo.kvpatch({"pre-commit"});
    CHECK(staged_fixed.exit_code == 0);
    CHECK(contains(staged_fixed.out, "3 plan sites: 3 threaded, 0 missing"));

    // Break the work tree again (with lines shifted) and leave it unstaged: still what is staged counts.
    repo.write(kBackendPath, "# a comment\n# another\n" + unpatched);
    CHECK(repo.kvpatch({"pre-commit"}).exit_code == 0);
    CHECK(repo.kvpatch({"check", kBackendPath}).exit_code == 1);
  }

  TEST_CASE("line numbers are the staged blob's when the work tree has shifted lines") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    repo.write(kBackendPath, "# one\n# two\n# three\n" + fixture_source("gen-b-unpatched"));
    const ProcessResult result = repo.kvpatch({"pre-commit"});
    CHECK(result.exit_code == 1);
    CHECK(contains(result.out, kMissingDecodeSite));
    CHECK_FALSE(contains(result.out, kBackendPath + ":142:13:"));
  }

  TEST_CASE("an ignore comment that suppresses nothing is warned about at its staged line; the exit code stays") {
    GitSandbox repo;
    std::string source = fixture_source("gen-b-unpatched");
    const std::string site = "            wrapper.plan(\n";
    REQUIRE(source.find(site) != std::string::npos);
    // On a line of its own above the decode site at 139, where it marks nothing.
    source.insert(source.find(site), "            # kvpatch: ignore[flashinfer-mla-plan-kv-dtype] replay plans BF16\n");
    repo.stage(kBackendPath, source);
    repo.write(kBackendPath, "# shifted\n" + source);  // the work tree's lines are not the ones reported
    const ProcessResult result = repo.kvpatch({"pre-commit"});
    CHECK(result.exit_code == 1);
    CHECK(contains(result.out, kBackendPath + ":140:13: missing:"));
    CHECK(contains(result.err, "kvpatch: warning: " + kBackendPath + ":139:31: # kvpatch: ignore[flashinfer-mla-plan-kv-dtype] "
                               "suppresses nothing"));
    CHECK(contains(result.err, "move it onto line 140"));
    const ProcessResult json = repo.kvpatch({"pre-commit", "--format", "json"});
    const auto report = nlohmann::json::parse(json.out);
    REQUIRE(report["ignore_comments"].size() == 1);
    CHECK(report["ignore_comments"][0]["problem"] == "unused");
    CHECK(report["ignore_comments"][0]["line"] == 139);

    // Moved onto the call's line it suppresses the site, and nothing is warned about.
    std::string fixed = fixture_source("gen-b-unpatched");
    fixed.replace(fixed.find(site), site.size(),
                  "            wrapper.plan(  # kvpatch: ignore[flashinfer-mla-plan-kv-dtype] replay plans BF16\n");
    repo.stage(kBackendPath, fixed);
    const ProcessResult moved = repo.kvpatch({"pre-commit"});
    CHECK_FALSE(contains(moved.err, "warning"));
    CHECK(contains(moved.out, kBackendPath + ":139:13: ignored:"));
  }

  TEST_CASE("unused-ignores = \"error\" in the work tree's settings, or --unused-ignores error: a stale comment fails it") {
    GitSandbox repo;
    std::string source = fixture_source("gen-b-unpatched");
    const std::string site = "            wrapper.plan(\n";
    REQUIRE(source.find(site) != std::string::npos);
    source.insert(source.find(site), "            # kvpatch: ignore[flashinfer-mla-plan-kv-dtype] replay plans BF16\n");
    repo.write(kBackendPath, source);
    REQUIRE(repo.kvpatch({"apply", kBackendPath}).exit_code == 0);  // the comment only warned about
    repo.stage(kBackendPath, repo.read(kBackendPath));
    const std::string stale =
        kBackendPath + ":140:31: # kvpatch: ignore[flashinfer-mla-plan-kv-dtype] suppresses nothing";

    const ProcessResult warned = repo.kvpatch({"pre-commit"});
    CHECK(warned.exit_code == 0);
    CHECK(contains(warned.err, "kvpatch: warning: " + stale));
    const ProcessResult strict = repo.kvpatch({"pre-commit", "--unused-ignores", "error"});
    CHECK(strict.exit_code == 1);
    CHECK(contains(strict.err, "kvpatch: error: " + stale));
    CHECK(contains(strict.out, "; 1 ignore comment suppresses nothing; 0 edits"));
    CHECK(contains(strict.err, "kvpatch: the staged content has findings; remove or move each ignore comment that "
                               "suppresses nothing, as its error above says (or skip this check once with "
                               "`git commit --no-verify`)\n"));
    const auto report = nlohmann::json::parse(repo.kvpatch({"pre-commit", "--unused-ignores", "error", "--format", "json"}).out);
    REQUIRE(report["ignore_comments"].size() == 1);
    CHECK(report["ignore_comments"][0]["level"] == "error");

    repo.write(".kvpatch.toml", "unused-ignores = \"error\"\n");
    CHECK(repo.kvpatch({"pre-commit"}).exit_code == 1);
    CHECK(repo.kvpatch({"pre-commit", "--unused-ignores", "warn"}).exit_code == 0);
    CHECK(repo.kvpatch({"pre-commit", "--exit-zero"}).exit_code == 0);
  }

  TEST_CASE("only added and modified files are checked; --all checks every tracked file") {
    GitSandbox repo;
    repo.stage("old/backend.py", fixture_source("gen-b-unpatched"));
    repo.commit_without_hooks("history holds an unpatched file");

    // Nothing staged: nothing to say, exit 0.
    ProcessResult nothing = repo.kvpatch({"pre-commit"});
    CHECK(nothing.exit_code == 0);
    CHECK(nothing.out.empty());
    // An unrelated change is staged: the committed unpatched file is not part of this commit.
    repo.stage("README.md", "notes\n");
    CHECK(repo.kvpatch({"pre-commit"}).exit_code == 0);

    ProcessResult all = repo.kvpatch({"pre-commit", "--all"});
    CHECK(all.exit_code == 1);
    CHECK(contains(all.out, "old/backend.py:139:13: missing:"));
  }

  TEST_CASE("a renamed file is checked under its new path; a deleted one is not") {
    GitSandbox repo;
    repo.stage("old/backend.py", fixture_source("gen-b-unpatched"));
    repo.commit_without_hooks("unpatched");

    std::filesystem::create_directories(repo.work_tree() / "new");
    repo.git({"mv", "old/backend.py", "new/backend.py"});
    ProcessResult renamed = repo.kvpatch({"pre-commit"});
    CHECK(renamed.exit_code == 1);
    CHECK(contains(renamed.out, "new/backend.py:139:13: missing:"));
    CHECK_FALSE(contains(renamed.out, "old/backend.py"));
    repo.commit_without_hooks("renamed");

    repo.git({"rm", "-q", "new/backend.py"});
    ProcessResult deleted = repo.kvpatch({"pre-commit"});
    CHECK(deleted.exit_code == 0);
    CHECK(deleted.out.empty());
    CHECK(deleted.err.empty());
  }

  TEST_CASE("a clean backend passes; files the rules do not select are skipped") {
    GitSandbox repo;
    // Clean: the gen-b backend as kvpatch patches it, against a FlashInfer that builds the plan (0.7.2).
    repo.write("python/pyproject.toml", "dependencies = [\"flashinfer_python==0.7.2\"]\n");
    repo.write(kBackendPath, fixture_source("gen-b-unpatched"));
    REQUIRE(repo.kvpatch({"apply", kBackendPath}).exit_code == 0);
    repo.git({"add", kBackendPath, "python/pyproject.toml"});
    // Not Python by name, and Python that no rule selects (even broken or binary): never read further.
    repo.stage("notes/backend.txt", fixture_source("gen-b-unpatched"));
    repo.stage("tools/broken.py", "def broken(:\n");
    repo.stage("tools/latin1.py", std::string("name = '\xe9t\xe9'\n"));
    const ProcessResult result = repo.kvpatch({"pre-commit"});
    CHECK(result.exit_code == 0);
    CHECK(contains(result.out, "3 plan sites: 3 threaded, 0 missing"));
    CHECK_FALSE(contains(result.out, "notes/"));
    CHECK(result.err.empty());
  }

  TEST_CASE("a wrapper planned in one staged module and run in another: the run()'s kept cast is refused") {
    GitSandbox repo;
    const std::string source = fixture_source("gen-b-unpatched");
    const std::size_t cut = source.find("class FlashInferMLAIndicesUpdaterDecode:");
    const std::size_t imports_end = source.find("@dataclass");
    REQUIRE(cut != std::string::npos);
    const std::string dir = "python/sglang/srt/layers/attention/";
    repo.stage(dir + "mla_backend_split.py", source.substr(0, cut) + "from .mla_updaters import *  # noqa: F403\n");
    repo.write(dir + "mla_updaters.py", source.substr(0, imports_end) + source.substr(cut));
    // apply in the repository would leave the plans (the run() module beside them keeps its casts): by hand.
    CHECK(repo.kvpatch({"apply", dir + "mla_updaters.py"}).exit_code == 1);
    repo.stage(dir + "mla_updaters.py", threaded_alone(repo, dir + "mla_updaters.py"));
    const ProcessResult result = repo.kvpatch({"pre-commit"});
    CAPTURE(result.out);
    CHECK(result.exit_code == 1);
    CHECK(contains(result.out, "3 plan sites: 3 threaded"));
    CHECK(contains(result.out, "2 run() inputs unsafe: 0 converted, 2 unknown"));
    CHECK(contains(result.out, "its wrapper has no plan site in this file, while " + dir + "mla_updaters.py:"));
  }

  // The same split, committed unpatched; each case then stages one side only.
  struct CommittedSplit {
    GitSandbox repo;
    std::string dir = "python/sglang/srt/layers/attention/";
    std::string backend = dir + "mla_backend_split.py";
    std::string updaters = dir + "mla_updaters.py";
    CommittedSplit() {
      const std::string source = fixture_source("gen-b-unpatched");
      const std::size_t cut = source.find("class FlashInferMLAIndicesUpdaterDecode:");
      const std::size_t imports_end = source.find("@dataclass");
      REQUIRE(cut != std::string::npos);
      repo.stage(backend, source.substr(0, cut) + "from .mla_updaters import *  # noqa: F403\n");
      repo.stage(updaters, source.substr(0, imports_end) + source.substr(cut));
      repo.commit_without_hooks("split backend, unpatched");
    }
  };

  TEST_CASE("plans threaded in a staged module are linked with the run() casts of a committed one") {
    CommittedSplit split;
    split.repo.stage(split.updaters, threaded_alone(split.repo, split.updaters));
    const ProcessResult result = split.repo.kvpatch({"pre-commit"});
    CAPTURE(result.out);
    CHECK(result.exit_code == 1);
    // The committed module is reported for its two casts and their findings only.
    CHECK(contains(result.out, split.backend + ":87:9: run-input-unknown: FlashInferMLAAttnBackend.forward_extend:"));
    CHECK(contains(result.out, split.backend + ":105:9: run-input-unknown: FlashInferMLAAttnBackend.forward_decode:"));
    CHECK(contains(result.out, "its wrapper has no plan site in this file, while " + split.updaters + ":"));
    CHECK(contains(result.out, "3 plan sites: 3 threaded, 0 missing"));
    CHECK(contains(result.out, "2 casts: 0 redundant, 2 required; 2 run() inputs unsafe: 0 converted, 2 unknown"));
    CHECK(contains(result.err, "fix each run() input by hand as its message says"));
    // --all reads both as staged, in full: the same two findings.
    const ProcessResult all = split.repo.kvpatch({"pre-commit", "--all"});
    CHECK(all.exit_code == 1);
    CHECK(contains(all.out, "2 run() inputs unsafe: 0 converted, 2 unknown"));
    // The committed module is read from the index, not the work tree: emptied there, it is still linked.
    split.repo.write(split.backend, "");
    const ProcessResult emptied = split.repo.kvpatch({"pre-commit"});
    CAPTURE(emptied.out);
    CHECK(emptied.exit_code == 1);
    CHECK(contains(emptied.out, "2 run() inputs unsafe: 0 converted, 2 unknown"));
  }

  TEST_CASE("a committed module that could link but does not parse fails the hook; one that cannot link does not") {
    CommittedSplit split;
    std::string broken = split.repo.read(split.backend);
    const std::size_t at = broken.find("        reshaped_q = q.view(");
    REQUIRE(at != std::string::npos);
    broken.insert(at + std::string("        reshaped_q = q.view(").size(), "(");
    split.repo.stage(split.backend, broken);
    split.repo.stage("tools/unrelated.py", "def broken(:\n");
    split.repo.commit_without_hooks("a syntax error in the run() module");
    split.repo.stage(split.updaters, threaded_alone(split.repo, split.updaters));
    // Before 2026-12-02 the broken module was passed by: the threaded plans were not linked with its casts.
    const ProcessResult result = split.repo.kvpatch({"pre-commit"});
    CAPTURE(result.out);
    CAPTURE(result.err);
    CHECK(result.exit_code == 2);
    CHECK(contains(result.err, split.backend + ":"));
    CHECK(contains(result.err, "syntax error"));
    CHECK(contains(result.err, "which the commit does not change"));
    CHECK_FALSE(contains(result.err, "tools/unrelated.py"));
  }

  TEST_CASE("a staged run() module is linked with plans threaded in a committed one") {
    CommittedSplit split;
    split.repo.stage(split.updaters, threaded_alone(split.repo, split.updaters));
    split.repo.commit_without_hooks("thread the updaters");
    split.repo.write(split.backend, split.repo.read(split.backend) + "# touched\n");
    split.repo.git({"add", split.backend});
    const ProcessResult result = split.repo.kvpatch({"pre-commit"});
    CAPTURE(result.out);
    CHECK(result.exit_code == 1);
    CHECK(contains(result.out, "2 run() inputs unsafe: 0 converted, 2 unknown"));
    // The committed updaters are not reported: their sites are only named.
    CHECK_FALSE(contains(result.out, split.updaters + ":47:13: threaded:"));
  }

  TEST_CASE("a mismatch between two committed modules is not blamed on a commit that touches neither") {
    CommittedSplit split;
    split.repo.stage(split.updaters, threaded_alone(split.repo, split.updaters));
    split.repo.commit_without_hooks("thread the updaters");
    // A third file the rules select, with no plan() or cast: clean on its own.
    split.repo.stage(split.dir + "mla_types.py", "from flashinfer import BatchMLAPagedAttentionWrapper\n\n"
                                                 "Wrapper = BatchMLAPagedAttentionWrapper\n");
    const ProcessResult result = split.repo.kvpatch({"pre-commit"});
    CAPTURE(result.out);
    CHECK(result.exit_code == 0);
    CHECK_FALSE(contains(result.out, split.backend));
    CHECK_FALSE(contains(result.out, "run-input"));
  }

  TEST_CASE("a staged backend that builds a committed module's subclass of the wrapper: the subclass as staged") {
    GitSandbox repo;
    const std::string dir = "python/sglang/srt/layers/attention/";
    const std::string traced = "from flashinfer import BatchMLAPagedAttentionWrapper\n\n\n"
                               "class TracedMLAWrapper(BatchMLAPagedAttentionWrapper):\n    pass\n";
    const std::string not_a_wrapper = "class TracedMLAWrapper:\n    pass\n";
    std::string backend = fixture_source("gen-b-unpatched");
    const std::string import = "from flashinfer import BatchMLAPagedAttentionWrapper, BatchPrefillWithRaggedKVCacheWrapper";
    backend.replace(backend.find(import), import.size(),
                    "from flashinfer import BatchPrefillWithRaggedKVCacheWrapper; from .traced import TracedMLAWrapper");
    const std::string wrapper = "BatchMLAPagedAttentionWrapper";
    for (std::size_t at = backend.find(wrapper); at != std::string::npos; at = backend.find(wrapper, at)) {
      backend.replace(at, wrapper.size(), "TracedMLAWrapper");
    }
    repo.stage(dir + "traced.py", traced);
    repo.commit_without_hooks("the traced wrapper");
    repo.stage(kBackendPath, backend);
    // The committed module's work-tree copy no longer subclasses the wrapper, but what is committed does.
    repo.write(dir + "traced.py", not_a_wrapper);
    const ProcessResult found = repo.kvpatch({"pre-commit"});
    CAPTURE(found.out);
    CHECK(found.exit_code == 1);
    CHECK(contains(found.out, kMissingDecodeSite));
    CHECK(contains(found.out, "3 plan sites: 0 threaded, 3 missing"));
    // Staged as no wrapper (with the subclass back in the work tree), the backend's receivers are another class: no
    // rule selects either staged file.
    repo.stage(dir + "traced.py", not_a_wrapper);
    repo.write(dir + "traced.py", traced);
    const ProcessResult staged_other = repo.kvpatch({"pre-commit"});
    CAPTURE(staged_other.out);
    CHECK(staged_other.exit_code == 0);
    CHECK_FALSE(contains(staged_other.out, "missing"));
  }

  TEST_CASE("a site threaded by hand against a FlashInfer too old to build its plan is refused") {
    GitSandbox repo;
    // gen-a's prefill site plans a BF16 query with the KV-cache dtype; its pin, 0.2.3, cannot build that plan.
    repo.stage(kBackendPath, fixture_source("gen-a"));
    repo.stage("python/pyproject.toml", read_fixture_file("gen-a", "pyproject.toml"));
    const ProcessResult old = repo.kvpatch({"pre-commit"});
    CHECK(old.exit_code == 1);
    CHECK(contains(old.out, kBackendPath + ":144:9: unbuildable: FlashInferMLAIndicesUpdaterPrefill.update:"));
    CHECK(contains(old.out, "FlashInfer 0.2.3 (flashinfer_python==0.2.3 in "));
    CHECK(contains(old.out, "(1 unbuildable with this FlashInfer)"));
    CHECK_FALSE(contains(old.out, ":97:13: unbuildable"));  // decode plans FP8 x FP8: not run, not claimed
    CHECK(contains(old.err, "upgrade FlashInfer where a site is unbuildable"));

    // The same code once FlashInfer is upgraded: the site builds; what is left is run()'s FP8 scales.
    const ProcessResult upgraded = repo.kvpatch({"pre-commit", "--flashinfer-version", "0.7.2"});
    CHECK_FALSE(contains(upgraded.out, "unbuildable"));
    CHECK(contains(upgraded.out, "3 plan sites: 3 threaded, 0 missing"));
  }

  TEST_CASE("intent-to-add entries are not committed, so they are not checked") {
    GitSandbox repo;
    repo.write(kBackendPath, fixture_source("gen-b-unpatched"));
    repo.git({"add", "-N", "--", kBackendPath});
    const ProcessResult result = repo.kvpatch({"pre-commit", "--all"});
    CHECK(result.exit_code == 0);
    CHECK(result.out.empty());
  }

  TEST_CASE("staged files the rules select but cannot read are input errors (exit 2)") {
    GitSandbox repo;
    SUBCASE("syntax error") {
      repo.stage(kBackendPath, fixture_source("syntax-error"));
      const ProcessResult result = repo.kvpatch({"pre-commit"});
      CHECK(result.exit_code == 2);
      CHECK(contains(result.err, "kvpatch: error: " + kBackendPath + ":"));
    }
    SUBCASE("not UTF-8") {
      repo.stage(kBackendPath, fixture_source("non-utf8"));
      const ProcessResult result = repo.kvpatch({"pre-commit"});
      CHECK(result.exit_code == 2);
      CHECK(contains(result.err, kBackendPath + ":"));
      CHECK(contains(result.err, "not valid UTF-8"));
    }
  }

  TEST_CASE("an unreadable staged blob exits 2 naming the path, the blob and the remedy") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    std::string blob = repo.git({"rev-parse", ":" + kBackendPath}).out;
    blob = blob.substr(0, blob.find('\n'));
    const std::filesystem::path object = repo.git_dir() / "objects" / blob.substr(0, 2) / blob.substr(2);
    REQUIRE(std::filesystem::exists(object));
    std::filesystem::permissions(object, std::filesystem::perms::owner_all, std::filesystem::perm_options::add);
    std::filesystem::remove(object);
    const ProcessResult result = repo.kvpatch({"pre-commit"});
    CHECK(result.exit_code == 2);
    CHECK(contains(result.err, kBackendPath + ": cannot read the staged blob " + blob));
    CHECK(contains(result.err, "git fsck"));
  }

  TEST_CASE("an unmerged backend is an input error") {
    GitSandbox repo;
    const std::string base = fixture_source("gen-a");
    repo.stage(kBackendPath, base);
    repo.commit_without_hooks("base");
    repo.git({"checkout", "-q", "-b", "side"});
    repo.stage(kBackendPath, "# side\n" + base);
    repo.commit_without_hooks("side");
    repo.git({"checkout", "-q", "main"});
    repo.stage(kBackendPath, "# main\n" + base);
    repo.commit_without_hooks("main");
    REQUIRE(kvpatch_test::git_run(repo.work_tree(), {"merge", "-q", "side"}).exit_code != 0);
    for (const char* scope : {"", "--all"}) {
      std::vector<std::string> args{"pre-commit"};
      if (*scope != '\0') args.push_back(scope);
      const ProcessResult result = repo.kvpatch(args);
      CHECK(result.exit_code == 2);
      CHECK(contains(result.err, kBackendPath + ": unmerged in the index"));
    }
  }

  TEST_CASE("--color always colors the status words; through a pipe the default does not") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    const ProcessResult plain = repo.kvpatch({"pre-commit"});
    const ProcessResult colored = repo.kvpatch({"pre-commit", "--color", "always"});
    CHECK(plain.exit_code == 1);
    CHECK(colored.exit_code == 1);
    CHECK_FALSE(contains(plain.out, "\033["));
    CHECK(contains(colored.out, kBackendPath + ":139:13: \033[31mmissing\033[0m:"));
  }

  TEST_CASE("--format json reports the staged findings") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    const ProcessResult result = repo.kvpatch({"pre-commit", "--format", "json"});
    CHECK(result.exit_code == 1);
    const nlohmann::json report = nlohmann::json::parse(result.out);
    CHECK(report["root"] == repo.work_tree().string());
    REQUIRE(report["plan_sites"].size() == 3);
    for (const auto& site : report["plan_sites"]) {
      CHECK(site["file"] == kBackendPath);
      CHECK(site["status"] == "missing");
    }
    CHECK(report["plan_sites"][0]["line"] == 139);
  }

  TEST_CASE("--format github and sarif report the staged findings from the repository's top") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    repo.write(kBackendPath, "the work tree's copy is not what is committed\n");
    const ProcessResult github = repo.kvpatch({"pre-commit", "--format", "github"});
    CHECK(github.exit_code == 1);
    CHECK(contains(github.out, "::error file=" + kBackendPath + ",line=139,col=13,title=kvpatch missing "
                               "[flashinfer-mla-plan-kv-dtype]::"));
    const ProcessResult sarif = repo.kvpatch({"pre-commit", "--format", "sarif"});
    CHECK(sarif.exit_code == 1);
    const nlohmann::json log = nlohmann::json::parse(sarif.out);
    const auto& results = log["runs"].at(0)["results"];
    CHECK(results.size() == 9);  // 3 plan sites, 2 fields, 2 casts, 2 run() calls without FP8 scales
    for (const auto& r : results) {
      CHECK(r["locations"].at(0)["physicalLocation"]["artifactLocation"]["uri"] == kBackendPath);
    }
    // A commit that holds no selected file still gets a log (empty), while github stays quiet.
    GitSandbox clean;
    clean.stage("README.md", "nothing to check\n");
    const ProcessResult empty = clean.kvpatch({"pre-commit", "--format", "sarif"});
    CHECK(empty.exit_code == 0);
    CHECK(nlohmann::json::parse(empty.out)["runs"].at(0)["results"].empty());
    CHECK(clean.kvpatch({"pre-commit", "--format", "github"}).out.empty());
  }

  TEST_CASE("--repo finds the repository from a subdirectory, and --rules and --set are honoured") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    const std::string subdir = (repo.work_tree() / "python" / "sglang").string();
    ProcessResult result = kvpatch_test::run_process({kvpatch_test::required_env("KVPATCH_BIN"), "pre-commit",
                                                      "--repo", subdir, "--rules",
                                                      kvpatch_test::required_env("KVPATCH_RULES_DIR"), "--set",
                                                      "kv_field=self.kv_cache_dtype"},
                                                     {repo.scratch(), false});
    CHECK(result.exit_code == 1);
    CHECK(contains(result.out, kMissingDecodeSite));
    CHECK(contains(result.out, "fix: kv_data_type=self.kv_cache_dtype"));
    CHECK(repo.kvpatch({"pre-commit", "--set", "no_such_parameter=1"}).exit_code == 2);
  }

  TEST_CASE("settings come from the work tree's .kvpatch.toml, also with --repo; --isolated ignores it") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    repo.write(".kvpatch.toml", "[parameters]\nkv_field = \"self.kv_cache_dtype\"\n");
    CHECK(contains(repo.kvpatch({"pre-commit"}).out, "fix: kv_data_type=self.kv_cache_dtype"));
    CHECK(repo.kvpatch({"pre-commit", "--show-settings"}).out.rfind(
              "settings file: " + (repo.work_tree() / ".kvpatch.toml").string() + "\n", 0) == 0);
    const std::string subdir = (repo.work_tree() / "python" / "sglang").string();
    const ProcessResult from_outside = kvpatch_test::run_process(
        {kvpatch_test::required_env("KVPATCH_BIN"), "pre-commit", "--repo", subdir}, {repo.scratch(), false});
    CHECK(contains(from_outside.out, "fix: kv_data_type=self.kv_cache_dtype"));
    CHECK(contains(repo.kvpatch({"pre-commit", "--isolated"}).out, "fix: kv_data_type=self.kv_data_type"));
    // exclude: a staged file under an excluded directory is not checked, even with --all.
    repo.write(".kvpatch.toml", "exclude = [\"python\"]\n");
    const ProcessResult all_excluded = repo.kvpatch({"pre-commit", "--all"});
    CHECK(all_excluded.exit_code == 0);
    CHECK(all_excluded.out.empty());
    // --exclude replaces that list (relative to the current directory, the work tree's top in a hook).
    CHECK(repo.kvpatch({"pre-commit", "--all", "--exclude", "nothing-here"}).exit_code == 1);
    repo.write(".kvpatch.toml", "");
    CHECK(repo.kvpatch({"pre-commit", "--all", "--extend-exclude", "python"}).exit_code == 0);
    // per-file-ignores: the staged files they match are judged without the rules they name.
    repo.write(".kvpatch.toml", "[per-file-ignores]\n\"python/**\" = [\"flashinfer-mla-plan-kv-dtype\", "
                                "\"flashinfer-mla-kv-field\"]\n");
    const ProcessResult ignored = repo.kvpatch({"pre-commit"});
    CHECK(ignored.exit_code == 0);
    CHECK(contains(ignored.out, "3 plan sites: 0 threaded, 0 missing, 0 gated, 0 unknown, 3 ignored;"));
    CHECK(contains(ignored.out, "per-file-ignores at " + (repo.work_tree() / ".kvpatch.toml").string() + ":2 "
                                "[flashinfer-mla-plan-kv-dtype]\n"));
    repo.write(".kvpatch.toml", "[per-file-ignores]\n\"python/**\" = [\"flashinfer-mla-kv-feild\"]\n");
    CHECK(contains(repo.kvpatch({"pre-commit"}).err, ":2: per-file-ignores names rule id 'flashinfer-mla-kv-feild', "
                                                     "which no rule reports; did you mean flashinfer-mla-kv-field?"));
    CHECK(repo.kvpatch({"pre-commit"}).exit_code == 2);
    repo.write(".kvpatch.toml", "");
    // --exit-zero reports and lets the commit through.
    const ProcessResult report_only = repo.kvpatch({"pre-commit", "--exit-zero"});
    CHECK(report_only.exit_code == 0);
    CHECK(contains(report_only.out, "fix: kv_data_type=self.kv_data_type"));
    CHECK(contains(report_only.err, "(--exit-zero: the commit goes ahead)\n"));
    repo.write(".kvpatch.toml", "kv-dtype-form = 1\n");
    CHECK(repo.kvpatch({"pre-commit", "--exit-zero"}).exit_code == 2);
    const ProcessResult bad = repo.kvpatch({"pre-commit"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err == "kvpatch: error: " + (repo.work_tree() / ".kvpatch.toml").string() +
                         ":1: 'kv-dtype-form' must be a string; quote the value, e.g. kv-dtype-form = \"...\"\n");
  }

  TEST_CASE("settings nearer to a staged file than the work tree's top are warned about, not read") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    repo.write("python/.kvpatch.toml", "[parameters]\nkv_field = \"self.kv_cache_dtype\"\n");
    const ProcessResult r = repo.kvpatch({"pre-commit"});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.out, "fix: kv_data_type=self.kv_data_type"));  // the top's (no) settings, as documented
    CHECK(contains(r.err, "kvpatch: warning: " + (repo.work_tree() / "python" / ".kvpatch.toml").string() +
                              " holds kvpatch settings for " + kBackendPath +
                              ", but this run read no settings file, found from the work tree's top; "));
    CHECK(contains(r.err, "Move the settings to the work tree's top, where pre-commit reads them\n"));
    CHECK_FALSE(contains(repo.kvpatch({"pre-commit", "--isolated"}).err, "warning"));
  }

  TEST_CASE("the remedy's commands paste into a shell when paths hold spaces and quotes") {
    GitSandbox repo;
    const std::string path = "odd dir/it's ünï/flashinfer_mla_backend.py";
    repo.stage(path, fixture_source("gen-b-unpatched"));
    const ProcessResult refused = repo.kvpatch({"pre-commit"});
    CHECK(refused.exit_code == 1);
    CHECK(contains(refused.err, "`kvpatch apply 'odd dir/it'\\''s ünï/flashinfer_mla_backend.py'`"));
    // Run both commands as printed (kvpatch named by its path), then the hook has nothing left to say.
    const std::string::size_type start = refused.err.find("run `kvpatch apply");
    REQUIRE(start != std::string::npos);
    const std::string::size_type apply_end = refused.err.find('`', start + 5);
    const std::string apply = refused.err.substr(start + 5 + std::string("kvpatch").size(),
                                                 apply_end - start - 5 - std::string("kvpatch").size());
    const std::string::size_type add_start = refused.err.find("`git add", apply_end + 1);
    REQUIRE(add_start != std::string::npos);
    const std::string add = refused.err.substr(add_start + 1, refused.err.find('`', add_start + 1) - add_start - 1);
    const std::string binary = kvpatch_test::required_env("KVPATCH_BIN");
    for (const std::string& command : {"'" + binary + "'" + apply, add}) {
      CAPTURE(command);
      const ProcessResult ran = kvpatch_test::run_process({"sh", "-c", command}, {repo.work_tree(), false});
      CHECK(ran.exit_code == 0);
    }
    CHECK(repo.kvpatch({"pre-commit"}).exit_code == 0);
  }

  TEST_CASE("a repository with extensions.worktreeConfig (format version 1, as sparse checkouts set it) is read") {
    GitSandbox repo;
    repo.git({"config", "core.repositoryformatversion", "1"});
    repo.git({"config", "extensions.worktreeConfig", "true"});
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    const ProcessResult result = repo.kvpatch({"pre-commit"});
    CHECK(result.exit_code == 1);
    CHECK(contains(result.out, kMissingDecodeSite));
  }

  TEST_CASE("index formats libgit2 cannot read exit 2 with the git command that writes one it can") {
    GitSandbox repo;
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    repo.stage("docs/notes.md", "notes\n");
    repo.commit_without_hooks("base");
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched") + "# edited\n");
    std::vector<std::string> remedy;
    SUBCASE("a split index") {
      repo.git({"update-index", "--split-index"});
      const ProcessResult refused = repo.kvpatch({"pre-commit"});
      CHECK(refused.exit_code == 2);
      CHECK(contains(refused.err, "cannot read the index: unsupported mandatory extension: 'link'"));
      CHECK(contains(refused.err, "`git config core.splitIndex false && git update-index --no-split-index`"));
      // install-hook does not read the index: it installs, and warns what the hook will do until then.
      const ProcessResult installed = repo.kvpatch({"install-hook"});
      CHECK(installed.exit_code == 0);
      CHECK(contains(installed.err, "'link'; the index is split"));
      CHECK(contains(installed.err, "until then the hook refuses every commit (exit 2)"));
      remedy = {"update-index", "--no-split-index"};
    }
    SUBCASE("a sparse index") {
      repo.git({"sparse-checkout", "init", "--cone", "--sparse-index"});
      repo.git({"sparse-checkout", "set", "python"});  // docs/ collapses into one sparse directory entry
      const ProcessResult refused = repo.kvpatch({"pre-commit"});
      CHECK(refused.exit_code == 2);
      CHECK(contains(refused.err, "cannot read the index: unsupported mandatory extension: 'sdir'"));
      CHECK(contains(refused.err, "`git sparse-checkout reapply --no-sparse-index`"));
      remedy = {"sparse-checkout", "reapply", "--no-sparse-index"};
    }
    // The remedy named is enough: the same staged change is then checked.
    repo.git(remedy);
    const ProcessResult checked = repo.kvpatch({"pre-commit"});
    CHECK(checked.exit_code == 1);
    CHECK(contains(checked.out, kMissingDecodeSite));
  }

  TEST_CASE("a SHA-256 repository exits 2 and names kvpatch check as the way to check its files") {
    kvpatch_test::TempDir scratch("kvpatch-hook-sha256");
    kvpatch_test::git_ok(scratch.path(), {"init", "-q", "--object-format=sha256", "repo"});
    const ProcessResult refused = kvpatch_test::run_process(
        {kvpatch_test::required_env("KVPATCH_BIN"), "pre-commit"}, {scratch.path() / "repo", false});
    CHECK(refused.exit_code == 2);
    CHECK(contains(refused.err, "cannot open the git repository"));
    CHECK(contains(refused.err, "libgit2 reads SHA-1 repositories only; check the changed files with `kvpatch check"));
  }

  TEST_CASE("outside a repository, and in a bare one, it exits 2 with what to do") {
    kvpatch_test::TempDir plain("kvpatch-hook-plain");
    ProcessResult here = kvpatch_test::run_process({kvpatch_test::required_env("KVPATCH_BIN"), "pre-commit"},
                                                   {plain.path(), false});
    CHECK(here.exit_code == 2);
    CHECK(contains(here.err, "not in a git repository"));
    CHECK(contains(here.err, "--repo"));

    ProcessResult named = kvpatch_test::run_process(
        {kvpatch_test::required_env("KVPATCH_BIN"), "pre-commit", "--repo", plain.path().string()}, {});
    CHECK(named.exit_code == 2);
    CHECK(contains(named.err, plain.path().string() + ": not in a git repository"));

    kvpatch_test::git_ok(plain.path(), {"init", "-q", "--bare", "bare.git"});
    for (const char* command : {"pre-commit", "install-hook", "uninstall-hook"}) {
      ProcessResult bare = kvpatch_test::run_process(
          {kvpatch_test::required_env("KVPATCH_BIN"), command, "--repo", (plain.path() / "bare.git").string()}, {});
      CHECK(bare.exit_code == 2);
      CHECK(contains(bare.err, "bare repository"));
    }
  }
}
