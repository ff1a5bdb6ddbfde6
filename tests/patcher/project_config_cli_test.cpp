// A project's .kvpatch.toml / pyproject.toml [tool.kvpatch] as the CLI uses it: found above the paths wherever
// kvpatch runs from, outranked by the command line, ignored with --isolated, and a bad one stops every command
// before a file is touched.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/files.h"
#include "support/fixture_sources.h"
#include "support/kvpatch_cli.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {
const std::string kBackend = "proj/python/sglang/flashinfer_mla_backend.py";

// A scratch project: proj/ holds the backend and, when given, a configuration file.
struct Project {
  TempDir scratch{"kvpatch-config"};
  explicit Project(const std::string& config_name = "", const std::string& config = "") {
    fs::create_directories((scratch.path() / kBackend).parent_path());
    write_bytes(scratch.path() / kBackend, fixture_source("gen-b-unpatched"));
    if (!config_name.empty()) write_bytes(scratch.path() / "proj" / config_name, config);
  }
  ProcessResult run(const std::vector<std::string>& args) const { return run_kvpatch(args, scratch.path()); }
  std::string backend() const { return read_bytes(scratch.path() / kBackend); }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_SUITE("project_config_cli") {
  TEST_CASE(".kvpatch.toml above the path sets the KV dtype form for diff and apply; the command line wins") {
    const Project project(".kvpatch.toml", "# the GPUs we serve are not all SM90\nkv-dtype-form = \"sm90\"\n");
    const ProcessResult configured = project.run({"diff", "proj/python"});
    const ProcessResult flag = project.run({"diff", "--isolated", "--kv-dtype-form", "sm90", "proj/python"});
    const ProcessResult plain = project.run({"diff", "--isolated", "proj/python"});
    CHECK(configured.exit_code == 1);
    CHECK(configured.out == flag.out);
    CHECK(contains(configured.out, "_kvpatch_fp8_kv_dtype"));
    CHECK(configured.out != plain.out);
    CHECK(project.run({"diff", "--kv-dtype-form", "original", "proj/python"}).out == plain.out);
    // The same file is found from inside the project and for a file path.
    CHECK(run_kvpatch({"diff", "sglang/flashinfer_mla_backend.py"}, project.scratch.path() / "proj" / "python").out ==
          run_kvpatch({"diff", "--isolated", "--kv-dtype-form", "sm90", "sglang/flashinfer_mla_backend.py"},
                      project.scratch.path() / "proj" / "python").out);
    // --show-settings says what a run would use and where each came from, and reads no source file.
    const ProcessResult settings = project.run({"diff", "--show-settings", "--set", "kv_field=self.kv_dtype", "proj/python"});
    CHECK(settings.exit_code == 0);
    CHECK(settings.out.rfind("settings file: " + (project.scratch.path() / "proj" / ".kvpatch.toml").string() + "\n", 0) == 0);
    CHECK(contains(settings.out, "\nexclude: none\n"));
    CHECK(contains(settings.out, "\n  kv_dtype_form = sm90  [" + (project.scratch.path() / "proj" / ".kvpatch.toml").string() + ":2]\n"));
    CHECK(contains(settings.out, "\n  kv_field = self.kv_dtype  [--set kv_field]\n"));
    CHECK(contains(settings.out, "\n  kv_dtype_helper.original = \"\"\n"));
    CHECK_FALSE(contains(settings.out, "---"));
    CHECK(contains(project.run({"check", "--show-settings", "--isolated", "proj/python"}).out,
                   "settings file: none (--isolated)\n"));
    // The JSON report says where the form came from.
    const std::string config = (project.scratch.path() / "proj" / ".kvpatch.toml").string();
    CHECK(contains(project.run({"check", "--format", "json", "proj/python"}).out,
                   "\"parameter_origins\": {\n    \"kv_dtype_form\": \"" + config + ":2\"\n  }"));
    REQUIRE(project.run({"apply", "proj/python"}).exit_code == 0);
    CHECK(contains(project.backend(), "def _kvpatch_fp8_kv_dtype():"));
  }

  TEST_CASE("a bad setting stops check, diff and apply with exit 2, naming the file and line; nothing is written") {
    const Project project(".kvpatch.toml", "\nkv-dtype-form = \"sm91\"\n");
    const std::string where = (project.scratch.path() / "proj" / ".kvpatch.toml").string() + ":2: ";
    for (const char* command : {"check", "diff", "apply"}) {
      CAPTURE(command);
      const ProcessResult r = project.run({command, "proj/python"});
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK(r.err == "kvpatch: error: " + where +
                         "'sm91' is not a value of parameter 'kv_dtype_form'; use one of original, upstream, sm90\n");
    }
    CHECK(project.backend() == fixture_source("gen-b-unpatched"));
    CHECK(project.run({"apply", "--isolated", "proj/python"}).exit_code == 0);
  }

  TEST_CASE("a field name or KV dtype expression that is not Python is blamed on where it was given, not on the rules") {
    const Project project(".kvpatch.toml", "[parameters]\n\nkv_field = \"self.kv[data_type\"\n");
    const ProcessResult configured = project.run({"apply", "proj/python"});
    CHECK(configured.exit_code == 2);
    CHECK(configured.err.rfind("kvpatch: error: " + (project.scratch.path() / "proj" / ".kvpatch.toml").string() +
                                   ":3: parameter 'kv_field' = 'self.kv[data_type' makes the field rule's statement",
                               0) == 0);
    CHECK(contains(configured.err, "give an attribute or a name, such as self.kv_data_type"));
    CHECK(project.backend() == fixture_source("gen-b-unpatched"));
    const ProcessResult flag = project.run({"check", "--isolated", "--set", "kv_dtype_expr.original=model_runner.dtype)", "proj/python"});
    CHECK(flag.exit_code == 2);
    CHECK(flag.err.rfind("kvpatch: error: --set kv_dtype_expr.original: parameter 'kv_dtype_expr.original'", 0) == 0);
    CHECK(contains(flag.err, "; give one Python expression"));
  }

  TEST_CASE("pyproject.toml's [tool.kvpatch]: its rules directory outranks KVPATCH_RULES_DIR, --rules outranks it") {
    const Project project("pyproject.toml",
                          "[project]\nname = \"proj\"\n\n[tool.kvpatch]\nrules = \"kvpatch-rules\"\n"
                          "flashinfer-version = \"0.7.2\"\n");
    const fs::path rules = project.scratch.path() / "proj" / "kvpatch-rules";
    fs::copy(required_env("KVPATCH_RULES_DIR"), rules);
    const std::string parameters = read_bytes(rules / "parameters.yaml");
    const std::string renamed = replace_all(parameters, "kv_field: self.kv_data_type", "kv_field: self.kv_cache_dtype");
    REQUIRE(renamed != parameters);
    write_bytes(rules / "parameters.yaml", renamed);
    const ProcessResult r = project.run({"diff", "proj/python"});
    CHECK(contains(r.out, "self.kv_cache_dtype = "));
    CHECK_FALSE(contains(r.out, "self.kv_data_type"));
    CHECK(contains(project.run({"check", "proj/python"}).out,
                   "FlashInfer 0.7.2 (given by " + (project.scratch.path() / "proj" / "pyproject.toml").string() + ":6)"));
    const ProcessResult own = project.run({"diff", "--rules", required_env("KVPATCH_RULES_DIR"), "proj/python"});
    CHECK(contains(own.out, "self.kv_data_type = "));
  }

  TEST_CASE("--config names the file to read wherever it is, and --isolated cannot be given with it") {
    const Project project;
    write_bytes(project.scratch.path() / "team.toml", "[parameters]\nkv_field = \"self.kv_dtype\"\n");
    CHECK(contains(project.run({"diff", "--config", "team.toml", "proj/python"}).out, "self.kv_dtype = "));
    const ProcessResult missing = project.run({"check", "--config", "nowhere.toml", "proj/python"});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err == "kvpatch: error: nowhere.toml: no such configuration file; check the path given to --config\n");
    CHECK(project.run({"check", "--config", "team.toml", "--isolated", "proj/python"}).exit_code == 2);
  }

