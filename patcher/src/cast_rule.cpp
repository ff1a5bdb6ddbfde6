#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "kvpatch/cast_guard.h"
#include "kvpatch/dtype_roles.h"
#include "kvpatch/edit_operations.h"
#include "kvpatch/imported_names.h"
#include "kvpatch/local_reads.h"
#include "kvpatch/method_references.h"
#include "kvpatch/module_calls.h"
#include "kvpatch/reaching_definitions.h"
#include "kvpatch/rule_engine.h"
#include "kvpatch/tensor_views.h"
#include "kvpatch/wrapper_overrides.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {
constexpr int kMaxTraceDepth = 8;  // bounds alias chains (`kv = k_buf[...]`, `kv2 = kv.view(...)`, ...)
// The assignments, each with the name it binds, whose reads a trace has followed already.
using Seen = std::set<std::pair<uint32_t, std::string>>;

class CastChecker {
public:
  CastChecker(const CastRule& rule, const RuleSet& rules, const ModuleFacts& facts, const std::vector<PlanSite>& sites,
              const std::vector<FieldFinding>& fields)
      : rule_(rule), rules_(rules), facts_(facts), sites_(sites), fields_(fields), source_(facts.file().source),
        imports_(facts) {}

  std::vector<CastFinding> run() {
    std::vector<CastFinding> out;
    const std::set<const FunctionFacts*> path = forward_path();
    for (TSNode call : facts_.calls()) {
      const FunctionFacts* scope = facts_.function_at(call);
      const FunctionFacts* method = holding_method(facts_, scope);
      if (method == nullptr || path.count(method) == 0) continue;
      if (!is_cast(call)) continue;
      TSNode object = field(field(call, "function"), "object");
      if (!holds_kv(object, scope, call, 0)) continue;
      out.push_back(finding(call, scope, method));
    }
    return out;
  }

private:
  // The functions the rule names (forward_decode, forward_extend) and the defs of the module they call, directly or
  // through other such defs: a cast moved into a helper they call is still on their path.
  std::set<const FunctionFacts*> forward_path() const {
    std::map<const FunctionFacts*, std::vector<const FunctionFacts*>> callees;
    for (TSNode call : facts_.calls()) {
      const FunctionFacts* caller = holding_method(facts_, facts_.function_at(call));
      if (caller == nullptr) continue;
      for (const FunctionFacts* def : defs_called(facts_, call)) callees[caller].push_back(def);
    }
    std::vector<const FunctionFacts*> pending;
    for (const FunctionFacts& f : facts_.functions()) {
      if (f.outer < 0 && listed(rule_.functions, f.name)) pending.push_back(&f);
    }
    std::set<const FunctionFacts*> out;
    while (!pending.empty()) {
      const FunctionFacts* f = pending.back();
      pending.pop_back();
      if (!out.insert(f).second) continue;
      const auto found = callees.find(f);
      if (found != callees.end()) pending.insert(pending.end(), found->second.begin(), found->second.end());
    }
    return out;
  }

  // The dtype a call of the cast method is given: its one argument, or the value of its `dtype=` keyword, beside
  // which only the rule's extra keywords may come (`non_blocking=True`). Null for any other argument list.
  TSNode cast_dtype(TSNode call) const {
    TSNode arguments = field(call, "arguments");
    if (!is(arguments, "argument_list")) return TSNode{};
    TSNode dtype{};
    for (TSNode a : syntax::statements(arguments)) {
      if (is(a, "keyword_argument")) {
        const std::string name = facts_.text(field(a, "name"));
        if (listed(rule_.cast_extra_keywords, name)) continue;
        if (name != rule_.cast_keyword || !syntax::is_null(dtype)) return TSNode{};
        dtype = field(a, "value");
      } else if (!syntax::is_null(dtype) || is(a, "list_splat") || is(a, "dictionary_splat")) {
        return TSNode{};
      } else {
        dtype = a;
      }
    }
    return dtype;
  }

