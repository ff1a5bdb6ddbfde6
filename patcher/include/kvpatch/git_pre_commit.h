#pragma once
// `kvpatch pre-commit`: the rules run over the staged content of the files a commit would record.
#include "kvpatch/git_staged.h"
#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

// Each staged blob a rule selects is checked (size, NUL bytes, UTF-8), parsed and analysed like a
// file `check` reads; reports name the staged path and lines of the staged content. Blobs no rule
// selects are skipped before any check. Problems become Run::errors; the other files are analysed.
//
// context: the other tracked files, as staged (the index holds their committed content). When a staged file
// is analysed, those that a rule selects are analysed too, only to link them with the staged ones
// (cross_file.h): a context file is reported only for a cast there whose run() a staged file's plan sites
// may plan, and then with that cast and its finding alone. A context file a linking rule selects that kvpatch
// cannot read or parse is a Run::errors entry: the staged plans cannot be checked against its casts. Staged and
// context files alike are searched first, as staged, for the wrapper subclasses a staged file may import
// (project_classes.h).
Run analyze_staged(const RuleSet& rules, const GitRepository& repo, const StagedFiles& staged,
                   const StagedFiles& context = {});

}  // namespace kvpatch
