#include "kvpatch/ignore_comments.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "kvpatch/python_syntax.h"

namespace kvpatch {
namespace {

constexpr std::string_view kBlanks = " \t";

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::size_t skip_blanks(std::string_view text, std::size_t at) {
  while (at < text.size() && is_blank(text[at])) ++at;
  return at;
}

// Whether text at `at` starts with `word` (ASCII case folded when `fold`).
bool starts_with_at(std::string_view text, std::size_t at, std::string_view word, bool fold) {
  if (text.size() - std::min(at, text.size()) < word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    const char c = text[at + i];
    if (fold ? std::tolower(static_cast<unsigned char>(c)) != word[i] : c != word[i]) return false;
  }
  return true;
}

// The offset just after `kvpatch <blanks>:<blanks> ignore` at `at` (a case-folded match when `fold`), or npos.
std::size_t after_ignore_word(std::string_view text, std::size_t at, bool fold) {
  at = skip_blanks(text, at);
  if (!starts_with_at(text, at, "kvpatch", fold)) return std::string_view::npos;
  at = skip_blanks(text, at + 7);
  if (at < text.size() && text[at] == ':') at = skip_blanks(text, at + 1);
  else if (!fold) return std::string_view::npos;  // the colon is part of the form; a near miss may lack it
  if (!starts_with_at(text, at, "ignore", fold)) return std::string_view::npos;
  return at + 6;
}

// Each `#` that can start a directive: the first character, or one after a blank.
std::vector<std::size_t> directive_hashes(std::string_view text) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '#' && (i == 0 || is_blank(text[i - 1]))) out.push_back(i);
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string unknown_rule_id_hint(const std::string& id,
                                const std::vector<std::pair<std::string, std::string>>& known) {
  std::string nearest;
  std::size_t best_distance = id.size() / 3 + 1;
  std::string listed;
  for (const auto& [candidate, description] : known) {
    const std::size_t d = edit_distance(id, candidate);
    if (d < best_distance) {
      best_distance = d;
      nearest = candidate;
    }
    listed += (listed.empty() ? "" : ", ") + candidate;
  }
  return (nearest.empty() ? std::string() : "did you mean " + nearest + "? ") + "the ids are " + listed;
}

std::vector<IgnoreDirective> ignore_directives(std::string_view text) {
  std::vector<IgnoreDirective> out;
  for (std::size_t hash : directive_hashes(text)) {
    const std::size_t word_end = after_ignore_word(text, hash + 1, false);
    if (word_end == std::string_view::npos || word_end >= text.size() || text[word_end] != '[') continue;
    const std::size_t close = text.find(']', word_end);
    if (close == std::string_view::npos) continue;
    IgnoreDirective directive;
    std::size_t start = word_end + 1;
    while (start <= close) {
      std::size_t comma = text.find(',', start);
      if (comma == std::string_view::npos || comma > close) comma = close;
      std::size_t first = skip_blanks(text, start);
      std::size_t last = comma;
      while (last > first && is_blank(text[last - 1])) --last;
      if (last > first) directive.ids.push_back({std::string(text.substr(first, last - first)), first});
      start = comma + 1;
    }
    const std::size_t reason = text.find_first_not_of(kBlanks, close + 1);
    if (reason != std::string_view::npos) directive.reason = std::string(text.substr(reason));
    out.push_back(std::move(directive));
  }
  return out;
}

std::optional<std::string> suppression(const SourceFile& source, TSNode node, const std::string& rule_id) {
  const int first = source.position(ts_node_start_byte(node)).line;
  const int last = source.position(ts_node_end_byte(node)).line;
  for (int line = first; line <= last; ++line) {
    for (const IgnoreDirective& directive : ignore_directives(source.line_text(line))) {
      const bool named = std::any_of(directive.ids.begin(), directive.ids.end(),
                                     [&](const IgnoreDirective::Id& id) { return id.id == rule_id; });
      if (!named) continue;
      source.note_ignore_looked_up(line, rule_id);
      return directive.reason;
    }
  }
  if (const std::string* reason = source.ignored_in_whole_file(rule_id)) return *reason;
  return std::nullopt;
}

bool suppressed_by_settings(const SourceFile& source, const std::string& rule_id, const std::string& reason) {
  const std::string* settings = source.ignored_in_whole_file(rule_id);
  return settings != nullptr && *settings == reason;
}

namespace {

// Judges one file's ignore comments against the ids the rules report and the look-ups they made.
class CommentJudge {
public:
  CommentJudge(const RuleSet& rules, const Run& run) : run_(run), known_(rules.finding_ids()) {}

