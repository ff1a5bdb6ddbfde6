#include "kvpatch/analyze.h"
#include "kvpatch/cross_file.h"
#include "kvpatch/flashinfer_version.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "kvpatch/input_error.h"
#include "kvpatch/project_classes.h"
#include "kvpatch/rule_engine.h"

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
constexpr std::uintmax_t kMaxRawBytes = std::uintmax_t{64} * 1024 * 1024;  // larger walked files are never backends

// Raw bytes of a walked file that failed the source checks, to see whether a rule would want it.
std::string raw_content(const fs::path& path) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxRawBytes) return "";
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A file beside a named one, analysed when link_files() could pair it with another. One that link_files() could
// pair but kvpatch cannot read or parse is an error of the run: a cast there that feeds run() of a wrapper
// planned in the named files would go unseen, and apply would thread those plans against it.
std::optional<FileReport> analyze_context_file(const RuleSet& rules, const InputFile& input,
                                               std::vector<FileError>& errors, FlashInferLookup& lookup) {
  auto unread = [&](FileError e) {
    e.remedy += std::string(e.remedy.empty() ? "" : " ") +
                "(kvpatch reads this unnamed file because it lies beside a named one and its casts or plan sites "
                "may link with that one's), or leave it out with the project settings' `exclude`";
    errors.push_back(std::move(e));
  };
  std::optional<SourceFile> source;
  try {
    source.emplace(load_source_file(input.path, input.display_path));
  } catch (const InputError& e) {
    if (may_link(rules, raw_content(input.path))) unread(to_file_error(e));
    return std::nullopt;
  }
  if (!may_link(rules, source->text())) return std::nullopt;
  try {
    return analyze_source(rules, std::move(*source), &lookup);
  } catch (const InputError& e) {
    unread(to_file_error(e));
  } catch (const OverlappingEdit& e) {
    unread(clashing_edits_error(input.display_path, e));
  }
  return std::nullopt;
}
}  // namespace

FileError to_file_error(const InputError& e) { return {e.file(), e.line(), e.column(), e.what(), e.remedy()}; }

FileError clashing_edits_error(const std::string& display_path, const OverlappingEdit& e) {
  return {display_path, 0, 0, std::string("rules asked for clashing edits: ") + e.what(),
          "edit this file by hand or suppress one finding with # kvpatch: ignore[RULE-ID]"};
}

bool rules_select(const RuleSet& rules, const std::string& text) {
  auto selects = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& r) { return r.files.matches(text); });
  };
  return selects(rules.plan_site_rules) || selects(rules.field_rules) || selects(rules.cast_rules);
}

FileReport analyze_source(const RuleSet& rules, SourceFile source, FlashInferLookup* lookup) {
  const fs::path path = source.path();
  for (const auto& [id, origin] : ignored_in_file(rules.per_file_ignores, path)) source.ignore_in_whole_file(id, origin);
  auto parsed = std::make_shared<const ParsedFile>(parse_source_file(std::move(source)));
  std::string unpinned;
  const auto target = flashinfer_target(rules.parameters, path, rules.parameter_origins, &unpinned, lookup);
  return analyze_file(rules, parsed, target, unpinned);
}

namespace {
// A file's text as the run reads it: from standard input when it came from there, held to the checks a file on
// disk is held to, else from its path.
SourceFile load_input(const InputFile& input) {
  if (!input.content) return load_source_file(input.path, input.display_path);
  require_source_text(*input.content, input.display_path);
  return SourceFile(input.path, input.display_path, *input.content);
}
}  // namespace

namespace {
// The rules with the wrapper subclasses that the run's files (named, walked and beside a named one) define.
std::optional<RuleSet> rules_for_inputs(const RuleSet& rules, const InputSet& inputs) {
  std::vector<const InputFile*> files;
  for (const InputFile& f : inputs.files) files.push_back(&f);
  for (const InputFile& f : inputs.context) files.push_back(&f);
  std::vector<fs::path> modules;
  modules.reserve(files.size());
  for (const InputFile* f : files) modules.push_back(f->path);
  auto classes = find_project_classes(rules, modules, [&](std::size_t i) -> std::optional<std::string> {
    return files[i]->content ? *files[i]->content : raw_content(files[i]->path);
  });
  if (classes.empty()) return std::nullopt;
  return with_project_classes(rules, classes);
}
}  // namespace

