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

// For every required cast whose consumer's wrapper has no plan site in its file, while another file has
// plan sites of the same rule that plan the KV dtype (or that apply would thread): a run-input-unknown finding
// at the cast, naming those sites, and apply leaves the sites it would thread unthreaded (their reasons name
// the cast), unless the cast is marked `# kvpatch: ignore[...]`. A file whose sites are held back is analysed
// again, as its casts may change. Check fails at such a cast; apply cannot fix it.
// `context`: files analysed like the run's but outside it (the other modules of a named file's package, the
// committed files beside a commit's), never edited, so only their sites as written count. A context file is
// kept in the run only if linking found in it a cast whose run() a file of the run may plan, and then with
// those casts and their findings alone.
void link_files(const RuleSet& rules, Run& run, std::vector<FileReport> context = {});

// Whether link_files() could pair a file of this text with another: a plan-site rule selects it, or a cast rule
// one of whose consumers plan-site rules plan. (Other rules' findings never reach across files.)
bool may_link(const RuleSet& rules, const std::string& text);

}  // namespace kvpatch
