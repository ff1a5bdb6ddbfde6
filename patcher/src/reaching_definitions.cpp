#include "kvpatch/reaching_definitions.h"

#include <algorithm>

#include "kvpatch/module_calls.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {

// Walks one function's statements backwards from a read, collecting the assignments that can reach it. Every
// method returns false when the walk cannot tell, and the caller then keeps every assignment.
class ReachingWalk {
public:
  ReachingWalk(const ModuleFacts& facts, const std::vector<const Assignment*>& assignments, const std::string& name,
               TSNode body)
      : facts_(facts), assignments_(assignments), name_(name), body_(body) {}

  bool run(TSNode read) {
    if (binds_anywhere(body_, {"global_statement", "nonlocal_statement"})) return false;
    // The statement holding the read, standing in a block of the function, and no deferred scope in between.
    TSNode statement = read;
    while (!is(syntax::parent(statement), "block")) {
      statement = syntax::parent(statement);
      if (syntax::is_null(statement) || is(statement, "lambda") || is(statement, "generator_expression") ||
          is(statement, "function_definition") || is(statement, "class_definition")) {
        return false;
      }
    }
    // The read in an if's condition, or a loop's, where the statement also assigns the name: not followed. In the
    // value of `x = f(x)` (or `a, x = x, a`) the read comes before the binding: the statements before it tell.
    if (holds_assignment(statement) && !read_before_binding(statement, read)) return false;
    TSNode block = syntax::parent(statement);
    for (;;) {
      bool assigned = false;
      if (!scan(block, position(block, statement), assigned)) return false;
      if (assigned || syntax::same(block, body_)) return true;
      statement = compound_left(block);
      if (syntax::is_null(statement) || !is(syntax::parent(statement), "block")) return false;
      block = syntax::parent(statement);
    }
  }

  // From the end of the function, when every way out of it is its end: no return statement (nor yield).
  bool run_to_end() {
    if (binds_anywhere(body_, {"global_statement", "nonlocal_statement"})) return false;
    bool exits_early = false;
    syntax::walk(body_, [&](TSNode n) {
      if (is(n, "function_definition") || is(n, "lambda") || is(n, "class_definition")) return false;
      if (is(n, "return_statement") || is(n, "yield")) exits_early = true;
      return !exits_early;
    });
    bool assigned = false;
    return !exits_early && scan(body_, syntax::statements(body_).size(), assigned);
  }

