#pragma once
// The compile checks first_compile_problem() runs besides its own (indentation, logical lines,
// argument and parameter lists, statements out of their function or loop), one file per kind.
// Each reports through `report`; a node may be reported more than once, and the caller keeps the
// problem nearest the top of the file.
#include <functional>
#include <string>

#include "kvpatch/python_syntax.h"

namespace kvpatch::compile_rules {

using Report = std::function<void(TSNode, std::string)>;

// CPython's name for a comprehension node type ("list comprehension", ...), or nullptr for any other.
const char* comprehension_kind(std::string_view type);

// What del, =, +=, an annotation, for, with ... as, := and a keyword argument bind or delete:
// `del f()`, `a, b += 1`, `(): int`, `with x as f():`, `__debug__ = 1`, and `:=` in a type parameter's
// bound, a type alias or a generic class's bases. Called on every node.
void binding_targets(const ParsedFile& file, TSNode node, const Report& report);

// Expression and statement shapes the grammar takes and Python 3 does not: `raise X, Y`,
// `print x`, `f(x for x in a, b)`, `from m import x,`, `b"é"`, and a backslash continuing the last
// line. Called on every node.
void statement_forms(const ParsedFile& file, TSNode node, const Report& report);

// Starred expressions where Python unpacks nothing: `x = (*a.b)`, `x = *a`, `a if *b else c`, `{1: *a}`,
// `(*a) = b`, `x: *b`. Called on every node.
void starred_expressions(TSNode node, const Report& report);

// Whether an except clause is `except* E` (the grammar reads it as an except clause whose value is `*E`).
bool except_star(TSNode clause);

// A function as a whole: an async generator that returns a value. Called on each function_definition.
void function_body(TSNode function, const Report& report);

// global and nonlocal in one scope: a module, a function or a class body. Called on each.
void declarations(const ParsedFile& file, TSNode scope, const Report& report);

}  // namespace kvpatch::compile_rules