  // The `dtype = q.dtype` statements that reach this cast, when removing it, and perhaps other casts, would leave them
  // unused (ruff's F841): each binds the local alone to `<y>.dtype` (lone_name_assignment), and the
  // local is read nowhere in the function (nested functions included) but in the dtype argument of this cast or of
  // other casts of the rule's in the same function (`other_casts`). Empty statements when any of that is not so.
  struct DtypeLocals {
    std::vector<TSNode> statements;
    std::vector<TSNode> other_casts;
  };
  DtypeLocals dtype_locals(TSNode call, const FunctionFacts* scope) const {
    TSNode argument = syntax::unparenthesized(cast_dtype(call));
    if (scope == nullptr || !is(argument, "identifier")) return {};
    const std::string name = facts_.text(argument);
    scope = binding_scope(facts_, scope, name);  // a cast in a closure reads its encloser's local
    if (scope->signature.index_of(name) >= 0) return {};
    DtypeLocals out;
    std::vector<TSNode> targets;
    for (const Assignment* a : assignments_reaching(facts_, *scope, name, argument)) {
      const TSNode statement = lone_name_assignment(*a);
      const TSNode value = syntax::unparenthesized(a->value);
      if (syntax::is_null(statement) || !is(value, "attribute") ||
          facts_.text(field(value, "attribute")) != rule_.cast_argument_attribute || !pure_reference(field(value, "object"))) {
        return {};
      }
      out.statements.push_back(statement);
      targets.push_back(field(a->statement, "left"));
    }
    if (out.statements.empty()) return {};
    targets.push_back(argument);
    for (TSNode n : local_reads(facts_, *scope, name, targets)) {
      TSNode reader = cast_reading(n, scope);
      if (syntax::is_null(reader)) return {};
      out.other_casts.push_back(reader);
    }
    return out;
  }

  // The cast of the rule's whose dtype argument `name` is, read as `scope`'s local; null when it is none.
  TSNode cast_reading(TSNode name, const FunctionFacts* scope) const {
    TSNode up = syntax::parent(name);
    while (is(up, "parenthesized_expression")) up = syntax::parent(up);
    if (is(up, "keyword_argument")) up = syntax::parent(up);
    if (!is(up, "argument_list")) return TSNode{};
    TSNode call = syntax::parent(up);
    if (!is(call, "call") || binding_scope(facts_, facts_.function_at(call), facts_.text(name)) != scope ||
        !is_cast(call) || !syntax::same(syntax::unparenthesized(cast_dtype(call)), name)) {
      return TSNode{};
    }
    return call;
  }

  // `<x>.to(<y>.dtype)` with one dtype argument, positional or torch's keyword (`.to(dtype=<y>.dtype)`), perhaps with
  // the rule's extra keywords (`non_blocking=True`), where the
  // argument may also be a local every reaching assignment of which is `<y>.dtype` (`dtype = q.dtype` first, then the
  // cast), or a helper's parameter every call of which binds such a value (`def _as(self, t, dtype): return
  // t.to(dtype)` called as `self._as(k, q.dtype)`).
  bool is_cast(TSNode call) const {
    TSNode callee = field(call, "function");
    if (!is(callee, "attribute") || facts_.text(field(callee, "attribute")) != rule_.cast_method) return false;
    const TSNode argument = cast_dtype(call);
    return !syntax::is_null(argument) && holds_dtype(argument, facts_.function_at(call), 0);
  }

  // The value is a tensor's dtype (`<y>.dtype`), read directly, through locals or through a helper's parameters.
  bool holds_dtype(TSNode value, const FunctionFacts* scope, int depth) const {
    value = syntax::unparenthesized(value);
    if (is(value, "attribute")) return facts_.text(field(value, "attribute")) == rule_.cast_argument_attribute;
    if (!is(value, "identifier") || scope == nullptr || depth > kMaxTraceDepth) return false;
    const std::string name = facts_.text(value);
    scope = binding_scope(facts_, scope, name);  // a closure reads its encloser's local
    if (scope->signature.index_of(name) >= 0) {
      // A parameter reassigned in the body, or one a call may leave to its default, is not followed.
      if (!assignments_reaching(facts_, *scope, name, value).empty()) return false;
      const std::optional<std::vector<ParameterBinding>> bindings = parameter_bindings(facts_, *scope, name);
      return bindings && !bindings->empty() &&
             std::all_of(bindings->begin(), bindings->end(), [&](const ParameterBinding& b) {
               return !syntax::is_null(b.value) && holds_dtype(b.value, b.caller, depth + 1);
             });
    }
    const std::vector<const Assignment*> reaching = assignments_reaching(facts_, *scope, name, value);
    return !reaching.empty() && std::all_of(reaching.begin(), reaching.end(), [&](const Assignment* a) {
      return a->kind == AssignmentKind::Plain && !syntax::is_null(a->value) && holds_dtype(a->value, scope, depth + 1);
    });
  }

