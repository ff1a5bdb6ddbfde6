#include "kvpatch/nearer_settings.h"

#include <algorithm>
#include <map>
#include <system_error>
#include <utility>

#include "kvpatch/project_config.h"

namespace fs = std::filesystem;

namespace kvpatch {

namespace {
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  const bool same = fs::equivalent(a, b, ec);
  return ec ? fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec) : same;
}
}  // namespace

std::vector<NearerSettings> nearer_settings(const std::vector<CheckedSource>& sources,
                                            const std::optional<fs::path>& in_force) {
  std::vector<NearerSettings> found;
  // Sources share directories: each directory's upward search, and its comparison with `in_force`, is made once.
  // nullopt: the directory's nearest settings file is the one in force, or there is none.
  std::map<fs::path, std::optional<fs::path>> nearer_for_directory;
  for (const CheckedSource& source : sources) {
    const fs::path dir = source.path.parent_path().empty() ? fs::path(".") : source.path.parent_path();
    auto cached = nearer_for_directory.find(dir);
    if (cached == nearer_for_directory.end()) {
      std::optional<fs::path> nearest = find_project_config(dir);
      if (nearest && in_force && same_file(*nearest, *in_force)) nearest.reset();
      cached = nearer_for_directory.emplace(dir, std::move(nearest)).first;
    }
    const std::optional<fs::path>& nearer = cached->second;
    if (!nearer) continue;
    auto entry = std::find_if(found.begin(), found.end(), [&](const NearerSettings& n) { return n.file == *nearer; });
    if (entry == found.end()) {
      found.push_back({*nearer, source.display_path, 0});
      entry = found.end() - 1;
    }
    ++entry->sources;
  }
  return found;
}

}  // namespace kvpatch
