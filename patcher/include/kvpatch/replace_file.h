#pragma once
// Files replaced whole, never left half-written: `apply`'s sources, the git hook, `check --output-file`'s report.
// The new bytes go into a temporary file beside the old one, which the caller renames over it.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

namespace kvpatch {

// Where a write to `path` lands when `path` is a link: the file the links lead to, as a shell's `>` writes, even
// when that file is not there yet. After 40 links (the kernel's limit) `path` itself, which a rename then replaces.
std::filesystem::path link_target(std::filesystem::path path);

// Why write_temporary_beside() failed: strerror's text, and whether the temporary file had been made (it is removed
// again) or could not be made at all.
class TemporaryFileError : public std::runtime_error {
public:
  TemporaryFileError(const std::string& why, bool created) : std::runtime_error(why), created_(created) {}
  bool created() const { return created_; }

private:
  bool created_;
};

// Writes content to a new file `.NAME.kvpatch-XXXXXX` in target's directory (NAME: target's file name), with `mode`
// set on the descriptor (so the umask cannot narrow it) and the bytes synced; returns its path. `before_write`, when
// given, runs on the descriptor first (apply gives the file its original's owner there).
std::filesystem::path write_temporary_beside(const std::filesystem::path& target, const std::string& content,
                                             mode_t mode, const std::function<void(int)>& before_write = {});

}  // namespace kvpatch
