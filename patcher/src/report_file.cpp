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
}  // namespace

void write_report_file(const fs::path& path, const std::string& content) {
  const std::string shown = path.string();
  const fs::path target = link_target(path);
  std::error_code ec;
  const fs::file_status status = fs::status(target, ec);
  if (fs::is_directory(status)) {
    throw InputError(shown, 0, "--output-file names a directory", "name a file, e.g. " + (path / "kvpatch.sarif").string());
  }
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // A CI job names a reports/ directory that its checkout lacks: made here, as ruff makes it.
  if (!fs::is_directory(directory, ec)) {
    fs::create_directories(directory, ec);
    if (ec) {
      throw InputError(shown, 0, "cannot write the report: cannot make the directory " + directory.string() + ": " +
                       ec.message(), "a file may stand in its way, or the permissions above it forbid it; name a file elsewhere");
    }
  }
  const mode_t mode =
      fs::exists(status) ? static_cast<mode_t>(status.permissions() & fs::perms::mask) : new_file_mode();
  fs::path temporary;
  try {
    temporary = write_temporary_beside(target, content, mode);
  } catch (const TemporaryFileError& e) {
    if (!e.created()) {
      throw InputError(shown, 0, std::string("cannot write the report: ") + e.what() + " (creating a file in " +
                       directory.string() + ")", "check the directory's permissions, or name a file elsewhere");
    }
    throw InputError(shown, 0, std::string("cannot write the report: ") + e.what(), "check the disk and the permissions of " +
                     directory.string() + "; the file, if it was there, is as it was");
  }
  if (::rename(temporary.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw InputError(shown, 0, "cannot write the report: " + why, "check the disk and the permissions of " +
                     directory.string() + "; the file, if it was there, is as it was");
  }
}

}  // namespace kvpatch
