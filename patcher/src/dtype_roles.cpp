#include "kvpatch/dtype_roles.h"

#include <algorithm>
#include <functional>

#include "kvpatch/assignment_branches.h"
#include "kvpatch/cache_dtype_gate.h"
#include "kvpatch/module_calls.h"
#include "kvpatch/reaching_definitions.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {
constexpr int kMaxDepth = 8;  // bounds chains of assignments (and cycles through them)

DtypeArgument with_role(DtypeRole role, std::string reason = "") {
  DtypeArgument a;
  a.role = role;
  a.reason = std::move(reason);
  return a;
}
}  // namespace

const char* role_name(DtypeRole role) {
  switch (role) {
    case DtypeRole::KvCache: return "kv_cache";
    case DtypeRole::Model: return "model";
    case DtypeRole::Gated: return "gated";
    case DtypeRole::Unknown: break;
  }
  return "unknown";
}

const char* site_label(const PlanSite& site) {
  return site.unbuildable.empty() ? status_name(site.status) : "unbuildable";
}

const char* status_name(SiteStatus status) {
  switch (status) {
    case SiteStatus::Threaded: return "threaded";
    case SiteStatus::Missing: return "missing";
    case SiteStatus::Gated: return "gated";
    case SiteStatus::Ignored: return "ignored";
    case SiteStatus::Unknown: break;
  }
  return "unknown";
}

const FunctionFacts* holding_method(const ModuleFacts& facts, const FunctionFacts* function) {
  while (function != nullptr && function->outer >= 0) {
    function = &facts.functions()[static_cast<std::size_t>(function->outer)];
  }
  return function;
}

bool DtypeClassifier::all_names_read(TSNode expr, const FunctionFacts* scope,
                                     const std::function<bool(const std::string&)>& ok) const {
  const FunctionFacts* method = holding_method(facts_, scope);
  const std::string self = method != nullptr ? self_name(*method) : "";
  bool all = true;
  syntax::walk(expr, [&](TSNode n) {
    if (!all || !is(n, "identifier")) return all;
    TSNode parent = syntax::parent(n);
    if (is(parent, "attribute") && syntax::same(field(parent, "attribute"), n)) return true;
    if (is(parent, "keyword_argument") && syntax::same(field(parent, "name"), n)) return true;
    const std::string name = facts_.text(n);
    if (name != self) all = ok(name);
    return all;
  });
  return all;
}

bool DtypeClassifier::local_anywhere(const std::string& name, const FunctionFacts* scope, bool skip_own_parameters) const {
  if (scope == nullptr) return false;
  if (skip_own_parameters && scope->signature.index_of(name) >= 0) {
    // The function's own parameter aside: its assignments and nested defs of that name still bind it.
    if (!facts_.local_assignments(*scope, name).empty() || !nested_defs_named(facts_, *scope, name).empty()) {
      return true;
    }
    return function_binding(facts_, enclosing_function(facts_, *scope), name) != nullptr;
  }
  return function_binding(facts_, scope, name) != nullptr;
}

bool DtypeClassifier::reads_no_local(TSNode expr, const FunctionFacts* scope) const {
  // A name bound in the function (or an enclosing one) is a local; anything else is module-level.
  return all_names_read(expr, scope, [&](const std::string& name) { return !local_anywhere(name, scope, false); });
}

bool DtypeClassifier::reads_only_parameters(TSNode expr, const FunctionFacts* scope) const {
  if (scope == nullptr) return false;
  // A parameter of this function must never be reassigned in it; any other name must be no local at all.
  return all_names_read(expr, scope, [&](const std::string& name) { return !local_anywhere(name, scope, true); });
}

DtypeRole DtypeClassifier::role_of_name(const std::string& name) const {
  if (std::find(names_.kv_cache.begin(), names_.kv_cache.end(), name) != names_.kv_cache.end()) return DtypeRole::KvCache;
  if (std::find(names_.model.begin(), names_.model.end(), name) != names_.model.end()) return DtypeRole::Model;
  return DtypeRole::Unknown;
}

std::optional<DtypeArgument> DtypeClassifier::from_callers(const FunctionFacts& function, const std::string& name,
                                                           int depth) const {
  const std::optional<std::vector<ParameterBinding>> bindings = parameter_bindings(facts_, function, name);
  if (!bindings) return std::nullopt;
  std::vector<DtypeArgument> parts;
  for (const ParameterBinding& b : *bindings) {
    if (!syntax::is_null(b.value)) {
      parts.push_back(classify(b.value, b.caller, depth + 1));
    } else if (b.default_text) {
      parts.push_back(classify_text(*b.default_text));
    } else {
      return with_role(DtypeRole::Unknown, "the call of " + function.name + " at " + position_text(b.call) + " binds " +
                                               name + " to nothing known" + (b.failure.empty() ? "" : " (" + b.failure + ")"));
    }
  }
  if (parts.empty()) return std::nullopt;
  DtypeArgument out = combine(parts, name);
  const bool all_known =
      std::none_of(parts.begin(), parts.end(), [](const DtypeArgument& p) { return p.role == DtypeRole::Unknown; });
  if (out.role == DtypeRole::Unknown && all_known) {  // known roles that disagree
    out.reason = "the calls of " + function.name + "() pass " + name + " both the KV-cache dtype and the model dtype";
  }
  out.passed_by = function.name;
  return out;
}