  std::vector<const Assignment*> found;

private:
  static std::size_t position(TSNode block, TSNode statement) {
    const std::vector<TSNode> all = syntax::statements(block);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (syntax::same(all[i], statement)) return i;
    }
    return all.size();
  }

  // Whether the statement is a plain assignment (`x = v`, `a = b = v`, `a, b = v`) and the read lies in the value v,
  // which Python evaluates before it binds any target, with no assignment of the name (a walrus) inside v.
  bool read_before_binding(TSNode statement, TSNode read) const {
    if (!is(statement, "expression_statement") || syntax::named_child_count(statement) != 1) return false;
    TSNode value = syntax::named_child(statement, 0);
    if (!is(value, "assignment")) return false;
    while (is(value, "assignment")) value = field(value, "right");
    return !syntax::is_null(value) && syntax::contains(value, read) && !holds_assignment(value);
  }

  bool holds_assignment(TSNode node) const {
    return std::any_of(assignments_.begin(), assignments_.end(),
                       [&](const Assignment* a) { return syntax::contains(node, a->statement); });
  }

  // Whether a node of one of these types inside `node` names the name (`global x`, `del x`, ...).
  bool binds_anywhere(TSNode node, const std::vector<std::string_view>& types) const {
    bool found_one = false;
    syntax::walk(node, [&](TSNode n) {
      if (found_one) return false;
      if (std::find(types.begin(), types.end(), syntax::type(n)) == types.end()) return true;
      syntax::walk(n, [&](TSNode m) {
        if (is(m, "identifier") && facts_.text(m) == name_) found_one = true;
        return !found_one;
      });
      return false;
    });
    return found_one;
  }

  // Whether the statement binds the name other than by a plain assignment: an import, a def or class of that
  // name, `del`; those are not among the assignments, so the walk cannot see past them.
  bool binds_otherwise(TSNode statement) const {
    bool found_one = false;
    syntax::walk(statement, [&](TSNode n) {
      if (found_one) return false;
      if ((is(n, "function_definition") || is(n, "class_definition")) && facts_.text(field(n, "name")) == name_) {
        found_one = true;
      }
      return !found_one;
    });
    return found_one ||
           binds_anywhere(statement, {"import_statement", "import_from_statement", "future_import_statement",
                                      "delete_statement"});
  }

  // The one assignment of the name that this statement is, `x = v` (or `x = y = v`) standing alone; null otherwise.
  const Assignment* direct_assignment(TSNode statement) const {
    if (!is(statement, "expression_statement") || syntax::named_child_count(statement) != 1 ||
        !is(syntax::named_child(statement, 0), "assignment")) {
      return nullptr;
    }
    const Assignment* only = nullptr;
    for (const Assignment* a : assignments_) {
      if (!syntax::contains(statement, a->statement)) continue;
      if (only != nullptr) return nullptr;
      only = a;
    }
    // The assignment is the statement itself or a link of its chain, never one nested in its value.
    for (TSNode n = only != nullptr ? only->statement : TSNode{}; !syntax::is_null(n); n = syntax::parent(n)) {
      if (syntax::same(n, statement)) return only;
      if (!is(n, "assignment")) return nullptr;
    }
    return nullptr;
  }

  // Statements [0, end) of the block, last first; `assigned` when every path through them assigns the name.
  bool scan(TSNode block, std::size_t end, bool& assigned) {
    const std::vector<TSNode> all = syntax::statements(block);
    for (std::size_t i = std::min(end, all.size()); i > 0; --i) {
      bool here = false;
      if (!effect(all[i - 1], here)) return false;
      if (here) {
        assigned = true;
        return true;
      }
    }
    assigned = false;
    return true;
  }

  bool effect(TSNode statement, bool& assigned) {
    assigned = false;
    if (binds_otherwise(statement)) return false;
    if (!holds_assignment(statement)) return true;
    if (const Assignment* a = direct_assignment(statement)) {
      found.push_back(a);
      assigned = true;
      return true;
    }
    if (is(statement, "if_statement")) {
      bool every_branch = true;
      bool has_else = false;
      std::vector<TSNode> blocks{field(statement, "consequence")};
      for (TSNode clause : syntax::named_children(statement)) {
        if (is(clause, "elif_clause")) blocks.push_back(field(clause, "consequence"));
        if (is(clause, "else_clause")) {
          blocks.push_back(field(clause, "body"));
          has_else = true;
        }
      }
      for (TSNode block : blocks) {
        if (!is(block, "block")) return false;
        bool branch = false;
        if (!scan(block, syntax::statements(block).size(), branch)) return false;
        every_branch = every_branch && branch;
      }
      assigned = every_branch && has_else;
      return true;
    }
    if (is(statement, "with_statement")) {
      TSNode body = field(statement, "body");
      for (TSNode child : syntax::named_children(statement)) {
        if (!syntax::same(child, body) && holds_assignment(child)) return false;
      }
      return is(body, "block") && scan(body, syntax::statements(body).size(), assigned);
    }
    return false;  // loops, try, match and anything else holding an assignment of the name
  }

  // The compound statement whose block the walk leaves, when the statements before it are the ones that run
  // before that block; null when the walk cannot go on from there.
  TSNode compound_left(TSNode block) const {
    TSNode owner = syntax::parent(block);
    if (is(owner, "if_statement") || is(owner, "with_statement")) return owner;
    if (is(owner, "elif_clause")) return syntax::parent(owner);
    TSNode around = is(owner, "else_clause") || is(owner, "except_clause") || is(owner, "except_group_clause") ||
                            is(owner, "finally_clause")
                        ? syntax::parent(owner)
                        : owner;
    if (is(around, "if_statement")) return around;
    if (is(owner, "try_statement")) return owner;  // the try body: its earlier statements were scanned
    // A loop's body runs again after its end, and a handler after any part of the try body: only when none of
    // them assigns the name is what ran before the statement all that reaches.
    if (is(around, "for_statement") || is(around, "while_statement") || is(around, "try_statement")) {
      return holds_assignment(around) ? TSNode{} : around;
    }
    return TSNode{};
  }

  const ModuleFacts& facts_;
  const std::vector<const Assignment*>& assignments_;
  const std::string& name_;
  TSNode body_;
};

}  // namespace

namespace {
// A read in a def nested in the function (a closure) sees the value the name has when the nested def runs: the
// assignments that reach its calls, where the function makes every call of it (known_calls) itself. A def nested
// deeper runs within the outer one's call where each def between is only called in its encloser; a lambda or a
// generator expression around the read may run later, after the calls.
std::optional<std::vector<const Assignment*>> reaching_closure(const ModuleFacts& facts,
                                                               const std::vector<const Assignment*>& assignments,
                                                               const std::string& name, TSNode read,
                                                               const FunctionFacts* reader, int function) {
  auto deferred = [](TSNode node, TSNode body) {
    for (TSNode n = syntax::parent(node); !syntax::is_null(n) && !syntax::same(n, body); n = syntax::parent(n)) {
      if (is(n, "lambda") || is(n, "generator_expression")) return true;
    }
    return false;
  };
  if (deferred(read, reader->body)) return std::nullopt;
  while (reader != nullptr && reader->outer != function) {
    const FunctionFacts* encloser = enclosing_function(facts, *reader);
    const std::optional<std::vector<TSNode>> calls = known_calls(facts, *reader);
    if (!calls || std::any_of(calls->begin(), calls->end(), [&](TSNode c) { return deferred(c, encloser->body); })) {
      return std::nullopt;
    }
    reader = encloser;
  }
  if (reader == nullptr) return std::nullopt;
  const std::optional<std::vector<TSNode>> calls = known_calls(facts, *reader);
  if (!calls || calls->empty()) return std::nullopt;
  std::vector<const Assignment*> found;
  for (TSNode call : *calls) {
    if (facts.index_of(facts.function_at(call)) != function) return std::nullopt;
    const std::optional<std::vector<const Assignment*>> at_call = reaching_assignments(facts, assignments, name, call);
    if (!at_call) return std::nullopt;
    found.insert(found.end(), at_call->begin(), at_call->end());
  }
  std::vector<const Assignment*> out;
  for (const Assignment* a : assignments) {
    if (std::find(found.begin(), found.end(), a) != found.end()) out.push_back(a);
  }
  return out;
}
}  // namespace

