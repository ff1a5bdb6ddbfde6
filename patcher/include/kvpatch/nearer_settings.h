#pragma once
// kvpatch reads one settings file per run: the one found from the PATHs' common directory (for `pre-commit`,
// the work tree's top). ruff resolves its settings per file, so a user who keeps [tool.kvpatch] next to the
// code (SGLang's python/pyproject.toml, say) and runs kvpatch from above it would have those files judged by
// other settings without a word. This finds such files, so the CLI can say so.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kvpatch {

// A settings file nearer to some checked files than the one the run reads.
struct NearerSettings {
  std::filesystem::path file;  // the nearer settings file
  std::string first_source;    // the first checked file it governs, as reports name it
  std::size_t sources = 0;     // how many checked files it governs
};

// One checked file: its path on disk (absolute, or relative to the current directory) and its report name.
struct CheckedSource {
  std::filesystem::path path;
  std::string display_path;
};

// The settings files nearest to the sources (searched as find_project_config does, from each file's
// directory upward) that are not `in_force`, in order of first appearance. `in_force` is the file the run
// reads, or nullopt when it found none.
std::vector<NearerSettings> nearer_settings(const std::vector<CheckedSource>& sources,
                                            const std::optional<std::filesystem::path>& in_force);

}  // namespace kvpatch