DtypeArgument DtypeClassifier::classify(TSNode expr, const FunctionFacts* scope) const {
  DtypeArgument out = classify(expr, scope, 0);
  out.expr = one_line(facts_.file().text(expr));
  return out;
}

DtypeArgument DtypeClassifier::classify_text(const std::string& text) const {
  DtypeArgument out;
  out.expr = one_line(text);
  // A default is read by its last name only: `model_runner.kv_cache_dtype` -> kv_cache_dtype.
  const std::size_t dot = out.expr.rfind('.');
  out.role = role_of_name(dot == std::string::npos ? out.expr : out.expr.substr(dot + 1));
  if (out.role == DtypeRole::Unknown) out.reason = "the default " + out.expr + " is neither the KV-cache nor the model dtype";
  return out;
}

DtypeArgument DtypeClassifier::combine(const std::vector<DtypeArgument>& parts, const std::string& what) const {
  if (parts.empty()) return with_role(DtypeRole::Unknown, "no value found for " + what);
  auto all = [&](DtypeRole role) {
    return std::all_of(parts.begin(), parts.end(), [&](const DtypeArgument& p) { return p.role == role; });
  };
  if (all(DtypeRole::KvCache)) return with_role(DtypeRole::KvCache);
  if (all(DtypeRole::Model)) return with_role(DtypeRole::Model);
  const bool only_kv_or_gated = std::all_of(parts.begin(), parts.end(), [](const DtypeArgument& p) {
    return p.role == DtypeRole::KvCache || p.role == DtypeRole::Gated;
  });
  if (only_kv_or_gated) {
    for (const DtypeArgument& p : parts) {
      if (p.role == DtypeRole::Gated) return p;
    }
  }
  for (const DtypeArgument& p : parts) {
    if (p.role == DtypeRole::Unknown) return with_role(DtypeRole::Unknown, p.reason);
  }
  return with_role(DtypeRole::Unknown, what + " is assigned both the KV-cache dtype and the model dtype in different places");
}

DtypeArgument DtypeClassifier::choice(TSNode value, TSNode condition, TSNode alternative, const std::string& gate_expr,
                                      const std::vector<TSNode>& reads, const FunctionFacts* scope, int depth) const {
  DtypeArgument out = decide(classify(value, scope, depth + 1), classify(alternative, scope, depth + 1),
                             one_line(facts_.file().text(condition)), gate_expr, reads, scope);
  if (out.role == DtypeRole::Gated) {
    out.gate_tests_cache_dtype = !only_for_dtype(facts_.file().source.text(), value, condition, alternative, names_).empty();
  }
  return out;
}

DtypeArgument DtypeClassifier::decide(const DtypeArgument& a, const DtypeArgument& b, const std::string& condition,
                                      const std::string& gate_expr, const std::vector<TSNode>& reads,
                                      const FunctionFacts* scope) const {
  if (a.role == b.role && a.role != DtypeRole::Unknown && a.role != DtypeRole::Gated) return with_role(a.role);
  const bool kv_and_model = (a.role == DtypeRole::KvCache && b.role == DtypeRole::Model) ||
                            (a.role == DtypeRole::Model && b.role == DtypeRole::KvCache);
  if (kv_and_model || ((a.role == DtypeRole::Gated || b.role == DtypeRole::Gated) && a.role != DtypeRole::Unknown &&
                       b.role != DtypeRole::Unknown)) {
    DtypeArgument gated = with_role(DtypeRole::Gated);
    gated.condition = condition;
    gated.gate_expr = gate_expr;
    gated.gate_portable = std::all_of(reads.begin(), reads.end(), [&](TSNode n) { return reads_no_local(n, scope); });
    gated.gate_function = scope != nullptr ? scope->node : TSNode{};
    gated.gate_reads_parameters =
        std::all_of(reads.begin(), reads.end(), [&](TSNode n) { return reads_only_parameters(n, scope); });
    return gated;
  }
  return with_role(DtypeRole::Unknown, a.role == DtypeRole::Unknown ? a.reason : b.reason);
}

