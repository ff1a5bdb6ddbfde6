#include "kvpatch/parameters.h"

namespace kvpatch {

namespace {
// Finds the innermost ${...}: the last "${" before the first "}" that closes one. False when none.
bool innermost_reference(const std::string& text, std::size_t& open, std::size_t& close) {
  std::size_t pending = std::string::npos;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      pending = i;
      ++i;
    } else if (text[i] == '}' && pending != std::string::npos) {
      open = pending;
      close = i;
      return true;
    }
  }
  return false;
}
}  // namespace

std::string expand_parameters(const std::string& text, const std::map<std::string, std::string>& parameters) {
  std::string out = text;
  // The bound on rounds stops parameters that refer to themselves.
  for (int round = 0; round < 1000; ++round) {
    std::size_t open = 0;
    std::size_t close = 0;
    if (!innermost_reference(out, open, close)) return out;
    const std::string name = out.substr(open + 2, close - open - 2);
    auto it = parameters.find(name);
    if (it == parameters.end()) throw ParameterError("unknown parameter '" + name + "' referenced as ${" + name + "}");
    out.replace(open, close - open + 1, it->second);
  }
  throw ParameterError("parameter references in \"" + text + "\" do not resolve (a parameter refers to itself)");
}

std::map<std::string, std::string> expand_all(const std::map<std::string, std::string>& parameters) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : parameters) out[name] = expand_parameters(value, parameters);
  return out;
}

}  // namespace kvpatch
