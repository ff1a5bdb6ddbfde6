#include "kvpatch/git_pre_commit.h"

#include <algorithm>
#include <memory>

#include "kvpatch/input_error.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/rule_engine.h"

namespace kvpatch {

namespace {
bool any_rule_selects(const RuleSet& rules, const std::string& text) {
  auto selects = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& r) { return r.files.matches(text); });
  };
  return selects(rules.plan_site_rules) || selects(rules.field_rules) || selects(rules.cast_rules);
}

int line_of(const std::string& text, std::size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

int column_of(const std::string& text, std::size_t offset) {
  const std::size_t newline = offset == 0 ? std::string::npos : text.rfind('\n', offset - 1);
  return static_cast<int>(offset - (newline == std::string::npos ? 0 : newline + 1)) + 1;
}

// The checks load_source_file makes on a file on disk, made on staged bytes.
void require_source_text(const std::string& path, const std::string& content) {
  if (content.size() > kMaxSourceBytes) {
    throw InputError(path, 0,
                     "staged file is " + std::to_string(content.size()) + " bytes, over the limit of " +
                         std::to_string(kMaxSourceBytes),
                     "kvpatch handles source files up to 4 MiB");
  }
  if (const std::size_t nul = content.find('\0'); nul != std::string::npos) {
    throw InputError(path, line_of(content, nul), "binary file (contains a NUL byte)", "stage Python source only",
                     column_of(content, nul));
  }
  if (const std::size_t bad = first_invalid_utf8(content); bad != std::string::npos) {
    throw InputError(path, line_of(content, bad), "not valid UTF-8",
                     "re-encode the file as UTF-8 (Python 3's default source encoding) and stage it again",
                     column_of(content, bad));
  }
}

FileError to_file_error(const InputError& e) { return {e.file(), e.line(), e.column(), e.what(), e.remedy()}; }
}  // namespace

Run analyze_staged(const RuleSet& rules, const GitRepository& repo, const StagedFiles& staged) {
  Run run;
  run.root = repo.work_tree();
  run.parameters = rules.parameters;
  run.errors = staged.errors;
  for (const StagedFile& file : staged.files) {
    try {
      std::string content = read_staged_blob(repo, file);
      if (!any_rule_selects(rules, content)) continue;
      require_source_text(file.path, content);
      SourceFile source(repo.work_tree() / file.path, file.path, std::move(content));
      auto parsed = std::make_shared<const ParsedFile>(parse_source_file(std::move(source)));
      run.files.push_back(analyze_file(rules, parsed));
    } catch (const InputError& e) {
      run.errors.push_back(to_file_error(e));
    } catch (const OverlappingEdit& e) {
      run.errors.push_back({file.path, 0, 0, std::string("rules asked for clashing edits: ") + e.what(),
                            "edit this file by hand or suppress one finding with # kvpatch: ignore[RULE-ID]"});
    }
  }
  return run;
}

}  // namespace kvpatch