  // The expression reads a KV-cache source, directly, through a local assigned from one, or as a cast of one.
  bool holds_kv(TSNode expr, const FunctionFacts* scope, TSNode cast, int depth) const {
    if (depth > kMaxTraceDepth) return false;
    bool found = false;
    syntax::walk(expr, [&](TSNode n) {
      if (found) return false;
      if (is(n, "call")) {
        TSNode callee = field(n, "function");
        const std::string name = is(callee, "attribute") ? facts_.text(field(callee, "attribute"))
                                 : is(callee, "identifier") ? facts_.text(callee) : "";
        found = listed(rule_.kv_source_calls, name) || returns_kv(n, cast, depth);
      } else if (is(n, "attribute")) {
        found = listed(rule_.kv_source_attributes, facts_.text(field(n, "attribute")));
      }
      return !found;
    });
    if (found) return true;
    TSNode name = viewed(syntax::unparenthesized(expr));
    // `return ckv, kpe` of a helper whose caller unpacks the result: an element holding the cache's data is enough
    // for a cast of what the caller unpacks to be a KV cast, as a KV source anywhere in an expression is.
    if (is(name, "tuple") || is(name, "list") || is(name, "expression_list")) {
      const std::vector<TSNode> elements = syntax::named_children(name);
      return std::any_of(elements.begin(), elements.end(),
                         [&](TSNode e) { return holds_kv(e, scope, cast, depth + 1); });
    }
    // `k = k.to(q.dtype)` twice over: the second cast's value is the first's, still the cache's data.
    if (is(name, "call") && is_cast(name)) return holds_kv(field(field(name, "function"), "object"), scope, cast, depth + 1);
    if (!is(name, "identifier") || scope == nullptr) return false;
    scope = binding_scope(facts_, scope, facts_.text(name));  // a closure reads its encloser's local
    const std::vector<const Assignment*> assignments = assignments_reaching(facts_, *scope, facts_.text(name), name);
    for (const Assignment* a : assignments) {
      if (syntax::contains(a->statement, cast)) continue;
      // `k, v = pool.get_kv_buffer(i)`: every name unpacked from the cache's data (a tuple of its views, or the
      // tensor's rows) holds it, so the right side decides, as the run-input trace reads it.
      const bool unpacked = a->kind == AssignmentKind::Unpacked && is(a->statement, "assignment");
      const TSNode value = a->kind == AssignmentKind::Plain ? a->value
                           : unpacked                       ? field(a->statement, "right")
                                                            : TSNode{};
      if (!syntax::is_null(value) && holds_kv(value, scope, cast, depth + 1)) return true;
    }
    // A helper's parameter holds the KV cache's data when every call of the helper passes it.
    if (!assignments.empty() || scope->signature.index_of(facts_.text(name)) < 0) return false;
    const std::optional<std::vector<ParameterBinding>> bindings = parameter_bindings(facts_, *scope, facts_.text(name));
    return bindings && !bindings->empty() &&
           std::all_of(bindings->begin(), bindings->end(), [&](const ParameterBinding& b) {
             return !syntax::is_null(b.value) && holds_kv(b.value, b.caller, cast, depth + 1);
           });
  }

  // What a view keeps the data of: `k[..., 512:]`, `kv[0]`, `k.squeeze(1)` (kv_path.keeps_dtype) read k or kv; a
  // method that may take a dtype (`.view(torch.uint8)`, kv_path.dtype_overloads) keeps it only given two or more
  // arguments (a shape).
  TSNode viewed(TSNode expr) const {
    while (true) {
      expr = syntax::unparenthesized(expr);
      if (is(expr, "subscript")) {
        expr = field(expr, "value");
        continue;
      }
      if (TSNode input = torch_view_input(rule_.kv_path, facts_, imports_, expr); !syntax::is_null(input)) {
        expr = input;
        continue;
      }
      TSNode callee = is(expr, "call") ? field(expr, "function") : TSNode{};
      if (!is(callee, "attribute")) return expr;
      const std::string method = facts_.text(field(callee, "attribute"));
      TSNode arguments = field(expr, "arguments");
      const bool shape_given = is(arguments, "argument_list") && syntax::named_child_count(arguments) >= 2;
      const bool may_take_dtype = listed(rule_.kv_path.dtype_overloads, method) && !shape_given;
      if (!listed(rule_.kv_path.keeps_dtype, method) || may_take_dtype) return expr;
      expr = field(callee, "object");
    }
  }

  // The call runs a helper of the module that returns the KV cache's data (`self._kv_buffer(layer)`).
  bool returns_kv(TSNode call, TSNode cast, int depth) const {
    for (const FunctionFacts* def : defs_called(facts_, call)) {
      const std::optional<std::vector<TSNode>> values = returned_values(*def);
      if (!values) continue;
      for (TSNode value : *values) {
        if (!syntax::is_null(value) && holds_kv(value, def, cast, depth + 1)) return true;
      }
    }
    return false;
  }

