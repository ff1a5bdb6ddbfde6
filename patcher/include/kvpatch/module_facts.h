#pragma once
// Facts read off one module's syntax tree: classes, functions and methods, assignments, calls.
#include <map>
#include <string>
#include <vector>

#include "kvpatch/python_syntax.h"
#include "kvpatch/signature.h"

namespace kvpatch {

struct FunctionFacts {
  std::string name;         // the def's own name
  std::string class_name;   // the class it is defined in, directly or through enclosing defs; "" at module level
  std::string method_name;  // the class-level def that holds it (itself for a method); "" at module level
  TSNode node{};            // function_definition
  TSNode body{};
  Signature signature;
  int outer = -1;           // index of the enclosing function for nested defs
  bool unbound = false;     // decorated @staticmethod or @classmethod: its first parameter is no instance
  bool is_method() const { return !class_name.empty() && name == method_name; }
};

enum class AssignmentKind { Plain, LoopTarget, Unpacked, Augmented, ItemStore };

struct Assignment {
  AssignmentKind kind = AssignmentKind::Plain;
  std::string target;  // one-line source text: `x`, `self.x`, or for ItemStore the container `self.x`
  TSNode value{};      // the assigned value, the loop's iterable, or null when unknown
  TSNode statement{};  // the assignment / for statement
  int function = -1;   // index of the function it is in; -1 at module or class level
};

struct ClassFacts {
  std::string name;
  TSNode node{};
  std::vector<int> methods;                                // indices into ModuleFacts::functions
  std::map<std::string, std::string> field_annotations;    // class-level `name: Type` declarations
};

class ModuleFacts {
public:
  explicit ModuleFacts(const ParsedFile& file);

  const ParsedFile& file() const { return *file_; }
  std::string text(TSNode node) const { return std::string(file_->text(node)); }
  const std::vector<FunctionFacts>& functions() const { return functions_; }
  const std::vector<ClassFacts>& classes() const { return classes_; }
  const std::vector<Assignment>& assignments() const { return assignments_; }
  const std::vector<TSNode>& calls() const { return calls_; }
  // Assignments whose target text is exactly `target`, in module order (an index, so queries stay linear).
  std::vector<const Assignment*> assignments_to(const std::string& target) const;
  // Calls whose callee is `name` or `<expr>.name`, in module order.
  const std::vector<TSNode>& calls_named(const std::string& name) const;

  const ClassFacts* find_class(const std::string& name) const;
  // Where Python looks a method or attribute up for an instance of cls, as far as this module shows it: cls, then
  // the classes of its method resolution order (C3, over every base) up to the first one the module cannot place:
  // a base imported from elsewhere, or any class whose place behind one is not decided by what the module shows.
  const std::vector<const ClassFacts*>& lineage(const ClassFacts& cls) const { return order_of(cls).classes; }
  // Whether lineage(cls) is all of it: every class an instance of cls inherits from, but `object`, is in it.
  bool lineage_complete(const ClassFacts& cls) const { return order_of(cls).complete; }
  // The bases a class statement lists by position (`class C(A, B, metaclass=M)`: A and B), in order.
  std::vector<TSNode> positional_bases(const ClassFacts& cls) const;
  // The classes of this module that cls inherits from, directly or not, in whatever order.
  const std::vector<const ClassFacts*>& ancestors(const ClassFacts& cls) const;
  // The classes whose instances may run cls's methods: cls, and every class of the module inheriting from it.
  std::vector<const ClassFacts*> instance_classes(const ClassFacts& cls) const;
  const FunctionFacts* module_function(const std::string& name) const;
  const FunctionFacts* method(const ClassFacts& cls, const std::string& name) const;
  const FunctionFacts* method(const std::string& class_name, const std::string& name) const;
  // Innermost function containing the node, or nullptr at module or class level.
  const FunctionFacts* function_at(TSNode node) const;
  int index_of(const FunctionFacts* function) const;

