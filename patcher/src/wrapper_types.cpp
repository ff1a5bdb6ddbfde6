#include "kvpatch/wrapper_types.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "kvpatch/dtype_roles.h"
#include "kvpatch/module_calls.h"
#include "kvpatch/project_classes.h"
#include "kvpatch/reaching_definitions.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {
constexpr int kMaxDepth = 10;  // bounds chains of assignments (and cycles through them)

// Wrapper if any part is and none is another type; Other if all known parts are other types.
TypeVerdict merge(const std::vector<TypeVerdict>& parts) {
  bool wrapper = false, other = false, unknown = false;
  for (TypeVerdict v : parts) {
    wrapper |= v == TypeVerdict::Wrapper;
    other |= v == TypeVerdict::Other;
    unknown |= v == TypeVerdict::Unknown;
  }
  if (wrapper && !other) return TypeVerdict::Wrapper;
  if (other && !wrapper && !unknown) return TypeVerdict::Other;
  if (!wrapper && !other && !unknown) return TypeVerdict::Nothing;
  return TypeVerdict::Unknown;
}

bool word_in(const std::string& text, const std::string& word) {
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_');
    const std::size_t end = at + word.size();
    const bool right = end >= text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_');
    if (left && right) return true;
  }
  return false;
}

// The last name of a callee: `a.b.C` -> C.
std::string last_name(const ModuleFacts& facts, TSNode callee) {
  if (is(callee, "identifier")) return facts.text(callee);
  if (is(callee, "attribute")) return facts.text(field(callee, "attribute"));
  return "";
}
// The last component of a dotted path.
std::string last_component(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}
}  // namespace

WrapperTypes::WrapperTypes(const ModuleFacts& facts, std::string wrapper_class, std::string module,
                           std::vector<std::string> known_other_classes, std::vector<ProjectClass> project_classes)
    : facts_(facts),
      wrapper_class_(std::move(wrapper_class)),
      module_(std::move(module)),
      known_other_classes_(std::move(known_other_classes)),
      project_classes_(std::move(project_classes)),
      imports_(facts) {
  wrapper_names_.insert(wrapper_class_);
  base_names_.insert(wrapper_class_);
  // `from flashinfer import BatchMLAPagedAttentionWrapper as MLAWrapper` binds MLAWrapper to the class, and
  // `from .traced import TracedWrapper` a subclass that the run's module traced.py defines.
  for (const auto& [name, path] : imports_.paths()) {
    const bool base = is_wrapper_path(path);
    if (base) base_names_.insert(name);
    if (base || names_project_class(path)) wrapper_names_.insert(name);
    else if (names_project_class(path, true)) unknown_names_.insert(name);
    for (const ProjectClass& c : project_classes_) {
      if (c.maybe) continue;  // no def of its own is known to run
      const std::filesystem::path& importer = facts_.file().source.path();
      if (kvpatch::names_project_class(path, importer, c)) imported_.emplace_back(name, c);
      else if (kvpatch::names_project_class(path + "." + c.name, importer, c)) imported_.emplace_back(name + "." + c.name, c);
    }
  }
  collect_subclasses();
}

bool WrapperTypes::names_project_class(const std::string& path, bool maybe) const {
  return std::any_of(project_classes_.begin(), project_classes_.end(), [&](const ProjectClass& c) {
    return c.maybe == maybe && kvpatch::names_project_class(path, facts_.file().source.path(), c);
  });
}

bool WrapperTypes::is_wrapper_path(const std::string& path) const {
  return last_component(path) == wrapper_class_ && (module_.empty() || in_package(path, module_));
}

bool WrapperTypes::names_base(TSNode class_expr) const {
  class_expr = syntax::unparenthesized(class_expr);
  if (is(class_expr, "identifier")) return base_names_.count(facts_.text(class_expr)) != 0;
  if (is(class_expr, "attribute") && facts_.text(field(class_expr, "attribute")) == wrapper_class_) return true;
  // `import flashinfer.mla as m` + `m.<alias of the class>` resolves to the class too.
  return is_wrapper_path(imports_.qualified(class_expr));
}

