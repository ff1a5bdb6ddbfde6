#pragma once
// What one file's rules cannot see: a wrapper planned in one module and run in another. Each file is
// analysed on its own, so a run() whose wrapper has no plan site in its file keeps its KV cast, while
// apply threads the plan sites of another file that may plan that very wrapper: an FP8 plan handed the
// BF16 cast, which FlashInfer refuses at the first decode step. Such a cast becomes a run-input finding.
#include <string>
#include <vector>

#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

// For every required cast whose consumer's wrapper has no plan site in its file, while another file of
// the run has plan sites of the same rule that are (or will be) threaded: a run-input-unknown finding at
// the cast, naming those sites. Check then fails there; apply cannot fix it.
void link_files(const RuleSet& rules, Run& run);

// link_files() over the run's files and `context`: files analysed like them but outside the run (the other
// modules of a named file's package, the committed files beside a commit's). Each context file is then kept
// only if linking found in it a cast whose run() a file of the run may plan, and only with those casts and
// their findings; its sites held back are not reported, as no edit is made to it.
void link_files(const RuleSet& rules, Run& run, std::vector<FileReport> context);

// Whether link_files() could pair a file of this text with another: a plan-site rule selects it, or a cast rule
// one of whose consumers plan-site rules plan. (Other rules' findings never reach across files.)
bool may_link(const RuleSet& rules, const std::string& text);

}  // namespace kvpatch
