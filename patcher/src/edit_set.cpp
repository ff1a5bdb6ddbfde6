#include "kvpatch/edit_set.h"

#include <algorithm>

namespace kvpatch {

namespace {
bool overlap(const Edit& a, const Edit& b) {
  if (a.begin == a.end && b.begin == b.end) return a.begin == b.begin;
  if (a.begin == a.end) return b.begin < a.begin && a.begin < b.end;
  if (b.begin == b.end) return a.begin < b.begin && b.begin < a.end;
  return a.begin < b.end && b.begin < a.end;
}
}  // namespace

bool EditSet::fits(const Edit& edit) const {
  if (edit.end < edit.begin) return false;
  return std::none_of(edits_.begin(), edits_.end(),
                      [&](const Edit& e) { return !(e == edit) && overlap(e, edit); });
}

void EditSet::add(const Edit& edit) {
  if (edit.end < edit.begin) throw OverlappingEdit("edit ends before it begins");
  if (std::find(edits_.begin(), edits_.end(), edit) != edits_.end()) return;
  if (!fits(edit)) {
    throw OverlappingEdit("edit of bytes " + std::to_string(edit.begin) + "-" + std::to_string(edit.end) + " (rule " +
                          edit.rule + ") overlaps another edit");
  }
  auto at = std::upper_bound(edits_.begin(), edits_.end(), edit,
                             [](const Edit& a, const Edit& b) {
                               // An insertion at a replacement's start goes before it.
                               return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
                             });
  edits_.insert(at, edit);
}

std::string EditSet::apply(const std::string& text) const {
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  for (const Edit& e : edits_) {
    out.append(text, at, e.begin - at);
    out += e.replacement;
    at = e.end;
  }
  out.append(text, at, std::string::npos);
  return out;
}

}  // namespace kvpatch