bool WrapperTypes::names_wrapper(TSNode class_expr) const {
  class_expr = syntax::unparenthesized(class_expr);
  if (is(class_expr, "identifier") && wrapper_names_.count(facts_.text(class_expr)) != 0) return true;
  // `from . import traced` + `traced.TracedWrapper`: a subclass of it.
  return names_base(class_expr) || names_project_class(imports_.qualified(class_expr));
}

std::optional<TypeVerdict> WrapperTypes::class_verdict(TSNode expr, const FunctionFacts* scope) const {
  expr = syntax::unparenthesized(expr);
  if (names_wrapper(expr)) return TypeVerdict::Wrapper;
  if (is(expr, "call") && facts_.text(field(expr, "function")) == "type") {
    const std::vector<TSNode> args = syntax::statements(field(expr, "arguments"));
    if (args.size() == 1 && !is(args[0], "list_splat") && !is(args[0], "keyword_argument")) return of(args[0], scope);
  }
  if (is(expr, "attribute") && facts_.text(field(expr, "attribute")) == "__class__") {
    return of(field(expr, "object"), scope);
  }
  return std::nullopt;
}

bool WrapperTypes::names_unknown_class(TSNode class_expr) const {
  class_expr = syntax::unparenthesized(class_expr);
  if (is(class_expr, "identifier") && unknown_names_.count(facts_.text(class_expr)) != 0) return true;
  const std::string path = imports_.qualified(class_expr);
  if (names_project_class(path, true)) return true;  // `compat.MLAWrapper`, bound to the wrapper or another class
  if (!in_package(path, module_)) return false;
  const std::string name = last_component(path);
  return std::find(known_other_classes_.begin(), known_other_classes_.end(), name) == known_other_classes_.end();
}

WrapperTypes::Alias WrapperTypes::module_alias(const std::string& name) const {
  bool named = false;
  bool other = false;
  bool base = true;
  for (const Assignment* a : facts_.assignments_to(name)) {
    // Only the module's own bindings: not a class body's, nor a def's (function is -1 at class level too).
    bool module_level = a->function < 0;
    for (TSNode up = syntax::parent(a->statement); module_level && !syntax::is_null(up); up = syntax::parent(up)) {
      module_level = !is(up, "class_definition") && !is(up, "function_definition");
    }
    if (!module_level) continue;
    const TSNode value = syntax::unparenthesized(a->value);
    if (a->kind != AssignmentKind::Plain || syntax::is_null(value) || !names_wrapper(value)) {
      other = other || !is(value, "none");  // None: the fallback of an optional import
      continue;
    }
    named = true;
    base = base && names_base(value);
  }
  if (!named) return Alias::None;
  if (other) return Alias::Maybe;
  return base ? Alias::Base : Alias::Subclass;
}

void WrapperTypes::collect_subclasses() {
  // To a fixed point, so a subclass of a subclass counts too, and an alias of either. Names that may be either the
  // wrapper or another class are taken last, after a first fixed point: a binding to a subclass that a later round
  // finds is no other class.
  for (const bool take_maybe : {false, true}) {
    for (bool grew = true; grew;) {
      grew = false;
      // `MLAWrapper = BatchMLAPagedAttentionWrapper` (or = a subclass, or = None as an optional import's fallback)
      // at module level: the name is the class too (or may be, when also bound to something else).
      for (const std::string& name : facts_.module_names()) {
        if (wrapper_names_.count(name) != 0 || unknown_names_.count(name) != 0 || facts_.find_class(name) != nullptr) {
          continue;
        }
        const Alias alias = module_alias(name);
        if (alias == Alias::None || (alias == Alias::Maybe && !take_maybe)) continue;
        // Bound to the wrapper in one place and to something else in another: its instances are of unknown type.
        (alias == Alias::Maybe ? unknown_names_ : wrapper_names_).insert(name);
        if (alias == Alias::Base) base_names_.insert(name);
        grew = true;
      }
      for (const ClassFacts& cls : facts_.classes()) {
        if (wrapper_names_.count(cls.name) != 0 || unknown_names_.count(cls.name) != 0) continue;
        for (TSNode base : facts_.positional_bases(cls)) {
          if (names_wrapper(base)) {
            grew = wrapper_names_.insert(cls.name).second || grew;
            break;
          }
          if (names_unknown_class(base)) {
            grew = unknown_names_.insert(cls.name).second || grew;
            break;
          }
        }
      }
    }
  }
}

