#include "kvpatch/field_holders.h"

#include <algorithm>

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {

// Whether __init__ runs the __init__ above its class: `super().__init__(...)`, `super(C, self).__init__(...)`
// or `Base.__init__(self, ...)`, written in its own body (a call in a nested def may never run).
bool calls_inherited_init(const ModuleFacts& facts, const FunctionFacts& init, const ClassFacts& base) {
  for (TSNode call : facts.calls_named("__init__")) {
    if (facts.function_at(call) != &init) continue;
    TSNode callee = field(call, "function");
    if (!is(callee, "attribute")) continue;
    TSNode object = syntax::unparenthesized(field(callee, "object"));
    if (is(object, "call") && facts.text(field(object, "function")) == "super") return true;
    if (is(object, "identifier") && facts.text(object) == base.name) return true;
  }
  return false;
}

}  // namespace

const ClassFacts* init_holder(const ModuleFacts& facts, const ClassFacts& cls, const std::string& anchor) {
  const std::vector<const ClassFacts*> up = facts.lineage(cls);
  for (std::size_t i = 0; i < up.size(); ++i) {
    const FunctionFacts* init = facts.method(*up[i], "__init__");
    if (init == nullptr) continue;  // the instance runs the __init__ above
    const std::string self = self_name(*init);
    if (!self.empty() && !facts.local_assignments(*init, through_instance(self, anchor)).empty()) return up[i];
    if (i + 1 == up.size() || !calls_inherited_init(facts, *init, *up[i + 1])) return nullptr;
  }
  return nullptr;
}

std::vector<std::string> field_holders(const ModuleFacts& facts, const std::string& class_name,
                                       const std::string& anchor) {
  std::vector<std::string> out;
  const ClassFacts* cls = facts.find_class(class_name);
  if (cls == nullptr) return out;
  for (const ClassFacts* instance : facts.instance_classes(*cls)) {
    const ClassFacts* holder = init_holder(facts, *instance, anchor);
    if (holder != nullptr && std::find(out.begin(), out.end(), holder->name) == out.end()) out.push_back(holder->name);
  }
  return out;
}

bool holds_field_for(const ModuleFacts& facts, const std::string& holder, const std::string& class_name,
                     const std::string& anchor) {
  const std::vector<std::string> holders = field_holders(facts, class_name, anchor);
  return std::find(holders.begin(), holders.end(), holder) != holders.end();
}

}  // namespace kvpatch