  struct Consumer {
    TSNode call{};       // null when the value goes somewhere that is not a call argument
    std::string where;   // "callee at L:C" or what the value flows into
    const FunctionFacts* scope = nullptr;  // the function the call is in
  };

  std::string at(TSNode node) const {
    const SourcePosition p = source_.position(ts_node_start_byte(node));
    return std::to_string(p.line) + ":" + std::to_string(p.column);
  }

  // Follows a value holding KV data up the tree to the calls that take it as an argument.
  void trace(TSNode node, const FunctionFacts* scope, int depth, Seen& seen,
             std::vector<Consumer>& out) const {
    if (depth > kMaxTraceDepth) {
      out.push_back({TSNode{}, "the value flows through too many steps to follow", scope});
      return;
    }
    TSNode current = node;
    while (true) {
      TSNode parent = syntax::parent(current);
      if (syntax::is_null(parent)) return;
      const std::string_view type = syntax::type(parent);
      // `x = value`, or value's own element of `a, x = ..., value`: on to x's reads.
      if (TSNode target = syntax::assigned_target(current); !syntax::is_null(target)) {
        TSNode assignment = is(parent, "assignment") ? parent : syntax::parent(parent);
        // `ckv, kpe = cast.split(...)`: each name unpacked holds part of the value, so each one's reads go on.
        std::vector<TSNode> names;
        if (!unpacked_names(target, names)) {
          out.push_back({TSNode{}, "assigned to " + one_line(facts_.text(target)) + " at " + at(assignment), scope});
          return;
        }
        for (TSNode name : names) trace_uses(facts_.text(name), assignment, scope, depth + 1, seen, out);
        return;
      }
      // `(x := value)`: x's reads take it, and so does what the expression's own value goes into.
      if (type == "named_expression" && syntax::same(field(parent, "value"), current)) {
        trace_uses(facts_.text(field(parent, "name")), parent, scope, depth + 1, seen, out);
        current = parent;
        continue;
      }
      // A tuple or list literal carries the value on to where it goes: FlashInfer's
      // run(kv_cache=(ckv, kpe)) takes the two KV views as one argument.
      if (type == "parenthesized_expression" || type == "conditional_expression" || type == "tuple" ||
          type == "list" || (type == "subscript" && syntax::same(field(parent, "value"), current))) {
        current = parent;
        continue;
      }
      if (type == "attribute" && syntax::same(field(parent, "object"), current)) {
        if (listed(rule_.metadata_attributes, facts_.text(field(parent, "attribute")))) return;
        TSNode grand = syntax::parent(parent);
        current = is(grand, "call") && syntax::same(field(grand, "function"), parent) ? grand : parent;
        continue;
      }
      const bool keyword = type == "keyword_argument" && syntax::same(field(parent, "value"), current);
      if (type == "argument_list" || keyword) {
        TSNode call = syntax::parent(keyword ? syntax::parent(parent) : parent);
        // `torch.split(value, ...)` is a view of the value, as `value.split(...)` is.
        if (syntax::same(torch_view_input(rule_.kv_path, facts_, imports_, call), current)) {
          current = call;
          continue;
        }
        if (follow_into(call, current, depth, seen, out)) return;
        out.push_back({call, one_line(facts_.text(field(call, "function"))) + " at " + at(call), scope});
        return;
      }
      if (type == "expression_statement") return;  // computed and dropped
      // Returned by a helper: on to what each of its calls does with the value.
      if (type == "return_statement" && follow_out(scope, depth, seen, out)) return;
      if (type == "comparison_operator" && identity_with_none(parent)) return;  // `x is None` reads no data
      out.push_back({TSNode{}, quoted(parent) + " at " + at(parent), scope});
      return;
    }
  }

  // `x is None` or `x is not None` (either side): it tests the object, not its data or dtype.
  static bool identity_with_none(TSNode comparison) {
    const std::vector<TSNode> operands = syntax::named_children(comparison);
    if (operands.size() != 2 || (!is(operands[0], "none") && !is(operands[1], "none"))) return false;
    for (uint32_t i = 0; i < ts_node_child_count(comparison); ++i) {
      const std::string_view op = ts_node_type(ts_node_child(comparison, i));
      if (op == "is" || op == "is not") return true;
    }
    return false;
  }

  // The expression's text on one line, quoted, shortened where long: what a report names for a consumer that is
  // no call.
  std::string quoted(TSNode node) const {
    constexpr std::size_t kMost = 60;
    std::string text = one_line(facts_.text(node));
    if (text.size() > kMost) text = text.substr(0, kMost - 3) + "...";
    return "`" + text + "`";
  }

