#pragma once
// Whether an expression holds an instance of one wrapper class, from annotations and assignments.
#include <string>

#include "kvpatch/module_facts.h"

namespace kvpatch {

enum class TypeVerdict { Wrapper, Other, Unknown, Nothing };  // Nothing: `None`, which says nothing

class WrapperTypes {
public:
  WrapperTypes(const ModuleFacts& facts, std::string wrapper_class)
      : facts_(facts), wrapper_class_(std::move(wrapper_class)) {}

  // Wrapper when the expression is known to hold the wrapper (annotation, constructor, attribute
  // assigned from one, metadata field typed as it, element of a container of them).
  TypeVerdict of(TSNode expr, const FunctionFacts* scope) const;
  // The attribute a receiver is read from (`self.forward_metadata.decode_wrapper` -> decode_wrapper),
  // through local assignments; "" when it is not one attribute.
  std::string source_attribute(TSNode expr, const FunctionFacts* scope) const;

private:
  TypeVerdict of(TSNode expr, const FunctionFacts* scope, int depth) const;
  TypeVerdict element_of(TSNode container, const FunctionFacts* scope, int depth) const;
  TypeVerdict of_annotation(const std::string& annotation) const;
  std::string source_attribute(TSNode expr, const FunctionFacts* scope, int depth) const;
  // An unannotated parameter typed by what the module's calls of its function pass for it.
  TypeVerdict of_parameter_from_callers(const FunctionFacts& function, const std::string& name, int depth) const;
  // The module class an expression is an instance of ("" when not known).
  std::string class_of(TSNode expr, const FunctionFacts* scope, int depth) const;

  const ModuleFacts& facts_;
  std::string wrapper_class_;
};

}  // namespace kvpatch
