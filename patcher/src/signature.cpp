#include "kvpatch/signature.h"

#include <stdexcept>

#include "kvpatch/python_syntax.h"

namespace kvpatch {

int Signature::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (parameters[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::size_t Signature::positional_count() const {
  std::size_t n = 0;
  for (const Parameter& p : parameters) {
    if (p.kind != ParameterKind::PositionalOnly && p.kind != ParameterKind::PositionalOrKeyword) break;
    ++n;
  }
  return n;
}

const BoundValue* Binding::find(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

Binding bind_arguments(const Signature& signature, const std::vector<CallArgument>& arguments) {
  Binding binding;
  auto fail = [&](std::string why) {
    binding.complete = false;
    binding.failure = std::move(why);
    binding.values.clear();
    return binding;
  };
  for (const CallArgument& a : arguments) {
    if (a.kind == ArgumentKind::UnpackedSequence) return fail("call unpacks *" + a.text + "; its arguments cannot be bound statically");
    if (a.kind == ArgumentKind::UnpackedMapping) return fail("call unpacks **" + a.text + "; its arguments cannot be bound statically");
  }
  const std::size_t positional_slots = signature.positional_count();
  const bool has_var_positional = [&] {
    for (const Parameter& p : signature.parameters) if (p.kind == ParameterKind::VarPositional) return true;
    return false;
  }();
  const bool has_var_keyword = [&] {
    for (const Parameter& p : signature.parameters) if (p.kind == ParameterKind::VarKeyword) return true;
    return false;
  }();

  std::size_t next_positional = 0;
  std::size_t positional_given = 0;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const CallArgument& a = arguments[i];
    if (a.kind == ArgumentKind::Positional) {
      ++positional_given;
      if (next_positional < positional_slots) {
        binding.values[signature.parameters[next_positional].name] = {static_cast<int>(i), a.text};
        ++next_positional;
      } else if (!has_var_positional) {
        return fail("too many positional arguments: " + std::to_string(positional_given) + " given, at most " +
                    std::to_string(positional_slots) + " accepted");
      }
      continue;
    }
    const int index = signature.index_of(a.keyword);
    const Parameter* p = index < 0 ? nullptr : &signature.parameters[static_cast<std::size_t>(index)];
    if (p == nullptr || p->kind == ParameterKind::VarPositional || p->kind == ParameterKind::VarKeyword) {
      if (has_var_keyword) continue;  // absorbed by **kwargs
      return fail("unexpected keyword argument '" + a.keyword + "'");
    }
    if (p->kind == ParameterKind::PositionalOnly) {
      return fail("positional-only parameter '" + a.keyword + "' passed by keyword");
    }
    if (binding.values.count(a.keyword) != 0) return fail("multiple values for parameter '" + a.keyword + "'");
    binding.values[a.keyword] = {static_cast<int>(i), a.text};
  }
  for (const Parameter& p : signature.parameters) {
    if (p.kind == ParameterKind::VarPositional || p.kind == ParameterKind::VarKeyword) continue;
    if (binding.values.count(p.name) != 0) continue;
    if (!p.default_text) return fail("missing argument for parameter '" + p.name + "'");
    binding.values[p.name] = {-1, *p.default_text};
  }
  binding.complete = true;
  return binding;
}

namespace {
std::string node_string(std::string_view text, TSNode node) {
  const uint32_t start = ts_node_start_byte(node);
  return std::string(text.substr(start, ts_node_end_byte(node) - start));
}

// Name of a splat pattern's identifier: `*args` -> "args".
std::string splat_name(std::string_view text, TSNode pattern) {
  for (TSNode child : syntax::named_children(pattern)) {
    if (syntax::is(child, "identifier")) return node_string(text, child);
  }
  return "";
}
}  // namespace

Signature signature_from_parameters(std::string_view text, TSNode parameters) {
  Signature signature;
  bool keyword_only = false;
  for (TSNode node : syntax::named_children(parameters)) {
    const std::string_view type = syntax::type(node);
    if (type == "positional_separator") {
      for (Parameter& p : signature.parameters) {
        if (p.kind == ParameterKind::PositionalOrKeyword) p.kind = ParameterKind::PositionalOnly;
      }
      continue;
    }
    if (type == "keyword_separator") {
      keyword_only = true;
      continue;
    }
    Parameter p;
    p.kind = keyword_only ? ParameterKind::KeywordOnly : ParameterKind::PositionalOrKeyword;
    TSNode name_node = node;
    if (type == "typed_parameter" || type == "typed_default_parameter") {
      TSNode annotation = syntax::field(node, "type");
      if (!syntax::is_null(annotation)) p.annotation = node_string(text, annotation);
    }
    if (type == "default_parameter" || type == "typed_default_parameter") {
      name_node = syntax::field(node, "name");
      p.default_text = node_string(text, syntax::field(node, "value"));
    } else if (type == "typed_parameter") {
      name_node = syntax::named_child(node, 0);
    }
    if (syntax::is(name_node, "list_splat_pattern")) {
      p.kind = ParameterKind::VarPositional;
      p.name = splat_name(text, name_node);
      keyword_only = true;
    } else if (syntax::is(name_node, "dictionary_splat_pattern")) {
      p.kind = ParameterKind::VarKeyword;
      p.name = splat_name(text, name_node);
    } else {
      p.name = node_string(text, name_node);
    }
    signature.parameters.push_back(std::move(p));
  }
  return signature;
}

std::vector<CallArgument> call_arguments(std::string_view text, TSNode argument_list) {
  std::vector<CallArgument> out;
  for (TSNode node : syntax::named_children(argument_list)) {
    const std::string_view type = syntax::type(node);
    CallArgument a;
    a.item_begin = ts_node_start_byte(node);
    a.item_end = ts_node_end_byte(node);
    TSNode value = node;
    if (type == "keyword_argument") {
      a.kind = ArgumentKind::Keyword;
      a.keyword = node_string(text, syntax::field(node, "name"));
      value = syntax::field(node, "value");
    } else if (type == "list_splat" || type == "dictionary_splat") {
      a.kind = type == "list_splat" ? ArgumentKind::UnpackedSequence : ArgumentKind::UnpackedMapping;
      value = syntax::named_child(node, 0);
    }
    a.value_begin = ts_node_start_byte(value);
    a.value_end = ts_node_end_byte(value);
    a.text = node_string(text, value);
    out.push_back(std::move(a));
  }
  return out;
}

Signature parse_parameter_list(const std::string& text) {
  const std::string source = "def _(" + text + "):\n    pass\n";
  PythonTree tree(source);
  if (first_syntax_error(tree.root())) {
    throw std::invalid_argument("not a valid Python parameter list: \"" + text + "\"");
  }
  TSNode function = syntax::named_child(tree.root(), 0);
  return signature_from_parameters(source, syntax::field(function, "parameters"));
}

}  // namespace kvpatch
