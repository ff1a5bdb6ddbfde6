#include "kvpatch/cast_guard.h"

#include <algorithm>

#include "kvpatch/assignment_branches.h"
#include "kvpatch/cache_dtype_gate.h"
#include "kvpatch/dtype_roles.h"
#include "kvpatch/edit_operations.h"
#include "kvpatch/field_holders.h"
#include "kvpatch/module_calls.h"
#include "kvpatch/reaching_definitions.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {
constexpr int kMaxDepth = 8;  // bounds chains of assignments (and cycles through them)

KvPlanForm unclear(std::string why) {
  KvPlanForm f;
  f.kind = KvPlanForm::Kind::Unclear;
  f.why = std::move(why);
  return f;
}

KvPlanForm only_for(std::string dtype) {
  KvPlanForm f;
  f.kind = KvPlanForm::Kind::CacheDtypeOnlyFor;
  f.only_for = std::move(dtype);
  return f;
}

KvPlanForm model_dtype(std::string why) {
  KvPlanForm f;
  f.kind = KvPlanForm::Kind::ModelDtype;
  f.why = std::move(why);
  return f;
}

bool same_form(const KvPlanForm& a, const KvPlanForm& b) {
  return a.kind == b.kind && squeezed(a.only_for) == squeezed(b.only_for);
}

class PlanFormReader {
public:
  PlanFormReader(const PlanSiteRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                 const std::vector<FieldFinding>& fields)
      : rule_(rule), rules_(rules), facts_(facts), fields_(fields), classifier_(facts, rule.roles) {}

  KvPlanForm of_node(TSNode expr, const FunctionFacts* scope, int depth) const {
    expr = syntax::unparenthesized(expr);
    const std::string text = one_line(facts_.text(expr));
    if (depth > kMaxDepth) return unclear("the definition of " + text + " is too long a chain to follow");
    if (is(expr, "conditional_expression")) {
      const std::vector<TSNode> parts = syntax::statements(expr);
      if (parts.size() == 3) return of_choice(parts[0], parts[1], parts[2], scope, depth);
    }
    if (is(expr, "identifier")) {
      for (const FunctionFacts* f = scope; f != nullptr;
           f = f->outer >= 0 ? &facts_.functions()[static_cast<std::size_t>(f->outer)] : nullptr) {
        std::vector<const Assignment*> assignments = facts_.local_assignments(*f, text);
        const auto reaching = reaching_assignments(facts_, assignments, text, expr);
        if (reaching) assignments = *reaching;
        if (assignments.empty()) continue;
        auto unfollowed = [&] { return unclear(text + " is assigned in a way kvpatch does not follow"); };
        const bool unpacking = std::any_of(assignments.begin(), assignments.end(),
                                           [](const Assignment* a) { return a->kind == AssignmentKind::Unpacked; });
        if (!unpacking) {
          for (const Assignment* a : assignments) {
            if (a->kind != AssignmentKind::Plain || syntax::is_null(a->value)) return unfollowed();
          }
          return of_assignments(assignments, expr, reaching.has_value(), depth);
        }
        // `q_dt, kv_dt = self._dtypes()`: the element each return of the helper gives the name, beside the plain
        // assignments' values.
        std::vector<KvPlanForm> forms;
        for (const Assignment* a : assignments) {
          if (a->kind == AssignmentKind::Plain && !syntax::is_null(a->value)) {
            forms.push_back(of_node(a->value, &facts_.functions()[static_cast<std::size_t>(a->function)], depth + 1));
          } else if (const auto returned = unpacked_returns(facts_, a->statement, text)) {
            for (const ReturnedValue& r : *returned) forms.push_back(of_node(r.value, r.function, depth + 1));
          } else {
            return unfollowed();
          }
        }
        return combined_plan_form(forms);
      }
    }
    if (is(expr, "attribute")) {
      const FunctionFacts* method = holding_method(facts_, scope);
      TSNode object = field(expr, "object");
      if (method != nullptr && is(object, "identifier") && facts_.text(object) == self_name(*method)) {
        return of_field(method->class_name, facts_.text(field(expr, "attribute")), expr, depth + 1);
      }
    }
    return of_leaf(expr, scope);
  }