  void judge(FileReport& report) {
    report.ignore_problems.clear();
    syntax::walk(report.file->tree.root(), [&](TSNode node) {
      if (!syntax::is(node, "comment")) return true;
      comment(report, node);
      return false;
    });
  }

private:
  const Run& run_;
  std::vector<std::pair<std::string, std::string>> known_;
  std::optional<std::vector<ReportItem>> items_;  // built when an unused comment first needs them

  void comment(FileReport& report, TSNode node) {
    const std::string_view text = report.file->text(node);
    const TSPoint start = ts_node_start_point(node);
    const int line = static_cast<int>(start.row) + 1;
    auto column = [&](std::size_t offset) { return static_cast<int>(start.column + offset) + 1; };
    const std::vector<IgnoreDirective> directives = ignore_directives(text);
    if (directives.empty()) {
      if (auto hash = near_miss(text)) {
        report.ignore_problems.push_back(
            {line, column(*hash), "", "malformed",
             "this comment is not read as a kvpatch ignore comment, so it suppresses nothing; kvpatch reads "
             "# kvpatch: ignore[RULE-ID] reason (`kvpatch rule` lists the ids)"});
      }
      return;
    }
    for (const IgnoreDirective& directive : directives) {
      if (directive.ids.empty()) {
        report.ignore_problems.push_back(
            {line, column(0), "", "malformed",
             "# kvpatch: ignore[] names no rule, so it suppresses nothing; name the rule ids of the findings it is "
             "for (`kvpatch rule` lists them)"});
      }
      for (const IgnoreDirective::Id& id : directive.ids) {
        if (auto message = id_problem(report.file->source, line, id.id)) {
          report.ignore_problems.push_back({line, column(id.offset), id.id, message->first, message->second});
        }
      }
    }
  }

  // The `#` of a comment that reads as an attempt at the form (`# KVPATCH: ignore`, `# kvpatch: ignore` with no
  // ids); prose such as "kvpatch ignores ..." is none.
  static std::optional<std::size_t> near_miss(std::string_view text) {
    for (std::size_t hash : directive_hashes(text)) {
      const std::size_t end = after_ignore_word(text, hash + 1, true);
      if (end == std::string_view::npos || (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end])))) {
        continue;
      }
      return hash;
    }
    return std::nullopt;
  }

  // (problem, message) for an id that suppresses nothing on its line, or nullopt.
  std::optional<std::pair<std::string, std::string>> id_problem(const SourceFile& source, int line,
                                                               const std::string& id) {
    const bool exists = std::any_of(known_.begin(), known_.end(), [&](const auto& k) { return k.first == id; });
    if (!exists) {
      return std::pair<std::string, std::string>{
          "unknown-rule", "# kvpatch: ignore[" + id + "] names a rule id that no rule reports, so it suppresses "
                          "nothing; " + unknown_rule_id_hint(id, known_)};
    }
    if (source.ignore_looked_up(line, id)) return std::nullopt;
    // The usual slip: the comment put on a line of its own above the finding, as pylint's disable-next.
    if (!items_) items_ = report_items(run_);
    const bool below = std::any_of(items_->begin(), items_->end(), [&](const ReportItem& item) {
      return item.file == source.display_path() && item.rule == id && item.line == line + 1;
    });
    const std::string remedy = below ? "move it onto line " + std::to_string(line + 1) +
                                           ", where the finding below it is reported (a comment marks the line it is on)"
                                     : "remove it, or move it onto the line its finding is reported at";
    return std::pair<std::string, std::string>{
        "unused", "# kvpatch: ignore[" + id + "] suppresses nothing: the rule looks at nothing on this line (the code "
                  "it marked may have moved), and the comment would hide a finding that lands here later; " + remedy};
  }
};

}  // namespace

void judge_ignore_comments(const RuleSet& rules, Run& run) {
  CommentJudge judge(rules, run);
  for (FileReport& report : run.files) judge.judge(report);
}

}  // namespace kvpatch