  // The names an assignment target binds, when it binds only names: `x`, `a, b`, `(a, [b, *rest])`.
  static bool unpacked_names(TSNode target, std::vector<TSNode>& names) {
    target = syntax::unparenthesized_target(target);
    if (is(target, "identifier")) {
      names.push_back(target);
      return true;
    }
    if (is(target, "list_splat_pattern")) return unpacked_names(syntax::named_child(target, 0), names);
    if (!is(target, "pattern_list") && !is(target, "tuple_pattern") && !is(target, "list_pattern")) return false;
    const std::vector<TSNode> parts = syntax::named_children(target);
    return std::all_of(parts.begin(), parts.end(), [&](TSNode part) { return unpacked_names(part, names); });
  }

  // A value passed to a def of this module (a helper method holding the run() call) goes on to every read of the
  // parameter that receives it, in each def the call may run; false when that is not known.
  bool follow_into(TSNode call, TSNode argument, int depth, Seen& seen, std::vector<Consumer>& out) const {
    const std::vector<ReceivingParameter> receiving = receiving_parameters(facts_, call, argument);
    if (receiving.empty()) return false;
    for (const ReceivingParameter& p : receiving) trace_uses(p.name, p.node, p.function, depth + 1, seen, out);
    return true;
  }

  // A value the function returns goes on from each of its calls; false where the module may not show every call.
  bool follow_out(const FunctionFacts* function, int depth, Seen& seen, std::vector<Consumer>& out) const {
    if (function == nullptr) return false;
    const std::optional<std::vector<TSNode>> calls = known_calls(facts_, *function);
    if (!calls || calls->empty()) return false;
    for (TSNode call : *calls) trace(call, facts_.function_at(call), depth + 1, seen, out);
    return true;
  }

  // Every read of the variable after the statement that assigns it.
  void trace_uses(const std::string& name, TSNode assignment, const FunctionFacts* scope, int depth,
                  Seen& seen, std::vector<Consumer>& out) const {
    if (depth > kMaxTraceDepth) {
      out.push_back({TSNode{}, name + " flows through too many assignments to follow", scope});
      return;
    }
    if (!seen.insert({ts_node_start_byte(assignment), name}).second) return;
    if (scope == nullptr) return;
    syntax::walk(scope->body, [&](TSNode n) {
      if (is(n, "class_definition")) {
        // A class body and its methods see the local too; what they do with it is not followed, so a class that
        // names it is a consumer kvpatch does not know.
        if (names_variable(n, name)) {
          out.push_back({TSNode{}, name + " is read in class " + facts_.text(field(n, "name")) + " at " + at(n), scope});
        }
        return false;
      }
      if (is(n, "function_definition")) {
        // A nested def reads the local as a closure, whenever it runs, unless it binds the name itself.
        const FunctionFacts* inner = facts_.function_at(field(n, "body"));
        if (inner == nullptr) return false;
        if (declares_outside(inner->body, name)) {
          out.push_back({TSNode{}, name + " is rebound by " + inner->name + "() at " + at(n), scope});
          return false;
        }
        return !binds_name(facts_, *inner, name);
      }
      if (!is(n, "identifier") || facts_.text(n) != name) return true;
      if (ts_node_start_byte(n) < ts_node_end_byte(assignment) && ts_node_start_byte(n) >= ts_node_start_byte(assignment)) {
        return true;  // inside the assigning statement itself
      }
      // Only the function's own code runs in order; a nested def written before the assignment may run after it.
      const FunctionFacts* reader = facts_.function_at(n);
      if (reader == scope && ts_node_start_byte(n) < ts_node_start_byte(assignment)) return true;
      if (reader != scope && !reaches(assignment, *scope, name, n)) return true;  // a closure run after a rebinding
      if (syntax::is_bound_by_assignment(n)) return true;  // rebinding, not a read
      if (!syntax::names_a_variable(n)) return true;        // `x.name`, `f(name=...)`: not the local
      trace(n, reader, depth, seen, out);
      return true;
    });
  }

  // Whether the assignment statement is one of those that can give the read its value.
  bool reaches(TSNode assignment, const FunctionFacts& scope, const std::string& name, TSNode read) const {
    const std::vector<const Assignment*> reaching = assignments_reaching(facts_, scope, name, read);
    return std::any_of(reaching.begin(), reaching.end(),
                       [&](const Assignment* a) { return syntax::same(a->statement, assignment); });
  }

  // Whether the subtree has an identifier spelling the name as a variable (not `x.name`, not `f(name=...)`).
  bool names_variable(TSNode node, const std::string& name) const {
    bool found = false;
    syntax::walk(node, [&](TSNode n) {
      if (found) return false;
      found = is(n, "identifier") && facts_.text(n) == name && syntax::names_a_variable(n);
      return !found;
    });
    return found;
  }