  // Assignments to a plain name inside one function (not its nested defs).
  std::vector<const Assignment*> local_assignments(const FunctionFacts& function, const std::string& name) const;
  // `self.<attr> = ...` (Plain) and `self.<attr>[k] = ...` (ItemStore) and `self.<attr>.append(v)` that can have
  // set the attribute an instance running cls's methods reads: for cls and each class inheriting from it, those in
  // the methods of the first class along its lineage that assigns it.
  std::vector<const Assignment*> self_attribute_assignments(const ClassFacts& cls, const std::string& attr) const;
  // Names bound at module level when it runs: imports (not those only under `if TYPE_CHECKING:`), assignments,
  // defs and classes.
  const std::vector<std::string>& module_names() const { return module_names_; }
  // The declared annotation of a class-level field with this name in any class of the module, "" if none.
  std::string field_annotation_anywhere(const std::string& field) const;

private:
  struct MethodOrder {
    std::vector<const ClassFacts*> classes;
    bool complete = false;
  };
  const MethodOrder& order_of(const ClassFacts& cls) const;
  void collect_method_orders();
  // The assignments to `<self>.<attr>` in cls's own methods (and defs nested in them).
  std::vector<const Assignment*> own_attribute_assignments(const ClassFacts& cls, const std::string& attr) const;
  void collect_scope(TSNode scope_body, const std::string& class_name, const std::string& method_name, int outer);
  void collect_function(TSNode def, const std::string& class_name, const std::string& method_name, int outer);
  void collect_class(TSNode def);
  void collect_assignments(TSNode node, int function);
  void collect_module_names(TSNode root);
  void add_assignment_targets(TSNode left, TSNode value, TSNode statement, int function, AssignmentKind kind);

  const ParsedFile* file_;
  std::vector<FunctionFacts> functions_;
  std::vector<int> by_body_start_;  // function indices sorted by where their bodies start
  std::vector<int> enclosing_body_;  // per by_body_start_ position: position of the innermost body holding it, or -1
  std::map<std::string, std::vector<int>> assignments_by_target_;
  std::map<std::string, std::vector<TSNode>> calls_by_name_;  // keyed by the callee's last name
  std::vector<std::string> module_names_;
  std::vector<ClassFacts> classes_;
  std::vector<MethodOrder> orders_;                        // per class, as classes_
  std::vector<std::vector<const ClassFacts*>> ancestors_;  // per class, as classes_
  std::vector<Assignment> assignments_;
  std::vector<TSNode> calls_;
};

// The function a nested def is written in; nullptr for a def at module or class level.
const FunctionFacts* enclosing_function(const ModuleFacts& facts, const FunctionFacts& function);

// The defs written directly in the function's body under this name (a class's methods inside it are none).
std::vector<const FunctionFacts*> nested_defs_named(const ModuleFacts& facts, const FunctionFacts& function,
                                                    const std::string& name);

// Whether the function binds the name itself: a parameter, an assignment, or a def nested in it.
bool binds_name(const ModuleFacts& facts, const FunctionFacts& function, const std::string& name);

// The function whose local a read of `name` in `scope` is: scope itself or the nearest function enclosing it that
// binds the name (binds_name), as a closure reads it; nullptr where none does (a module-level name or a builtin).
const FunctionFacts* function_binding(const ModuleFacts& facts, const FunctionFacts* scope, const std::string& name);

// function_binding, or scope itself where no function binds the name.
const FunctionFacts* binding_scope(const ModuleFacts& facts, const FunctionFacts* scope, const std::string& name);

// The receiver name that a method of this function binds (its first parameter), "" when none.
std::string self_name(const FunctionFacts& function);

// A rule's `self.x` as a method whose instance parameter is `self` reaches it (`this.x`); a name without a dot
// stays as it is.
std::string through_instance(const std::string& self, const std::string& dotted);

// The free names of a Python expression (given as text) that code in the function cannot see: not its
// (or an enclosing function's) parameters or locals, not bound at module level, not common builtins.
std::vector<std::string> names_not_visible(const std::string& expression, const FunctionFacts& function,
                                           const ModuleFacts& facts);

}  // namespace kvpatch
