#include "kvpatch/tensor_views.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

TSNode torch_view_input(const KvPath& path, const ModuleFacts& facts, const ImportedNames& imports, TSNode call) {
  if (!is(call, "call")) return {};
  TSNode callee = field(call, "function");
  if (!is(callee, "attribute")) return {};
  TSNode object = field(callee, "object");
  const std::string method = facts.text(field(callee, "attribute"));
  const bool torch = imports.qualified(object) == "torch" || (is(object, "identifier") && facts.text(object) == "torch" &&
                                                              imports.paths().count("torch") == 0);
  // `torch.view` does not exist; `view` is left out so that a dtype overload never counts as a view here.
  if (!torch || !listed(path.keeps_dtype, method) || listed(path.dtype_overloads, method)) return {};
  TSNode arguments = field(call, "arguments");
  if (!is(arguments, "argument_list")) return {};
  for (TSNode a : syntax::named_children(arguments)) {
    if (is(a, "list_splat") || is(a, "dictionary_splat")) return {};  // which argument is the tensor is not seen
    if (!is(a, "keyword_argument")) return a;
    const std::string name = facts.text(field(a, "name"));
    if (name == "input" || name == "tensor") return field(a, "value");
  }
  return {};
}

}  // namespace kvpatch