  // Whether a `nonlocal` or `global` statement in the body names the name: the def may then rebind it.
  bool declares_outside(TSNode body, const std::string& name) const {
    bool found = false;
    syntax::walk(body, [&](TSNode n) {
      if (found) return false;
      if (is(n, "nonlocal_statement") || is(n, "global_statement")) found = names_variable(n, name);
      return !found;
    });
    return found;
  }

  // Empty when the consumer accepts the KV dtype after the edits (then planning holds the plan sites that
  // may plan its wrapper); otherwise why it does not.
  // unplanned: set to the consumer ("decode_wrapper.run at 34:13") and its plan-site rule when its wrapper
  // has no plan site in this file at all (it may be planned in another; link_files() looks there).
  std::string problem(const Consumer& consumer, const FunctionFacts* scope, std::vector<std::size_t>& planning,
                      std::pair<std::string, std::string>& unplanned) const {
    if (syntax::is_null(consumer.call)) return consumer.where;
    TSNode callee = field(consumer.call, "function");
    for (const Fp8Consumer& spec : rule_.fp8_consumers) {
      // `w.run(...)`, `(w.run)(...)`, `getattr(w, "run")(...)`, or `run(...)` after `run = w.run`.
      // Or through its class, `W.run(w, ...)`, on the instance passed first.
      const PlanSiteRule* sites_rule = rules_.plan_site_rule(spec.sites_rule);
      if (sites_rule == nullptr) continue;
      const WrapperTypes& types = types_for(*sites_rule);
      const std::optional<MethodCall> method_call =
          wrapper_method_call(consumer.call, spec.method, values_for(spec.method), types, scope, facts_);
      if (!method_call) continue;
      const TSNode receiver = method_call->receiver;
      const std::string name = one_line(facts_.text(callee)) + " at " + at(consumer.call);
      if (syntax::is_null(receiver)) return name + ": the method is called through its class without an instance first";
      if (method_call->verdict != TypeVerdict::Wrapper) {
        return name + ": receiver is not known to be a " + sites_rule->wrapper_class;
      }
      // A subclass's own run() with other parameters: what it does with the cast's value is not the wrapper's.
      if (const RebindingOverride* o = override_run(*method_call, callee, spec.method, overrides_for(spec, *sites_rule),
                                                    sites_rule->wrapper_class, types, scope, facts_)) {
        return name + ": " + override_reason(one_line(facts_.text(receiver)), spec.method, *o);
      }
      const std::vector<std::size_t> indices = sites_planning(spec, types.source_attribute(receiver, scope), sites_);
      for (std::size_t i : indices) {
        const PlanSite& s = sites_[i];
        // An unbuildable site plans FP8 KV that its FlashInfer cannot run: the cast is one of its two remedies
        // (keep planning the model dtype), so removing it would only take the file further from either.
        if (!s.unbuildable.empty()) {
          return name + ": wrapper has an unbuildable plan site at " + std::to_string(s.line) + ":" +
                 std::to_string(s.column) + " (its FlashInfer cannot plan an FP8 KV cache)";
        }
        if (s.threaded_after_edits()) continue;
        const std::string status = status_name(s.status_after_edits());
        const char* article = status == "unknown" || status == "ignored" ? "an " : "a ";
        std::string why = name + ": wrapper has " + article + status + " plan site at " +
                          std::to_string(s.line) + ":" + std::to_string(s.column);
        if (s.status_after_edits() == SiteStatus::Gated) why += " (gated on " + s.condition_after_edits() + ")";
        return why;
      }
      if (indices.empty()) {
        unplanned = {name, sites_rule->id};
        return name + ": no plan site of " + sites_rule->wrapper_class + " found for this wrapper";
      }
      planning.insert(planning.end(), indices.begin(), indices.end());
      return "";
    }
    return consumer.where;
  }

  // How the plan sites the cast's consumers depend on name the KV dtype once the edits are made.
  KvPlanForm plan_form(const std::vector<std::size_t>& planning) const {
    std::vector<KvPlanForm> forms;
    for (std::size_t i : planning) {
      const PlanSite& s = sites_[i];
      const PlanSiteRule* r = rules_.plan_site_rule(s.rule);
      if (r == nullptr) continue;
      auto known = plan_forms_.find(i);
      if (known == plan_forms_.end()) known = plan_forms_.emplace(i, kv_plan_form(s, *r, rules_, facts_, fields_)).first;
      forms.push_back(known->second);
    }
    return combined_plan_form(forms);
  }