namespace {
// An operand of a `value if condition else alternative` written out: in parentheses when it would not
// parse there bare.
std::string operand(const ModuleFacts& facts, TSNode node) {
  TSNode bare = syntax::unparenthesized(node);
  const std::string text = one_line(facts.text(bare));
  const bool wrap = is(bare, "conditional_expression") || is(bare, "lambda") || is(bare, "named_expression") ||
                    is(bare, "yield");
  return wrap ? "(" + text + ")" : text;
}
}  // namespace

std::optional<DtypeArgument> DtypeClassifier::branch_choice(const std::vector<const Assignment*>& assignments, TSNode read,
                                                            int depth, bool reaching) const {
  const auto branches = assignment_branches(assignments, read, reaching);
  if (!branches) return std::nullopt;
  // `v1 if c1 else v2 if c2 else v3`, built from the last alternative up.
  const FunctionFacts* scope =
      assignments[0]->function >= 0 ? &facts_.functions()[static_cast<std::size_t>(assignments[0]->function)] : nullptr;
  const std::size_t conditions = branches->size() - 1;
  TSNode last = branches->back().assignment->value;
  DtypeArgument rest = classify(last, scope, depth + 1);
  std::string rest_text = operand(facts_, last);
  std::vector<TSNode> reads{last};
  for (std::size_t i = conditions; i-- > 0;) {
    const AssignmentBranch& b = (*branches)[i];
    reads.push_back(b.condition);
    reads.push_back(b.assignment->value);
    const std::string text =
        operand(facts_, b.assignment->value) + " if " + operand(facts_, b.condition) + " else " + rest_text;
    rest = decide(classify(b.assignment->value, scope, depth + 1), rest,
                  one_line(facts_.text(syntax::unparenthesized(b.condition))), text, reads, scope);
    rest_text = text;
  }
  if (rest.role == DtypeRole::Gated && conditions == 1) {
    rest.gate_tests_cache_dtype = !only_for_dtype(facts_.file().source.text(), (*branches)[0].assignment->value,
                                                  (*branches)[0].condition, last, names_)
                                       .empty();
  }
  if (rest.role == DtypeRole::Gated && conditions > 1) {
    // The message names every condition the chain tests, in order.
    rest.condition = one_line(facts_.text(syntax::unparenthesized((*branches)[0].condition)));
    for (std::size_t i = 1; i < conditions; ++i) {
      rest.condition += ", elif " + one_line(facts_.text(syntax::unparenthesized((*branches)[i].condition)));
    }
  }
  return rest;
}

