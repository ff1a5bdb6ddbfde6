// check, diff and apply: the PATHs' files, the settings found above them, and what each command prints and writes.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "kvpatch/analyze.h"
#include "kvpatch/apply_files.h"
#include "kvpatch/edited_code_check.h"
#include "kvpatch/exclude_patterns.h"
#include "kvpatch/input_error.h"
#include "kvpatch/input_paths.h"
#include "kvpatch/report_file.h"
#include "kvpatch/report.h"
#include "kvpatch/source_file.h"
#include "messages.h"
#include "settings.h"
#include "terminal_color.h"

namespace kvpatch::cli {
namespace {
// A PATH that yields no file a rule selects would pass silently; a CI user should see that nothing was checked,
// and why when the project's `exclude` left files out there.
void warn_unselected_paths(const Options& options, const Run& run, const std::vector<InputFile>& left_out,
                           const std::vector<ExcludePatterns>& exclude) {
  if (!says_what_is_wrong(options)) return;
  for (const std::string& p : options.paths) {
    std::error_code ec;
    const std::filesystem::path given = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
    if (ec || !std::filesystem::exists(given, ec)) continue;
    const bool selected = std::any_of(run.files.begin(), run.files.end(), [&](const FileReport& f) {
      const std::filesystem::path rel = f.file->source.path().lexically_relative(given);
      return !rel.empty() && *rel.begin() != "..";
    });
    if (!selected) {
      const auto first_left_out = std::find_if(left_out.begin(), left_out.end(), [&](const InputFile& f) {
        const std::filesystem::path rel = f.path.lexically_relative(given);
        return !rel.empty() && *rel.begin() != "..";
      });
      const ExcludePatterns* by =
          first_left_out == left_out.end() ? nullptr : excluded_by(exclude, first_left_out->path);
      std::cerr << "kvpatch: warning: " << p << ": no file here uses BatchMLAPagedAttentionWrapper"
                << (by != nullptr ? " outside those excluded by " + by->origin : std::string())
                << "; nothing checked\n";
    }
  }
}

// FlashInfer (0.6.14 and later; older releases cannot build it at all) serves the plan apply just threaded, a BF16
// query with an FP8 KV cache, on SM90 GPUs only: elsewhere the patched backend fails at plan(). Only the sm90 form
// gates it; with the others the user should know before deploying. The original form also plans an E5M2 cache as
// E5M2, which FlashInfer 0.6.14 to 0.7.4 refused on the H200 for SGLang 0.5.16-0.5.23
// (tests/kernels/sglang_release_backend_test.py); the other two forms keep the cast for it.
void note_where_the_plan_runs(const Run& run, const RuleSet& rules, const Options& options) {
  if (!says_how_it_went(options)) return;
  const auto form = rules.parameters.find("kv_dtype_form");
  if (form != rules.parameters.end() && form->second == "sm90") return;
  const bool original_form = form == rules.parameters.end() || form->second == "original";
  const bool threaded = std::any_of(run.files.begin(), run.files.end(), [](const FileReport& f) {
    return std::any_of(f.plan_sites.begin(), f.plan_sites.end(),
                       [](const PlanSite& s) { return s.fix.has_value() && !s.fix_gated; });
  });
  if (!threaded) return;
  std::cerr << "kvpatch: note: the threaded plan() calls plan an FP8 KV cache as FP8 on every GPU, and FlashInfer "
               "serves that plan on SM90 GPUs only: on any other GPU the patched backend fails at its first plan(). "
               "To serve other GPUs as well, patch the original files with --kv-dtype-form sm90 (or kv-dtype-form = "
               "\"sm90\" in the project's .kvpatch.toml), which keeps the casts there (patcher/README.md, \"Where the "
               "patched backend runs\")\n";
  if (original_form) {
    std::cerr << "kvpatch: note: this form (original) also plans an FP8 E5M2 cache as E5M2, which FlashInfer's MLA "
                 "wrapper refuses with a BF16 query (0.6.14 to 0.7.4 refused it; their fa2 and fa3 take FP16, BF16 and "
                 "E4M3 KV only): a server run with --kv-cache-dtype fp8_e5m2 fails at its first plan(). The upstream "
                 "and sm90 forms keep the cast for such caches\n";
  }
}

bool reads_standard_input(const Options& options) {
  return std::find(options.paths.begin(), options.paths.end(), "-") != options.paths.end();
}

// All of standard input, or a byte more than a source file may hold: the size check then names the limit.
std::string read_standard_input() {
  std::string content;
  std::array<char, 65536> chunk{};
  while (content.size() <= kMaxSourceBytes) {
    const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), stdin);
    if (n == 0) break;
    content.append(chunk.data(), n);
  }
  return content;
}

