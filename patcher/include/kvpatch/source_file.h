#pragma once
// One Python source file as bytes: the BOM kept apart, line starts indexed, line ending detected.
#include <cstddef>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvpatch {

struct SourcePosition {
  int line = 0;    // 1-based
  int column = 0;  // 1-based, in bytes from the start of the line
};

class SourceFile {
public:
  // display_path names the file in reports; content is the whole file (a BOM, if any, is split off).
  SourceFile(std::filesystem::path path, std::string display_path, std::string content);

  const std::filesystem::path& path() const { return path_; }
  const std::string& display_path() const { return display_path_; }
  const std::string& bom() const { return bom_; }
  const std::string& text() const { return text_; }  // the content after the BOM; offsets index it
  const std::string& line_ending() const { return line_ending_; }  // the first one in the file, else "\n"
  std::string content() const { return bom_ + text_; }

  SourcePosition position(std::size_t offset) const;
  std::size_t line_start(int line) const;       // offset of the first byte of a 1-based line
  std::size_t line_content_end(int line) const;  // offset of the line's end, before its line ending
  std::size_t line_end(int line) const;          // offset after the line's line ending
  int line_count() const { return static_cast<int>(line_starts_.size()); }
  std::string_view line_text(int line) const;   // without its line ending
  std::string indentation_of_line(int line) const;

  // Set by load_source_file: what apply compares before it writes.
  std::filesystem::file_time_type modified_time{};
  std::filesystem::perms permissions = std::filesystem::perms::unknown;

  // The `# kvpatch: ignore[ID]` comments some rule has looked up (suppression()), as (line, id), so that one no
  // rule looked up can be reported as suppressing nothing (ignore_comments.h). Recording a look-up leaves the
  // file as it is, and rules see their file as const, hence mutable.
  void note_ignore_looked_up(int line, const std::string& id) const { ignores_looked_up_.emplace(line, id); }
  bool ignore_looked_up(int line, const std::string& id) const { return ignores_looked_up_.count({line, id}) > 0; }

  // Rule ids the run's settings (per-file-ignores, ignore, select) ignore throughout this file, each with the reason
  // its entry gives (PerFileIgnores::reason()); set before the rules run (per_file_ignores.h). nullptr when the rule
  // is not ignored.
  void ignore_in_whole_file(const std::string& id, const std::string& reason) { whole_file_ignores_.emplace(id, reason); }
  const std::string* ignored_in_whole_file(const std::string& id) const {
    const auto found = whole_file_ignores_.find(id);
    return found == whole_file_ignores_.end() ? nullptr : &found->second;
  }

private:
  std::filesystem::path path_;
  std::string display_path_;
  std::string bom_;
  std::string text_;
  std::string line_ending_;
  std::vector<std::size_t> line_starts_;
  mutable std::set<std::pair<int, std::string>> ignores_looked_up_;
  std::map<std::string, std::string> whole_file_ignores_;
};

inline constexpr std::size_t kMaxSourceBytes = std::size_t{4} * 1024 * 1024;

// Reads and checks a file: exists, regular, readable, at most max_bytes, no NUL bytes, valid UTF-8.
// Throws InputError naming the file (and the line, for encoding errors).
SourceFile load_source_file(const std::filesystem::path& path, const std::string& display_path,
                            std::size_t max_bytes = kMaxSourceBytes);

// The checks on bytes about to become a SourceFile, wherever they came from (disk or a git blob):
// at most max_bytes, no NUL bytes, valid UTF-8. `then` ends each remedy (e.g. "; then stage it
// again"). Throws InputError naming display_path and, for bad bytes, their line and column.
void require_source_text(std::string_view content, const std::string& display_path, std::string_view then = "",
                         std::size_t max_bytes = kMaxSourceBytes);

// Byte offset of the first invalid UTF-8 sequence, or npos when the text is valid.
std::size_t first_invalid_utf8(std::string_view text);

}  // namespace kvpatch