TypeVerdict WrapperTypes::of_annotation(const std::string& annotation) const {
  if (annotation.empty()) return TypeVerdict::Unknown;
  for (const std::string& name : wrapper_names_) {
    if (word_in(annotation, name)) return TypeVerdict::Wrapper;
  }
  if (annotation_names_project_class(annotation)) return TypeVerdict::Wrapper;
  // A class that may be the wrapper or another (`w: MLAWrapper`, bound in a try and in its handler) says nothing sure.
  for (const std::string& name : unknown_names_) {
    if (word_in(annotation, name)) return TypeVerdict::Unknown;
  }
  return annotation_names_project_class(annotation, true) ? TypeVerdict::Unknown : TypeVerdict::Other;
}

bool WrapperTypes::annotation_names_project_class(const std::string& annotation, bool maybe) const {
  // `traced.TracedWrapper` after `from . import traced`: the dotted name before the class, resolved as code would be.
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const ProjectClass& c : project_classes_) {
    if (c.maybe != maybe) continue;
    for (std::size_t at = annotation.find(c.name); at != std::string::npos; at = annotation.find(c.name, at + 1)) {
      const std::size_t end = at + c.name.size();
      if (end < annotation.size() && name_char(annotation[end])) continue;
      std::size_t begin = at;
      while (begin > 0 && (name_char(annotation[begin - 1]) || annotation[begin - 1] == '.')) --begin;
      const std::string dotted = annotation.substr(begin, end - begin);
      const std::size_t dot = dotted.find('.');
      if (dot == std::string::npos || dot == 0) continue;  // a bare name is bound by an import or not at all
      auto bound = imports_.paths().find(dotted.substr(0, dot));
      if (bound != imports_.paths().end() && names_project_class(bound->second + dotted.substr(dot), maybe)) return true;
    }
  }
  return false;
}

TypeVerdict WrapperTypes::of(TSNode expr, const FunctionFacts* scope) const { return of(expr, scope, 0); }

TypeVerdict WrapperTypes::of(TSNode expr, const FunctionFacts* scope, int depth) const {
  expr = syntax::unparenthesized(expr);
  if (syntax::is_null(expr) || depth > kMaxDepth) return TypeVerdict::Unknown;
  if (is(expr, "none")) return TypeVerdict::Nothing;
  if (is(expr, "call")) {
    TSNode callee = field(expr, "function");
    if (names_wrapper(callee)) return TypeVerdict::Wrapper;
    const std::string name = last_name(facts_, callee);
    // Another class's constructor (by naming convention) builds something else, unless the wrapper's
    // package may hand out the wrapper under that name.
    if (!name.empty() && std::isupper(static_cast<unsigned char>(name[0]))) {
      return names_unknown_class(callee) ? TypeVerdict::Unknown : TypeVerdict::Other;
    }
    return TypeVerdict::Unknown;
  }
  if (is(expr, "boolean_operator") || is(expr, "conditional_expression")) {
    std::vector<TypeVerdict> parts;
    const std::vector<TSNode> children = syntax::statements(expr);
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (is(expr, "conditional_expression") && i == 1) continue;  // the condition
      parts.push_back(of(children[i], scope, depth + 1));
    }
    return merge(parts);
  }
  if (is(expr, "subscript")) return element_of(field(expr, "value"), scope, depth + 1);
  if (is(expr, "identifier")) {
    const std::string name = facts_.text(expr);
    std::vector<TypeVerdict> parts;
    for (const FunctionFacts* f = scope; f != nullptr;
         f = f->outer >= 0 ? &facts_.functions()[static_cast<std::size_t>(f->outer)] : nullptr) {
      const int index = f->signature.index_of(name);
      if (index >= 0) {
        const std::string& annotation = f->signature.parameters[static_cast<std::size_t>(index)].annotation;
        if (!annotation.empty()) parts.push_back(of_annotation(annotation));
      }
      const std::vector<const Assignment*> assignments = assignments_reaching(facts_, *f, name, expr);
      for (const Assignment* a : assignments) {
        if (a->kind == AssignmentKind::Plain) parts.push_back(of(a->value, f, depth + 1));
        else if (a->kind == AssignmentKind::LoopTarget) parts.push_back(element_of(a->value, f, depth + 1));
        else parts.push_back(TypeVerdict::Unknown);
      }
      if (index >= 0 && parts.empty()) parts.push_back(of_parameter_from_callers(*f, name, depth + 1));
      if (!parts.empty() || index >= 0) break;  // the nearest scope that binds the name decides
    }
    return parts.empty() ? TypeVerdict::Unknown : merge(parts);
  }
  if (is(expr, "attribute")) {
    const std::string attr = facts_.text(field(expr, "attribute"));
    TSNode object = field(expr, "object");
    std::vector<TypeVerdict> parts;
    const FunctionFacts* method = holding_method(facts_, scope);
    if (method != nullptr && is(object, "identifier") && facts_.text(object) == self_name(*method)) {
      if (const ClassFacts* cls = facts_.find_class(method->class_name)) {
        auto declared = cls->field_annotations.find(attr);
        if (declared != cls->field_annotations.end()) parts.push_back(of_annotation(declared->second));
        for (const Assignment* a : facts_.self_attribute_assignments(*cls, attr)) {
          if (a->kind == AssignmentKind::Plain) {
            parts.push_back(of(a->value, &facts_.functions()[static_cast<std::size_t>(a->function)], depth + 1));
          }
        }
      }
    }
    if (parts.empty()) {
      // A metadata field declared with the wrapper's type in some class of the module.
      const std::string annotation = facts_.field_annotation_anywhere(attr);
      if (!annotation.empty()) parts.push_back(of_annotation(annotation));
    }
    return parts.empty() ? TypeVerdict::Unknown : merge(parts);
  }
  return TypeVerdict::Unknown;
}