// What PATH `-` allows: one file's source, read as the file --stdin-filename names. An empty string when the
// command line is sound, else the error.
std::string standard_input_misuse(const Options& options) {
  if (!reads_standard_input(options)) {
    return options.stdin_filename.empty()
               ? ""
               : "--stdin-filename names the file that standard input stands for; pass - as the PATH";
  }
  if (options.paths.size() != 1) return "- (standard input) must be the only PATH";
  std::error_code ec;
  if (!options.stdin_filename.empty() && std::filesystem::is_directory(options.stdin_filename, ec)) {
    return "--stdin-filename " + options.stdin_filename + " is a directory; name the file the source stands for";
  }
  return "";
}

// apply's writes: every file's edits in place, all or none, each named as it is patched on `names` (stdout for apply
// and a text report; stderr when stdout holds a machine-read report; nowhere under -q). The display paths of those
// patched, in the order written; nullopt after an error, printed, when none was.
std::optional<std::vector<std::string>> write_patched_files(const Run& run, std::ostream& names,
                                                            const Options& options) {
  std::vector<const FileReport*> reports;
  for (const FileReport& f : run.files) reports.push_back(&f);
  const ApplyResult result = apply_files(reports);
  print_errors(result.errors);
  for (const AppliedFile& p : result.patched) {
    names << "patched " << p.display_path << " (" << p.edits << (p.edits == 1 ? " edit)" : " edits)") << "\n";
  }
  for (const AppliedFile& p : result.patched) {
    if (!p.ownership_changed.empty() && says_what_is_wrong(options)) std::cerr << "kvpatch: warning: " << p.display_path << ": " << p.ownership_changed << "\n";
  }
  names.flush();  // the notes after these go to stderr: keep them after these lines when both streams share a log
  if (!result.errors.empty()) return std::nullopt;
  std::vector<std::string> patched;
  for (const AppliedFile& p : result.patched) patched.push_back(p.display_path);
  return patched;
}

// apply -: the text standard input held, with its edits, on stdout (as a formatter hands an editor its buffer
// back), whole or not at all. Files beside it that the run read for links are never edited. Returns the text
// printed; nullopt after an error, printed, when nothing was.
std::optional<std::string> print_patched_input(const Run& run, const InputFile& input) {
  std::string text = *input.content;
  for (const FileReport& f : run.files) {
    if (f.file->source.path() != input.path) continue;
    if (auto broken = code_broken_by_edits(f, "nothing was printed")) {
      print_errors({*broken});
      return std::nullopt;
    }
    text = f.file->source.bom() + f.edits.apply(f.file->source.text());
  }
  std::cout << text;
  std::cout.flush();
  return text;
}

// The deepest directory that holds every PATH (a file counts as its directory): where the configuration is looked for.
std::filesystem::path common_directory(const std::vector<std::string>& paths) {
  std::optional<std::filesystem::path> common;
  for (const std::string& p : paths) {
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
    if (!std::filesystem::is_directory(dir, ec)) dir = dir.parent_path();
    if (!common) {
      common = dir;
      continue;
    }
    std::filesystem::path shared;
    for (auto a = common->begin(), b = dir.begin(); a != common->end() && b != dir.end() && *a == *b; ++a, ++b) {
      shared /= *a;
    }
    common = shared;
  }
  return common ? *common : std::filesystem::current_path();
}

// The inputs the PATHs name, less the files the project's `exclude` leaves out of the directories walked (a file
// named on the command line is read anyway, as ruff does); `left_out` gets those.
InputSet project_inputs(const Options& options, const std::vector<ExcludePatterns>& exclude, bool repository_paths,
                        std::vector<InputFile>* left_out = nullptr) {
  const std::optional<std::filesystem::path> root =
      options.root.empty() ? std::nullopt : std::optional<std::filesystem::path>(options.root);
  InputSet inputs = reads_standard_input(options)
                        ? stdin_inputs(options.stdin_filename, read_standard_input(), root)
                        : collect_inputs(options.paths, root, repository_paths);
  if (exclude.empty()) return inputs;
  std::erase_if(inputs.files, [&](const InputFile& f) {
    const bool out = !f.named && excluded_by(exclude, f.path) != nullptr;
    if (out && left_out != nullptr) left_out->push_back(f);
    return out;
  });
  std::erase_if(inputs.context, [&](const InputFile& f) { return excluded_by(exclude, f.path) != nullptr; });
  return inputs;
}

