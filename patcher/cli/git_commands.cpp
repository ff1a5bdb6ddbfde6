// pre-commit, install-hook and uninstall-hook: the commands that open a git repository (libgit2).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "commands.h"
#include "kvpatch/analyze.h"
#include "kvpatch/git_hook.h"
#include "kvpatch/git_pre_commit.h"
#include "kvpatch/input_error.h"
#include "kvpatch/report.h"
#include "messages.h"
#include "settings.h"

namespace kvpatch::cli {
namespace {
std::optional<std::filesystem::path> repo_option(const Options& options) {
  return options.repo.empty() ? std::nullopt : std::optional<std::filesystem::path>(options.repo);
}
}  // namespace

int run_pre_commit(const Options& given) {
  Run run;
  std::optional<Loaded> loaded;
  Options options = given;
  try {
    const GitRepository repo = GitRepository::open(repo_option(options));
    // Settings from the work tree, as the files a commit is made from sit there (git runs hooks at its top).
    loaded = load_rules(given, repo.work_tree());
    if (!loaded) return kUsageOrInput;
    if (given.show_settings) {
      print_settings(*loaded, given, repo.work_tree());
      return kClean;
    }
    options = run_options(given, *loaded);
    StagedFiles staged = staged_python_files(repo, options.all ? StagedScope::All : StagedScope::Changed);
    // The other tracked files, to link a staged plan() with a run() elsewhere (and back): git_pre_commit.h.
    StagedFiles context;
    if (!options.all) {
      context.files = staged_python_files(repo, StagedScope::All).files;
      // Both lists are sorted by path.
      auto by_path = [](const StagedFile& a, const StagedFile& b) { return a.path < b.path; };
      std::erase_if(context.files, [&](const StagedFile& f) {
        return std::binary_search(staged.files.begin(), staged.files.end(), f, by_path);
      });
    }
    auto is_excluded = [&](const StagedFile& f) {
      return excluded_by(loaded->exclude, repo.work_tree() / f.path) != nullptr;
    };
    std::erase_if(staged.files, is_excluded);
    std::erase_if(context.files, is_excluded);
    run = analyze_staged(loaded->rules, repo, staged, context);
    run.ignore_problems_fail = loaded->unused_ignores_error;
  } catch (const InputError& e) {
    print_error(e.formatted());
    return kUsageOrInput;
  }
  print_errors(run.errors);
  warn_ignore_comments(run, options);
  report_nearer_settings(run, options, loaded->config, SettingsUse::Hook);
  // Text stays quiet when the commit holds no file the rules select, as hooks should.
  print_report(run, loaded->rules, options, !run.files.empty());
  if (!run.errors.empty()) return kUsageOrInput;
  const Summary summary = summarize(run);
  if (!has_findings(summary)) return kClean;
  if (!says_how_it_went(options)) return options.exit_zero ? kClean : kFindings;  // -q: the remedy is a hint
  std::string paths;
  for (const FileReport& f : run.files) {
    if (!f.edits.empty()) paths += " " + shell_word(f.file->source.display_path());
  }
  std::string remedy = paths.empty() ? "" : "run `kvpatch apply" + paths + "` and `git add" + paths + "`";
  if (summary.unknown > 0) {
    remedy += (remedy.empty() ? "" : "; ") +
              std::string("review each unknown site by hand or mark it `# kvpatch: ignore[RULE-ID] reason`");
  }
  if (summary.unbuildable > 0) {
    remedy += (remedy.empty() ? "" : "; ") +
              std::string("upgrade FlashInfer where a site is unbuildable (its message names the release)");
  }
  if (summary.run_inputs_converted + summary.run_inputs_unknown > 0) {
    remedy += (remedy.empty() ? "" : "; ") +
              std::string("fix each run() input by hand as its message says, or mark it `# kvpatch: ignore[RULE-ID] reason`");
  }
  if (summary.ignore_problems_failing > 0) {
    remedy += (remedy.empty() ? "" : "; ") +
              std::string("remove or move each ignore comment that suppresses nothing, as its error above says");
  }
  if (remedy.empty()) remedy = "fix them by hand";
  std::cout << std::flush;  // the report first, then the remedy, when both go to one terminal
  std::cerr << "kvpatch: the staged content has findings; " << remedy
            << (options.exit_zero ? " (--exit-zero: the commit goes ahead)\n"
                                  : " (or skip this check once with `git commit --no-verify`)\n");
  return options.exit_zero ? kClean : kFindings;
}

int run_hook_command(const std::string& command, const Options& options) {
  try {
    // The hook commands do not read the index; one libgit2 cannot read is a warning for install-hook.
    const GitRepository repo = GitRepository::open(repo_option(options), GitRepository::Index::kOptional);
    // What was done is said on stdout, unless -q; a warning on stderr, unless -s.
    std::ostream& out = says_how_it_went(options) ? std::cout : discarded();
    if (command == "install-hook") {
      const std::filesystem::path binary = own_binary(options.argv0);
      const HookOutcome outcome = install_pre_commit_hook(repo, binary, options.force);
      const std::string hook = outcome.paths.hook.string();
      switch (outcome.change) {
        case HookChange::Installed: out << "installed " << hook << "\n"; break;
        case HookChange::InstalledWithBackup:
          out << "installed " << hook << "; the previous hook is kept as " << outcome.paths.backup.string()
              << " and runs first\n";
          break;
        case HookChange::Updated: out << "updated " << hook << "\n"; break;
        default: out << hook << " is already the kvpatch hook; nothing to do\n"; break;
      }
      out << "it runs " << binary.string() << " pre-commit on the staged content of every commit\n";
      if (const auto& problem = repo.index_problem(); problem && says_what_is_wrong(options)) {
        std::cerr << "kvpatch: warning: " << problem->formatted()
                  << "; until then the hook refuses every commit (exit 2)\n";
      }
      return kClean;
    }
    const HookOutcome outcome = uninstall_pre_commit_hook(repo);
    const std::string hook = outcome.paths.hook.string();
    switch (outcome.change) {
      case HookChange::Restored: out << "restored " << hook << " from " << outcome.paths.backup.string() << "\n"; break;
      case HookChange::Removed: out << "removed " << hook << "\n"; break;
      default: out << "no pre-commit hook at " << hook << "; nothing to do\n"; break;
    }
    return kClean;
  } catch (const InputError& e) {
    print_error(e.formatted());
    return kUsageOrInput;
  }
}

}  // namespace kvpatch::cli