TypeVerdict WrapperTypes::element_of(TSNode container, const FunctionFacts* scope, int depth) const {
  container = syntax::unparenthesized(container);
  if (syntax::is_null(container) || depth > kMaxDepth) return TypeVerdict::Unknown;
  if (is(container, "list") || is(container, "tuple")) {
    std::vector<TypeVerdict> parts;
    for (TSNode item : syntax::statements(container)) parts.push_back(of(item, scope, depth + 1));
    return parts.empty() ? TypeVerdict::Nothing : merge(parts);
  }
  if (is(container, "attribute") || is(container, "identifier")) {
    const std::string target = one_line(facts_.file().text(container));
    const FunctionFacts* method = holding_method(facts_, scope);
    const bool is_self_attribute = is(container, "attribute") && method != nullptr &&
                                   is(field(container, "object"), "identifier") &&
                                   facts_.text(field(container, "object")) == self_name(*method);
    std::vector<TypeVerdict> parts;
    for (const Assignment* a : facts_.assignments_to(target)) {
      if (a->function < 0) continue;
      const FunctionFacts* where = &facts_.functions()[static_cast<std::size_t>(a->function)];
      const bool same_scope = is_self_attribute ? where->class_name == method->class_name : where == scope;
      if (!same_scope) continue;
      if (a->kind == AssignmentKind::ItemStore) parts.push_back(of(a->value, where, depth + 1));
      else if (a->kind == AssignmentKind::Plain) {
        const TSNode value = syntax::unparenthesized(a->value);
        // `self.x = []` or `{}` says nothing; a literal with items or another container does.
        if (!(is(value, "list") || is(value, "dictionary") || is(value, "tuple")) || syntax::named_child_count(value) > 0) {
          parts.push_back(element_of(value, where, depth + 1));
        }
      }
    }
    if (is_self_attribute) {
      if (const ClassFacts* cls = facts_.find_class(method->class_name)) {
        auto declared = cls->field_annotations.find(facts_.text(field(container, "attribute")));
        if (declared != cls->field_annotations.end()) parts.push_back(of_annotation(declared->second));
      }
    }
    return parts.empty() ? TypeVerdict::Unknown : merge(parts);
  }
  return TypeVerdict::Unknown;
}

