#pragma once
// `check --output-file FILE`: the report written to a file instead of stdout, as ruff's option of that name.
#include <filesystem>
#include <string>

namespace kvpatch {

// Writes content to path whole or not at all: into a temporary file beside it (flushed and synced), then renamed
// over it, so that a reader (a CI upload step) never sees half a report and a failed write leaves the old one.
// Missing directories above it are made. A link is followed and its target replaced. A new file gets 0666 less
// the umask, an existing one keeps its mode.
// Throws InputError naming the path, what failed and what to do.
void write_report_file(const std::filesystem::path& path, const std::string& content);

// Whether write_report_file(path, ...) can write there now: its checks, the directories it would make made, and a
// temporary file created beside the target and removed. For `check --fix`, which changes sources before it has its
// report: a report that cannot be written then stops it before any source is touched. Throws as write_report_file.
void check_report_file_writable(const std::filesystem::path& path);

}  // namespace kvpatch
