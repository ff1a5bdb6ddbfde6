#pragma once
// Upstream's gate on the cache's own dtype, `kv if kv == D else model` (or `model if kv != D else kv`): the one
// choice between the KV-cache and the model dtype that a guard on a cast (`x.dtype != D`) can repeat. Both the
// dtype classifier (such a gate in a KV-named field is the KV-cache dtype) and the cast guard read it.
#include <string>
#include <string_view>

#include "kvpatch/python_syntax.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

// Text without whitespace, line continuations or enclosing parentheses, for comparing expressions as written.
std::string squeezed(std::string_view text);

// The last part of a dotted name: `model_runner.kv_cache_dtype` -> kv_cache_dtype.
std::string dotted_last_name(const std::string& text);

// The operator of a two-operand comparison ("==", "!=", "is not", ...), "" for anything else.
std::string two_operand_comparison(TSNode node);

// D, as one-line source text, when `value if condition else alternative` (the parts of a conditional, or the
// branches of an if statement read as one) is that gate; "" for any other choice. `roles` name the two dtypes.
std::string only_for_dtype(std::string_view source, TSNode value, TSNode condition, TSNode alternative,
                           const DtypeRoleNames& roles);

// The same for an expression: D when it is such a conditional.
std::string only_for_dtype(std::string_view source, TSNode expr, const DtypeRoleNames& roles);

}  // namespace kvpatch