DtypeArgument DtypeClassifier::classify(TSNode expr, const FunctionFacts* scope, int depth) const {
  expr = syntax::unparenthesized(expr);
  const std::string text = one_line(facts_.file().text(expr));
  if (depth > kMaxDepth) return with_role(DtypeRole::Unknown, "assignment chain of " + text + " is too long to follow");

  if (is(expr, "none")) {
    // FlashInfer reads a None dtype as "same as the query": the rule file says which role that is.
    const DtypeRole role = role_of_name("None");
    return role != DtypeRole::Unknown ? with_role(role) : with_role(DtypeRole::Unknown, "None");
  }
  if (is(expr, "conditional_expression")) {
    const std::vector<TSNode> parts = syntax::statements(expr);  // value, condition, alternative
    if (parts.size() != 3) return with_role(DtypeRole::Unknown, "unexpected conditional " + text);
    return choice(parts[0], parts[1], parts[2], text, {expr}, scope, depth);
  }

  if (is(expr, "identifier")) {
    if (scope != nullptr) {
      std::vector<const Assignment*> assignments = facts_.local_assignments(*scope, text);
      // A closure reads the enclosing function's locals.
      for (const FunctionFacts* outer = scope; assignments.empty() && outer->outer >= 0;) {
        outer = &facts_.functions()[static_cast<std::size_t>(outer->outer)];
        assignments = facts_.local_assignments(*outer, text);
      }
      // Only the assignments that can reach this read count: one made in another branch does not.
      const auto reaching = reaching_assignments(facts_, assignments, text, expr);
      if (reaching) assignments = *reaching;
      if (auto branches = branch_choice(assignments, expr, depth, reaching.has_value())) return *branches;
      if (!assignments.empty()) {
        std::vector<DtypeArgument> parts;
        for (const Assignment* a : assignments) {
          // `q_dt, kv_dt = self._dtypes()`: the element each return of the helper gives the name.
          if (a->kind == AssignmentKind::Unpacked) {
            if (auto returned = unpacked_returns(facts_, a->statement, text)) {
              for (const ReturnedValue& r : *returned) parts.push_back(classify(r.value, r.function, depth + 1));
              continue;
            }
          }
          if (a->kind != AssignmentKind::Plain || syntax::is_null(a->value)) {
            return with_role(DtypeRole::Unknown, text + " is assigned in a way kvpatch does not follow");
          }
          parts.push_back(classify(a->value, &facts_.functions()[static_cast<std::size_t>(a->function)], depth + 1));
        }
        return combine(parts, text);
      }
      // A parameter never reassigned holds what the calls of its function pass.
      if (scope->signature.index_of(text) >= 0 && facts_.local_assignments(*scope, text).empty()) {
        if (auto passed = from_callers(*scope, text, depth)) return *passed;
      }
    }
    const DtypeRole role = role_of_name(text);
    if (role != DtypeRole::Unknown) return with_role(role);
    return with_role(DtypeRole::Unknown, "cannot tell which dtype " + text + " holds");
  }

  if (is(expr, "attribute")) {
    const std::string attr = one_line(facts_.file().text(field(expr, "attribute")));
    TSNode object = field(expr, "object");
    const FunctionFacts* method = holding_method(facts_, scope);
    std::optional<DtypeArgument> assigned;  // what the class's assignments of `self.<attr>` give it here
    if (method != nullptr && is(object, "identifier") && facts_.text(object) == self_name(*method)) {
      if (const ClassFacts* cls = facts_.find_class(method->class_name)) {
        const std::vector<const Assignment*> all = facts_.self_attribute_assignments(*cls, attr);
        std::vector<const Assignment*> assignments = all;
        // Set in one function: read there, the assignments before the read count; read elsewhere, when that
        // function is __init__, the ones it leaves at its end.
        const auto reaching = attribute_assignments_reaching(facts_, assignments, text, expr);
        if (reaching) assignments = *reaching;
        assigned = branch_choice(assignments, expr, depth, reaching.has_value());
        if (!assigned) {
          std::vector<DtypeArgument> parts;
          for (const Assignment* a : assignments) {
            if (a->kind != AssignmentKind::Plain || syntax::is_null(a->value)) continue;
            parts.push_back(classify(a->value, &facts_.functions()[static_cast<std::size_t>(a->function)], depth + 1));
          }
          if (!parts.empty()) assigned = combine(parts, text);
        }
        if (assigned && assigned->role == DtypeRole::Gated && set_only_in_init(facts_, all)) assigned->gate_attribute = attr;
      }
    }
    if (role_of_name(attr) == DtypeRole::KvCache) {
      // Named as the KV-cache dtype, it is taken for one when upstream's gate on the cache's own dtype picks it (the
      // cast guard reads that gate), but not where every assignment reaching the read gives it the model dtype:
      // passing it plans the model dtype.
      if (assigned && assigned->role == DtypeRole::Model) {
        return with_role(DtypeRole::Unknown, text + " is named as the KV-cache dtype but holds the model dtype here; "
                                                    "assign it the KV-cache dtype, or pass the model dtype by its own name");
      }
      // A gate on anything but the cache's own dtype (the GPU, say) plans the model dtype for an FP8 cache where it
      // fails, so the casts stay: the site counts as gated, as it would under any other name.
      if (assigned && assigned->role == DtypeRole::Gated && !assigned->gate_tests_cache_dtype) return *assigned;
      return with_role(DtypeRole::KvCache);
    }
    if (assigned) return *assigned;
    const DtypeRole role = role_of_name(attr);
    if (role != DtypeRole::Unknown) return with_role(role);
    return with_role(DtypeRole::Unknown, "cannot tell which dtype " + text + " holds");
  }

  if (is(expr, "call")) {
    // A helper of the module holds what it returns, each value read in the helper.
    if (const std::vector<const FunctionFacts*> defs = defs_called(facts_, expr); !defs.empty()) {
      std::vector<DtypeArgument> parts;
      for (const FunctionFacts* def : defs) {
        const std::optional<std::vector<TSNode>> values = returned_values(*def);
        if (!values || values->empty()) {
          return with_role(DtypeRole::Unknown, def->name + "() may end without a return kvpatch can follow");
        }
        for (TSNode value : *values) {
          if (syntax::is_null(value)) return with_role(DtypeRole::Unknown, def->name + "() may return None");
          parts.push_back(classify(value, def, depth + 1));
        }
      }
      return combine(parts, text);
    }
  }
  if (is(expr, "call") && facts_.text(field(expr, "function")) == "getattr") {
    // getattr(obj, "name", default) reads the attribute by name.
    const std::vector<TSNode> args = syntax::statements(field(expr, "arguments"));
    if (args.size() >= 2 && is(args[1], "string")) {
      std::string name = facts_.text(args[1]);
      name.erase(std::remove(name.begin(), name.end(), '"'), name.end());
      name.erase(std::remove(name.begin(), name.end(), '\''), name.end());
      const DtypeRole role = role_of_name(name);
      if (role != DtypeRole::Unknown) return with_role(role);
    }
  }
  return with_role(DtypeRole::Unknown, "cannot tell which dtype " + text + " holds");
}

}  // namespace kvpatch