  TEST_CASE("exclude leaves a walked directory's files out of check and apply; a file named on the command line is read") {
    const Project project(".kvpatch.toml", "exclude = [\"test\"]\n");
    const fs::path test_file = project.scratch.path() / "proj" / "test" / "test_mla.py";
    fs::create_directories(test_file.parent_path());
    write_bytes(test_file, fixture_source("gen-b-unpatched"));
    const ProcessResult check = project.run({"check", "proj"});
    CHECK(check.exit_code == 1);
    CHECK(contains(check.out, "3 plan sites: 0 threaded, 3 missing"));  // the backend only, not the test file
    CHECK_FALSE(contains(check.out, "test_mla.py"));
    CHECK(contains(project.run({"check", "--isolated", "proj"}).out, "6 plan sites: 0 threaded, 6 missing"));
    const ProcessResult only_tests = project.run({"check", "proj/test"});
    CHECK(only_tests.exit_code == 0);
    CHECK(only_tests.err == "kvpatch: warning: proj/test: no file here uses BatchMLAPagedAttentionWrapper outside those "
                            "excluded by " + (project.scratch.path() / "proj" / ".kvpatch.toml").string() +
                            "; nothing checked\n");
    CHECK(project.run({"check", "proj/test/test_mla.py"}).exit_code == 1);
    // apply patches the backend, leaves the excluded file as it was, and its recheck does not count it.
    const ProcessResult apply = project.run({"apply", "proj"});
    CHECK(apply.exit_code == 0);
    CHECK(apply.out == "patched python/sglang/flashinfer_mla_backend.py (9 edits)\n");
    CHECK(read_bytes(test_file) == fixture_source("gen-b-unpatched"));
  }

