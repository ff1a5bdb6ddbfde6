#pragma once
// The edits that fix one finding, as `apply` makes them: the finding's own edits that are in its file's EditSet,
// and any module-level definition they call (FileReport::helper_edits). Every finding a report calls fixable has
// them; the machine-readable reports (JSON, rdjson) hand them to editors and review bots, which may apply one
// finding's fix alone. Positions are 1-based lines and byte columns, as every report gives them.
#include <string>
#include <vector>

#include "kvpatch/findings.h"
#include "kvpatch/source_file.h"

namespace kvpatch {

struct PositionedEdit {
  SourcePosition start;
  SourcePosition end;  // exclusive; equal to start for an insertion
  std::string content;
};

// Empty when apply makes no edit for the finding (nothing to fix, or no fix kvpatch can make).
std::vector<Edit> finding_edits(const FileReport& file, const PlanSite& site);
std::vector<Edit> finding_edits(const FileReport& file, const FieldFinding& field);
std::vector<Edit> finding_edits(const FileReport& file, const CastFinding& cast);
std::vector<Edit> finding_edits(const FileReport& file, const RunScaleFinding& run);

std::vector<PositionedEdit> positioned(const SourceFile& source, const std::vector<Edit>& edits);

}  // namespace kvpatch
