#include "kvpatch/finding_edits.h"

#include <algorithm>
#include <cstddef>
#include <optional>

namespace kvpatch {
namespace {
// A finding's edits when apply makes all of them (a file linked in only for its casts has none), with the helper
// definitions they call; else none.
std::vector<Edit> made(const FileReport& file, std::vector<Edit> own) {
  const std::vector<Edit>& all = file.edits.edits();
  const bool in_set = std::all_of(own.begin(), own.end(),
                                  [&](const Edit& e) { return std::find(all.begin(), all.end(), e) != all.end(); });
  if (own.empty() || !in_set) return {};
  const std::size_t made_here = own.size();
  for (const auto& helper : file.helper_edits) {
    const std::string call = helper.first + "(";
    const bool called = std::any_of(own.begin(), own.begin() + static_cast<std::ptrdiff_t>(made_here),
                                    [&](const Edit& e) { return e.replacement.find(call) != std::string::npos; });
    if (called) own.push_back(helper.second);
  }
  std::sort(own.begin(), own.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  return own;
}

std::vector<Edit> one(const std::optional<Edit>& fix) { return fix ? std::vector<Edit>{*fix} : std::vector<Edit>{}; }
}  // namespace

std::vector<Edit> finding_edits(const FileReport& file, const PlanSite& site) {
  if (site.status != SiteStatus::Missing || !site.unbuildable.empty()) return {};
  return made(file, one(site.fix));
}

std::vector<Edit> finding_edits(const FileReport& file, const FieldFinding& field) {
  if (field.present || field.ignored) return {};
  return made(file, one(field.fix));
}

std::vector<Edit> finding_edits(const FileReport& file, const CastFinding& cast) {
  if (!cast.redundant) return {};
  return made(file, cast.fix);
}

std::vector<Edit> finding_edits(const FileReport& file, const RunScaleFinding& run) {
  if (run.present || run.ignored) return {};
  return made(file, one(run.fix));
}

std::vector<PositionedEdit> positioned(const SourceFile& source, const std::vector<Edit>& edits) {
  std::vector<PositionedEdit> out;
  out.reserve(edits.size());
  for (const Edit& e : edits) out.push_back({source.position(e.begin), source.position(e.end), e.replacement});
  return out;
}

}  // namespace kvpatch