  // Every value the class assigns to `self.<attr>` (those that reach `read`, when it is given and that can be told),
  // and the one the field rule adds there.
  KvPlanForm of_field(const std::string& class_name, const std::string& attr, TSNode read, int depth) const {
    std::vector<KvPlanForm> forms;
    if (const ClassFacts* cls = facts_.find_class(class_name)) {
      std::vector<const Assignment*> assignments = facts_.self_attribute_assignments(*cls, attr);
      std::optional<std::vector<const Assignment*>> reaching;
      if (!syntax::is_null(read)) {
        reaching = attribute_assignments_reaching(facts_, assignments, one_line(facts_.text(read)), read);
      }
      if (reaching) assignments = *reaching;
      std::erase_if(assignments,
                    [](const Assignment* a) { return a->kind != AssignmentKind::Plain || syntax::is_null(a->value); });
      if (!assignments.empty()) forms.push_back(of_assignments(assignments, read, reaching.has_value(), depth));
    }
    const FieldRule* field_rule = rules_.field_rule(rule_.field_rule);
    for (const FieldFinding& f : fields_) {
      if (f.rule != rule_.field_rule || !f.fix || field_rule == nullptr ||
          !holds_field_for(facts_, f.class_name, class_name, field_rule->anchor)) {
        continue;
      }
      if (dotted_last_name(f.field_text) != attr) continue;
      const std::string source = "_ = " + field_rule->value + "\n";
      PythonTree tree(source);
      TSNode assignment = syntax::named_child(syntax::named_child(tree.root(), 0), 0);
      const std::string dtype = only_for_dtype(source, field(assignment, "right"), rule_.roles);
      forms.push_back(dtype.empty() ? KvPlanForm{} : only_for(dtype));
    }
    return combined_plan_form(forms);
  }

private:
  // `value if condition else alternative`, as an expression or as an if statement's branches.
  KvPlanForm of_choice(TSNode value, TSNode condition, TSNode alternative, const FunctionFacts* scope, int depth) const {
    const std::string dtype = only_for_dtype(facts_.file().source.text(), value, condition, alternative, rule_.roles);
    if (!dtype.empty()) return only_for(dtype);
    return choose(of_node(value, scope, depth + 1), of_node(alternative, scope, depth + 1), condition);
  }

  // The form where `condition` holds and the one where it does not, as one.
  KvPlanForm choose(const KvPlanForm& a, const KvPlanForm& b, TSNode condition) const {
    if (a.kind == KvPlanForm::Kind::Unclear) return a;
    if (b.kind == KvPlanForm::Kind::Unclear) return b;
    if (same_form(a, b)) return a;
    return unclear("the KV dtype it plans depends on " + one_line(facts_.text(syntax::unparenthesized(condition))) +
                   ", which is no test of the cache's own dtype that a guard on the cast could repeat");
  }

  // The values of a name's assignments (plain ones, those that reach `read` when `reaching`); branches of one if
  // statement are read as the conditional they spell.
  KvPlanForm of_assignments(const std::vector<const Assignment*>& assignments, TSNode read, bool reaching,
                            int depth) const {
    auto scope_of = [&](const Assignment* a) {
      return a->function >= 0 ? &facts_.functions()[static_cast<std::size_t>(a->function)] : nullptr;
    };
    if (!syntax::is_null(read)) {
      if (const auto branches = assignment_branches(assignments, read, reaching)) {
        // `v1 if c1 else v2 if c2 else v3`, from the last test up: only that one, against the else or default
        // value, can be upstream's gate; each earlier test chooses between forms.
        const std::vector<AssignmentBranch>& b = *branches;
        const FunctionFacts* scope = scope_of(b.front().assignment);
        const std::size_t last = b.size() - 2;
        KvPlanForm rest =
            of_choice(b[last].assignment->value, b[last].condition, b.back().assignment->value, scope, depth + 1);
        for (std::size_t i = last; i-- > 0;) {
          rest = choose(of_node(b[i].assignment->value, scope, depth + 1), rest, b[i].condition);
        }
        return rest;
      }
    }
    std::vector<KvPlanForm> forms;
    forms.reserve(assignments.size());
    for (const Assignment* a : assignments) forms.push_back(of_node(a->value, scope_of(a), depth + 1));
    return combined_plan_form(forms);
  }

