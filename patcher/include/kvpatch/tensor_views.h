#pragma once
// PyTorch's function forms of the tensor views the rules follow: `torch.split(x, [512, 64], dim=-1)` is
// `x.split([512, 64], dim=-1)`, so a trace of KV data goes through either the same way.
#include "kvpatch/imported_names.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/rule_set.h"

namespace kvpatch {

// The tensor a call `torch.<m>(x, ...)` views, m one of kv_path.keeps_dtype that is not a dtype overload: its first
// positional argument, or its `input=` / `tensor=` keyword; null for any other call.
TSNode torch_view_input(const KvPath& path, const ModuleFacts& facts, const ImportedNames& imports, TSNode call);

}  // namespace kvpatch
