#pragma once
// Whether an expression holds an instance of one wrapper class, from annotations and assignments.
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kvpatch/imported_names.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

enum class TypeVerdict { Wrapper, Other, Unknown, Nothing };  // Nothing: `None`, which says nothing

class WrapperTypes {
public:
  // `module` is the package the class is imported from ("" = any); a constructor of one of its other
  // classes not in `known_other_classes` gives an unknown type, never another one. `project_classes`: subclasses of
  // the wrapper that other modules of the run define; imported from there, each is the wrapper too.
  WrapperTypes(const ModuleFacts& facts, std::string wrapper_class, std::string module = "",
               std::vector<std::string> known_other_classes = {}, std::vector<ProjectClass> project_classes = {});
  // The wrapper a plan-site rule names, with the run's subclasses of it.
  WrapperTypes(const ModuleFacts& facts, const PlanSiteRule& rule)
      : WrapperTypes(facts, rule.wrapper_class, rule.wrapper_module, rule.known_other_classes, rule.project_classes) {}

  // Wrapper when the expression is known to hold the wrapper (annotation, constructor, attribute
  // assigned from one, metadata field typed as it, element of a container of them).
  TypeVerdict of(TSNode expr, const FunctionFacts* scope) const;
  // The attribute a receiver is read from (`self.forward_metadata.decode_wrapper` -> decode_wrapper),
  // through local assignments and a helper's parameter to every call of the helper; "" when it is not one attribute.
  std::string source_attribute(TSNode expr, const FunctionFacts* scope) const;
  // For a class expression, through which `C.plan(w, ...)` calls the method with the instance first: Wrapper for the
  // wrapper class itself (`W`, `fi.W`, an alias, a module subclass), and for the class of an instance (`type(x)`,
  // `x.__class__`) what x holds. nullopt for any other expression.
  std::optional<TypeVerdict> class_verdict(TSNode expr, const FunctionFacts* scope) const;
  // Whether a class of the module is the wrapper class or inherits from it.
  bool is_wrapper_class(const std::string& class_name) const { return wrapper_names_.count(class_name) != 0; }
  // Whether a name may be the wrapper class or another: a module class derived from a package class of unknown kind,
  // or a name bound to the wrapper class in one place and to something else in another.
  bool may_be_wrapper_class(const std::string& name) const { return unknown_names_.count(name) != 0; }
  // The module class an expression is an instance of, through constructors and assignments, or one of its subclasses,
  // by an annotation naming the class (a parameter's, a field's) (the wrapper class's own name for an instance of the
  // wrapper class itself; "" when not known).
  std::string module_class_of(TSNode expr, const FunctionFacts* scope) const { return class_of(expr, scope, 0, true); }
  // The run's classes the module imports, each with the name it reads it by (`TracedWrapper`, `traced.TracedWrapper`).
  const std::vector<std::pair<std::string, ProjectClass>>& imported_project_classes() const { return imported_; }

private:
  TypeVerdict of(TSNode expr, const FunctionFacts* scope, int depth) const;
  TypeVerdict element_of(TSNode container, const FunctionFacts* scope, int depth) const;
  TypeVerdict of_annotation(const std::string& annotation) const;
  std::string source_attribute(TSNode expr, const FunctionFacts* scope, int depth) const;
  // The attribute every call of the function in the module reads the parameter's value from ("" when they differ or
  // the module may not show every call).
  std::string source_attribute_from_callers(const FunctionFacts& function, const std::string& name, int depth) const;
  // An unannotated parameter typed by what the module's calls of its function pass for it.
  TypeVerdict of_parameter_from_callers(const FunctionFacts& function, const std::string& name, int depth) const;
  // Whether `r.name(...)` on a receiver of that module class may run this method (its class's def, or a subclass's
  // override of it).
  bool runs_def(const std::string& receiver_class, const FunctionFacts& method) const;
  // The module class an expression is an instance of (the wrapper class's name for the wrapper's own; "" when not
  // known); with `annotated`, or of a subclass of the module class an annotation names.
  std::string class_of(TSNode expr, const FunctionFacts* scope, int depth, bool annotated = false) const;
  // The module class an annotation names by itself (`TracedWrapper`, `"TracedWrapper"`), or "".
  std::string annotated_class(const std::string& annotation) const;

  // Whether a dotted import path names the wrapper class itself (in its package, when the rule names one).
  bool is_wrapper_path(const std::string& path) const;
  // Whether a class expression names the wrapper class itself (`W`, `fi.W`, an alias of it), not a subclass.
  bool names_base(TSNode class_expr) const;
  // Whether a class expression (`W`, `fi.W`, an alias, a module subclass, another module's subclass) names the
  // wrapper class.
  bool names_wrapper(TSNode class_expr) const;
  // Whether a dotted import path names a subclass another module of the run defines (or, with `maybe`, a name another
  // module binds to the wrapper class and to another).
  bool names_project_class(const std::string& path, bool maybe = false) const;
  // Whether an annotation names such a subclass (with `maybe`, such a name) through a module (`traced.TracedWrapper`).
  bool annotation_names_project_class(const std::string& annotation, bool maybe = false) const;
  // Whether it names a class of the wrapper's package (or a module subclass of one) not known to be another type.
  bool names_unknown_class(TSNode class_expr) const;
  // What the module's own module-level assignments bind a name to: the wrapper class itself, a subclass of it (each
  // binding one of those or None), either of those or something else (Maybe), or neither.
  enum class Alias { None, Base, Subclass, Maybe };
  Alias module_alias(const std::string& name) const;
  void collect_subclasses();

  const ModuleFacts& facts_;
  std::string wrapper_class_;
  std::string module_;
  std::vector<std::string> known_other_classes_;
  std::vector<ProjectClass> project_classes_;
  std::vector<std::pair<std::string, ProjectClass>> imported_;
  ImportedNames imports_;
  std::set<std::string> wrapper_names_;  // local names bound to the wrapper class or a module subclass of it
  std::set<std::string> base_names_;     // local names bound to the wrapper class itself
  std::set<std::string> unknown_names_;  // module classes derived from a package class of unknown kind, and names
                                        // bound to the wrapper class in one place and to something else in another
                                        // (here, or imported from a module of the run)
};

}  // namespace kvpatch
