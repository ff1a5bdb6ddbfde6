#include <algorithm>
#include <sstream>

#include "kvpatch/python_syntax.h"
#include "kvpatch/report.h"

namespace kvpatch {

namespace {
constexpr int kContext = 3;

// Splits text into lines that keep their line endings.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

// A run of old lines [old_first, old_first + old_count) replaced by new lines.
struct Change {
  int old_first = 0;  // 0-based
  int old_count = 0;
  std::vector<std::string> added;
};

void emit_line(std::ostringstream& out, char mark, const std::string& line) {
  out << mark << line;
  if (line.empty() || line.back() != '\n') out << "\n\\ No newline at end of file\n";
}
}  // namespace

std::string unified_diff(const FileReport& file) {
  if (file.edits.empty()) return "";
  const SourceFile& source = file.file->source;
  const std::string& text = source.text();
  const std::vector<std::string> old_lines = split_lines(source.content());
  const int bom_shift = static_cast<int>(source.bom().size());  // offsets index the text after the BOM

  // Group edits by the old lines they touch.
  std::vector<Change> changes;
  const std::vector<Edit>& edits = file.edits.edits();
  std::size_t i = 0;
  while (i < edits.size()) {
    int first = source.position(edits[i].begin).line;
    int last = source.position(edits[i].end > edits[i].begin ? edits[i].end - 1 : edits[i].begin).line;
    std::size_t j = i + 1;
    // Edits on the same or the next line form one change, so a reader sees old lines then new ones.
    while (j < edits.size() && source.position(edits[j].begin).line <= last + 1) {
      last = std::max(last, source.position(edits[j].end > edits[j].begin ? edits[j].end - 1 : edits[j].begin).line);
      ++j;
    }
    const std::size_t region_begin = source.line_start(first);
    const std::size_t region_end = source.line_end(last);
    std::string replaced;
    std::size_t at = region_begin;
    for (std::size_t k = i; k < j; ++k) {
      replaced.append(text, at, edits[k].begin - at);
      replaced += edits[k].replacement;
      at = edits[k].end;
    }
    replaced.append(text, at, region_end - at);
    if (first == 1 && bom_shift > 0) replaced = source.bom() + replaced;
    Change change;
    change.old_first = first - 1;
    change.old_count = last - first + 1;
    change.added = split_lines(replaced);
    // Lines equal at both ends are context, not change.
    while (change.old_count > 0 && !change.added.empty() &&
           old_lines[static_cast<std::size_t>(change.old_first)] == change.added.front()) {
      ++change.old_first;
      --change.old_count;
      change.added.erase(change.added.begin());
    }
    while (change.old_count > 0 && !change.added.empty() &&
           old_lines[static_cast<std::size_t>(change.old_first + change.old_count - 1)] == change.added.back()) {
      --change.old_count;
      change.added.pop_back();
    }
    if (change.old_count > 0 || !change.added.empty()) changes.push_back(std::move(change));
    i = j;
  }
  if (changes.empty()) return "";

  std::ostringstream out;
  out << "--- a/" << source.display_path() << "\n+++ b/" << source.display_path() << "\n";
  const int total = static_cast<int>(old_lines.size());
  std::size_t c = 0;
  int shift = 0;  // new line number minus old line number before the current change
  while (c < changes.size()) {
    // Changes whose context windows meet share a hunk.
    std::size_t d = c + 1;
    while (d < changes.size() &&
           changes[d].old_first - (changes[d - 1].old_first + changes[d - 1].old_count) <= 2 * kContext) {
      ++d;
    }
    const int hunk_first = std::max(0, changes[c].old_first - kContext);
    const int hunk_last = std::min(total, changes[d - 1].old_first + changes[d - 1].old_count + kContext);  // exclusive
    int old_count = hunk_last - hunk_first;
    int new_count = old_count;
    for (std::size_t k = c; k < d; ++k) new_count += static_cast<int>(changes[k].added.size()) - changes[k].old_count;
    const int new_first = hunk_first + shift;
    // For an empty side, unified diffs name the line before it.
    out << "@@ -" << (old_count == 0 ? hunk_first : hunk_first + 1) << "," << old_count << " +"
        << (new_count == 0 ? new_first : new_first + 1) << "," << new_count << " @@\n";
    int line = hunk_first;
    for (std::size_t k = c; k < d; ++k) {
      for (; line < changes[k].old_first; ++line) emit_line(out, ' ', old_lines[static_cast<std::size_t>(line)]);
      for (int r = 0; r < changes[k].old_count; ++r, ++line) emit_line(out, '-', old_lines[static_cast<std::size_t>(line)]);
      for (const std::string& added : changes[k].added) emit_line(out, '+', added);
      shift += static_cast<int>(changes[k].added.size()) - changes[k].old_count;
    }
    for (; line < hunk_last; ++line) emit_line(out, ' ', old_lines[static_cast<std::size_t>(line)]);
    c = d;
  }
  return out.str();
}

}  // namespace kvpatch
