#pragma once
// `kvpatch pre-commit`: the rules run over the staged content of the files a commit would record.
#include "kvpatch/git_staged.h"
#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

// Each staged blob a rule selects is checked (size, NUL bytes, UTF-8), parsed and analysed like a
// file `check` reads; reports name the staged path and lines of the staged content. Blobs no rule
// selects are skipped before any check. Problems become Run::errors; the other files are analysed.
Run analyze_staged(const RuleSet& rules, const GitRepository& repo, const StagedFiles& staged);

}  // namespace kvpatch