  TEST_CASE("--exclude replaces the settings file's list, --extend-exclude adds to it; both relative to the current directory") {
    const Project project(".kvpatch.toml", "exclude = [\"test\"]\n");
    const fs::path test_file = project.scratch.path() / "proj" / "test" / "test_mla.py";
    const fs::path bench_file = project.scratch.path() / "proj" / "bench" / "bench_mla.py";
    for (const fs::path& f : {test_file, bench_file}) {
      fs::create_directories(f.parent_path());
      write_bytes(f, fixture_source("gen-b-unpatched"));
    }
    auto plan_sites = [&](const std::vector<std::string>& args) {
      const ProcessResult r = project.run(args);
      const std::size_t at = r.out.find(" plan sites:");
      return at == std::string::npos ? std::string("none: ") + r.err : r.out.substr(r.out.rfind('\n', at) + 1, at - r.out.rfind('\n', at) - 1);
    };
    CHECK(plan_sites({"check", "proj"}) == "6");                                        // backend and bench
    CHECK(plan_sites({"check", "--exclude", "proj/bench", "proj"}) == "6");             // backend and test
    CHECK(plan_sites({"check", "--extend-exclude", "proj/bench", "proj"}) == "3");      // the backend alone
    CHECK(plan_sites({"check", "--extend-exclude", "./proj/bench/", "proj"}) == "3");   // as a shell completes it
    CHECK(plan_sites({"check", "--exclude", "proj/test,proj/bench", "proj"}) == "3");   // comma-separated
    CHECK(plan_sites({"check", "--exclude", "proj/test", "--exclude", "proj/bench", "proj"}) == "3");
    CHECK(plan_sites({"check", "--isolated", "--exclude", "**/bench_*.py", "proj"}) == "6");
    // Relative to the current directory, not to the settings file: `bench` names nothing from the scratch top.
    CHECK(plan_sites({"check", "--extend-exclude", "bench", "proj"}) == "6");
    CHECK(run_kvpatch({"check", "--extend-exclude", "bench", "."}, project.scratch.path() / "proj").out.find("3 plan sites") !=
          std::string::npos);
    // One pattern per use: what follows is a PATH.
    CHECK(plan_sites({"check", "--extend-exclude", "proj/bench", "proj/bench", "proj/python"}) == "3");
    const ProcessResult left_out = project.run({"check", "--extend-exclude", "proj/bench", "proj/bench"});
    CHECK(left_out.exit_code == 0);
    CHECK(left_out.err == "kvpatch: warning: proj/bench: no file here uses BatchMLAPagedAttentionWrapper outside those "
                          "excluded by --extend-exclude; nothing checked\n");
    const ProcessResult settings = project.run({"check", "--show-settings", "--extend-exclude", "proj/bench", "proj"});
    CHECK(contains(settings.out, "\nexclude: test  [" + (project.scratch.path() / "proj" / ".kvpatch.toml").string() +
                                     ", relative to " + (project.scratch.path() / "proj").string() +
                                     "]; proj/bench  [--extend-exclude, relative to " + project.scratch.path().string() +
                                     "]\n"));
    const ProcessResult absolute = project.run({"apply", "--exclude", "/proj/bench", "proj"});
    CHECK(absolute.exit_code == 2);
    CHECK(absolute.err == "kvpatch: error: --exclude /proj/bench: the pattern is empty or absolute; give it relative "
                          "to the current directory, e.g. --exclude test\n");
    CHECK(project.backend() == fixture_source("gen-b-unpatched"));
    // apply leaves what --extend-exclude names as it was.
    CHECK(project.run({"apply", "--extend-exclude", "proj/bench", "proj"}).exit_code == 0);
    CHECK(read_bytes(bench_file) == fixture_source("gen-b-unpatched"));
    CHECK(project.backend() != fixture_source("gen-b-unpatched"));
  }

