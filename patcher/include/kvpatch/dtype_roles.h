#pragma once
// Which dtype an expression holds: the KV-cache dtype, the model dtype, a gate between them, or unknown.
#include <functional>
#include <optional>
#include <vector>

#include "kvpatch/findings.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

class DtypeClassifier {
public:
  DtypeClassifier(const ModuleFacts& facts, const DtypeRoleNames& names) : facts_(facts), names_(names) {}
  // The role of an expression evaluated in scope (nullptr at module level).
  DtypeArgument classify(TSNode expr, const FunctionFacts* scope) const;
  // The role of an expression given only as text (a parameter's default).
  DtypeArgument classify_text(const std::string& text) const;

private:
  DtypeArgument classify(TSNode expr, const FunctionFacts* scope, int depth) const;
  DtypeArgument combine(const std::vector<DtypeArgument>& parts, const std::string& what) const;
  // `value if condition else alternative`: one role when both sides hold it, a gate between the KV-cache and
  // the model dtype (gate_expr its text) when they differ; `reads` are the nodes the gate evaluates.
  DtypeArgument choice(TSNode value, TSNode condition, TSNode alternative, const std::string& gate_expr,
                       const std::vector<TSNode>& reads, const FunctionFacts* scope, int depth) const;
  // The role of `a` where `condition` holds and of `b` otherwise, as choice() decides it.
  DtypeArgument decide(const DtypeArgument& a, const DtypeArgument& b, const std::string& condition,
                       const std::string& gate_expr, const std::vector<TSNode>& reads, const FunctionFacts* scope) const;
  // The same choice written as statements (assignment_branches: elif clauses read as `a if c1 else b if c2 else c`,
  // a default before an if without an else as the last alternative). nullopt when the assignments have no such shape.
  std::optional<DtypeArgument> branch_choice(const std::vector<const Assignment*>& assignments, TSNode read, int depth,
                                             bool reaching) const;
  DtypeRole role_of_name(const std::string& name) const;
  // A parameter read where the function never assigns it: what every call of the function in this module binds to
  // it (parameter_bindings: a base's `self.name(...)` reaching a subclass's override counts), in the caller's scope
  // (a default as classify_text reads it). nullopt when the module shows no call of the function, or not every one:
  // the function is read as a value, a method called on something other than its own instance, or a nested def
  // whose name is used other than to call it (it may be called from elsewhere); then the parameter is read by its
  // name alone.
  std::optional<DtypeArgument> from_callers(const FunctionFacts& function, const std::string& name, int depth) const;
  // True when the expression reads only the receiver's attributes and module-level names.
  bool reads_no_local(TSNode expr, const FunctionFacts* scope) const;
  // True when every local the expression reads is a parameter of `scope` that `scope` never reassigns.
  bool reads_only_parameters(TSNode expr, const FunctionFacts* scope) const;
  // True when ok() holds for every name the expression reads (attribute and keyword names aside, and
  // the receiver of the method holding `scope`).
  bool all_names_read(TSNode expr, const FunctionFacts* scope, const std::function<bool(const std::string&)>& ok) const;
  // Whether the name is bound in `scope` or an enclosing function (binds_name): a parameter (of `scope` itself too,
  // unless skip_own_parameters), assigned there, or a def nested there.
  bool local_anywhere(const std::string& name, const FunctionFacts* scope, bool skip_own_parameters) const;

  const ModuleFacts& facts_;
  const DtypeRoleNames& names_;
};

// The class-level method holding a function (itself for a method; the outer method for nested defs).
const FunctionFacts* holding_method(const ModuleFacts& facts, const FunctionFacts* function);

}  // namespace kvpatch