  CastFinding finding(TSNode call, const FunctionFacts* scope, const FunctionFacts* method) const {
    CastFinding f;
    f.rule = rule_.id;
    f.class_name = method->class_name;
    f.method = method->name;
    f.expr = std::string(facts_.file().text(call));
    f.call = call;
    TSNode parent = syntax::parent(call);
    TSNode object = syntax::unparenthesized(field(field(call, "function"), "object"));
    // `x = <cast>`, or x's own element of `a, x = ..., <cast>` (then the statement stays whatever the fix).
    const TSNode target = syntax::assigned_target(call);
    const bool whole = is(parent, "assignment");
    const bool assigned = is(target, "identifier");
    TSNode assignment = whole ? parent : syntax::parent(parent);
    TSNode anchor = assigned ? assignment : call;
    const SourcePosition p = source_.position(ts_node_start_byte(anchor));
    f.line = p.line;
    f.column = p.column;

    std::vector<Consumer> consumers;
    Seen seen;
    if (assigned) {
      f.variable = facts_.text(target);
      trace_uses(f.variable, assignment, scope, 0, seen, consumers);
    } else {
      trace(call, scope, 0, seen, consumers);
    }

    std::vector<std::string> problems;
    std::vector<std::string> accepted;
    std::vector<std::size_t> planning;
    std::pair<std::string, std::string> unplanned;
    for (const Consumer& c : consumers) {
      const std::string why = problem(c, c.scope, planning, unplanned);
      if (!why.empty()) {
        if (std::find(problems.begin(), problems.end(), why) == problems.end()) problems.push_back(why);
      } else if (std::find(accepted.begin(), accepted.end(), c.where) == accepted.end()) {
        accepted.push_back(c.where);
      }
    }
    // Wrapper reasons first: they say which plan sites keep the cast.
    std::stable_partition(problems.begin(), problems.end(),
                          [](const std::string& s) { return s.find(": wrapper has") != std::string::npos; });
    if (auto reason = suppression(source_, anchor, rule_.id)) {
      f.consumer = "suppressed by kvpatch: ignore" + (reason->empty() ? "" : ": " + *reason);
      f.stays_unjudged = true;
      return f;
    }
    if (consumers.empty()) {
      f.consumer = "no consumer found; a cast is removed only when every consumer is known";
      f.stays_unjudged = true;
      return f;
    }
    if (!problems.empty()) {
      f.unplanned_consumer = unplanned.first;
      f.unplanned_sites_rule = unplanned.second;
      f.consumer = problems.front();
      for (std::size_t i = 1; i < problems.size(); ++i) f.consumer += "; " + problems[i];
      return f;
    }
    f.redundant = true;
    for (const std::string& a : accepted) f.consumer += (f.consumer.empty() ? "" : ", ") + a;
    const KvPlanForm form = plan_form(planning);
    const bool several = std::set<std::size_t>(planning.begin(), planning.end()).size() > 1;
    if (form.kind == KvPlanForm::Kind::Unclear) {
      f.redundant = false;
      f.consumer += std::string(several ? ", whose plan sites do not" : ", whose plan site does not") +
                    " name one KV dtype form (" + form.why + "); remove or guard the cast by hand";
      return f;
    }
    if (form.kind == KvPlanForm::Kind::ModelDtype) {
      f.redundant = false;
      f.consumer += std::string(several ? ", whose plan sites name" : ", whose plan site names") +
                    " the model dtype (" + form.why + "), so run() is planned for the cast data";
      return f;
    }
    if (form.kind == KvPlanForm::Kind::CacheDtypeOnlyFor) return guarded(f, call, form.only_for);
    try {
      const bool self_cast = assigned && whole && is(object, "identifier") && facts_.text(object) == f.variable;
      if (self_cast) f.removed_statements.push_back(syntax::parent(parent));
      f.unwraps_call = !self_cast;
      const DtypeLocals locals = dtype_locals(call, scope);
      if (locals.other_casts.empty()) {
        f.removed_statements.insert(f.removed_statements.end(), locals.statements.begin(), locals.statements.end());
        for (TSNode s : locals.statements) f.unread_dtype_locals.push_back(dtype_local_text(source_, s));
      } else {
        f.shared_dtype_statements = locals.statements;
        f.shared_dtype_casts = locals.other_casts;
      }
      f.fix = cast_removal(source_, f, {});
    } catch (const EditNotPossible& e) {
      f.removed_statements.clear();
      f.unread_dtype_locals.clear();
      f.shared_dtype_statements.clear();
      f.shared_dtype_casts.clear();
      f.unwraps_call = false;
      f.redundant = false;
      f.consumer = std::string("redundant, but ") + e.what() + "; remove the cast by hand";
      f.stays_unjudged = true;
    }
    return f;
  }

