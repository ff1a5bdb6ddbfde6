#pragma once
// Helpers shared by the unit suites: parse a snippet, find nodes in it, scratch directories.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "kvpatch/python_syntax.h"

namespace kvpatch::test {

inline std::shared_ptr<const ParsedFile> parse(const std::string& code) {
  return std::make_shared<const ParsedFile>(parse_source_file(SourceFile("snippet.py", "snippet.py", code)));
}

// The first node of the given type whose text starts with `starts` (source order, parents first).
inline TSNode find_node(const ParsedFile& file, const std::string& type, const std::string& starts = "") {
  TSNode found{};
  bool done = false;
  syntax::walk(file.tree.root(), [&](TSNode n) {
    if (done) return false;
    if (syntax::type(n) == type && file.text(n).substr(0, starts.size()) == starts) {
      found = n;
      done = true;
    }
    return !done;
  });
  REQUIRE_MESSAGE(done, "no " << type << " node starting with \"" << starts << "\"");
  return found;
}

// A directory under the system temp dir, removed (with everything in it) at scope exit.
class ScratchDir {
public:
  ScratchDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("kvpatch-unit-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& content) const {
    std::filesystem::path p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace kvpatch::test
