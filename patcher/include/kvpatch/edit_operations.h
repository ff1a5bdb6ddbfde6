#pragma once
// The generic edit operations rules choose by name. Each returns byte-range edits; none writes a file.
#include <stdexcept>
#include <string>
#include <vector>

#include "kvpatch/edit_set.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/signature.h"

namespace kvpatch {

// The source's layout does not allow the edit (e.g. the anchor shares its line with other code).
class EditNotPossible : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// `f(a, b)` -> `f(a, <text>)`: replaces a bound argument's value; a keyword stays.
Edit replace_argument_value(const CallArgument& argument, const std::string& text, const std::string& rule);

// Adds `name=value` as the call's last argument, following its layout (one line, one argument per line,
// trailing comma or not).
Edit add_keyword_argument(const SourceFile& source, TSNode argument_list, const std::string& name,
                          const std::string& value, const std::string& rule);
// Adds `item` (`name=value`, `**mapping`, ...) as the call's last argument, laid out as above.
Edit add_argument(const SourceFile& source, TSNode argument_list, const std::string& item, const std::string& rule);

// Inserts `statement` on a new line after the anchor statement, with the anchor's indentation and the
// file's line ending; a comment at the end of the anchor's last line stays on that line.
Edit insert_statement_after(const SourceFile& source, TSNode anchor_statement, const std::string& statement,
                            const std::string& rule);

// Inserts a two-line block after the anchor statement: `header` with the anchor's indentation, then `body`
// indented one level deeper (the file's indentation step); a comment ending the anchor's line stays there.
Edit insert_block_after(const SourceFile& source, TSNode anchor_statement, const std::string& header,
                        const std::string& body, const std::string& rule);

// `if c:` -> `if c and <text>:` (parenthesised when c binds looser than `and`); for if and elif conditions.
std::vector<Edit> conjoin_condition(TSNode condition, const std::string& text, const std::string& rule);

// Puts a statement that has its own lines under `if <condition>:`, one level deeper.
std::vector<Edit> guard_statement(const SourceFile& source, TSNode statement, const std::string& condition,
                                  const std::string& rule);

// `X.m(args)` -> `X`: removes the method call from the chain, across lines.
Edit unwrap_method_call(TSNode call, const std::string& rule);

// Removes a statement and keeps valid Python and the other branches' logic: its own lines; or, when it is
// the only statement of a branch, a whole `if` with no elif/else (removed in turn as a statement of its own block)
// or a last elif/else clause; on a line shared through `;`, itself and one semicolon; else `pass`. `going`: other
// statements removed in the same run, anywhere. When they (or the `if`s they empty) and `statement` are all of a
// block, the edits are those of removing the block's only statement (each of them then returns the same whole `if`
// or clause, or the first becomes `pass` and the rest go), so that no removal leaves an empty block.
std::vector<Edit> remove_statement(const SourceFile& source, TSNode statement, const std::string& rule,
                                   const std::vector<TSNode>& going = {});

}  // namespace kvpatch