  // Under a plan that names the KV-cache dtype only for `dtype`, other caches are planned as the model dtype:
  // the cast stays for them, so it is kept (already guarded) or guarded, never removed.
  CastFinding guarded(CastFinding f, TSNode call, const std::string& dtype) const {
    const std::string consumers = f.consumer;
    f.guard_dtype = dtype;
    if (cast_guarded_against(facts_, call, dtype)) {
      f.redundant = false;
      f.consumer = "KV caches other than " + dtype + ", for which the plan of " + consumers +
                   " names the model dtype (the cast is guarded accordingly)";
      return f;
    }
    if (rule_.guard_operation == "none") {
      f.redundant = false;
      f.guard_dtype.clear();
      f.consumer = "KV caches other than " + dtype + ", which the plan of " + consumers +
                   " names as the model dtype, and rule " + rule_.id + " adds no guard; guard the cast by hand";
      return f;
    }
    try {
      f.fix = guard_cast(facts_, call, dtype, rule_.id, rules_.module_helper_names());
    } catch (const EditNotPossible& e) {
      f.redundant = false;
      f.guard_dtype.clear();
      f.consumer = "KV caches other than " + dtype + " (the plan of " + consumers + " names the model dtype for them), but " +
                   e.what() + "; keep the cast only for those caches by hand";
    }
    return f;
  }

  // One WrapperTypes per plan-site rule: building one reads the whole module.
  const WrapperTypes& types_for(const PlanSiteRule& sites_rule) const {
    auto known = types_.find(&sites_rule);
    if (known == types_.end()) {
      known = types_.emplace(&sites_rule, std::make_unique<WrapperTypes>(facts_, sites_rule)).first;
    }
    return *known->second;
  }

  // The consumer's overrides that do not bind as the wrapper's, in this module's classes and those it imports.
  const std::vector<RebindingOverride>& overrides_for(const Fp8Consumer& spec, const PlanSiteRule& sites_rule) const {
    auto known = overrides_.find(&spec);
    if (known == overrides_.end()) {
      known = overrides_.emplace(&spec, rebinding_overrides(consumer_method(spec), sites_rule.wrapper_class,
                                                            types_for(sites_rule), facts_)).first;
    }
    return known->second;
  }

  // The reads of each consumer method as a value, for its calls through a local alias: one walk per method.
  const std::vector<MethodValue>& values_for(const std::string& method) const {
    auto known = values_.find(method);
    if (known == values_.end()) known = values_.emplace(method, method_values(method, facts_)).first;
    return known->second;
  }

  const CastRule& rule_;
  const RuleSet& rules_;
  const ModuleFacts& facts_;
  const std::vector<PlanSite>& sites_;
  const std::vector<FieldFinding>& fields_;
  const SourceFile& source_;
  const ImportedNames imports_;  // `torch` as the module imports it, for torch.split(...)
  mutable std::map<const PlanSiteRule*, std::unique_ptr<WrapperTypes>> types_;  // by plan-site rule
  mutable std::map<std::string, std::vector<MethodValue>> values_;              // by method name
  mutable std::map<const Fp8Consumer*, std::vector<RebindingOverride>> overrides_;  // by consumer
  mutable std::map<std::size_t, KvPlanForm> plan_forms_;                // by site index; sites do not change
};
}  // namespace

std::vector<CastFinding> check_casts(const CastRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                                     const std::vector<PlanSite>& sites, const std::vector<FieldFinding>& fields) {
  return CastChecker(rule, rules, facts, sites, fields).run();
}

std::string dtype_local_text(const SourceFile& source, TSNode statement) {
  const std::size_t start = ts_node_start_byte(statement);
  const SourcePosition p = source.position(start);
  return one_line(std::string_view(source.text()).substr(start, ts_node_end_byte(statement) - start)) + " at " +
         std::to_string(p.line) + ":" + std::to_string(p.column);
}

std::vector<Edit> cast_removal(const SourceFile& source, const CastFinding& cast, const std::vector<TSNode>& elsewhere) {
  std::vector<Edit> out;
  if (cast.unwraps_call) out.push_back(unwrap_method_call(cast.call, cast.rule));
  for (TSNode statement : cast.removed_statements) {
    std::vector<TSNode> going = elsewhere;
    for (TSNode other : cast.removed_statements) {
      if (!syntax::same(other, statement)) going.push_back(other);
    }
    const std::vector<Edit> edits = remove_statement(source, statement, cast.rule, going);
    out.insert(out.end(), edits.begin(), edits.end());
  }
  return out;
}

}  // namespace kvpatch