  // An expression kvpatch does not look into: the site's classification already took it for the KV-cache dtype
  // (by its name, say), unless the classifier reads it as the model dtype.
  KvPlanForm of_leaf(TSNode expr, const FunctionFacts* scope) const {
    const DtypeArgument role = classifier_.classify(expr, scope);
    if (role.role == DtypeRole::Model) return model_dtype(one_line(facts_.text(expr)) + " is the model dtype");
    return {};
  }

  const PlanSiteRule& rule_;
  const RuleSet& rules_;
  const ModuleFacts& facts_;
  const std::vector<FieldFinding>& fields_;
  DtypeClassifier classifier_;
};

// `<x>.dtype <op> <dtype>` with the operands either way round.
bool compares_dtype(const ModuleFacts& facts, TSNode condition, const std::string& op, const std::string& value,
                    const std::string& dtype) {
  condition = syntax::unparenthesized(condition);
  if (two_operand_comparison(condition) != op) return false;
  const std::string a = squeezed(facts.text(syntax::named_child(condition, 0)));
  const std::string b = squeezed(facts.text(syntax::named_child(condition, 1)));
  const std::string want = squeezed(value) + ".dtype";
  const std::string d = squeezed(dtype);
  return (a == want && b == d) || (a == d && b == want);
}

// The condition holds only when `<x>.dtype != D`: that comparison, or an `and` with it on one side.
bool implies_other_dtype(const ModuleFacts& facts, TSNode condition, const std::string& value, const std::string& dtype) {
  condition = syntax::unparenthesized(condition);
  if (compares_dtype(facts, condition, "!=", value, dtype)) return true;
  if (!is(condition, "boolean_operator")) return false;
  TSNode op = field(condition, "operator");
  if (syntax::is_null(op) || syntax::type(op) != "and") return false;
  return implies_other_dtype(facts, field(condition, "left"), value, dtype) ||
         implies_other_dtype(facts, field(condition, "right"), value, dtype);
}

// In an elif / else of this if statement: an earlier branch took every value with `<x>.dtype == D`.
bool earlier_branch_took(const ModuleFacts& facts, TSNode if_statement, TSNode clause, const std::string& value,
                         const std::string& dtype) {
  if (compares_dtype(facts, field(if_statement, "condition"), "==", value, dtype)) return true;
  for (TSNode child : syntax::named_children(if_statement)) {
    if (syntax::same(child, clause)) break;
    if (is(child, "elif_clause") && compares_dtype(facts, field(child, "condition"), "==", value, dtype)) return true;
  }
  return false;
}
}  // namespace

KvPlanForm combined_plan_form(const std::vector<KvPlanForm>& forms) {
  KvPlanForm out;
  for (const KvPlanForm& f : forms) {
    if (f.kind == KvPlanForm::Kind::Unclear) return f;
  }
  for (std::size_t i = 0; i < forms.size(); ++i) {
    if (i == 0) {
      out = forms[i];
    } else if (!same_form(forms[i], out)) {
      const bool model = forms[i].kind == KvPlanForm::Kind::ModelDtype || out.kind == KvPlanForm::Kind::ModelDtype;
      return unclear(model ? "the plan names the KV-cache dtype in one place and the model dtype in another ("
                                 + (out.kind == KvPlanForm::Kind::ModelDtype ? out.why : forms[i].why) + ")"
                           : "the plan names the KV-cache dtype unconditionally in one place and only for some dtypes in another");
    }
  }
  return out;
}

KvPlanForm kv_plan_form(const PlanSite& site, const PlanSiteRule& rule, const RuleSet& rules, const ModuleFacts& facts,
                        const std::vector<FieldFinding>& fields) {
  const PlanFormReader reader(rule, rules, facts, fields);
  if (site.fix) {
    const std::size_t dot = site.fix_text.find('.');
    if (dot == std::string::npos) return unclear("the fix passes " + site.fix_text + ", which is not a field");
    return reader.of_field(site.class_name, site.fix_text.substr(dot + 1), TSNode{}, 0);
  }
  if (!site.kv_argument) return {};  // left to a default that names the KV-cache dtype
  TSNode value = ts_node_named_descendant_for_byte_range(site.argument_list,
                                                         static_cast<uint32_t>(site.kv_argument->value_begin),
                                                         static_cast<uint32_t>(site.kv_argument->value_end));
  return reader.of_node(value, facts.function_at(site.call), 0);
}

