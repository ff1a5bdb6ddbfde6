#include "kvpatch/module_facts.h"

#include <algorithm>
#include <set>

namespace kvpatch {
using syntax::field;
using syntax::is;
using syntax::named_children;

namespace {
// The definition inside a decorated_definition, or the node itself.
TSNode undecorated(TSNode node) {
  return is(node, "decorated_definition") ? field(node, "definition") : node;
}
}  // namespace

ModuleFacts::ModuleFacts(const ParsedFile& file) : file_(&file) {
  TSNode root = file.tree.root();
  collect_scope(root, "", "", -1);
  collect_method_orders();
  for (int i = 0; i < static_cast<int>(functions_.size()); ++i) by_body_start_.push_back(i);
  std::sort(by_body_start_.begin(), by_body_start_.end(), [&](int a, int b) {
    return ts_node_start_byte(functions_[static_cast<std::size_t>(a)].body) <
           ts_node_start_byte(functions_[static_cast<std::size_t>(b)].body);
  });
  // Bodies nest or are disjoint, so one pass with a stack finds each body's innermost enclosing one.
  std::vector<int> open;
  for (int pos = 0; pos < static_cast<int>(by_body_start_.size()); ++pos) {
    const TSNode body = functions_[static_cast<std::size_t>(by_body_start_[static_cast<std::size_t>(pos)])].body;
    while (!open.empty() &&
           !syntax::contains(functions_[static_cast<std::size_t>(by_body_start_[static_cast<std::size_t>(open.back())])].body, body)) {
      open.pop_back();
    }
    enclosing_body_.push_back(open.empty() ? -1 : open.back());
    open.push_back(pos);
  }
  collect_assignments(root, -1);
  for (int i = 0; i < static_cast<int>(assignments_.size()); ++i) {
    assignments_by_target_[assignments_[static_cast<std::size_t>(i)].target].push_back(i);
  }
  syntax::walk(root, [&](TSNode node) {
    if (is(node, "call")) calls_.push_back(node);
    return true;
  });
  for (TSNode call : calls_) {
    TSNode callee = field(call, "function");
    if (is(callee, "identifier")) calls_by_name_[text(callee)].push_back(call);
    else if (is(callee, "attribute")) calls_by_name_[text(field(callee, "attribute"))].push_back(call);
  }
  collect_module_names(root);
}

void ModuleFacts::collect_module_names(TSNode root) {
  for (const Assignment& a : assignments_) {
    if (a.function < 0 && a.target.find('.') == std::string::npos) module_names_.push_back(a.target);
  }
  for (const FunctionFacts& f : functions_) {
    if (f.class_name.empty() && f.outer < 0) module_names_.push_back(f.name);
  }
  for (const ClassFacts& c : classes_) module_names_.push_back(c.name);
  // Imports anywhere at module level that run: under try/except or an ordinary if, but not in the body of
  // `if TYPE_CHECKING:` (only type checkers see those names; an edit that calls one would raise NameError).
  auto names_type_checking = [&](TSNode condition) {
    condition = syntax::unparenthesized(condition);
    return (is(condition, "identifier") && text(condition) == "TYPE_CHECKING") ||
           (is(condition, "attribute") && text(field(condition, "attribute")) == "TYPE_CHECKING");
  };
  syntax::walk(root, [&](TSNode n) {
    if (is(n, "function_definition") || is(n, "class_definition")) return false;
    if (is(n, "block") && is(syntax::parent(n), "if_statement") &&
        syntax::same(field(syntax::parent(n), "consequence"), n) && names_type_checking(field(syntax::parent(n), "condition"))) {
      return false;
    }
    if (!is(n, "import_statement") && !is(n, "import_from_statement")) return true;
    const uint32_t count = syntax::named_child_count(n);
    for (uint32_t i = 0; i < count; ++i) {
      TSNode item = syntax::named_child(n, i);
      if (is(n, "import_from_statement") && syntax::same(item, field(n, "module_name"))) continue;
      if (is(item, "aliased_import")) {
        module_names_.push_back(text(field(item, "alias")));
      } else if (is(item, "dotted_name")) {
        // `import a.b` binds a; `from m import a` binds a.
        module_names_.push_back(text(syntax::named_child(item, 0)));
      }
    }
    return false;
  });
}

void ModuleFacts::collect_scope(TSNode scope_body, const std::string& class_name, const std::string& method_name,
                                int outer) {
  syntax::walk(scope_body, [&](TSNode node) {
    if (syntax::same(node, scope_body)) return true;
    TSNode def = undecorated(node);
    if (is(def, "function_definition")) {
      collect_function(def, class_name, method_name, outer);
      return false;
    }
    if (is(def, "class_definition")) {
      collect_class(def);
      return false;
    }
    return true;
  });
}

void ModuleFacts::collect_function(TSNode def, const std::string& class_name, const std::string& method_name,
                                   int outer) {
  FunctionFacts f;
  f.name = text(field(def, "name"));
  f.class_name = class_name;
  f.method_name = method_name.empty() && !class_name.empty() && outer < 0 ? f.name : method_name;
  f.node = def;
  f.body = field(def, "body");
  f.signature = signature_from_parameters(file_->source.text(), field(def, "parameters"));
  f.outer = outer;
  if (TSNode decorated = syntax::parent(def); is(decorated, "decorated_definition")) {
    for (TSNode d : syntax::named_children(decorated)) {
      if (!is(d, "decorator")) continue;
      const std::string name = text(syntax::named_child(d, 0));
      f.unbound |= name == "staticmethod" || name == "classmethod";
    }
  }
  const int index = static_cast<int>(functions_.size());
  functions_.push_back(f);
  const std::string held_by = functions_[static_cast<std::size_t>(index)].method_name;
  collect_scope(f.body, class_name, held_by, index);
}

void ModuleFacts::collect_class(TSNode def) {
  ClassFacts cls;
  cls.name = text(field(def, "name"));
  cls.node = def;
  TSNode body = field(def, "body");
  for (TSNode statement : syntax::statements(body)) {
    if (!is(statement, "expression_statement")) continue;
    TSNode inner = syntax::named_child(statement, 0);
    if (!is(inner, "assignment")) continue;
    TSNode left = field(inner, "left");
    TSNode type = field(inner, "type");
    if (is(left, "identifier") && !syntax::is_null(type)) cls.field_annotations[text(left)] = text(type);
  }
  const auto first_function = static_cast<int>(functions_.size());
  for (TSNode statement : syntax::statements(body)) {
    TSNode inner = undecorated(statement);
    if (is(inner, "function_definition")) {
      collect_function(inner, cls.name, "", -1);
    } else if (is(inner, "class_definition")) {
      collect_class(inner);
    } else {
      collect_scope(statement, cls.name, "", -1);
    }
  }
  for (int i = first_function; i < static_cast<int>(functions_.size()); ++i) {
    const FunctionFacts& f = functions_[static_cast<std::size_t>(i)];
    if (f.class_name == cls.name && f.outer < 0) cls.methods.push_back(i);
  }
  classes_.push_back(std::move(cls));
}

void ModuleFacts::add_assignment_targets(TSNode left, TSNode value, TSNode statement, int function,
                                         AssignmentKind kind) {
  left = syntax::unparenthesized_target(left);
  // `x = (v)` holds v: every reader of the value looks at its kind (a call, an attribute, ...).
  if (!syntax::is_null(value)) value = syntax::unparenthesized(value);
  if (is(left, "identifier") || is(left, "attribute")) {
    assignments_.push_back({kind, one_line(file_->text(left)), value, statement, function});
  } else if (is(left, "subscript")) {
    assignments_.push_back(
        {AssignmentKind::ItemStore, one_line(file_->text(field(left, "value"))), value, statement, function});
  } else {
    // `a, b = x, y`: Python evaluates the whole right side, then binds each name to its element in order, so each
    // name is assigned its own (syntax::unpacked_pairs). Any other unpacking (of a call's result, a starred part)
    // gives each name a value kvpatch does not track.
    const auto pairs = kind == AssignmentKind::Plain && !syntax::is_null(value) ? syntax::unpacked_pairs(left, value)
                                                                                : std::vector<std::pair<TSNode, TSNode>>{};
    if (!pairs.empty()) {
      for (const auto& [target, element] : pairs) add_assignment_targets(target, element, statement, function, kind);
      return;
    }
    for (TSNode part : named_children(left)) {
      add_assignment_targets(part, TSNode{}, statement, function, AssignmentKind::Unpacked);
    }
  }
}

void ModuleFacts::collect_assignments(TSNode node, int function) {
  syntax::walk(node, [&](TSNode n) {
    TSNode def = undecorated(n);
    if (!syntax::same(n, node) && (is(def, "function_definition") || is(def, "class_definition"))) {
      if (is(def, "function_definition")) {
        const int inner = index_of(function_at(field(def, "body")));
        collect_assignments(field(def, "body"), inner);
      } else {
        collect_assignments(field(def, "body"), function);
      }
      return false;
    }
    if (is(n, "assignment")) {
      // `a = b = v`: the right side is itself an assignment carrying the value.
      TSNode value = field(n, "right");
      while (is(value, "assignment")) value = field(value, "right");
      add_assignment_targets(field(n, "left"), value, n, function, AssignmentKind::Plain);
    } else if (is(n, "augmented_assignment")) {
      add_assignment_targets(field(n, "left"), TSNode{}, n, function, AssignmentKind::Augmented);
    } else if (is(n, "for_statement") || is(n, "for_in_clause")) {
      TSNode left = field(n, "left");
      add_assignment_targets(left, field(n, "right"), n, function,
                             is(syntax::unparenthesized(left), "identifier") ? AssignmentKind::LoopTarget
                                                                             : AssignmentKind::Unpacked);
    } else if (is(n, "named_expression")) {
      // `x := a if c else b` binds the whole conditional, for which the tree has no node: a value not followed.
      const bool conditional = !syntax::same(syntax::walrus_extent(n), n);
      add_assignment_targets(field(n, "name"), conditional ? TSNode{} : field(n, "value"), n, function,
                             AssignmentKind::Plain);
    } else if (is(n, "as_pattern")) {
      TSNode alias = field(n, "alias");
      if (!syntax::is_null(alias)) add_assignment_targets(alias, TSNode{}, n, function, AssignmentKind::Unpacked);
    } else if (is(n, "call")) {
      // `self.x.append(v)` stores v in the container self.x.
      TSNode callee = field(n, "function");
      if (is(callee, "attribute") && text(field(callee, "attribute")) == "append") {
        const std::vector<TSNode> args = syntax::statements(field(n, "arguments"));
        assignments_.push_back({AssignmentKind::ItemStore, one_line(file_->text(field(callee, "object"))),
                                args.empty() ? TSNode{} : args.front(), n, function});
      }
    }
    return true;
  });
}

std::vector<const Assignment*> ModuleFacts::assignments_to(const std::string& target) const {
  std::vector<const Assignment*> out;
  auto found = assignments_by_target_.find(target);
  if (found == assignments_by_target_.end()) return out;
  for (int i : found->second) out.push_back(&assignments_[static_cast<std::size_t>(i)]);
  return out;
}

const std::vector<TSNode>& ModuleFacts::calls_named(const std::string& name) const {
  static const std::vector<TSNode> none;
  auto found = calls_by_name_.find(name);
  return found == calls_by_name_.end() ? none : found->second;
}

const ClassFacts* ModuleFacts::find_class(const std::string& name) const {
  for (const ClassFacts& c : classes_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<TSNode> ModuleFacts::positional_bases(const ClassFacts& cls) const {
  std::vector<TSNode> positional;
  const TSNode bases = field(cls.node, "superclasses");
  if (!is(bases, "argument_list")) return positional;
  for (TSNode base : named_children(bases)) {
    if (!is(base, "keyword_argument") && !is(base, "comment")) positional.push_back(base);  // not metaclass=...
  }
  return positional;
}

const FunctionFacts* ModuleFacts::module_function(const std::string& name) const {
  for (const FunctionFacts& f : functions_) {
    if (f.class_name.empty() && f.outer < 0 && f.name == name) return &f;
  }
  return nullptr;
}

const FunctionFacts* ModuleFacts::method(const ClassFacts& cls, const std::string& name) const {
  for (int i : cls.methods) {
    if (functions_[static_cast<std::size_t>(i)].name == name) return &functions_[static_cast<std::size_t>(i)];
  }
  return nullptr;
}

const FunctionFacts* ModuleFacts::method(const std::string& class_name, const std::string& name) const {
  const ClassFacts* cls = find_class(class_name);
  return cls == nullptr ? nullptr : method(*cls, name);
}

const FunctionFacts* ModuleFacts::function_at(TSNode node) const {
  // Among bodies starting at or before the node, the innermost one holding it starts last.
  const uint32_t at = ts_node_start_byte(node);
  auto it = std::upper_bound(by_body_start_.begin(), by_body_start_.end(), at, [&](uint32_t pos, int f) {
    return pos < ts_node_start_byte(functions_[static_cast<std::size_t>(f)].body);
  });
  // A body that does not hold the node ends before it, and so do the bodies between it and its encloser.
  for (int pos = static_cast<int>(it - by_body_start_.begin()) - 1; pos >= 0;
       pos = enclosing_body_[static_cast<std::size_t>(pos)]) {
    const FunctionFacts& f = functions_[static_cast<std::size_t>(by_body_start_[static_cast<std::size_t>(pos)])];
    if (syntax::contains(f.body, node)) return &f;
  }
  return nullptr;
}

int ModuleFacts::index_of(const FunctionFacts* function) const {
  return function == nullptr ? -1 : static_cast<int>(function - functions_.data());
}

std::vector<const Assignment*> ModuleFacts::local_assignments(const FunctionFacts& function,
                                                              const std::string& name) const {
  std::vector<const Assignment*> out;
  const int index = index_of(&function);
  auto found = assignments_by_target_.find(name);
  if (found == assignments_by_target_.end()) return out;
  for (int i : found->second) {
    const Assignment& a = assignments_[static_cast<std::size_t>(i)];
    if (a.function == index && a.kind != AssignmentKind::ItemStore) out.push_back(&a);
  }
  return out;
}

std::vector<const Assignment*> ModuleFacts::own_attribute_assignments(const ClassFacts& cls,
                                                                       const std::string& attr) const {
  // Look up `<self>.<attr>` for each receiver name the class's methods use (nearly always `self`).
  std::vector<std::string> selves;
  for (int m : cls.methods) {
    const std::string self = self_name(functions_[static_cast<std::size_t>(m)]);
    if (!self.empty() && std::find(selves.begin(), selves.end(), self) == selves.end()) selves.push_back(self);
  }
  std::vector<const Assignment*> out;
  for (const std::string& self : selves) {
    auto found = assignments_by_target_.find(self + "." + attr);
    if (found == assignments_by_target_.end()) continue;
    for (int i : found->second) {
      const Assignment& a = assignments_[static_cast<std::size_t>(i)];
      if (a.function < 0) continue;
      const FunctionFacts* holder = &functions_[static_cast<std::size_t>(a.function)];
      while (holder->outer >= 0) holder = &functions_[static_cast<std::size_t>(holder->outer)];
      // Only the class's own methods (and defs nested in them), reading their own receiver.
      if (holder->class_name == cls.name && holder->outer < 0 && self_name(*holder) == self) out.push_back(&a);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const Assignment*> ModuleFacts::self_attribute_assignments(const ClassFacts& cls,
                                                                       const std::string& attr) const {
  std::vector<const Assignment*> out;
  for (const ClassFacts* instance : instance_classes(cls)) {
    // An assignment in a nearer class shadows the ones above it for this instance's class.
    for (const ClassFacts* from : lineage(*instance)) {
      const std::vector<const Assignment*> own = own_attribute_assignments(*from, attr);
      if (own.empty()) continue;
      out.insert(out.end(), own.begin(), own.end());
      break;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string ModuleFacts::field_annotation_anywhere(const std::string& field_name) const {
  for (const ClassFacts& c : classes_) {
    auto it = c.field_annotations.find(field_name);
    if (it != c.field_annotations.end()) return it->second;
  }
  return "";
}

const FunctionFacts* enclosing_function(const ModuleFacts& facts, const FunctionFacts& function) {
  return function.outer >= 0 ? &facts.functions()[static_cast<std::size_t>(function.outer)] : nullptr;
}

std::vector<const FunctionFacts*> nested_defs_named(const ModuleFacts& facts, const FunctionFacts& function,
                                                    const std::string& name) {
  std::vector<const FunctionFacts*> out;
  const int index = facts.index_of(&function);
  for (const FunctionFacts& f : facts.functions()) {
    if (f.outer == index && f.name == name) out.push_back(&f);
  }
  return out;
}

bool binds_name(const ModuleFacts& facts, const FunctionFacts& function, const std::string& name) {
  return function.signature.index_of(name) >= 0 || !facts.local_assignments(function, name).empty() ||
         !nested_defs_named(facts, function, name).empty();
}

const FunctionFacts* function_binding(const ModuleFacts& facts, const FunctionFacts* scope, const std::string& name) {
  for (const FunctionFacts* f = scope; f != nullptr; f = enclosing_function(facts, *f)) {
    if (binds_name(facts, *f, name)) return f;
  }
  return nullptr;
}

const FunctionFacts* binding_scope(const ModuleFacts& facts, const FunctionFacts* scope, const std::string& name) {
  const FunctionFacts* found = function_binding(facts, scope, name);
  return found != nullptr ? found : scope;
}

std::vector<std::string> names_not_visible(const std::string& expression, const FunctionFacts& function,
                                           const ModuleFacts& facts) {
  // Python builtins an inserted expression may reasonably read.
  static const std::set<std::string> builtins = {"getattr", "hasattr", "isinstance", "str", "type", "None", "True", "False"};
  const std::string source = "_ = " + expression + "\n";
  PythonTree tree(source);
  std::vector<std::string> out;
  auto bound_in_functions = [&](const std::string& name) { return function_binding(facts, &function, name) != nullptr; };
  syntax::walk(tree.root(), [&](TSNode n) {
    if (!syntax::is(n, "identifier")) return true;
    TSNode parent = syntax::parent(n);
    if (syntax::is(parent, "attribute") && syntax::same(syntax::field(parent, "attribute"), n)) return true;
    if (syntax::is(parent, "keyword_argument") && syntax::same(syntax::field(parent, "name"), n)) return true;
    const std::string name(source.substr(ts_node_start_byte(n), ts_node_end_byte(n) - ts_node_start_byte(n)));
    if (name == "_" || builtins.count(name) != 0 || bound_in_functions(name) ||
        std::find(facts.module_names().begin(), facts.module_names().end(), name) != facts.module_names().end()) {
      return true;
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    return true;
  });
  return out;
}

std::string through_instance(const std::string& self, const std::string& dotted) {
  const std::size_t dot = dotted.find('.');
  return dot == std::string::npos ? dotted : self + dotted.substr(dot);
}

std::string self_name(const FunctionFacts& function) {
  if (function.class_name.empty() || function.unbound || function.signature.parameters.empty()) return "";
  const Parameter& first = function.signature.parameters.front();
  return first.kind == ParameterKind::VarPositional || first.kind == ParameterKind::VarKeyword ? "" : first.name;
}

}  // namespace kvpatch
