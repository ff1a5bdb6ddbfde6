#include "kvpatch/git_pre_commit.h"
#include "kvpatch/analyze.h"
#include "kvpatch/cross_file.h"
#include "kvpatch/flashinfer_version.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "kvpatch/input_error.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/rule_engine.h"
#include "kvpatch/source_file.h"

namespace kvpatch {

namespace {
// The staged file analysed, or nullopt when `wanted` is false of its content. Throws InputError or OverlappingEdit.
template <typename Wanted>
std::optional<FileReport> analyze_blob(const RuleSet& rules, const GitRepository& repo, const StagedFile& file,
                                       Wanted wanted, FlashInferLookup& lookup) {
  std::string content = read_staged_blob(repo, file);
  if (!wanted(content)) return std::nullopt;
  require_source_text(content, file.path, "; then stage it again");
  // The FlashInfer pin is read from the work tree around the file (python/pyproject.toml in SGLang).
  return analyze_source(rules, SourceFile(repo.work_tree() / file.path, file.path, std::move(content)), &lookup);
}

// A work-tree file's bytes; nullopt when it cannot be read.
std::optional<std::string> read_work_tree_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return out.str();
}

// The context files that link_files() could pair with another file (git_pre_commit.h), analysed. One that could
// pair but cannot be read or parsed goes to `errors`: the staged plans cannot be checked against its casts.
std::vector<FileReport> linkable_context(const RuleSet& rules, const GitRepository& repo, const StagedFiles& context,
                                         std::vector<FileError>& errors, FlashInferLookup& lookup) {
  std::vector<FileReport> out;
  if (context.files.empty()) return out;
  // Most context files are in the work tree as staged, and a file read from disk costs a fraction of a blob
  // inflated from a pack (SGLang: ~4,700 *.py files). The disk copy only screens a file out; what is
  // analysed is always the blob.
  std::optional<std::vector<std::string>> changed;  // nullopt: cannot tell, so nothing is screened out
  try {
    changed = python_paths_changed_in_work_tree(repo);
  } catch (const InputError&) {
    changed.reset();  // every context blob is read instead
  }
  auto linkable = [&](const std::string& text) { return may_link(rules, text); };
  for (const StagedFile& file : context.files) {
    if (changed && !std::binary_search(changed->begin(), changed->end(), file.path)) {
      if (std::optional<std::string> disk = read_work_tree_file(repo.work_tree() / file.path); disk && !linkable(*disk)) {
        continue;
      }
    }
    auto unread = [&](FileError e) {
      e.remedy += " (kvpatch reads this file, which the commit does not change, because its casts or plan sites "
                  "may link with the staged ones'), or leave it out with the project settings' `exclude`";
      errors.push_back(std::move(e));
    };
    try {
      if (auto report = analyze_blob(rules, repo, file, linkable, lookup)) out.push_back(std::move(*report));
    } catch (const InputError& e) {
      unread(to_file_error(e));
    } catch (const OverlappingEdit& e) {
      unread(clashing_edits_error(file.path, e));
    }
  }
  return out;
}
}  // namespace

Run analyze_staged(const RuleSet& rules, const GitRepository& repo, const StagedFiles& staged,
                   const StagedFiles& context) {
  Run run;
  run.root = repo.work_tree();
  run.parameters = rules.parameters;
  run.parameter_origins = rules.parameter_origins;
  run.errors = staged.errors;
  FlashInferLookup lookup;
  for (const StagedFile& file : staged.files) {
    try {
      auto selected = [&](const std::string& text) { return rules_select(rules, text); };
      if (auto report = analyze_blob(rules, repo, file, selected, lookup)) run.files.push_back(std::move(*report));
    } catch (const InputError& e) {
      run.errors.push_back(to_file_error(e));
    } catch (const OverlappingEdit& e) {
      run.errors.push_back(clashing_edits_error(file.path, e));
    }
  }
  // A commit that touches no file the rules select changes no plan site and no cast: no context is read.
  std::vector<FileReport> linkable;
  if (!run.files.empty()) linkable = linkable_context(rules, repo, context, run.errors, lookup);
  link_files(rules, run, std::move(linkable));
  judge_ignore_comments(rules, run);
  return run;
}

}  // namespace kvpatch
