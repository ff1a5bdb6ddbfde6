#include "kvpatch/report_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kvpatch/input_error.h"
#include "kvpatch/replace_file.h"

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
// The mode a new file gets from open(2) with 0666: the umask read without keeping it changed.
mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// Where a report for `path` goes, once the checks every write makes have passed: not a directory, and the
// directories above it made, as ruff makes a CI job's missing reports/ directory.
struct ReportTarget {
  fs::path target;     // the link's target, which the rename replaces
  fs::path directory;  // where the temporary file is made
  mode_t mode;         // the existing file's, else a new file's
};

ReportTarget prepare_target(const fs::path& path) {
  const std::string shown = path.string();
  const fs::path target = link_target(path);
  std::error_code ec;
  const fs::file_status status = fs::status(target, ec);
  if (fs::is_directory(status)) {
    throw InputError(shown, 0, "--output-file names a directory", "name a file, e.g. " + (path / "kvpatch.sarif").string());
  }
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(directory, ec)) {
    fs::create_directories(directory, ec);
    if (ec) {
      throw InputError(shown, 0, "cannot write the report: cannot make the directory " + directory.string() + ": " +
                       ec.message(), "a file may stand in its way, or the permissions above it forbid it; name a file elsewhere");
    }
  }
  const mode_t mode =
      fs::exists(status) ? static_cast<mode_t>(status.permissions() & fs::perms::mask) : new_file_mode();
  return {target, directory, mode};
}

// The temporary file beside the target, holding content; throws InputError naming what failed.
fs::path write_temporary(const fs::path& path, const ReportTarget& to, const std::string& content) {
  try {
    return write_temporary_beside(to.target, content, to.mode);
  } catch (const TemporaryFileError& e) {
    if (!e.created()) {
      throw InputError(path.string(), 0, std::string("cannot write the report: ") + e.what() + " (creating a file in " +
                       to.directory.string() + ")", "check the directory's permissions, or name a file elsewhere");
    }
    throw InputError(path.string(), 0, std::string("cannot write the report: ") + e.what(),
                     "check the disk and the permissions of " + to.directory.string() + "; the file, if it was there, is as it was");
  }
}
}  // namespace

void check_report_file_writable(const fs::path& path) {
  const ReportTarget to = prepare_target(path);
  ::unlink(write_temporary(path, to, "").c_str());
}

void write_report_file(const fs::path& path, const std::string& content) {
  const ReportTarget to = prepare_target(path);
  const fs::path temporary = write_temporary(path, to, content);
  if (::rename(temporary.c_str(), to.target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw InputError(path.string(), 0, "cannot write the report: " + why, "check the disk and the permissions of " +
                     to.directory.string() + "; the file, if it was there, is as it was");
  }
}

}  // namespace kvpatch
