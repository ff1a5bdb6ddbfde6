// doctest entry point for the git hook tests: git and kvpatch run apart from the user's git setup.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "support/temp_dir.h"

int main(int argc, char** argv) {
  // A user's ~/.gitconfig (core.hooksPath, signing) or a surrounding hook's GIT_* variables must not
  // leak into the scratch repositories.
  kvpatch_test::TempDir home("kvpatch-hook-home");
  ::setenv("HOME", home.path().c_str(), 1);
  ::setenv("XDG_CONFIG_HOME", (home.path() / ".config").c_str(), 1);
  ::setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
  for (const char* name : {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                           "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_PREFIX"}) {
    ::unsetenv(name);
  }
  // Scratch directories are never inside a repository, even when the temp directory is.
  const std::filesystem::path temp = std::filesystem::canonical(std::filesystem::temp_directory_path());
  ::setenv("GIT_CEILING_DIRECTORIES", temp.c_str(), 1);
  doctest::Context context(argc, argv);
  return context.run();
}
