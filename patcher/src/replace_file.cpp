#include "kvpatch/replace_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
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

fs::path link_target(fs::path path) {
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(path, ec); ++hops) {
    const fs::path next = fs::read_symlink(path, ec);
    if (ec) break;
    path = next.is_absolute() ? next : path.parent_path() / next;
  }
  return path;
}

fs::path write_temporary_beside(const fs::path& target, const std::string& content, mode_t mode,
                                const std::function<void(int)>& before_write) {
  const std::string pattern = (target.parent_path() / ("." + target.filename().string() + ".kvpatch-XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw TemporaryFileError(std::strerror(errno), false);
  fs::path temporary(name.data());  // not const: returned by move
  if (before_write) before_write(fd);
  const bool ok = write_all(fd, content) && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
  const std::string failure = ok ? "" : std::strerror(errno);
  if (::close(fd) != 0 || !ok) {
    const std::string why = failure.empty() ? std::strerror(errno) : failure;
    ::unlink(temporary.c_str());
    throw TemporaryFileError(why, true);
  }
  return temporary;
}

}  // namespace kvpatch
