#include "kvpatch/exclude_patterns.h"

#include <fnmatch.h>

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
// Whether path segments [j..] match pattern segments [i..]: a segment "**" matches any number of whole
// segments (none included), as in ruff's and git's globs; any other segment is an fnmatch pattern for one.
bool segments_match(const std::vector<std::string>& pattern, std::size_t i, const std::vector<std::string>& path,
                    std::size_t j) {
  if (i == pattern.size()) return j == path.size();
  if (pattern[i] == "**") {
    for (std::size_t k = j; k <= path.size(); ++k) {
      if (segments_match(pattern, i + 1, path, k)) return true;
    }
    return false;
  }
  return j < path.size() && fnmatch(pattern[i].c_str(), path[j].c_str(), 0) == 0 &&
         segments_match(pattern, i + 1, path, j + 1);
}

std::vector<std::string> split_segments(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t slash; (slash = text.find('/', start)) != std::string::npos; start = slash + 1) {
    parts.push_back(text.substr(start, slash - start));
  }
  parts.push_back(text.substr(start));
  return parts;
}
}  // namespace

std::optional<std::string> exclude_pattern(const std::string& text) {
  std::string pattern = text;
  while (pattern.starts_with("./")) pattern.erase(0, 2);  // `--exclude ./test`, as a shell completes it
  while (pattern.size() > 1 && pattern.back() == '/') pattern.pop_back();
  if (pattern.empty() || pattern == "." || pattern.front() == '/') return std::nullopt;
  return pattern;
}

bool excluded(const ExcludePatterns& exclude, const fs::path& file) {
  if (exclude.patterns.empty()) return false;
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::absolute(exclude.base, ec), ec);
  const fs::path rel = fs::weakly_canonical(fs::absolute(file, ec), ec).lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") return false;
  // The path and each directory above it within the base directory: a pattern naming a directory excludes what
  // is under it.
  std::vector<std::vector<std::string>> patterns;
  for (const std::string& pattern : exclude.patterns) patterns.push_back(split_segments(pattern));
  std::vector<std::string> prefix;
  for (const fs::path& part : rel) {
    prefix.push_back(part.string());
    for (const auto& pattern : patterns) {
      if (segments_match(pattern, 0, prefix, 0)) return true;
    }
  }
  return false;
}

const ExcludePatterns* excluded_by(const std::vector<ExcludePatterns>& excludes, const fs::path& file) {
  for (const ExcludePatterns& e : excludes) {
    if (excluded(e, file)) return &e;
  }
  return nullptr;
}

}  // namespace kvpatch
