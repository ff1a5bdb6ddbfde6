#include "kvpatch/source_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kvpatch/input_error.h"

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

int line_of_offset(std::string_view text, std::size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

int column_of_offset(std::string_view text, std::size_t offset) {
  const std::size_t newline = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t start = newline == std::string_view::npos || offset == 0 ? 0 : newline + 1;
  return static_cast<int>(offset - start) + 1;
}
}  // namespace

SourceFile::SourceFile(fs::path path, std::string display_path, std::string content)
    : path_(std::move(path)), display_path_(std::move(display_path)) {
  if (std::string_view(content).substr(0, kUtf8Bom.size()) == kUtf8Bom) {
    bom_ = std::string(kUtf8Bom);
    text_ = content.substr(kUtf8Bom.size());
  } else {
    text_ = std::move(content);
  }
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
  const std::size_t first_newline = text_.find('\n');
  line_ending_ = (first_newline != std::string::npos && first_newline > 0 && text_[first_newline - 1] == '\r')
                     ? "\r\n"
                     : "\n";
}

SourcePosition SourceFile::position(std::size_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const auto line = static_cast<int>(it - line_starts_.begin());
  return {line, static_cast<int>(offset - line_starts_[static_cast<std::size_t>(line - 1)]) + 1};
}

std::size_t SourceFile::line_start(int line) const {
  return line_starts_.at(static_cast<std::size_t>(line - 1));
}

std::size_t SourceFile::line_end(int line) const {
  return line < line_count() ? line_starts_[static_cast<std::size_t>(line)] : text_.size();
}

std::size_t SourceFile::line_content_end(int line) const {
  std::size_t end = line_end(line);
  if (end > line_start(line) && text_[end - 1] == '\n') --end;
  if (end > line_start(line) && text_[end - 1] == '\r') --end;
  return end;
}

std::string_view SourceFile::line_text(int line) const {
  const std::size_t start = line_start(line);
  return std::string_view(text_).substr(start, line_content_end(line) - start);
}

std::string SourceFile::indentation_of_line(int line) const {
  std::string_view text = line_text(line);
  const std::size_t n = text.find_first_not_of(" \t");
  return std::string(text.substr(0, n == std::string_view::npos ? text.size() : n));
}

std::size_t first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    unsigned min_code = 0;
    unsigned code = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { extra = 1; min_code = 0x80; code = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { extra = 2; min_code = 0x800; code = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { extra = 3; min_code = 0x10000; code = c & 0x07; }
    else return i;
    if (i + extra >= text.size()) return i;  // truncated sequence
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      code = (code << 6) | (cc & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    if (code < min_code || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return i;
    i += extra + 1;
  }
  return std::string_view::npos;
}

void require_source_text(std::string_view content, const std::string& display_path, std::string_view then,
                         std::size_t max_bytes) {
  const std::string suffix(then);
  if (content.size() > max_bytes) {
    throw InputError(display_path, 0,
                     "file is " + std::to_string(content.size()) + " bytes, over the limit of " +
                         std::to_string(max_bytes),
                     "kvpatch handles source files up to 4 MiB; pass the backend file itself" + suffix);
  }
  const std::size_t nul = content.find('\0');
  if (nul != std::string_view::npos) {
    throw InputError(display_path, line_of_offset(content, nul), "binary file (contains a NUL byte)",
                     "pass Python source files only" + suffix, column_of_offset(content, nul));
  }
  const std::size_t bad = first_invalid_utf8(content);
  if (bad != std::string_view::npos) {
    throw InputError(display_path, line_of_offset(content, bad), "not valid UTF-8",
                     "re-encode the file as UTF-8 (Python 3's default source encoding)" + suffix,
                     column_of_offset(content, bad));
  }
}

SourceFile load_source_file(const fs::path& path, const std::string& display_path, std::size_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw InputError(display_path, 0, "no such file", "check the path");
  }
  if (!fs::is_regular_file(status)) {
    throw InputError(display_path, 0, "not a regular file", "pass a Python file or a directory");
  }
  const auto size = fs::file_size(path, ec);
  if (ec) throw InputError(display_path, 0, "cannot read its size: " + ec.message(), "check the file's permissions");
  if (size > max_bytes) {
    throw InputError(display_path, 0,
                     "file is " + std::to_string(size) + " bytes, over the limit of " + std::to_string(max_bytes),
                     "kvpatch handles source files up to 4 MiB; pass the backend file itself");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(display_path, 0, std::string("cannot open: ") + std::strerror(errno),
                     "check the file's permissions");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(display_path, 0, "read failed", "check the file and the disk");
  std::string content = buffer.str();

  require_source_text(content, display_path);
  SourceFile file(path, display_path, std::move(content));
  file.modified_time = fs::last_write_time(path, ec);
  file.permissions = fs::status(path, ec).permissions();
  return file;
}

}  // namespace kvpatch