TypeVerdict WrapperTypes::of_parameter_from_callers(const FunctionFacts& function, const std::string& name,
                                                    int depth) const {
  if (depth > kMaxDepth) return TypeVerdict::Unknown;
  if (function.outer >= 0) {
    // A nested def: the calls its enclosing def makes of it, when those are all of them (parameter_bindings).
    const std::optional<std::vector<ParameterBinding>> bindings = parameter_bindings(facts_, function, name);
    if (!bindings || bindings->empty()) return TypeVerdict::Unknown;
    std::vector<TypeVerdict> parts;
    for (const ParameterBinding& b : *bindings) {
      parts.push_back(syntax::is_null(b.value) ? TypeVerdict::Unknown : of(b.value, b.caller, depth + 1));
    }
    return merge(parts);
  }
  // Called as a method, the receiver fills the first parameter.
  Signature signature = function.signature;
  const bool method = function.is_method();
  if (method && !signature.parameters.empty()) signature.parameters.erase(signature.parameters.begin());
  std::vector<TypeVerdict> parts;
  for (TSNode call : facts_.calls_named(function.name)) {
    TSNode callee = field(call, "function");
    const FunctionFacts* caller = facts_.function_at(call);
    if (method) {
      if (!is(callee, "attribute") || facts_.text(field(callee, "attribute")) != function.name) continue;
      if (!runs_def(class_of(field(callee, "object"), caller, depth + 1), function)) continue;
    } else if (!is(callee, "identifier") || facts_.text(callee) != function.name) {
      continue;
    }
    TSNode argument_list = field(call, "arguments");
    if (!is(argument_list, "argument_list")) continue;
    const std::vector<CallArgument> arguments = call_arguments(facts_.file().source.text(), argument_list);
    const Binding binding = bind_arguments(signature, arguments);
    const BoundValue* bound = binding.complete ? binding.find(name) : nullptr;
    if (bound == nullptr || bound->from_default()) {
      parts.push_back(TypeVerdict::Unknown);
      continue;
    }
    const CallArgument& a = arguments[static_cast<std::size_t>(bound->argument)];
    parts.push_back(of(ts_node_named_descendant_for_byte_range(argument_list, static_cast<uint32_t>(a.value_begin),
                                                                static_cast<uint32_t>(a.value_end)),
                       caller, depth + 1));
  }
  return parts.empty() ? TypeVerdict::Unknown : merge(parts);
}

bool WrapperTypes::runs_def(const std::string& receiver_class, const FunctionFacts& method) const {
  // An instance of the receiver's class or of a subclass: a base's receiver reaches a subclass's override. Where
  // the part of a class's lineage the module places finds no def, one behind it may be this one.
  const ClassFacts* cls = facts_.find_class(receiver_class);
  const ClassFacts* holder = facts_.find_class(method.class_name);
  if (cls == nullptr) return false;
  const std::vector<const ClassFacts*> instances = facts_.instance_classes(*cls);
  return std::any_of(instances.begin(), instances.end(), [&](const ClassFacts* c) {
    const FunctionFacts* found = method_found(facts_, *c, method.name);
    if (found != nullptr || facts_.lineage_complete(*c)) return found == &method;
    const std::vector<const ClassFacts*>& up = facts_.ancestors(*c);
    return holder != nullptr && std::find(up.begin(), up.end(), holder) != up.end();
  });
}

std::string WrapperTypes::annotated_class(const std::string& annotation) const {
  std::string name = one_line(annotation);
  if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'') && name.back() == name.front()) {
    name = name.substr(1, name.size() - 2);
  }
  return facts_.find_class(name) != nullptr ? name : "";
}