bool cast_guarded_against(const ModuleFacts& facts, TSNode cast, const std::string& dtype) {
  const std::string value = facts.text(field(field(cast, "function"), "object"));
  for (TSNode node = cast, up = syntax::parent(cast); !syntax::is_null(up) && !is(up, "function_definition");
       node = up, up = syntax::parent(up)) {
    if (is(up, "conditional_expression")) {
      const std::vector<TSNode> parts = syntax::statements(up);
      if (parts.size() == 3 && syntax::same(node, parts[2]) && compares_dtype(facts, parts[1], "==", value, dtype)) return true;
      if (parts.size() == 3 && syntax::same(node, parts[0]) && implies_other_dtype(facts, parts[1], value, dtype)) return true;
    }
    if (!is(up, "block")) continue;
    TSNode owner = syntax::parent(up);
    if ((is(owner, "if_statement") || is(owner, "elif_clause")) && syntax::same(field(owner, "consequence"), up) &&
        implies_other_dtype(facts, field(owner, "condition"), value, dtype)) {
      return true;
    }
    if ((is(owner, "elif_clause") || is(owner, "else_clause")) &&
        earlier_branch_took(facts, syntax::parent(owner), owner, value, dtype)) {
      return true;
    }
  }
  return false;
}

std::vector<Edit> guard_cast(const ModuleFacts& facts, TSNode cast, const std::string& dtype, const std::string& rule,
                             const std::vector<std::string>& module_helpers) {
  const SourceFile& source = facts.file().source;
  if (const FunctionFacts* scope = facts.function_at(cast)) {
    std::vector<std::string> unseen = names_not_visible(dtype, *scope, facts);
    for (const std::string& helper : module_helpers) std::erase(unseen, helper);
    if (!unseen.empty()) throw EditNotPossible("the guard reads " + unseen.front() + ", which " + scope->name + " cannot see");
  }
  TSNode callee = field(cast, "function");
  TSNode object = syntax::unparenthesized(field(callee, "object"));
  std::string arguments;
  for (TSNode a : syntax::statements(field(cast, "arguments"))) {
    arguments += (arguments.empty() ? "" : ", ") + one_line(facts.text(a));
  }
  auto cast_of = [&](const std::string& name) {
    return name + "." + facts.text(field(callee, "attribute")) + "(" + arguments + ")";
  };

  TSNode parent = syntax::parent(cast);
  const TSNode target = is(parent, "assignment") ? syntax::unparenthesized_target(field(parent, "left")) : TSNode{};
  if (is(parent, "assignment") && syntax::same(field(parent, "right"), cast) && is(target, "identifier")) {
    const std::string name = facts.text(target);
    const std::string condition = name + ".dtype != " + dtype;
    TSNode statement = syntax::parent(parent);
    if (!is(statement, "expression_statement")) throw EditNotPossible("the cast's assignment is part of a longer statement");
    if (facts.text(object) != name) {
      return {unwrap_method_call(cast, rule), insert_block_after(source, statement, "if " + condition + ":", name + " = " + cast_of(name), rule)};
    }
    TSNode block = syntax::parent(statement);
    TSNode owner = syntax::parent(block);
    const bool alone = syntax::statements(block).size() == 1;
    if (alone && (is(owner, "if_statement") || is(owner, "elif_clause")) && syntax::same(field(owner, "consequence"), block)) {
      return conjoin_condition(field(owner, "condition"), condition, rule);
    }
    return guard_statement(source, statement, condition, rule);
  }
  if (!is(object, "identifier")) {
    throw EditNotPossible("the cast is applied inside an expression to " + one_line(facts.text(object)) +
                          ", not to a name that a guard could test");
  }
  const std::string name = facts.text(object);
  return {{ts_node_start_byte(cast), ts_node_start_byte(cast), "(" + name + " if " + name + ".dtype == " + dtype + " else ", rule},
          {ts_node_end_byte(cast), ts_node_end_byte(cast), ")", rule}};
}

}  // namespace kvpatch
