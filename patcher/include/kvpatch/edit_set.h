#pragma once
// Byte-range edits of one file. One EditSet feeds check (its count), diff and apply, so they agree.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvpatch {

struct Edit {
  std::size_t begin = 0;  // byte offsets into the text (after any BOM)
  std::size_t end = 0;    // begin == end inserts
  std::string replacement;
  std::string rule;       // the rule that asked for it
  bool operator==(const Edit& other) const {
    return begin == other.begin && end == other.end && replacement == other.replacement;
  }
};

class OverlappingEdit : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

class EditSet {
public:
  // Adds an edit; an identical edit already present is kept once. Throws OverlappingEdit when the
  // edit overlaps another (two insertions at one offset overlap too: their order would be a guess).
  void add(const Edit& edit);
  // True when add(edit) would succeed.
  bool fits(const Edit& edit) const;
  const std::vector<Edit>& edits() const { return edits_; }  // sorted by begin
  std::size_t size() const { return edits_.size(); }
  bool empty() const { return edits_.empty(); }
  // The text with every edit made.
  std::string apply(const std::string& text) const;

private:
  std::vector<Edit> edits_;
};

}  // namespace kvpatch