std::string WrapperTypes::class_of(TSNode expr, const FunctionFacts* scope, int depth, bool annotated) const {
  expr = syntax::unparenthesized(expr);
  if (syntax::is_null(expr) || depth > kMaxDepth) return "";
  if (is(expr, "call")) {
    const TSNode callee = syntax::unparenthesized(field(expr, "function"));
    // The wrapper class itself, by a name of its own (never one of the module's or the run's subclasses).
    if ((is(callee, "identifier") && base_names_.count(facts_.text(callee)) != 0 &&
         facts_.find_class(facts_.text(callee)) == nullptr) ||
        (is(callee, "attribute") && facts_.text(field(callee, "attribute")) == wrapper_class_)) {
      return wrapper_class_;
    }
    const std::string name = last_name(facts_, callee);
    return facts_.find_class(name) != nullptr ? name : "";
  }
  const FunctionFacts* method = holding_method(facts_, scope);
  std::vector<const Assignment*> assignments;
  std::string declared;  // the annotation of the parameter or field, when `annotated`
  if (is(expr, "identifier")) {
    if (method != nullptr && facts_.text(expr) == self_name(*method)) return method->class_name;
    if (scope != nullptr) assignments = assignments_reaching(facts_, *scope, facts_.text(expr), expr);
    const int index = scope == nullptr ? -1 : scope->signature.index_of(facts_.text(expr));
    if (annotated && index >= 0) declared = scope->signature.parameters[static_cast<std::size_t>(index)].annotation;
  } else if (is(expr, "attribute") && method != nullptr && is(field(expr, "object"), "identifier") &&
             facts_.text(field(expr, "object")) == self_name(*method)) {
    if (const ClassFacts* cls = facts_.find_class(method->class_name)) {
      assignments = facts_.self_attribute_assignments(*cls, facts_.text(field(expr, "attribute")));
      auto field_annotation = cls->field_annotations.find(facts_.text(field(expr, "attribute")));
      if (annotated && field_annotation != cls->field_annotations.end()) declared = field_annotation->second;
    }
  } else if (is(expr, "attribute") && annotated) {
    // A metadata field declared in some class of the module (`forward_metadata.decode_wrapper`).
    declared = facts_.field_annotation_anywhere(facts_.text(field(expr, "attribute")));
  }
  // Annotated as a module class, it holds one of that class's instances or of its subclasses'. (Annotated as the
  // wrapper class, any subclass: not known.)
  if (!declared.empty()) return annotated_class(declared);
  std::string found;
  for (const Assignment* a : assignments) {
    if (a->kind != AssignmentKind::Plain) return "";
    const std::string c =
        class_of(a->value, &facts_.functions()[static_cast<std::size_t>(a->function)], depth + 1, annotated);
    if (c.empty() || (!found.empty() && c != found)) return "";
    found = c;
  }
  return found;
}

std::string WrapperTypes::source_attribute(TSNode expr, const FunctionFacts* scope) const {
  return source_attribute(expr, scope, 0);
}

std::string WrapperTypes::source_attribute(TSNode expr, const FunctionFacts* scope, int depth) const {
  expr = syntax::unparenthesized(expr);
  if (syntax::is_null(expr) || depth > kMaxDepth) return "";
  if (is(expr, "attribute")) return facts_.text(field(expr, "attribute"));
  if (is(expr, "subscript")) return source_attribute(field(expr, "value"), scope, depth + 1);
  if (is(expr, "identifier") && scope != nullptr) {
    scope = binding_scope(facts_, scope, facts_.text(expr));  // a closure reads its encloser's local
    std::string found;
    const std::vector<const Assignment*> assignments = assignments_reaching(facts_, *scope, facts_.text(expr), expr);
    if (assignments.empty() && scope->signature.index_of(facts_.text(expr)) >= 0) {
      return source_attribute_from_callers(*scope, facts_.text(expr), depth);
    }
    if (assignments.empty()) return "";
    for (const Assignment* a : assignments) {
      if (a->kind != AssignmentKind::Plain) return "";
      const std::string source = source_attribute(a->value, scope, depth + 1);
      if (source.empty() || (!found.empty() && source != found)) return "";
      found = source;
    }
    return found;
  }
  return "";
}

std::string WrapperTypes::source_attribute_from_callers(const FunctionFacts& function, const std::string& name,
                                                       int depth) const {
  const std::optional<std::vector<ParameterBinding>> bindings = parameter_bindings(facts_, function, name);
  if (!bindings || bindings->empty()) return "";
  std::string found;
  for (const ParameterBinding& b : *bindings) {
    const std::string source = syntax::is_null(b.value) ? "" : source_attribute(b.value, b.caller, depth + 1);
    if (source.empty() || (!found.empty() && source != found)) return "";
    found = source;
  }
  return found;
}

}  // namespace kvpatch
