#include "kvpatch/cache_dtype_gate.h"

#include <algorithm>
#include <vector>

namespace kvpatch {
using syntax::is;

namespace {
std::string node_text(std::string_view source, TSNode node) {
  return std::string(source.substr(ts_node_start_byte(node), ts_node_end_byte(node) - ts_node_start_byte(node)));
}
}  // namespace

std::string squeezed(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\\') out += c;
  }
  while (out.size() >= 2 && out.front() == '(' && out.back() == ')') {
    int depth = 0;
    bool encloses = true;
    for (std::size_t i = 0; i + 1 < out.size() && encloses; ++i) {
      depth += out[i] == '(' ? 1 : out[i] == ')' ? -1 : 0;
      encloses = depth > 0;
    }
    if (!encloses) break;
    out = out.substr(1, out.size() - 2);
  }
  return out;
}

std::string dotted_last_name(const std::string& text) {
  const std::size_t dot = text.rfind('.');
  return dot == std::string::npos ? text : text.substr(dot + 1);
}

std::string two_operand_comparison(TSNode node) {
  if (!is(node, "comparison_operator") || syntax::named_child_count(node) != 2) return "";
  std::string op;
  for (uint32_t i = 0; i < ts_node_child_count(node); ++i) {
    TSNode child = ts_node_child(node, i);
    if (!ts_node_is_named(child)) op += std::string(syntax::type(child));
  }
  return op;
}

// The KV-cache dtype on the side where the comparison holds for `==` (the model dtype for `!=`), and the
// comparison between that very expression and D.
std::string only_for_dtype(std::string_view source, TSNode value, TSNode condition, TSNode alternative,
                           const DtypeRoleNames& roles) {
  TSNode test = syntax::unparenthesized(condition);
  const std::string op = two_operand_comparison(test);
  if (op != "==" && op != "!=") return "";
  const std::string kv = squeezed(node_text(source, op == "==" ? value : alternative));
  const std::string model = squeezed(node_text(source, op == "==" ? alternative : value));
  if (!listed(roles.kv_cache, dotted_last_name(kv)) || !listed(roles.model, dotted_last_name(model))) return "";
  TSNode left = syntax::named_child(test, 0);
  TSNode right = syntax::named_child(test, 1);
  if (squeezed(node_text(source, left)) == kv) return one_line(node_text(source, right));
  if (squeezed(node_text(source, right)) == kv) return one_line(node_text(source, left));
  return "";
}

std::string only_for_dtype(std::string_view source, TSNode expr, const DtypeRoleNames& roles) {
  expr = syntax::unparenthesized(expr);
  if (!is(expr, "conditional_expression")) return "";
  const std::vector<TSNode> parts = syntax::statements(expr);  // value, condition, alternative
  return parts.size() == 3 ? only_for_dtype(source, parts[0], parts[1], parts[2], roles) : "";
}

}  // namespace kvpatch