  TEST_CASE("--exit-zero: findings and edits exit 0, errors still exit 2") {
    const Project project;
    const ProcessResult check = project.run({"check", "--exit-zero", "proj"});
    CHECK(check.exit_code == 0);
    CHECK(contains(check.out, "3 plan sites: 0 threaded, 3 missing"));
    CHECK(project.run({"check", "proj"}).exit_code == 1);
    const ProcessResult diff = project.run({"diff", "--exit-zero", "proj"});
    CHECK(diff.exit_code == 0);
    CHECK(diff.out == project.run({"diff", "proj"}).out);
    CHECK(project.run({"check", "--exit-zero", "proj/missing.py"}).exit_code == 2);
    write_bytes(project.scratch.path() / "proj" / "broken.py", "from flashinfer import BatchMLAPagedAttentionWrapper\nif x\n");
    CHECK(project.run({"check", "--exit-zero", "proj"}).exit_code == 2);
    CHECK(project.run({"apply", "--exit-zero", "proj"}).exit_code == 2);
    CHECK(project.backend() == fixture_source("gen-b-unpatched"));
  }
  TEST_CASE("a checked file with nearer settings than the run's: check and diff warn, apply refuses; both files named") {
    // The team keeps [tool.kvpatch] in python/pyproject.toml, next to the package, and the top has its own file.
    const Project project(".kvpatch.toml", "kv-dtype-form = \"upstream\"\n");
    const fs::path nearer = project.scratch.path() / "proj" / "python" / "pyproject.toml";
    write_bytes(nearer, "[project]\nname = \"sglang\"\n\n[tool.kvpatch]\nkv-dtype-form = \"sm90\"\n");
    const std::string top = (project.scratch.path() / "proj" / ".kvpatch.toml").string();
    const std::string warning = "kvpatch: warning: " + nearer.string() +
                                " holds kvpatch settings for python/sglang/flashinfer_mla_backend.py, but this run read " +
                                top + ", found from the paths' common directory; kvpatch reads one settings file per "
                                "run, so they were judged by the run's settings, not by it. Run kvpatch on their "
                                "directory, or pass --config " + nearer.string() + "\n";
    for (const char* command : {"check", "diff"}) {
      CAPTURE(command);
      const ProcessResult r = project.run({command, "proj"});
      CHECK(r.exit_code == 1);
      CHECK(r.err == warning);
    }
    // From the nearer file's directory, with --config naming either file, or with --isolated: nothing to say.
    CHECK(project.run({"check", "proj/python"}).err.empty());
    CHECK(contains(project.run({"diff", "proj/python"}).out, "_kvpatch_fp8_kv_dtype"));
    CHECK(project.run({"check", "--config", top, "proj"}).err.empty());
    CHECK(project.run({"check", "--config", nearer.string(), "proj"}).err.empty());
    CHECK(project.run({"check", "--isolated", "proj"}).err.empty());
    // apply would write the file by settings not meant for it: it refuses, and writes nothing.
    const ProcessResult refused = project.run({"apply", "proj"});
    CHECK(refused.exit_code == 2);
    CHECK(refused.out.empty());
    CHECK(refused.err == "kvpatch: error: " + nearer.string() +
                             " holds kvpatch settings for python/sglang/flashinfer_mla_backend.py, but this run read " +
                             top + ", found from the paths' common directory; kvpatch reads one settings file per run, "
                             "so apply would patch them by the run's settings, not by it. Run kvpatch on their "
                             "directory, or pass --config " + nearer.string() + " (or --config " + top + ")\n"
                             "kvpatch: error: nothing was written; fix the errors above and run apply again\n");
    CHECK(project.backend() == fixture_source("gen-b-unpatched"));
    // With no settings file above the paths, the nearer one is still named.
    fs::remove(top);
    CHECK(contains(project.run({"check", "proj"}).err, "but this run read no settings file, found from"));
    CHECK(project.run({"apply", "proj"}).exit_code == 2);
    CHECK(project.backend() == fixture_source("gen-b-unpatched"));
    // Run on the nearer file's directory, apply patches by its settings.
    REQUIRE(project.run({"apply", "proj/python"}).exit_code == 0);
    CHECK(contains(project.backend(), "def _kvpatch_fp8_kv_dtype():"));
  }

