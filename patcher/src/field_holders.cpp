#include "kvpatch/field_holders.h"

#include <algorithm>
#include <optional>

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {

// Where in cls's lineage `up` the lookup of the __init__ that up[i]'s `init` runs next starts: up[i + 1] for
// `super().__init__(...)`, the class after C for `super(C, self).__init__(...)`, X for `X.__init__(self, ...)` with X a
// class further up (an explicit call may pass over the classes between, which is Python's lookup from X too). The
// call must be in init's own body (one in a nested def may never run). nullopt when it calls none kvpatch can place.
std::optional<std::size_t> next_init_lookup(const ModuleFacts& facts, const FunctionFacts& init,
                                            const std::vector<const ClassFacts*>& up, std::size_t i) {
  auto position = [&](const std::string& name) -> std::optional<std::size_t> {
    for (std::size_t k = i + 1; k < up.size(); ++k) {
      if (up[k]->name == name) return k;
    }
    return std::nullopt;
  };
  for (TSNode call : facts.calls_named("__init__")) {
    if (facts.function_at(call) != &init) continue;
    TSNode callee = field(call, "function");
    if (!is(callee, "attribute")) continue;
    TSNode object = syntax::unparenthesized(field(callee, "object"));
    if (is(object, "call") && facts.text(field(object, "function")) == "super") {
      const std::vector<TSNode> args = syntax::statements(field(object, "arguments"));
      if (args.empty()) return i + 1;
      if (!is(args[0], "identifier")) continue;
      const std::string start = facts.text(args[0]);
      if (start == up[i]->name) return i + 1;
      if (auto k = position(start)) return *k + 1;
      continue;
    }
    if (is(object, "identifier")) {
      if (auto k = position(facts.text(object))) return *k;
    }
  }
  return std::nullopt;
}

}  // namespace

const ClassFacts* init_holder(const ModuleFacts& facts, const ClassFacts& cls, const std::string& anchor) {
  const std::vector<const ClassFacts*> up = facts.lineage(cls);
  for (std::size_t i = 0; i < up.size();) {
    const FunctionFacts* init = facts.method(*up[i], "__init__");
    if (init == nullptr) {  // the instance runs the __init__ above
      ++i;
      continue;
    }
    const std::string self = self_name(*init);
    if (!self.empty() && !facts.local_assignments(*init, through_instance(self, anchor)).empty()) return up[i];
    const std::optional<std::size_t> next = next_init_lookup(facts, *init, up, i);
    if (!next || *next >= up.size()) return nullptr;
    i = *next;
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