std::optional<std::vector<const Assignment*>> reaching_assignments(const ModuleFacts& facts,
                                                                   const std::vector<const Assignment*>& assignments,
                                                                   const std::string& name, TSNode read) {
  if (assignments.size() < 2) return std::nullopt;
  const int function = assignments.front()->function;
  for (const Assignment* a : assignments) {
    // `a, b = f()` binds every name as surely as `a = v` does (or raises), so it ends the walk the same way.
    const bool binds = a->kind == AssignmentKind::Plain || a->kind == AssignmentKind::Unpacked;
    if (!binds || !is(a->statement, "assignment") || a->function != function) return std::nullopt;
  }
  if (function < 0) return std::nullopt;
  const FunctionFacts* reader = facts.function_at(read);
  if (reader == nullptr) return std::nullopt;
  if (facts.index_of(reader) != function) return reaching_closure(facts, assignments, name, read, reader, function);
  const FunctionFacts& f = facts.functions()[static_cast<std::size_t>(function)];
  ReachingWalk walk(facts, assignments, name, f.body);
  if (!walk.run(read) || walk.found.empty()) return std::nullopt;
  std::vector<const Assignment*> out;
  for (const Assignment* a : assignments) {
    if (std::find(walk.found.begin(), walk.found.end(), a) != walk.found.end()) out.push_back(a);
  }
  return out;
}

std::optional<std::vector<const Assignment*>> reaching_end(const ModuleFacts& facts,
                                                           const std::vector<const Assignment*>& assignments,
                                                           const std::string& target) {
  if (assignments.size() < 2) return std::nullopt;
  const int function = assignments.front()->function;
  for (const Assignment* a : assignments) {
    if (a->kind != AssignmentKind::Plain || !is(a->statement, "assignment") || a->function != function) {
      return std::nullopt;
    }
  }
  if (function < 0) return std::nullopt;
  ReachingWalk walk(facts, assignments, target, facts.functions()[static_cast<std::size_t>(function)].body);
  if (!walk.run_to_end() || walk.found.empty()) return std::nullopt;
  std::vector<const Assignment*> out;
  for (const Assignment* a : assignments) {
    if (std::find(walk.found.begin(), walk.found.end(), a) != walk.found.end()) out.push_back(a);
  }
  return out;
}

namespace {
// Whether the method calls a method of its own instance (`self.f(...)`).
bool calls_own_method(const ModuleFacts& facts, const FunctionFacts& method) {
  const std::string self = self_name(method);
  bool calls = false;
  syntax::walk(method.body, [&](TSNode n) {
    if (calls) return false;
    if (is(n, "call")) {
      TSNode callee = syntax::unparenthesized(field(n, "function"));
      TSNode object = is(callee, "attribute") ? syntax::unparenthesized(field(callee, "object")) : TSNode{};
      calls = is(object, "identifier") && facts.text(object) == self;
    }
    return !calls;
  });
  return calls;
}
}  // namespace

std::optional<std::vector<const Assignment*>> attribute_assignments_reaching(
    const ModuleFacts& facts, const std::vector<const Assignment*>& assignments, const std::string& target, TSNode read) {
  const int setter = assignments.empty() ? -1 : assignments.front()->function;
  if (setter < 0) return std::nullopt;
  const FunctionFacts& set_in = facts.functions()[static_cast<std::size_t>(setter)];
  if (facts.index_of(facts.function_at(read)) == setter) return reaching_assignments(facts, assignments, target, read);
  if (set_in.is_method() && set_in.name == "__init__" && !syntax::contains(set_in.node, read) &&
      !calls_own_method(facts, set_in)) {
    return reaching_end(facts, assignments, target);
  }
  return std::nullopt;
}

bool set_only_in_init(const ModuleFacts& facts, const std::vector<const Assignment*>& assignments) {
  return !assignments.empty() && std::all_of(assignments.begin(), assignments.end(), [&](const Assignment* a) {
    if (a->function < 0) return false;
    const FunctionFacts& f = facts.functions()[static_cast<std::size_t>(a->function)];
    return f.is_method() && f.name == "__init__";
  });
}

std::vector<const Assignment*> assignments_reaching(const ModuleFacts& facts, const FunctionFacts& function,
                                                   const std::string& name, TSNode read) {
  std::vector<const Assignment*> all = facts.local_assignments(function, name);
  if (auto reaching = reaching_assignments(facts, all, name, read)) return *reaching;
  return all;
}

}  // namespace kvpatch
