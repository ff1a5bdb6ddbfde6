#include "kvpatch/field_holders.h"

#include <algorithm>
#include <optional>

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {

// The place in up of the __init__ that `up[k].__init__` finds along up[k]'s own lineage; up.size() when it finds
// none there and that lineage is complete (object's); nullopt when it cannot be placed.
std::optional<std::size_t> explicit_init_lookup(const ModuleFacts& facts, const std::vector<const ClassFacts*>& up,
                                                std::size_t k) {
  const std::vector<const ClassFacts*>& own = facts.lineage(*up[k]);
  for (const ClassFacts* c : own) {
    if (facts.method(*c, "__init__") == nullptr) continue;
    const auto at = std::find(up.begin() + static_cast<std::ptrdiff_t>(k), up.end(), c);
    if (at == up.end()) return std::nullopt;
    return static_cast<std::size_t>(at - up.begin());
  }
  if (facts.lineage_complete(*up[k])) return up.size();
  return std::nullopt;
}

// Where in cls's lineage `up` the lookup of the __init__ that up[i]'s `init` runs next starts: up[i + 1] for
// `super().__init__(...)`, the class after C for `super(C, self).__init__(...)`: super() goes on along the instance's
// own order. `X.__init__(self, ...)`, X a class further up, runs the __init__ X's own lineage finds first (with
// several bases, another class may stand between X and it in up); its place in up, or up.size() when X's complete
// lineage has none. The call must be in init's own body (one in a nested def may never run). nullopt when it calls
// none kvpatch can place.
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
      if (auto k = position(facts.text(object))) return explicit_init_lookup(facts, up, *k);
    }
  }
  return std::nullopt;
}

}  // namespace

const ClassFacts* init_holder(const ModuleFacts& facts, const ClassFacts& cls, const std::string& anchor) {
  const std::vector<const ClassFacts*>& up = facts.lineage(cls);
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