  TEST_CASE("unused-ignores = \"error\": a comment that suppresses nothing fails check and apply; the command line wins") {
    const Project project(".kvpatch.toml", "unused-ignores = \"error\"\n");
    const std::string site = "            wrapper.plan(\n";
    std::string source = project.backend();
    REQUIRE(source.find(site) != std::string::npos);
    // On a line of its own above the decode plan site, where it marks nothing.
    source.insert(source.find(site), "            # kvpatch: ignore[flashinfer-mla-plan-kv-dtype] replay plans BF16\n");
    write_bytes(project.scratch.path() / kBackend, source);
    // Its line before apply adds the field above it; after, one more.
    auto stale = [](int line) {
      return "python/sglang/flashinfer_mla_backend.py:" + std::to_string(line) +
             ":31: # kvpatch: ignore[flashinfer-mla-plan-kv-dtype] suppresses nothing";
    };

    // apply writes every edit, and the comment is the finding it cannot fix.
    const ProcessResult applied = project.run({"apply", "proj"});
    CHECK(applied.exit_code == 1);
    CHECK(contains(applied.err, "kvpatch: error: " + stale(139)));
    CHECK(contains(applied.err, "1 finding remains that apply cannot fix"));
    CHECK(contains(project.backend(), "        self.kv_data_type = getattr(model_runner"));

    const ProcessResult check = project.run({"check", "proj"});
    CHECK(check.exit_code == 1);
    CHECK(contains(check.err, "kvpatch: error: " + stale(140)));
    CHECK(contains(check.out, "3 plan sites: 3 threaded, 0 missing"));
    CHECK(contains(check.out, "; 1 ignore comment suppresses nothing; 0 edits\n"));
    CHECK(contains(project.run({"check", "--show-settings", "proj"}).out, "unused ignores: error  [" +
                   fs::weakly_canonical(project.scratch.path() / "proj" / ".kvpatch.toml").string() + ":1]\n"));
    CHECK(project.run({"check", "--exit-zero", "proj"}).exit_code == 0);

    // Warnings again: from the command line, with no settings file, and in diff, whose exit code is about edits.
    for (const std::vector<std::string>& args : {std::vector<std::string>{"check", "--unused-ignores", "warn", "proj"},
                                                 std::vector<std::string>{"check", "--isolated", "proj"},
                                                 std::vector<std::string>{"diff", "proj"}}) {
      CAPTURE(args[1]);
      const ProcessResult r = project.run(args);
      CHECK(r.exit_code == 0);
      CHECK(contains(r.err, "kvpatch: warning: " + stale(140)));
      CHECK_FALSE(contains(r.out, "ignore comment"));
    }
    CHECK(contains(project.run({"check", "--unused-ignores", "warn", "--show-settings", "proj"}).out,
                   "unused ignores: warn  [--unused-ignores]\n"));
    CHECK(contains(project.run({"check", "--isolated", "--show-settings", "proj"}).out,
                   "unused ignores: warn  (the default)\n"));
    CHECK(project.run({"check", "--unused-ignores", "fail", "proj"}).exit_code == 2);

    // Moved onto the call's line, it suppresses the site, and the run is clean.
    source = project.backend();
    const std::string comment = "            # kvpatch: ignore[flashinfer-mla-plan-kv-dtype] replay plans BF16\n";
    source.erase(source.find(comment), comment.size());
    write_bytes(project.scratch.path() / kBackend, source);
    const ProcessResult clean = project.run({"check", "proj"});
    CHECK(clean.exit_code == 0);
    CHECK(clean.err.empty());
  }

