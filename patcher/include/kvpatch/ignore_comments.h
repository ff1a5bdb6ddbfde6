#pragma once
// `# kvpatch: ignore[RULE-ID, ...] reason`: reading the comments, looking one up for a finding, and reporting
// those that suppress nothing. As ruff's unused-noqa check does: a comment left where no finding of its rule is
// (the code it marked moved, or the id is mistyped) suppresses nothing today and would silently hide whatever
// finding of that rule lands on its line later, which a completeness check must not allow.
#include <tree_sitter/api.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvpatch/report.h"
#include "kvpatch/rule_set.h"
#include "kvpatch/source_file.h"

namespace kvpatch {

// The id under which reports that have rules (SARIF; `kvpatch rule`) carry these problems, and what it means.
inline constexpr const char* kIgnoreCommentRule = "kvpatch-ignore-comment";
inline constexpr const char* kIgnoreCommentDescription =
    "A # kvpatch: ignore[...] comment suppresses nothing. It names a rule id no rule reports, or one whose rule "
    "looks at nothing on its line (the code it marked moved, or the comment sits on the line above its finding), "
    "or it is not in the form kvpatch reads. Such a comment would hide a finding of that rule that lands on its "
    "line later. These are warnings, which leave the exit code as it is, unless the run's unused-ignores setting "
    "is error (--unused-ignores error, or unused-ignores = \"error\" in .kvpatch.toml): then each is a finding.";

struct IgnoreDirective {
  struct Id {
    std::string id;
    std::size_t offset = 0;  // in the text given to ignore_directives()
  };
  std::vector<Id> ids;  // as written, spaces trimmed; may be empty (`ignore[]`)
  std::string reason;   // the text after `]`, leading blanks dropped
};

// The directives in a line or a comment: each `#`, at the start or after a blank, then optional blanks, then
// `kvpatch: ignore[`, up to the next `]`. A `#` inside other text (a quoted example in prose) starts none.
std::vector<IgnoreDirective> ignore_directives(std::string_view text);

// `# kvpatch: ignore[RULE-ID] reason` on any line the node spans, for that rule id: the reason ("" when none is
// given), and the comment recorded as looked up. Else, when the run's settings ignore the rule in this file
// (SourceFile::ignored_in_whole_file), the reason they give: "per-file-ignores at FILE:LINE", "ignore at ...",
// "select at ...".
std::optional<std::string> suppression(const SourceFile& source, TSNode node, const std::string& rule_id);
// Whether the reason suppression() gave for `rule_id` in `source` comes from the run's settings rather than from a
// comment: the settings' own reason for that rule in that file, not a comment's text that merely reads like one.
bool suppressed_by_settings(const SourceFile& source, const std::string& rule_id, const std::string& reason);

// What to say of an id that no rule reports, given the ids that are (`known`: id, description): "did you mean X? "
// when one is near it (within a third of its length), then "the ids are A, B, ...".
std::string unknown_rule_id_hint(const std::string& id, const std::vector<std::pair<std::string, std::string>>& known);

// The problems of each analysed file's ignore comments, once every rule has run (after link_files()): an id no
// rule reports, an id no rule looked up on that line, a comment that mentions kvpatch ignore in another form.
void judge_ignore_comments(const RuleSet& rules, Run& run);

}  // namespace kvpatch