// What `check --fix` and `check --diff` (ruff's spellings) stand for: apply with the report of what is left, and diff.
// Empty when the combination is sound, else the error.
std::string fix_or_diff_misuse(const std::string& subcommand, const Options& options) {
  if (options.fix && options.diff) return "--fix writes the edits and --diff only prints them; pass one of the two";
  if (options.diff && (options.format != "text" || options.statistics || !options.output_file.empty())) {
    return "--diff prints a unified diff, not a report: drop --format, --statistics and --output-file, or --diff";
  }
  if (subcommand == "check" && options.show_fixes && !options.fix) {
    return "--show-fixes lists what --fix fixed; pass --fix too, or drop --show-fixes";
  }
  if (subcommand == "check" && options.exit_non_zero_on_fix && !options.fix) {
    return "--exit-non-zero-on-fix sets the exit code of --fix; pass --fix too, or drop --exit-non-zero-on-fix";
  }
  return "";
}

// apply's part of `apply` and `check --fix`: the edits written, all files or none (for PATH `-`, the patched text
// printed), then the run over what they left, since what apply cannot fix (unknown sites, sites blocked by required
// casts or run() inputs) is still a finding. With --show-fixes, what the edits fixed, on `names` (stderr for PATH
// `-`, whose stdout is the text). nullopt after an error, printed, when nothing was written.
struct Applied {
  Run after;             // the run over the files as the edits left them
  bool changed = false;  // a file, or standard input's text, was changed
};
std::optional<Applied> apply_and_analyse_again(const Run& run, const InputSet& inputs, const Options& options,
                                           const Loaded& loaded, bool repository_paths, std::ostream& names_wanted) {
  std::ostream& names = says_how_it_went(options) ? names_wanted : discarded();
  std::optional<InputSet> patched;
  if (reads_standard_input(options)) {
    const InputFile& input = inputs.files.front();
    const std::optional<std::string> text = print_patched_input(run, input);
    if (!text) return std::nullopt;
    if (*text != *input.content) {
      patched = inputs;  // the same file, root and neighbours, holding the patched text
      patched->files.front().content = *text;
      if (options.show_fixes && says_how_it_went(options)) std::cerr << fixes_report(run, {input.display_path});
    }
  } else {
    const std::optional<std::vector<std::string>> wrote = write_patched_files(run, names, options);
    if (!wrote) return std::nullopt;
    if (!wrote->empty()) patched = project_inputs(options, loaded.exclude, repository_paths);
    if (options.show_fixes) names << fixes_report(run, *wrote) << std::flush;
  }
  if (!patched && says_how_it_went(options)) std::cerr << "kvpatch: nothing to patch\n";
  note_where_the_plan_runs(run, loaded.rules, options);
  Applied applied{patched ? analyze_inputs(loaded.rules, *patched) : run, patched.has_value()};
  applied.after.ignore_problems_fail = loaded.unused_ignores_error;
  return applied;
}

// diff: what apply would write, as a unified diff.
int print_diff(const Run& run, bool input_errors, const Options& options) {
  // diff prints what apply would write, and apply writes nothing while an input cannot be read: a partial diff
  // piped to `git apply` would be the partial multi-file apply that apply refuses. The other files' edits could
  // also change once the unread file is seen (a cast there can hold their plan sites back).
  if (input_errors) {
    print_error("no diff was printed; fix the errors above and run diff again");
    return kUsageOrInput;
  }
  // Nor a diff that would break a file: `git apply` would write what apply refuses to (edited_code_check.h).
  bool broken = false;
  for (const FileReport& f : run.files) {
    if (auto error = code_broken_by_edits(f, "no diff was printed")) {
      print_errors({*error});
      broken = true;
    }
  }
  if (broken) return kUsageOrInput;
  const bool color = color_wanted(options.color, STDOUT_FILENO);
  bool any = false;
  for (const FileReport& f : run.files) {
    const std::string diff = unified_diff(f);
    any |= !diff.empty();
    // -s: `git diff --quiet`'s use, the exit code alone says whether there are edits.
    if (says_what_is_wrong(options)) std::cout << (color ? colorize_diff(diff) : diff);
  }
  return any && !options.exit_zero ? kFindings : kClean;
}
}  // namespace