  TEST_CASE("output-format and show-fixes (ruff's keys) are --format and --show-fixes; the command line wins") {
    const Project project(".kvpatch.toml", "output-format = \"full\"\nshow-fixes = true\n");
    const std::string file = fs::weakly_canonical(project.scratch.path() / "proj" / ".kvpatch.toml").string();
    const ProcessResult configured = project.run({"check", "proj"});
    const ProcessResult full = project.run({"check", "--format", "full", "proj"});
    CHECK(configured.exit_code == 1);
    CHECK(configured.out == full.out);
    CHECK(contains(configured.out, "= fix, as apply makes it:"));
    const ProcessResult text = project.run({"check", "--isolated", "proj"});
    CHECK(project.run({"check", "--format", "text", "proj"}).out == text.out);
    CHECK(project.run({"check", "--output-format", "concise", "proj"}).out == text.out);
    CHECK(contains(project.run({"check", "--show-settings", "proj"}).out,
                   "\noutput format: full  [" + file + ":1]\nshow fixes: true  [" + file + ":2]\n"));
    CHECK(contains(project.run({"check", "--show-settings", "--format", "json", "--no-show-fixes", "proj"}).out,
                   "\noutput format: json  [--format]\nshow fixes: false  [--no-show-fixes]\n"));
    CHECK(contains(project.run({"check", "--show-settings", "--isolated", "proj"}).out,
                   "\noutput format: text  (the default)\nshow fixes: false  (the default)\n"));
    // Where a report is not printed, or has forms of its own, the key gives way rather than make the command
    // line unsound: --diff prints the diff; --statistics prints its text (json only from json).
    const ProcessResult diff = project.run({"check", "--diff", "proj"});
    CHECK(diff.exit_code == 1);
    CHECK(diff.out == project.run({"diff", "proj"}).out);
    CHECK(project.run({"check", "--statistics", "proj"}).out ==
          project.run({"check", "--statistics", "--isolated", "proj"}).out);
    // pre-commit reads it from the work tree's top.
    const std::string git = required_env("KVPATCH_GIT");
    const fs::path top = project.scratch.path() / "proj";
    REQUIRE(run_process({git, "init", "-q", top.string()}).exit_code == 0);
    REQUIRE(run_process({git, "-C", top.string(), "add", "."}).exit_code == 0);
    CHECK(run_kvpatch({"pre-commit"}, top).out == run_kvpatch({"pre-commit", "--format", "full"}, top).out);
    CHECK(run_kvpatch({"pre-commit"}, top).out != run_kvpatch({"pre-commit", "--format", "text"}, top).out);

    // show-fixes: apply lists what it fixed, as --show-fixes makes it; --no-show-fixes silences the key.
    const std::string original = project.backend();
    const ProcessResult quiet_list = project.run({"apply", "--no-show-fixes", "proj"});
    CHECK(quiet_list.exit_code == 0);
    CHECK_FALSE(contains(quiet_list.out, "fixed "));
    write_bytes(project.scratch.path() / kBackend, original);
    const ProcessResult listed = project.run({"apply", "proj"});
    CHECK(listed.exit_code == 0);
    CHECK(contains(listed.out, "patched python/sglang/flashinfer_mla_backend.py (9 edits)\nfixed 9 findings in 1 file:\n"));
    write_bytes(project.scratch.path() / kBackend, original);
    CHECK(project.run({"apply", "--show-fixes", "--isolated", "proj"}).out == listed.out);
    CHECK(project.run({"apply", "--show-fixes", "--no-show-fixes", "proj"}).exit_code == 2);
    // check without --fix writes nothing to list: the key is no error there, as --show-fixes would be.
    write_bytes(project.scratch.path() / kBackend, original);
    CHECK(project.run({"check", "--format", "text", "proj"}).exit_code == 1);
    const ProcessResult fixed = project.run({"check", "--fix", "--format", "text", "proj"});
    CHECK(fixed.exit_code == 0);
    CHECK(contains(fixed.out, "fixed 9 findings in 1 file:\n"));
  }