Run analyze_inputs(const RuleSet& given, const InputSet& inputs) {
  const std::optional<RuleSet> extended = rules_for_inputs(given, inputs);
  const RuleSet& rules = extended ? *extended : given;
  Run run;
  run.root = inputs.root;
  run.parameters = rules.parameters;
  run.parameter_origins = rules.parameter_origins;
  run.errors = inputs.errors;
  FlashInferLookup lookup;
  for (const InputFile& input : inputs.files) {
    std::optional<SourceFile> source;
    try {
      source.emplace(load_input(input));
    } catch (const InputError& e) {
      // A walked file no rule would select is not our business, readable or not.
      if (input.named || rules_select(rules, raw_content(input.path))) run.errors.push_back(to_file_error(e));
      continue;
    }
    if (!rules_select(rules, source->text())) continue;
    try {
      run.files.push_back(analyze_source(rules, std::move(*source), &lookup));
    } catch (const InputError& e) {
      run.errors.push_back(to_file_error(e));
    } catch (const OverlappingEdit& e) {
      run.errors.push_back(clashing_edits_error(input.display_path, e));
    }
  }
  // The context is read only when some named or walked file was analysed: nothing else can be linked.
  std::vector<FileReport> context;
  if (!run.files.empty()) {
    for (const InputFile& input : inputs.context) {
      if (auto report = analyze_context_file(rules, input, run.errors, lookup)) context.push_back(std::move(*report));
    }
  }
  link_files(rules, run, std::move(context));
  judge_ignore_comments(rules, run);  // after every rule, the cross-file ones too, has looked its comments up
  return run;
}

std::vector<std::string> run_rule_test(const RuleSet& base, const RuleTestCase& test) {
  std::vector<std::string> failures;
  const RuleSet rules = test.parameters.empty() ? base : load_rule_set(base.directory, test.parameters);
  const std::string where = test.file + ":" + std::to_string(test.line) + " (" + test.name + ")";
  auto analyse = [&](const std::string& code) -> std::optional<FileReport> {
    try {
      auto parsed = std::make_shared<const ParsedFile>(parse_source_file(SourceFile("test.py", "test.py", code)));
      // A case runs against the FlashInfer its parameters name (flashinfer_version), else the newest behaviour:
      // it has no files around it to read a pin from.
      return analyze_file(rules, parsed,
                          given_flashinfer_version(rules.parameters, "the test case's flashinfer_version"));
    } catch (const std::exception& e) {
      failures.push_back(where + ": " + e.what());
      return std::nullopt;
    }
  };
  const std::optional<FileReport> report = analyse(test.code);
  if (!report) return failures;

  std::vector<std::pair<int, std::string>> found;
  // A cast rule's cases cover its run-input and run() scale findings too, which carry their own ids.
  std::string run_input_id = test.rule;
  std::vector<std::string> scale_ids;
  for (const CastRule& c : rules.cast_rules) {
    if (c.id != test.rule) continue;
    run_input_id = c.run_input_id;
    for (const Fp8Consumer& consumer : c.fp8_consumers) {
      if (consumer.kv_scales) scale_ids.push_back(consumer.kv_scales->id);
    }
  }
  for (const PlanSite& s : report->plan_sites) {
    if (s.rule == test.rule) found.emplace_back(s.line, site_label(s));
  }
  for (const FieldFinding& f : report->fields) {
    if (f.rule == test.rule) found.emplace_back(f.line, f.ignored ? "ignored" : f.present ? "present" : "missing");
  }
  for (const CastFinding& c : report->casts) {
    if (c.rule == test.rule) found.emplace_back(c.line, c.redundant ? "redundant" : "required");
  }
  for (const RunInputFinding& r : report->run_inputs) {
    if (r.rule == test.rule || r.rule == run_input_id) found.emplace_back(r.line, run_input_label(r));
  }
  for (const RunScaleFinding& r : report->run_scales) {
    if (std::find(scale_ids.begin(), scale_ids.end(), r.rule) != scale_ids.end()) {
      found.emplace_back(r.line, r.ignored ? "ignored" : r.present ? "present" : "missing");
    }
  }
  std::vector<std::pair<int, std::string>> expected;
  for (const ExpectedFinding& e : test.expect) expected.emplace_back(e.line, e.status);
  std::sort(found.begin(), found.end());
  std::sort(expected.begin(), expected.end());
  if (found != expected) {
    auto list = [](const std::vector<std::pair<int, std::string>>& v) {
      std::string s;
      for (const auto& [line, status] : v) s += (s.empty() ? "" : ", ") + std::to_string(line) + ":" + status;
      return s.empty() ? std::string("none") : s;
    };
    failures.push_back(where + ": expected findings [" + list(expected) + "] but got [" + list(found) + "]");
  }

  const std::string patched = report->file->source.content().substr(0, report->file->source.bom().size()) +
                              report->edits.apply(report->file->source.text());
  const std::string& want = test.fixed ? *test.fixed : test.code;
  if (patched != want) failures.push_back(where + ": after apply the code is\n" + patched + "but expected\n" + want);
  if (test.fixed) {
    // The fix must be stable: a second run finds nothing more to edit.
    if (const std::optional<FileReport> again = analyse(patched); again && !again->edits.empty()) {
      failures.push_back(where + ": a second run over the fixed code still makes " +
                         std::to_string(again->edits.size()) + " edits");
    }
  }
  return failures;
}

}  // namespace kvpatch
