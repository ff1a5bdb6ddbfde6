#pragma once
// Python call binding: a declared signature, a call's arguments, and which argument fills which parameter.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvpatch {

enum class ParameterKind { PositionalOnly, PositionalOrKeyword, VarPositional, KeywordOnly, VarKeyword };

struct Parameter {
  std::string name;
  ParameterKind kind = ParameterKind::PositionalOrKeyword;
  std::optional<std::string> default_text;  // source text of the default, when there is one
  std::string annotation;                   // source text of the annotation, "" when none
};

struct Signature {
  std::vector<Parameter> parameters;
  // Index of the named parameter, or -1.
  int index_of(const std::string& name) const;
  // Number of parameters that can be passed by position (before any *args, keyword-only or **kwargs).
  std::size_t positional_count() const;
};

enum class ArgumentKind { Positional, Keyword, UnpackedSequence, UnpackedMapping };

struct CallArgument {
  ArgumentKind kind = ArgumentKind::Positional;
  std::string keyword;          // for Keyword
  std::string text;             // the value's source text
  std::size_t value_begin = 0;  // byte span of the value
  std::size_t value_end = 0;
  std::size_t item_begin = 0;   // byte span of the whole item (`name=value`, `*x`)
  std::size_t item_end = 0;
};

struct BoundValue {
  int argument = -1;         // index into the call's arguments; -1 when the default fills it
  std::string text;          // the argument's or default's source text
  bool from_default() const { return argument < 0; }
};

struct Binding {
  bool complete = false;        // false: the call cannot be bound (see failure)
  std::string failure;          // why, e.g. "call unpacks **kwargs"
  std::map<std::string, BoundValue> values;
  const BoundValue* find(const std::string& name) const;
};

// Binds arguments to parameters with Python's rules (positional, keyword, defaults, *args, **kwargs).
// A call that unpacks *x or **x cannot be bound statically: the result is incomplete with the reason.
Binding bind_arguments(const Signature& signature, const std::vector<CallArgument>& arguments);

// Parses a parameter list written as Python source, e.g. "a, b, c=False, *, d=None" (rule files use it).
// Throws std::invalid_argument naming the problem.
Signature parse_parameter_list(const std::string& text);

}  // namespace kvpatch

#include <tree_sitter/api.h>

#include <string_view>

namespace kvpatch {
// The signature declared by a `parameters` node; text is the source the node indexes.
Signature signature_from_parameters(std::string_view text, TSNode parameters);
// The arguments of an `argument_list` node, comments left out.
std::vector<CallArgument> call_arguments(std::string_view text, TSNode argument_list);
}  // namespace kvpatch
