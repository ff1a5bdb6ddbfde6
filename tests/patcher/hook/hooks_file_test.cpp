// The hooks `.pre-commit-hooks.yaml` offers the pre-commit framework, run as the framework runs them: each entry
// with the staged Python files appended unless `pass_filenames: false`, a hook failing when it exits non-zero or
// changes a file. On a staged unpatched backend every hook must fail (the checks by their exit code, the fixer by
// its edits); once the fixer's edits are staged, every hook must pass.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "git_sandbox.h"
#include "support/files.h"

using kvpatch_test::fixture_source;
using kvpatch_test::GitSandbox;
using kvpatch_test::kBackendPath;
using kvpatch_test::ProcessResult;

namespace {
struct Hook {
  std::string id;
  std::vector<std::string> entry;  // split on blanks, as the framework's shlex split does for these entries
  bool pass_filenames = true;
};

std::vector<Hook> read_hooks() {
  const std::string file = kvpatch_test::required_env("KVPATCH_HOOKS_FILE");
  const YAML::Node hooks = YAML::LoadFile(file);
  REQUIRE(hooks.IsSequence());
  std::vector<Hook> out;
  std::set<std::string> ids;
  for (const YAML::Node& h : hooks) {
    Hook hook;
    hook.id = h["id"].as<std::string>();
    CAPTURE(hook.id);
    CHECK(ids.insert(hook.id).second);
    CHECK(h["name"].IsScalar());
    // language: system runs what is on PATH; kvpatch is installed, not built by the framework.
    CHECK(h["language"].as<std::string>() == "system");
    bool python = false;
    for (const YAML::Node& t : h["types"]) python |= t.as<std::string>() == "python";
    CHECK(python);
    std::istringstream words(h["entry"].as<std::string>());
    for (std::string w; words >> w;) hook.entry.push_back(w);
    REQUIRE(!hook.entry.empty());
    CHECK(hook.entry.front() == "kvpatch");
    hook.entry.front() = kvpatch_test::required_env("KVPATCH_BIN");
    if (h["pass_filenames"]) hook.pass_filenames = h["pass_filenames"].as<bool>();
    out.push_back(hook);
  }
  return out;
}

// The staged *.py files (added, copied or modified), which the framework hands a hook with `types: [python]`.
std::vector<std::string> staged_python(const GitSandbox& repo) {
  std::istringstream names(repo.git({"diff", "--cached", "--name-only", "--diff-filter=ACM"}).out);
  std::vector<std::string> out;
  for (std::string name; std::getline(names, name);) {
    if (name.ends_with(".py")) out.push_back(name);
  }
  return out;
}

// Whether the hook passes as the framework judges it; `changed` gets the files it modified.
bool hook_passes(const GitSandbox& repo, const Hook& hook, std::vector<std::string>& changed) {
  const std::vector<std::string> files = staged_python(repo);
  std::map<std::string, std::string> before;
  for (const std::string& f : files) before[f] = repo.read(f);
  std::vector<std::string> argv = hook.entry;
  if (hook.pass_filenames) argv.insert(argv.end(), files.begin(), files.end());
  kvpatch_test::ProcessOptions options;
  options.working_dir = repo.work_tree();
  const ProcessResult r = kvpatch_test::run_process(argv, options);
  changed.clear();
  for (const auto& [f, bytes] : before) {
    if (repo.read(f) != bytes) changed.push_back(f);
  }
  return r.exit_code == 0 && changed.empty();
}
}  // namespace

TEST_SUITE("hooks_file") {
  TEST_CASE("every hook fails on a staged unpatched backend and passes once the fixer's edits are staged") {
    const std::vector<Hook> hooks = read_hooks();
    REQUIRE(!hooks.empty());
    GitSandbox repo;
    repo.stage("python/pyproject.toml", kvpatch_test::read_fixture_file("gen-b-unpatched", "pyproject.toml"));
    repo.stage("python/sglang/srt/utils.py", "import os\n");
    repo.stage(kBackendPath, fixture_source("gen-b-unpatched"));
    int fixers = 0;
    for (const Hook& hook : hooks) {
      CAPTURE(hook.id);
      std::vector<std::string> changed;
      CHECK_FALSE(hook_passes(repo, hook, changed));
      if (changed.empty()) continue;
      // A fixer: it patched the backend, and only that file.
      ++fixers;
      CHECK(changed == std::vector<std::string>{kBackendPath});
      repo.git({"add", kBackendPath});
    }
    CHECK(fixers == 1);
    for (const Hook& hook : hooks) {
      CAPTURE(hook.id);
      std::vector<std::string> changed;
      CHECK(hook_passes(repo, hook, changed));
    }
  }
}
