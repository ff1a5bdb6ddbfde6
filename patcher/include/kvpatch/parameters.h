#pragma once
// Rule parameters: named strings that rule fields reference as ${name}, overridable with --set.
#include <map>
#include <stdexcept>
#include <string>

namespace kvpatch {

// Raised for a reference to an unknown parameter, or references that never resolve.
class ParameterError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Expands ${name} references, innermost first, so `${expr.${form}}` selects by another parameter.
std::string expand_parameters(const std::string& text, const std::map<std::string, std::string>& parameters);

// Every parameter with its references expanded.
std::map<std::string, std::string> expand_all(const std::map<std::string, std::string>& parameters);

}  // namespace kvpatch
