#include "kvpatch/apply_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kvpatch/edited_code_check.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/replace_file.h"

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
struct Prepared {
  const FileReport* report = nullptr;
  fs::path temporary;
  fs::path target;
  std::string ownership_changed;  // AppliedFile's
};

std::string errno_text() { return std::strerror(errno); }

// Empty when the file on disk still has the content and time it had when it was read.
std::string changed_since_read(const SourceFile& source) {
  std::error_code ec;
  if (!fs::is_regular_file(source.path(), ec)) return "it is no longer a regular file";
  if (fs::last_write_time(source.path(), ec) != source.modified_time || ec) return "it was modified after kvpatch read it";
  std::ifstream in(source.path(), std::ios::binary);
  if (!in) return "it can no longer be read";
  std::ostringstream now;
  now << in.rdbuf();
  if (now.str() != source.content()) return "its content changed after kvpatch read it";
  return "";
}

// The rename puts a new inode in the original's place, created by this process: without this, root
// patching a mounted checkout (a container, sudo) would leave root-owned files in the user's tree.
// Empty when the owner and group are kept, else what the new file is owned by.
std::string keep_owner(int fd, const fs::path& target) {
  struct stat original {};
  if (::stat(target.c_str(), &original) != 0) return "";
  if (::fchown(fd, original.st_uid, original.st_gid) == 0) return "";
  // A user other than root may still keep the group, if they belong to it.
  const bool group_kept = ::fchown(fd, static_cast<uid_t>(-1), original.st_gid) == 0;
  struct stat now {};
  if (::fstat(fd, &now) != 0) return "";
  if (now.st_uid == original.st_uid && now.st_gid == original.st_gid) return "";
  return "it is now owned by uid " + std::to_string(now.st_uid) + (group_kept ? "" : " gid " + std::to_string(now.st_gid)) +
         " (it was uid " + std::to_string(original.st_uid) + " gid " + std::to_string(original.st_gid) +
         "), which only root could keep";
}

struct Temporary {
  fs::path path;
  std::string ownership_changed;
};

// Writes content next to target; returns the temporary or throws with the reason.
Temporary write_temporary(const SourceFile& source, const fs::path& target, const std::string& content) {
  if (::access(target.c_str(), W_OK) != 0) throw std::runtime_error("the file is not writable: " + errno_text());
  Temporary temporary;
  try {
    // Owner first: chown may clear set-id bits, which the mode set after it restores.
    temporary.path = write_temporary_beside(target, content, static_cast<mode_t>(source.permissions) & 07777,
                                            [&](int fd) { temporary.ownership_changed = keep_owner(fd, target); });
  } catch (const TemporaryFileError& e) {
    throw std::runtime_error(std::string(e.created() ? "cannot write the temporary file: "
                                                     : "cannot create a temporary file next to it: ") + e.what());
  }
  return temporary;
}

void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

ApplyResult apply_files(const std::vector<const FileReport*>& files) {
  ApplyResult result;
  std::vector<Prepared> prepared;
  auto discard = [&] {
    std::error_code ec;
    for (const Prepared& p : prepared) fs::remove(p.temporary, ec);
  };
  for (const FileReport* report : files) {
    if (auto broken = code_broken_by_edits(*report, "nothing was written")) result.errors.push_back(*broken);
  }
  if (!result.errors.empty()) return result;
  for (const FileReport* report : files) {
    if (report->edits.empty()) continue;
    const SourceFile& source = report->file->source;
    try {
      const std::string content = source.bom() + report->edits.apply(source.text());
      const fs::path target = link_target(source.path());
      Temporary temporary = write_temporary(source, target, content);
      prepared.push_back({report, std::move(temporary.path), target, std::move(temporary.ownership_changed)});
    } catch (const std::exception& e) {
      result.errors.push_back({source.display_path(), 0, 0, e.what(), "nothing was written; fix the cause and run apply again"});
    }
  }
  // Every original must be as it was read, or none is replaced.
  for (const Prepared& p : prepared) {
    const std::string why = changed_since_read(p.report->file->source);
    if (!why.empty()) {
      result.errors.push_back({p.report->file->source.display_path(), 0, 0, "refusing to patch: " + why,
                               "nothing was written; run kvpatch again on the current file"});
    }
  }
  if (!result.errors.empty()) {
    discard();
    return result;
  }
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    const Prepared& p = prepared[i];
    std::error_code ec;
    fs::rename(p.temporary, p.target, ec);
    if (ec) {
      // A rename fails only on a broken file system; the remaining temporaries are dropped.
      result.errors.push_back({p.report->file->source.display_path(), 0, 0, "rename failed: " + ec.message(),
                               i == 0 ? "nothing was written" : "files listed as patched were written; the others were not"});
      for (std::size_t k = i; k < prepared.size(); ++k) fs::remove(prepared[k].temporary, ec);
      return result;
    }
    sync_directory(p.target.parent_path());
    result.patched.push_back(
        {p.report->file->source.display_path(), static_cast<int>(p.report->edits.size()), p.ownership_changed});
  }
  return result;
}

}  // namespace kvpatch
