// The order in which Python looks a method up for an instance of a class (its MRO), as far as one module shows it.
// A class with several bases gets C3's order, so a method or an __init__ that a fork keeps in a mixin is found
// where Python finds it. Classes imported from elsewhere are opaque: kvpatch stops at the first place where one of
// them, or what stands behind one, might come next, and says the order is not complete.
#include <algorithm>
#include <optional>

#include "kvpatch/module_facts.h"

namespace kvpatch {
using syntax::is;

namespace {

// One entry of a list C3 merges: a class of this module, `object`, or a class the module does not show.
struct Entry {
  enum class Kind { Module, Object, Unseen } kind = Kind::Unseen;
  const ClassFacts* cls = nullptr;
  bool same(const Entry& other) const {
    return kind == other.kind && kind != Kind::Unseen && (kind == Kind::Object || cls == other.cls);
  }
};

// A list C3 merges: its known entries, then, when `unseen_rest`, entries the module does not show. Of those, the
// ones that may be classes of this module are `hidden` (none behind an imported class: it cannot inherit from a
// class defined here); `object` may be among them in any case.
struct MergeList {
  std::vector<Entry> entries;
  bool unseen_rest = false;
  std::vector<const ClassFacts*> hidden;
};

bool in_tail(const MergeList& list, const Entry& e) {
  return std::any_of(list.entries.begin() + (list.entries.empty() ? 0 : 1), list.entries.end(),
                     [&](const Entry& x) { return x.same(e); }) ||
         (list.unseen_rest &&
          (e.kind == Entry::Kind::Object || std::find(list.hidden.begin(), list.hidden.end(), e.cls) != list.hidden.end()));
}

}  // namespace

void ModuleFacts::collect_method_orders() {
  const std::size_t n = classes_.size();
  auto index = [&](const ClassFacts* c) { return static_cast<std::size_t>(c - classes_.data()); };
  // A base by name: a class of this module (the first of that name), `object`, or one not shown.
  auto base_entry = [&](TSNode base) {
    Entry e;
    if (!is(base, "identifier")) return e;
    const std::string name = text(base);
    if (const ClassFacts* c = find_class(name)) {
      e.kind = Entry::Kind::Module;
      e.cls = c;
    } else if (name == "object") {
      e.kind = Entry::Kind::Object;
    }
    return e;
  };

  ancestors_.assign(n, {});
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<const ClassFacts*> pending{&classes_[i]};
    while (!pending.empty()) {
      const ClassFacts* c = pending.back();
      pending.pop_back();
      for (TSNode base : positional_bases(*c)) {
        const Entry e = base_entry(base);
        std::vector<const ClassFacts*>& up = ancestors_[i];
        if (e.kind != Entry::Kind::Module || e.cls == &classes_[i] || std::find(up.begin(), up.end(), e.cls) != up.end()) {
          continue;
        }
        up.push_back(e.cls);
        pending.push_back(e.cls);
      }
    }
  }

  orders_.assign(n, {});
  std::vector<int> state(n, 0);  // 0 not begun, 1 under way, 2 done
  auto compute = [&](auto&& self, const ClassFacts& cls) -> const MethodOrder& {
    MethodOrder& out = orders_[index(&cls)];
    int& st = state[index(&cls)];
    if (st == 2) return out;
    st = 1;
    std::vector<MergeList> lists;
    MergeList bases;
    for (TSNode base : positional_bases(cls)) {
      Entry e = base_entry(base);
      // A base whose order is under way is a cycle, which no Python program has (a name bound twice can look like
      // one): that base is a class the module does not show.
      if (e.kind == Entry::Kind::Module && state[index(e.cls)] == 1) e = Entry{};
      bases.entries.push_back(e);
      MergeList own;
      if (e.kind == Entry::Kind::Module) {
        const MethodOrder& up = self(self, *e.cls);
        for (const ClassFacts* c : up.classes) own.entries.push_back({Entry::Kind::Module, c});
        if (up.complete) {
          own.entries.push_back({Entry::Kind::Object, nullptr});
        } else {
          own.unseen_rest = true;
          for (const ClassFacts* c : ancestors_[index(e.cls)]) {
            if (std::find(up.classes.begin(), up.classes.end(), c) == up.classes.end()) own.hidden.push_back(c);
          }
        }
      } else {  // `object`, or an imported class and whatever stands behind it
        own.entries.push_back(e);
        own.unseen_rest = e.kind == Entry::Kind::Unseen;
      }
      lists.push_back(std::move(own));
    }
    lists.push_back(std::move(bases));

    MethodOrder order{{&cls}, false};
    for (;;) {
      lists.erase(std::remove_if(lists.begin(), lists.end(),
                                 [](const MergeList& l) { return l.entries.empty() && !l.unseen_rest; }),
                  lists.end());
      if (lists.empty()) {
        order.complete = true;
        break;
      }
      // C3 takes the first head, list by list, that is in no list's tail. A head the module does not show (or an
      // unseen rest) may or may not be that one, so the order is decided only up to it.
      std::optional<Entry> next;
      for (const MergeList& l : lists) {
        if (l.entries.empty() || l.entries.front().kind == Entry::Kind::Unseen) break;
        const Entry& head = l.entries.front();
        if (std::none_of(lists.begin(), lists.end(), [&](const MergeList& m) { return in_tail(m, head); })) {
          next = head;
          break;
        }
      }
      if (!next) break;  // not decided here, or no order at all (Python raises TypeError for the class)
      if (next->kind == Entry::Kind::Module) order.classes.push_back(next->cls);
      for (MergeList& l : lists) {
        if (!l.entries.empty() && l.entries.front().same(*next)) l.entries.erase(l.entries.begin());
      }
    }
    st = 2;
    out = std::move(order);
    return out;
  };
  for (const ClassFacts& c : classes_) compute(compute, c);
}

const ModuleFacts::MethodOrder& ModuleFacts::order_of(const ClassFacts& cls) const {
  return orders_[static_cast<std::size_t>(&cls - classes_.data())];
}

const std::vector<const ClassFacts*>& ModuleFacts::ancestors(const ClassFacts& cls) const {
  return ancestors_[static_cast<std::size_t>(&cls - classes_.data())];
}

std::vector<const ClassFacts*> ModuleFacts::instance_classes(const ClassFacts& cls) const {
  std::vector<const ClassFacts*> out{&cls};
  for (const ClassFacts& other : classes_) {
    if (&other == &cls) continue;
    const std::vector<const ClassFacts*>& up = ancestors(other);
    if (std::find(up.begin(), up.end(), &cls) != up.end()) out.push_back(&other);
  }
  return out;
}

}  // namespace kvpatch
