#include "kvpatch/git_pre_commit.h"
#include "kvpatch/cross_file.h"
#include "kvpatch/flashinfer_version.h"

#include <algorithm>
#include <memory>

#include "kvpatch/input_error.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/rule_engine.h"
#include "kvpatch/source_file.h"

namespace kvpatch {

namespace {
bool any_rule_selects(const RuleSet& rules, const std::string& text) {
  auto selects = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& r) { return r.files.matches(text); });
  };
  return selects(rules.plan_site_rules) || selects(rules.field_rules) || selects(rules.cast_rules);
}

FileError to_file_error(const InputError& e) { return {e.file(), e.line(), e.column(), e.what(), e.remedy()}; }
}  // namespace

Run analyze_staged(const RuleSet& rules, const GitRepository& repo, const StagedFiles& staged) {
  Run run;
  run.root = repo.work_tree();
  run.parameters = rules.parameters;
  run.parameter_origins = rules.parameter_origins;
  run.errors = staged.errors;
  for (const StagedFile& file : staged.files) {
    try {
      std::string content = read_staged_blob(repo, file);
      if (!any_rule_selects(rules, content)) continue;
      require_source_text(content, file.path, "; then stage it again");
      SourceFile source(repo.work_tree() / file.path, file.path, std::move(content));
      auto parsed = std::make_shared<const ParsedFile>(parse_source_file(std::move(source)));
      // The FlashInfer pin is read from the work tree around the file (python/pyproject.toml in SGLang).
      std::string unpinned;
      const auto target =
          flashinfer_target(rules.parameters, repo.work_tree() / file.path, rules.parameter_origins, &unpinned);
      run.files.push_back(analyze_file(rules, parsed, target, unpinned));
    } catch (const InputError& e) {
      run.errors.push_back(to_file_error(e));
    } catch (const OverlappingEdit& e) {
      run.errors.push_back({file.path, 0, 0, std::string("rules asked for clashing edits: ") + e.what(),
                            "edit this file by hand or suppress one finding with # kvpatch: ignore[RULE-ID]"});
    }
  }
  link_files(rules, run);
  return run;
}

}  // namespace kvpatch
