#pragma once
// What CPython's compiler refuses that tree-sitter-python's grammar parses without an ERROR node.
// The grammar is forgiving about indentation: a statement indented deeper than its block, or back to
// a level no outer block has, lands in some block silently, and a header with no body gets an empty
// block. kvpatch reads methods, call sites and their arguments from the tree, so where the tree and
// Python disagree on a file's shape the file is refused rather than judged or edited. The argument
// and parameter lists the compiler rejects (a keyword given twice, a positional argument after a
// keyword) are refused for the same reason: a plan() call's binding would be guesswork. The checks
// python_compile_rules.h names (targets, statement forms, starred expressions, global and nonlocal) run in
// the same walk.
#include <cstddef>
#include <optional>
#include <string>

#include "kvpatch/python_syntax.h"

namespace kvpatch {

struct CompileProblem {
  std::size_t offset = 0;  // into file.source.text()
  std::string message;     // CPython's wording where it has one
  // The grammar's tree is not what Python reads here, so Python may well compile the file: the lines
  // `a,` and `x = 1` read as the one statement `a, x = 1`. kvpatch cannot read such a file either way.
  bool grammar_misread = false;
};

// The first such problem in source order, or nullopt. Expects a tree without syntax errors.
std::optional<CompileProblem> first_compile_problem(const ParsedFile& file);

}  // namespace kvpatch
