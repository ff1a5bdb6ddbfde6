#include "process.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "files.h"
#include "temp_dir.h"

namespace kvpatch_test {
namespace {

constexpr uid_t kNobody = 65534;

[[noreturn]] void child_fail(const char* what) {
  // Only async-signal-safe calls between fork and exec.
  (void)!write(2, what, std::strlen(what));
  (void)!write(2, "\n", 1);
  _exit(127);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw std::invalid_argument("run_process: empty argv");
  // Output goes to files, so a chatty child can never block on a full pipe.
  TempDir capture("kvpatch-capture");
  const std::string out_path = (capture.path() / "stdout").string();
  const std::string err_path = (capture.path() / "stderr").string();
  // Standard input from a file too: the child may exit before reading all of it, which a pipe would signal.
  const std::string in_path = options.stdin_text ? (capture.path() / "stdin").string() : "/dev/null";
  if (options.stdin_text) write_bytes(capture.path() / "stdin", *options.stdin_text);
  if (options.drop_root_privileges) {
    ::chmod(capture.path().c_str(), 0777);
  }

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string dir = options.working_dir.string();
  const bool drop = options.drop_root_privileges && ::geteuid() == 0;

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    if (drop && (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)) child_fail("cannot become nobody");
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (out < 0 || err < 0) child_fail("cannot open capture files");
    int in = ::open(in_path.c_str(), O_RDONLY);
    if (in >= 0) ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (!dir.empty() && ::chdir(dir.c_str()) != 0) child_fail("cannot chdir to the working directory");
    ::execvp(args[0], args.data());
    child_fail("exec failed (is the program installed and on PATH?)");
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid failed: ") + std::strerror(errno));
  }
  ProcessResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_bytes(out_path);
  result.err = read_bytes(err_path);
  return result;
}

std::string describe(const std::vector<std::string>& argv, const ProcessResult& result) {
  std::string line;
  for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
  line += " -> exit " + std::to_string(result.exit_code);
  if (!result.err.empty()) line += "; stderr: " + result.err;
  return line;
}

}  // namespace kvpatch_test
