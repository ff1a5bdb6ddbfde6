#include "kvpatch/local_reads.h"

#include <algorithm>

#include "kvpatch/reaching_definitions.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

std::vector<TSNode> local_reads(const ModuleFacts& facts, const FunctionFacts& function, const std::string& name,
                                const std::vector<TSNode>& not_reads) {
  std::vector<TSNode> out;
  syntax::walk(function.body, [&](TSNode n) {
    if (!is(n, "identifier") || facts.text(n) != name) return true;
    if (!syntax::names_a_variable(n)) return true;
    if (std::none_of(not_reads.begin(), not_reads.end(), [&](TSNode t) { return syntax::same(t, n); })) out.push_back(n);
    return true;
  });
  return out;
}

TSNode lone_name_assignment(const Assignment& a) {
  if (a.kind != AssignmentKind::Plain || !is(a.statement, "assignment") ||
      !is(field(a.statement, "left"), "identifier") || is(field(a.statement, "right"), "assignment")) {
    return TSNode{};
  }
  TSNode statement = syntax::parent(a.statement);
  if (!is(statement, "expression_statement") || syntax::named_child_count(statement) != 1) return TSNode{};
  return statement;
}

bool pure_reference(TSNode node) {
  node = syntax::unparenthesized(node);
  while (is(node, "attribute")) node = syntax::unparenthesized(field(node, "object"));
  return is(node, "identifier");
}

std::optional<SoleLocal> sole_local(const ModuleFacts& facts, TSNode read) {
  const FunctionFacts* function = facts.function_at(read);
  if (function == nullptr || !is(read, "identifier")) return std::nullopt;
  const std::string name = facts.text(read);
  if (function->signature.index_of(name) >= 0) return std::nullopt;
  const std::vector<const Assignment*> all = facts.local_assignments(*function, name);
  if (all.size() != 1 || assignments_reaching(facts, *function, name, read).size() != 1) return std::nullopt;
  const Assignment& a = *all.front();
  const TSNode statement = lone_name_assignment(a);
  if (syntax::is_null(statement) || !pure_reference(a.value) || ts_node_end_byte(statement) > ts_node_start_byte(read)) {
    return std::nullopt;
  }
  if (!local_reads(facts, *function, name, {read, field(a.statement, "left")}).empty()) return std::nullopt;
  return SoleLocal{statement, a.value};
}

}  // namespace kvpatch
