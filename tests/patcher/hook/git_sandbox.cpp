#include "git_sandbox.h"

#include "support/files.h"
#include "support/kvpatch_cli.h"

#include <stdexcept>

namespace kvpatch_test {
namespace fs = std::filesystem;

ProcessResult git_run(const fs::path& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{required_env("KVPATCH_GIT")};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options;
  options.working_dir = dir;
  return run_process(argv, options);
}

ProcessResult git_ok(const fs::path& dir, const std::vector<std::string>& args) {
  ProcessResult result = git_run(dir, args);
  if (result.exit_code != 0) {
    std::vector<std::string> argv{"git"};
    argv.insert(argv.end(), args.begin(), args.end());
    throw std::runtime_error("in " + dir.string() + ": " + describe(argv, result));
  }
  return result;
}

GitSandbox::GitSandbox() : scratch_("kvpatch-hook"), work_tree_(scratch_.path() / "repo") {
  git_ok(scratch_.path(), {"init", "-q", "-b", "main", "repo"});
  git({"config", "user.name", "kvpatch test"});
  git({"config", "user.email", "kvpatch-test@example.invalid"});
  git({"config", "commit.gpgsign", "false"});
  // git init copies sample hooks (*.sample, never run); none is named pre-commit.
}

void GitSandbox::write(const std::string& path, const std::string& bytes) const {
  const fs::path file = work_tree_ / path;
  fs::create_directories(file.parent_path());
  write_bytes(file, bytes);
}

std::string GitSandbox::read(const std::string& path) const { return read_bytes(work_tree_ / path); }

void GitSandbox::stage(const std::string& path, const std::string& bytes) const {
  write(path, bytes);
  git({"add", "--", path});
}

ProcessResult GitSandbox::kvpatch(const std::vector<std::string>& args) const { return run_kvpatch(args, work_tree_); }

void GitSandbox::commit_without_hooks(const std::string& message) const {
  git({"commit", "-q", "--no-verify", "-m", message});
}

int GitSandbox::commit_count() const {
  const ProcessResult head = git_run(work_tree_, {"rev-parse", "--verify", "-q", "HEAD"});
  if (head.exit_code != 0) return 0;
  return std::stoi(git({"rev-list", "--count", "HEAD"}).out);
}

}  // namespace kvpatch_test
