#include "kvpatch/assignment_branches.h"

#include <algorithm>

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {
// The block a plain one-target assignment statement stands in directly (`x = v` on its own), or null.
TSNode block_of(const Assignment& a) {
  if (a.kind != AssignmentKind::Plain || syntax::is_null(a.value) || !is(a.statement, "assignment")) return TSNode{};
  TSNode statement = syntax::parent(a.statement);
  if (!is(statement, "expression_statement") || syntax::named_child_count(statement) != 1) return TSNode{};
  TSNode block = syntax::parent(statement);
  return is(block, "block") ? block : TSNode{};
}

struct Branch {
  TSNode condition{};  // null for the else
  TSNode block{};
  const Assignment* assignment = nullptr;
};
}  // namespace

std::optional<std::vector<AssignmentBranch>> assignment_branches(const std::vector<const Assignment*>& assignments,
                                                                 TSNode read, bool reaching) {
  if (assignments.size() < 2) return std::nullopt;
  for (const Assignment* a : assignments) {
    if (a->function != assignments.front()->function || syntax::is_null(block_of(*a))) return std::nullopt;
  }
  // The if statement whose branches hold the assignments: the one holding the last of them.
  TSNode owner = syntax::parent(block_of(*assignments.back()));
  TSNode if_statement = is(owner, "elif_clause") || is(owner, "else_clause") ? syntax::parent(owner) : owner;
  if (!is(if_statement, "if_statement") || syntax::contains(if_statement, read)) return std::nullopt;
  std::vector<Branch> branches{{field(if_statement, "condition"), field(if_statement, "consequence")}};
  bool has_else = false;
  for (TSNode clause : syntax::named_children(if_statement)) {
    if (is(clause, "elif_clause")) branches.push_back({field(clause, "condition"), field(clause, "consequence")});
    if (is(clause, "else_clause")) {
      branches.push_back({TSNode{}, field(clause, "body")});
      has_else = true;
    }
  }
  // Without an else, `x = a` before the if statement in the same block is the value when no branch assigns; only
  // the walk back from the read (`reaching`) says that nothing else can reach it.
  const Assignment* fallback = nullptr;
  for (const Assignment* a : assignments) {
    TSNode block = block_of(*a);
    auto branch = std::find_if(branches.begin(), branches.end(), [&](const Branch& b) { return syntax::same(b.block, block); });
    if (branch != branches.end()) {
      if (branch->assignment != nullptr) return std::nullopt;
      branch->assignment = a;
      continue;
    }
    if (!reaching || has_else || fallback != nullptr || !syntax::same(block, syntax::parent(if_statement)) ||
        ts_node_start_byte(a->statement) > ts_node_start_byte(if_statement)) {
      return std::nullopt;
    }
    fallback = a;
  }
  if ((!has_else && fallback == nullptr) ||
      std::any_of(branches.begin(), branches.end(), [](const Branch& b) { return b.assignment == nullptr; })) {
    return std::nullopt;
  }
  std::vector<AssignmentBranch> out;
  out.reserve(branches.size() + 1);
  for (const Branch& b : branches) out.push_back({b.condition, b.assignment});
  if (fallback != nullptr) out.push_back({TSNode{}, fallback});
  return out;
}

}  // namespace kvpatch
