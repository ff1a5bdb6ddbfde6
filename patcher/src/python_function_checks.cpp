// What CPython's compiler refuses of a function as a whole, which no single statement shows: an async
// generator (an `async def` that yields) returning a value. The grammar takes it, and a line moved
// into or out of an async function can make one.
#include <string_view>
#include <vector>

#include "kvpatch/python_compile_rules.h"

namespace kvpatch::compile_rules {

void function_body(TSNode function, const Report& report) {
  if (!syntax::has_token(function, "async")) return;
  bool yields = false;
  std::vector<TSNode> returns;  // each `return <value>`
  std::vector<TSNode> pending{syntax::field(function, "body")};
  while (!pending.empty()) {
    const TSNode node = pending.back();
    pending.pop_back();
    const std::string_view type = syntax::type(node);
    // A nested def, lambda or class is a function of its own (a yield in a comprehension is refused
    // elsewhere).
    if (type == "function_definition" || type == "lambda" || type == "class_definition") continue;
    yields = yields || type == "yield";
    if (type == "return_statement" && syntax::named_child_count(node) > 0) returns.push_back(node);
    for (uint32_t i = ts_node_named_child_count(node); i > 0; --i) pending.push_back(ts_node_named_child(node, i - 1));
  }
  if (!yields) return;
  for (TSNode r : returns) report(r, "'return' with value in async generator");
}

}  // namespace kvpatch::compile_rules
