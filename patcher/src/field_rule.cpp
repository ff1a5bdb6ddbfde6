#include <algorithm>

#include "kvpatch/dtype_roles.h"
#include "kvpatch/edit_operations.h"
#include "kvpatch/field_holders.h"
#include "kvpatch/rule_engine.h"

namespace kvpatch {


std::vector<FieldFinding> check_fields(const FieldRule& rule, const PlanSiteRule& sites_rule, const ModuleFacts& facts,
                                       const std::vector<PlanSite>& sites) {
  const DtypeClassifier classifier(facts, sites_rule.roles);
  const SourceFile& source = facts.file().source;
  std::vector<FieldFinding> out;
  for (const ClassFacts& cls : facts.classes()) {
    const FunctionFacts* init = facts.method(cls, "__init__");
    if (init == nullptr) continue;
    if (!rule.class_patterns.empty() &&
        std::none_of(rule.class_patterns.begin(), rule.class_patterns.end(),
                     [&](const std::string& p) { return glob_match(p, cls.name); })) {
      continue;
    }
    // The rule writes its anchor and field through `self`; __init__ reaches them through its own instance
    // parameter, whatever it is named (one whose first parameter is not the instance has no fields to extend).
    const std::string self = self_name(*init);
    if (self.empty()) continue;
    const std::string anchor_name = through_instance(self, rule.anchor);
    const std::string field_name = through_instance(self, rule.field);
    const std::vector<const Assignment*> anchors = facts.local_assignments(*init, anchor_name);
    if (anchors.empty()) {
      // `self.data_type = ...` in an __init__ whose instance is named otherwise sets no field of the instance
      // (and fails when it runs): no place for the field, and the class's plan sites say why.
      const std::vector<const Assignment*> literal = facts.local_assignments(*init, rule.anchor);
      if (literal.empty() || anchor_name == rule.anchor) continue;
      FieldFinding finding;
      finding.rule = rule.id;
      finding.class_name = cls.name;
      const SourcePosition at = source.position(ts_node_start_byte(literal.front()->statement));
      finding.line = at.line;
      finding.column = at.column;
      finding.reason = cls.name + ".__init__ assigns " + rule.anchor + ", but its instance parameter is " + self +
                       ", so that sets no field of the instance; fix __init__ first";
      out.push_back(std::move(finding));
      continue;
    }
    std::optional<std::string> suppressed;
    for (const Assignment* a : anchors) {
      if (!suppressed) suppressed = suppression(source, a->statement, rule.id);
    }
    // A class is in scope when the plan sites of its own methods, or of the classes its instances inherit
    // methods from, read the field it sets in __init__ (a base class's constants are a subclass's too).
    if (rule.require_sites && std::none_of(sites.begin(), sites.end(), [&](const PlanSite& s) {
          return s.rule == rule.sites_rule && holds_field_for(facts, cls.name, s.class_name, rule.anchor);
        })) {
      continue;
    }

    FieldFinding finding;
    finding.rule = rule.id;
    finding.class_name = cls.name;
    // The field itself, or an equivalent one: any `self.X = ...` in __init__ that holds the KV-cache dtype.
    const Assignment* existing = nullptr;
    const std::string self_prefix = self + ".";
    for (const Assignment& a : facts.assignments()) {
      if (a.function != facts.index_of(init) || a.kind != AssignmentKind::Plain || syntax::is_null(a.value)) continue;
      if (a.target == field_name) {
        existing = &a;
        break;
      }
      if (existing == nullptr && a.target.rfind(self_prefix, 0) == 0 &&
          classifier.classify(a.value, init).role == DtypeRole::KvCache) {
        existing = &a;
      }
    }
    if (existing != nullptr) {
      const SourcePosition at = source.position(ts_node_start_byte(existing->statement));
      finding.line = at.line;
      finding.column = at.column;
      finding.present = !suppressed;
      finding.ignored = suppressed.has_value();
      if (suppressed) finding.reason = suppressed->empty() ? "suppressed by a kvpatch: ignore comment" : *suppressed;
      finding.field_text = existing->target;  // an existing field still serves the class's plan sites
      out.push_back(std::move(finding));
      continue;
    }

    // Insert after the last `<anchor> = ...` written directly in __init__'s body, or in a `with` there (not in a
    // branch), beside it: it runs whenever __init__ does.
    const Assignment* anchor = nullptr;
    const Assignment* unpacked = nullptr;  // `self.data_type, x = ...` directly in the body: not a place to copy
    for (const Assignment* a : anchors) {
      TSNode statement = syntax::parent(a->statement);
      if (!syntax::is(statement, "expression_statement") || !syntax::is_straight_line_in(statement, init->body)) continue;
      if (a->kind == AssignmentKind::Plain) anchor = a;
      else unpacked = a;
    }
    const SourcePosition at = source.position(ts_node_start_byte((anchor != nullptr ? anchor : anchors.back())->statement));
    finding.line = at.line;
    finding.column = at.column;
    std::vector<std::string> unbound = names_not_visible(rule.value, *init, facts);
    std::erase(unbound, rule.module_helper_name);  // the rule's module helper comes with the field when missing
    if (suppressed) {
      finding.ignored = true;
      finding.reason = suppressed->empty() ? "suppressed by a kvpatch: ignore comment" : *suppressed;
    } else if (anchor == nullptr && unpacked != nullptr) {
      finding.reason = anchor_name + " is assigned in " + cls.name + ".__init__ only " +
                       (unpacked->kind == AssignmentKind::Augmented ? "in place" : "by unpacking") + " (`" +
                       one_line(facts.text(unpacked->statement)) + "`), which kvpatch does not extend; add " +
                       field_name + " by hand";
    } else if (anchor == nullptr) {
      finding.reason = anchor_name + " is only assigned inside a branch of " + cls.name +
                       ".__init__; add " + field_name + " by hand";
    } else if (!unbound.empty()) {
      finding.reason = field_name + " = " + rule.value + " reads " + unbound.front() + ", which " + cls.name +
                       ".__init__ does not have; set --set kv_dtype_expr=... to an expression it can evaluate";
    } else {
      try {
        finding.fix = insert_statement_after(source, syntax::parent(anchor->statement), field_name + " = " + rule.value,
                                             rule.id);
        finding.field_text = field_name;
      } catch (const EditNotPossible& e) {
        finding.reason = std::string(e.what()) + " in " + cls.name + ".__init__; add " + field_name + " by hand";
      }
    }
    out.push_back(std::move(finding));
  }
  return out;
}

}  // namespace kvpatch
