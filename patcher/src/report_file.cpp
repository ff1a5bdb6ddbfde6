#include "kvpatch/report_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "kvpatch/input_error.h"

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
std::string errno_text() { return std::strerror(errno); }

// The mode a new file gets from open(2) with 0666: the umask read without keeping it changed.
mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// Through links to the file they name, as a shell's `>` writes, even when that file is not there yet. After 40
// links (the kernel's limit) the path is taken as it is, and the rename replaces that link.
fs::path link_target(fs::path path) {
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(path, ec); ++hops) {
    const fs::path next = fs::read_symlink(path, ec);
    if (ec) break;
    path = next.is_absolute() ? next : path.parent_path() / next;
  }
  return path;
}

bool write_all(int fd, const std::string& content) {
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}
}  // namespace

void write_report_file(const fs::path& path, const std::string& content) {
  const std::string shown = path.string();
  std::error_code ec;
  const fs::path target = link_target(path);
  const fs::file_status status = fs::status(target, ec);
  if (fs::is_directory(status)) {
    throw InputError(shown, 0, "--output-file names a directory", "name a file, e.g. " + (path / "kvpatch.sarif").string());
  }
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // A CI job names a reports/ directory that its checkout lacks: made here, as ruff makes it.
  if (!fs::is_directory(directory, ec) && (fs::create_directories(directory, ec), ec)) {
    throw InputError(shown, 0, "cannot write the report: cannot make the directory " + directory.string() + ": " +
                     ec.message(), "a file may stand in its way, or the permissions above it forbid it; name a file elsewhere");
  }
  const mode_t mode =
      fs::exists(status) ? static_cast<mode_t>(status.permissions() & fs::perms::mask) : new_file_mode();
  std::string pattern = (directory / ("." + target.filename().string() + ".kvpatch-XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw InputError(shown, 0, "cannot write the report: " + errno_text() + " (creating a file in " +
                     directory.string() + ")", "check the directory's permissions, or name a file elsewhere");
  }
  const fs::path temporary(name.data());
  // The mode is set on the descriptor, so the umask cannot narrow an existing file's.
  bool ok = write_all(fd, content) && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
  const std::string failure = ok ? "" : errno_text();
  ok = ::close(fd) == 0 && ok;
  if (ok && ::rename(temporary.c_str(), target.c_str()) != 0) ok = false;
  if (!ok) {
    const std::string why = failure.empty() ? errno_text() : failure;
    ::unlink(temporary.c_str());
    throw InputError(shown, 0, "cannot write the report: " + why, "check the disk and the permissions of " +
                     directory.string() + "; the file, if it was there, is as it was");
  }
}

}  // namespace kvpatch