  TEST_CASE("per-file-ignores: the rules named are ignored in the files matched, each finding naming the entry") {
    const Project project(".kvpatch.toml", "[per-file-ignores]\n\"test/**\" = [\"flashinfer-mla-plan-kv-dtype\", "
                                           "\"flashinfer-mla-kv-field\"]\n");
    const std::string config = (project.scratch.path() / "proj" / ".kvpatch.toml").string();
    // A test that plans BF16 on purpose, written as the backend is.
    const fs::path test_file = project.scratch.path() / "proj" / "test" / "srt" / "test_mla.py";
    fs::create_directories(test_file.parent_path());
    write_bytes(test_file, fixture_source("gen-b-unpatched"));
    const ProcessResult check = project.run({"check", "proj"});
    CHECK(check.exit_code == 1);
    CHECK(contains(check.out, "6 plan sites: 0 threaded, 3 missing, 0 gated, 0 unknown, 3 ignored;"));
    CHECK(contains(check.out, "\ntest/srt/test_mla.py:139:13: ignored: FlashInferMLAIndicesUpdaterDecode.call_begin_forward: "
                              "wrapper.plan binds q_data_type=self.data_type, kv_data_type=self.data_type (the model "
                              "dtype); per-file-ignores at " + config + ":2 [flashinfer-mla-plan-kv-dtype]\n"));
    CHECK(contains(check.out, "\ntest/srt/test_mla.py:122:9: ignored: FlashInferMLAIndicesUpdaterDecode.__init__: no KV "
                              "dtype field is added; per-file-ignores at " + config + ":2 [flashinfer-mla-kv-field]\n"));
    // Its casts feed plans left BF16, so they are needed: reported, never removed.
    CHECK(contains(check.out, "\ntest/srt/test_mla.py:105:9: required: "));
    CHECK_FALSE(contains(check.out, "\npython/sglang/flashinfer_mla_backend.py:139:13: ignored"));
    // SARIF keeps each as a result suppressed outside the source, the entry as its justification.
    const ProcessResult sarif = project.run({"check", "--format", "sarif", "proj"});
    CHECK(sarif.exit_code == 1);
    int suppressed = 0;
    const nlohmann::json log = nlohmann::json::parse(sarif.out);
    for (const auto& r : log["runs"][0]["results"]) {
      if (!r.contains("suppressions")) continue;
      ++suppressed;
      CHECK(r["properties"]["kvpatchStatus"] == "ignored");
      CHECK(r["suppressions"] == nlohmann::json::parse(R"([{"kind": "external", "justification": "per-file-ignores at )" +
                                                       config + R"(:2"}])"));
    }
    int ignored_lines = 0;
    for (std::size_t at = check.out.find(": ignored: "); at != std::string::npos; at = check.out.find(": ignored: ", at + 1)) {
      ++ignored_lines;
    }
    CHECK(ignored_lines == 5);
    CHECK(suppressed == ignored_lines);
    const ProcessResult settings = project.run({"check", "--show-settings", "proj"});
    CHECK(contains(settings.out, "\nper-file ignores:\n  test/**: flashinfer-mla-plan-kv-dtype, flashinfer-mla-kv-field  [" +
                                     config + ":2, relative to " + (project.scratch.path() / "proj").string() + "]\n"));
    CHECK(contains(project.run({"check", "--isolated", "--show-settings", "proj"}).out, "\nper-file ignores: none\n"));
    CHECK(contains(project.run({"check", "--isolated", "proj"}).out, "6 plan sites: 0 threaded, 6 missing"));
    // apply patches the backend alone; then the run is clean with the test file still planning BF16.
    const ProcessResult apply = project.run({"apply", "proj"});
    CHECK(apply.exit_code == 0);
    CHECK(apply.out == "patched python/sglang/flashinfer_mla_backend.py (9 edits)\n");
    CHECK(read_bytes(test_file) == fixture_source("gen-b-unpatched"));
    const ProcessResult after = project.run({"check", "proj"});
    CHECK(after.exit_code == 0);
    CHECK(contains(after.out, "6 plan sites: 3 threaded, 0 missing, 0 gated, 0 unknown, 3 ignored; 2 casts: 0 redundant, 2 required;"));
  }

  TEST_CASE("per-file-ignores naming an id no rule reports is exit 2 at its line, with the id it most likely meant") {
    const Project project(".kvpatch.toml", "[per-file-ignores]\n\"test\" = [\"flashinfer-mla-kv-field\"]\n"
                                           "\"bench/**\" = [\n  \"flashinfer-mla-plan-kv-dtyp\",\n]\n");
    for (const char* command : {"check", "diff", "apply"}) {
      CAPTURE(command);
      const ProcessResult r = project.run({command, "proj"});
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK(r.err == "kvpatch: error: " + (project.scratch.path() / "proj" / ".kvpatch.toml").string() +
                         ":3: per-file-ignores names rule id 'flashinfer-mla-plan-kv-dtyp', which no rule reports; did "
                         "you mean flashinfer-mla-plan-kv-dtype? the ids are flashinfer-mla-plan-kv-dtype, "
                         "flashinfer-mla-kv-field, fa3-kv-cast, flashinfer-mla-kv-cast, flashinfer-mla-kv-run-input, "
                         "flashinfer-mla-run-kv-scales\n");
    }
    CHECK(project.backend() == fixture_source("gen-b-unpatched"));
  }

  TEST_CASE("--per-file-ignores replaces the settings file's entries, --extend-per-file-ignores adds to them") {
    const Project project(".kvpatch.toml", "[per-file-ignores]\n\"python/**\" = [\"flashinfer-mla-kv-field\"]\n");
    auto summary = [&](const std::vector<std::string>& args) {
      const ProcessResult r = project.run(args);
      const std::size_t at = r.out.find(" plan sites:");
      return at == std::string::npos ? "exit " + std::to_string(r.exit_code) + ": " + r.err
                                     : r.out.substr(at, r.out.find(';', at) - at);
    };
    const std::string plan = "flashinfer-mla-plan-kv-dtype";
    CHECK(summary({"check", "proj"}) == " plan sites: 0 threaded, 3 missing, 0 gated, 0 unknown, 0 ignored");
    CHECK(contains(project.run({"check", "proj"}).out, ": ignored: FlashInferMLAIndicesUpdaterDecode.__init__: "));
    // Relative to the current directory, as --exclude is.
    CHECK(summary({"check", "--extend-per-file-ignores", "proj/python:" + plan, "proj"}) ==
          " plan sites: 0 threaded, 0 missing, 0 gated, 0 unknown, 3 ignored");
    const ProcessResult replaced = project.run({"check", "--per-file-ignores", "proj/**/*.py:" + plan, "proj"});
    CHECK(contains(replaced.out, "3 plan sites: 0 threaded, 0 missing, 0 gated, 0 unknown, 3 ignored"));
    CHECK(contains(replaced.out, "; per-file-ignores at --per-file-ignores proj/**/*.py:" + plan + " [" + plan + "]\n"));
    CHECK(contains(replaced.out, ": missing: FlashInferMLAIndicesUpdaterDecode.__init__: "));  // the file's entry is gone
    CHECK(contains(project.run({"check", "--show-settings", "--extend-per-file-ignores", "proj/python:" + plan, "proj"}).out,
                   "\nper-file ignores:\n  python/**: flashinfer-mla-kv-field  [" +
                       (project.scratch.path() / "proj" / ".kvpatch.toml").string() + ":2, relative to " +
                       (project.scratch.path() / "proj").string() + "]\n  proj/python: " + plan +
                       "  [--extend-per-file-ignores proj/python:" + plan + ", relative to " +
                       project.scratch.path().string() + "]\n"));
    for (const std::string& bad : std::vector<std::string>{"proj/python", "proj/python:", "/abs:" + plan, ":" + plan}) {
      CAPTURE(bad);
      const ProcessResult r = project.run({"apply", "--per-file-ignores", bad, "proj"});
      CHECK(r.exit_code == 2);
      CHECK(r.err == "kvpatch: error: --per-file-ignores " + bad + ": expected PATTERN:RULE-ID[,RULE-ID...] with a "
                     "relative pattern; e.g. --per-file-ignores 'test/**:flashinfer-mla-plan-kv-dtype' (`kvpatch "
                     "rule` lists the ids)\n");
    }
    CHECK(project.run({"check", "--extend-per-file-ignores", "proj:no-such-rule", "proj"}).exit_code == 2);
    CHECK(project.backend() == fixture_source("gen-b-unpatched"));
  }
}
