// Byte-exact file helpers: no text-mode translation, so CRLF, a BOM and a missing final newline survive.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kvpatch_test {

std::string read_bytes(const std::filesystem::path& file);
void write_bytes(const std::filesystem::path& file, const std::string& bytes);

// Splits after each '\n', keeping the terminators; a last line without one is kept as is.
std::vector<std::string> split_lines_keep_ends(const std::string& bytes);

// A command's output as lines, without their '\n' (std::getline's split: no empty last line after a final '\n').
std::vector<std::string> lines_of(const std::string& text);

// Replaces every occurrence of `from` with `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to);

// The value of an environment variable the CTest registration must set; throws naming it otherwise.
std::string required_env(const char* name);

}  // namespace kvpatch_test