int run_source_command(const std::string& subcommand, const Options& given) {
  // What the command line says is judged as it stands; the settings file's report keys never make it unsound.
  if (const std::string misuse = standard_input_misuse(given); !misuse.empty()) {
    print_error(misuse);
    return kUsageOrInput;
  }
  if (const std::string misuse = fix_or_diff_misuse(subcommand, given); !misuse.empty()) {
    print_error(misuse);
    return kUsageOrInput;
  }
  // check --diff is diff; check --fix is apply that then reports what is left as check does.
  const std::string command = subcommand == "check" && given.diff ? "diff" : subcommand;
  const bool writes = command == "apply" || (command == "check" && given.fix);
  const bool from_stdin = reads_standard_input(given);
  // Settings are looked up from the file standard input stands for, as from a PATH.
  const std::filesystem::path start =
      from_stdin ? common_directory({given.stdin_filename.empty() ? std::string(".") : given.stdin_filename})
                 : common_directory(given.paths);
  const std::optional<Loaded> loaded = load_rules(given, start);
  if (!loaded) return kUsageOrInput;
  if (given.show_settings) {
    print_settings(*loaded, given, start);
    return kClean;
  }
  const Options options = run_options(given, *loaded);
  const RuleSet& rules = loaded->rules;
  // The CI formats name files from the repository's top, as the services that read them resolve paths.
  const bool for_a_person = options.format == "text" || options.format == "full";
  const bool repository_paths = !for_a_person && options.format != "json";
  std::vector<InputFile> left_out;
  const InputSet inputs = project_inputs(options, loaded->exclude, repository_paths, &left_out);
  Run run = analyze_inputs(rules, inputs);
  // diff's exit code says only whether there are edits, so there they stay warnings whatever the setting.
  run.ignore_problems_fail = command != "diff" && loaded->unused_ignores_error;
  print_errors(run.errors);
  const bool input_errors = !run.errors.empty();
  if (!input_errors) warn_unselected_paths(options, run, left_out, loaded->exclude);
  warn_ignore_comments(run, options);
  const bool nearer =
      report_nearer_settings(run, options, loaded->config, writes ? SettingsUse::Apply : SettingsUse::Report);

  if (command == "diff") return print_diff(run, input_errors, options);
  if (command == "check" && !writes) {
    if (!print_report(run, rules, options, true) || input_errors) return kUsageOrInput;
    return has_findings(summarize(run)) && !options.exit_zero ? kFindings : kClean;
  }
  // apply, check --fix: nothing is written unless every input is readable, every file can be patched, and by its
  // own settings. check --fix then reports as check does, so that a CI step's report names what stopped it.
  const bool report_after = command == "check";
  // check --fix -: stdout is the patched text an editor takes back (all of it, as apply - prints it), so the report
  // goes to stderr, as ruff's does.
  const int report_fd = from_stdin ? STDERR_FILENO : STDOUT_FILENO;
  const std::string nothing = from_stdin ? "nothing was printed" : "nothing was written";
  if (input_errors || nearer) {
    if (report_after) print_report(run, rules, options, true, report_fd);
    print_error(nothing + "; fix the errors above and run " + subcommand + " again");
    return kUsageOrInput;
  }
  // check --fix -o FILE: a report that could not be written after the sources were would leave a CI step with
  // patched files and no report, so the file is tried first.
  if (report_after && !options.output_file.empty()) {
    try {
      check_report_file_writable(options.output_file);
    } catch (const InputError& e) {
      print_errors({to_file_error(e)});
      print_error(nothing + "; fix the error above and run check again");
      return kUsageOrInput;
    }
  }
  // A text report follows the names of the patched files on stdout, as ruff's does; a machine-read one must be
  // all that stdout holds.
  std::ostream& names = report_after && !for_a_person ? std::cerr : std::cout;
  const std::optional<Applied> applied =
      apply_and_analyse_again(run, inputs, options, *loaded, report_after && repository_paths, names);
  if (!applied) return kUsageOrInput;
  const Summary left = summarize(applied->after);
  // --exit-non-zero-on-fix (ruff's): a CI step or hook that must fail when it had to fix something, as pre-commit
  // fails a hook that modified files.
  const int fixed_exit = applied->changed && options.exit_non_zero_on_fix ? kFindings : kClean;
  if (report_after) {
    if (!print_report(applied->after, rules, options, true, report_fd)) return kUsageOrInput;
    return has_findings(left) && !options.exit_zero ? kFindings : fixed_exit;
  }
  if (!has_findings(left)) return fixed_exit;
  const int count = finding_count(left);
  // What apply says of what it left is its report: printed under -q, as check's findings are.
  if (says_what_is_wrong(options)) {
    std::cerr << "kvpatch: " << count << (count == 1 ? " finding remains" : " findings remain")
              << " that apply cannot fix; run kvpatch check to see them\n";
  }
  return options.exit_zero ? kClean : kFindings;
}

}  // namespace kvpatch::cli
