#include "kvpatch/git_pre_commit.h"
#include "kvpatch/analyze.h"
#include "kvpatch/cross_file.h"
#include "kvpatch/flashinfer_version.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>

#include "kvpatch/input_error.h"
#include "kvpatch/project_classes.h"
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

// A work-tree file's bytes; nullopt when it cannot be read. Read in one piece into a string of its size: every
// commit reads the whole index's *.py this way (SGLang: 68 MB).
std::optional<std::string> read_work_tree_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  const std::streamoff size = in.tellg();
  if (size < 0) return std::nullopt;
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) return std::nullopt;
  return bytes;
}

// The *.py paths whose work-tree file may differ from the index; nullopt when git cannot tell.
using ChangedPaths = std::optional<std::vector<std::string>>;

ChangedPaths changed_in_work_tree(const GitRepository& repo) {
  try {
    return python_paths_changed_in_work_tree(repo);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// A committed file's text as read from the work tree, where git says that holds it as staged (up to its filters);
// nullopt where it may not, or cannot be read.
std::optional<std::string> unchanged_text(const GitRepository& repo, const StagedFile& file, const ChangedPaths& changed) {
  if (!changed || std::binary_search(changed->begin(), changed->end(), file.path)) return std::nullopt;
  return read_work_tree_file(repo.work_tree() / file.path);
}

// The rules with the wrapper subclasses that the commit's files define (project_classes.h): the staged files as
// staged, the others from the work tree where it holds them as staged, else from the index.
std::optional<RuleSet> rules_for_commit(const RuleSet& rules, const GitRepository& repo, const StagedFiles& staged,
                                        const StagedFiles& context, const ChangedPaths& changed) {
  std::vector<const StagedFile*> files;
  for (const StagedFile& f : staged.files) files.push_back(&f);
  for (const StagedFile& f : context.files) files.push_back(&f);
  std::vector<std::filesystem::path> modules;
  modules.reserve(files.size());
  for (const StagedFile* f : files) modules.push_back(repo.work_tree() / f->path);
  auto classes = find_project_classes(rules, modules, [&](std::size_t i) -> std::optional<std::string> {
    const bool is_staged = i < staged.files.size();
    if (!is_staged) {
      if (std::optional<std::string> disk = unchanged_text(repo, *files[i], changed)) return disk;
    }
    try {
      return read_staged_blob(repo, *files[i]);
    } catch (const InputError&) {
      return std::nullopt;  // the file's own analysis, if a rule selects it, says so
    }
  });
  if (classes.empty()) return std::nullopt;
  return with_project_classes(rules, classes);
}

// The context files that link_files() could pair with another file (git_pre_commit.h), analysed. One that could
// pair but cannot be read or parsed goes to `errors`: the staged plans cannot be checked against its casts.
std::vector<FileReport> linkable_context(const RuleSet& rules, const GitRepository& repo, const StagedFiles& context,
                                         const ChangedPaths& changed, std::vector<FileError>& errors,
                                         FlashInferLookup& lookup) {
  std::vector<FileReport> out;
  if (context.files.empty()) return out;
  // Most context files are in the work tree as staged, and a file read from disk costs a fraction of a blob
  // inflated from a pack (SGLang: ~4,700 *.py files). The disk copy only screens a file out; what is
  // analysed is always the blob.
  auto linkable = [&](const std::string& text) { return may_link(rules, text); };
  for (const StagedFile& file : context.files) {
    if (std::optional<std::string> disk = unchanged_text(repo, file, changed); disk && !linkable(*disk)) continue;
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

Run analyze_staged(const RuleSet& given, const GitRepository& repo, const StagedFiles& staged,
                   const StagedFiles& context) {
  // Where git cannot tell which work-tree files match the index, every context file is read from it instead.
  const ChangedPaths changed = context.files.empty() ? ChangedPaths{} : changed_in_work_tree(repo);
  const std::optional<RuleSet> extended = rules_for_commit(given, repo, staged, context, changed);
  const RuleSet& rules = extended ? *extended : given;
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
  if (!run.files.empty()) linkable = linkable_context(rules, repo, context, changed, run.errors, lookup);
  link_files(rules, run, std::move(linkable));
  judge_ignore_comments(rules, run);
  return run;
}

}  // namespace kvpatch
