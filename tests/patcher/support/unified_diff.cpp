#include "unified_diff.h"

#include <set>
#include <stdexcept>

#include "files.h"

namespace kvpatch_test {
namespace {

std::string without_newline(const std::string& line) {
  return !line.empty() && line.back() == '\n' ? line.substr(0, line.size() - 1) : line;
}

// Reads "<sign>start[,count]" at `pos`; an omitted count means 1.
bool parse_range(const std::string& line, std::size_t& pos, char sign, int& start, int& count) {
  if (pos >= line.size() || line[pos] != sign) return false;
  std::size_t used = 0;
  try {
    start = std::stoi(line.substr(pos + 1), &used);
  } catch (const std::exception&) {
    return false;
  }
  pos += 1 + used;
  count = 1;
  if (pos < line.size() && line[pos] == ',') {
    try {
      count = std::stoi(line.substr(pos + 1), &used);
    } catch (const std::exception&) {
      return false;
    }
    pos += 1 + used;
  }
  return true;
}

Hunk parse_hunk_header(const std::string& line, int line_no) {
  Hunk h;
  std::size_t pos = 3;  // after "@@ "
  bool ok = parse_range(line, pos, '-', h.old_start, h.old_count) && pos < line.size() && line[pos++] == ' ' &&
            parse_range(line, pos, '+', h.new_start, h.new_count) && line.compare(pos, 3, " @@") == 0;
  if (!ok) throw std::runtime_error("diff line " + std::to_string(line_no) + ": malformed hunk header: " + line);
  return h;
}

void check_counts(const Hunk& h, int line_no) {
  int old_seen = 0, new_seen = 0;
  for (const DiffLine& l : h.lines) {
    if (l.kind != '+') ++old_seen;
    if (l.kind != '-') ++new_seen;
  }
  if (old_seen != h.old_count || new_seen != h.new_count) {
    throw std::runtime_error("diff hunk ending before line " + std::to_string(line_no) + ": header says -" +
                             std::to_string(h.old_count) + " +" + std::to_string(h.new_count) + ", body has -" +
                             std::to_string(old_seen) + " +" + std::to_string(new_seen));
  }
}

}  // namespace

std::vector<FilePatch> parse_unified_diff(const std::string& diff_text) {
  std::vector<FilePatch> patches;
  std::vector<std::string> lines = split_lines_keep_ends(diff_text);
  Hunk* hunk = nullptr;
  int hunk_header_line = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    const std::string& line = lines[i];
    if (line.rfind("--- ", 0) == 0 && i + 1 < lines.size() && lines[i + 1].rfind("+++ ", 0) == 0 &&
        (hunk == nullptr || (i + 2 < lines.size() && lines[i + 2].rfind("@@ ", 0) == 0))) {
      if (hunk != nullptr) check_counts(*hunk, line_no);
      FilePatch p;
      p.old_path = without_newline(line.substr(4));
      p.new_path = without_newline(lines[i + 1].substr(4));
      patches.push_back(p);
      hunk = nullptr;
      ++i;
    } else if (line.rfind("@@ ", 0) == 0) {
      if (patches.empty()) throw std::runtime_error("diff line " + std::to_string(line_no) + ": hunk before file header");
      if (hunk != nullptr) check_counts(*hunk, line_no);
      patches.back().hunks.push_back(parse_hunk_header(line, line_no));
      hunk = &patches.back().hunks.back();
      hunk_header_line = line_no;
    } else if (line.rfind("\\ No newline at end of file", 0) == 0) {
      if (hunk == nullptr || hunk->lines.empty()) {
        throw std::runtime_error("diff line " + std::to_string(line_no) + ": stray no-newline marker");
      }
      std::string& prev = hunk->lines.back().text;
      if (prev.empty() || prev.back() != '\n') {
        throw std::runtime_error("diff line " + std::to_string(line_no) + ": no-newline marker twice");
      }
      prev.pop_back();
    } else if (hunk != nullptr && !line.empty() && (line[0] == ' ' || line[0] == '-' || line[0] == '+')) {
      hunk->lines.push_back(DiffLine{line[0], line.substr(1)});
    } else if ((hunk == nullptr && patches.empty()) || line.rfind("diff ", 0) == 0 || line.rfind("index ", 0) == 0) {
      continue;  // the preamble before the first file, and git's "diff --git" / "index" lines
    } else {
      throw std::runtime_error("diff line " + std::to_string(line_no) + ": unexpected text: " + without_newline(line) +
                               " (hunk at line " + std::to_string(hunk_header_line) + ")");
    }
  }
  if (hunk != nullptr) check_counts(*hunk, static_cast<int>(lines.size()) + 1);
  return patches;
}

std::string apply_patch(const std::string& original, const FilePatch& patch) {
  std::vector<std::string> old_lines = split_lines_keep_ends(original);
  std::string out;
  std::size_t next = 0;  // 0-based index of the first old line not yet copied
  for (const Hunk& h : patch.hunks) {
    // A hunk that only adds lines after line N has old_start N and old_count 0.
    std::size_t start = h.old_count == 0 ? static_cast<std::size_t>(h.old_start)
                                         : static_cast<std::size_t>(h.old_start - 1);
    if (start < next || start > old_lines.size()) {
      throw std::runtime_error("hunk @@ -" + std::to_string(h.old_start) + " is out of order or past the end");
    }
    for (; next < start; ++next) out += old_lines[next];
    for (const DiffLine& l : h.lines) {
      if (l.kind == '+') {
        out += l.text;
        continue;
      }
      if (next >= old_lines.size() || old_lines[next] != l.text) {
        throw std::runtime_error("hunk @@ -" + std::to_string(h.old_start) + ": line " + std::to_string(next + 1) +
                                 " does not match the diff's " + (l.kind == '-' ? "removed" : "context") + " line");
      }
      if (l.kind == ' ') out += l.text;
      ++next;
    }
  }
  for (; next < old_lines.size(); ++next) out += old_lines[next];
  return out;
}

namespace {

// 0-based indexes of the lines a patch touches on one side ('-' for the old file, '+' for the new).
std::set<std::size_t> touched(const FilePatch& patch, char kind) {
  std::set<std::size_t> result;
  for (const Hunk& h : patch.hunks) {
    int start = kind == '-' ? h.old_start : h.new_start;
    int count = kind == '-' ? h.old_count : h.new_count;
    std::size_t pos = count == 0 ? static_cast<std::size_t>(start) : static_cast<std::size_t>(start - 1);
    for (const DiffLine& l : h.lines) {
      if (l.kind == ' ') {
        ++pos;
      } else if (l.kind == kind) {
        result.insert(pos++);
      }
    }
  }
  return result;
}

std::vector<std::string> untouched(const std::string& bytes, const FilePatch& patch, char kind) {
  std::vector<std::string> lines = split_lines_keep_ends(bytes);
  std::set<std::size_t> skip = touched(patch, kind);
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (skip.count(i) == 0) kept.push_back(lines[i]);
  }
  return kept;
}

}  // namespace

std::vector<std::string> untouched_old_lines(const std::string& original, const FilePatch& patch) {
  return untouched(original, patch, '-');
}

std::vector<std::string> untouched_new_lines(const std::string& patched, const FilePatch& patch) {
  return untouched(patched, patch, '+');
}

}  // namespace kvpatch_test
