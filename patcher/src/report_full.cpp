// --format full: the text report with each finding's source line under it, a caret at its column, and the fix
// `apply` makes for it as the lines before and after, as ruff's full output and clang-tidy's fix-it notes show a
// finding to someone reading a terminal rather than a CI service.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kvpatch/finding_edits.h"
#include "kvpatch/report.h"

namespace kvpatch {
namespace {
// A run of source lines that a finding's edits change together, first..last (1-based, inclusive).
struct Hunk {
  int first = 0;
  int last = 0;
  std::vector<const PositionedEdit*> edits;
};

// The last line an edit touches: one that ends at the start of a line (a whole line deleted with its line ending)
// ends on the line before.
int last_line_of(const PositionedEdit& e) {
  return e.end.column == 1 && e.end.line > e.start.line ? e.end.line - 1 : e.end.line;
}

std::vector<Hunk> hunks_of(const std::vector<PositionedEdit>& edits, int line_count) {
  std::vector<const PositionedEdit*> sorted;
  sorted.reserve(edits.size());
  for (const PositionedEdit& e : edits) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const PositionedEdit* a, const PositionedEdit* b) {
    return std::tie(a->start.line, a->start.column) < std::tie(b->start.line, b->start.column);
  });
  std::vector<Hunk> out;
  for (const PositionedEdit* e : sorted) {
    // An insertion after a file's last line ending sits on the line past the end: show it with the last line.
    const int first = std::min(e->start.line, line_count);
    const int last = std::min(std::max(last_line_of(*e), first), line_count);
    if (!out.empty() && first <= out.back().last) {
      out.back().last = std::max(out.back().last, last);
    } else {
      out.push_back({first, last, {}});
    }
    out.back().edits.push_back(e);
  }
  return out;
}

std::size_t offset_of(const SourceFile& source, const SourcePosition& p) {
  return std::min(source.line_start(p.line) + static_cast<std::size_t>(p.column - 1), source.text().size());
}

// The hunk's lines with its edits made, each without its line ending.
std::vector<std::string> lines_after(const SourceFile& source, const Hunk& hunk) {
  const std::size_t begin = source.line_start(hunk.first);
  std::string text = source.text().substr(begin, source.line_end(hunk.last) - begin);
  for (auto e = hunk.edits.rbegin(); e != hunk.edits.rend(); ++e) {  // from the back: earlier offsets stay valid
    const std::size_t from = offset_of(source, (*e)->start) - begin;
    text.replace(from, offset_of(source, (*e)->end) - begin - from, (*e)->content);
  }
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// Spaces under a line up to a 1-based byte column, keeping its tabs and counting a UTF-8 character once, so
// that the caret lands under the column in a terminal.
std::string indent_to(std::string_view line, int column) {
  std::string out;
  for (std::size_t i = 0; i + 1 < static_cast<std::size_t>(column) && i < line.size(); ++i) {
    const auto byte = static_cast<unsigned char>(line[i]);
    if (byte == '\t') out += '\t';
    else if ((byte & 0xC0) != 0x80) out += ' ';
  }
  return out;
}

void print_finding_context(std::ostringstream& out, const SourceFile& source, const ReportItem& item) {
  const std::vector<Hunk> hunks = hunks_of(item.edits, source.line_count());
  int widest = item.line;
  for (const Hunk& h : hunks) widest = std::max(widest, h.last);
  // Every context line starts with a space, so that colorize_report() leaves the source's text alone.
  const std::string blank(std::to_string(widest).size() + 2, ' ');
  const auto numbered = [&](int line) {
    const std::string n = std::to_string(line);
    return std::string(blank.size() - n.size() - 1, ' ') + n + ' ';
  };
  if (item.line >= 1 && item.line <= source.line_count()) {
    const std::string_view line = source.line_text(item.line);
    out << blank << "|\n" << numbered(item.line) << "| " << line << "\n"
        << blank << "| " << indent_to(line, item.column) << "^\n";
  }
  if (hunks.empty()) return;
  // An empty line gets its marker alone: no trailing blank for editors and `git diff --check` to flag.
  const auto marked = [](char marker, std::string_view line) {
    return line.empty() ? std::string(1, marker) : std::string(1, marker) + " " + std::string(line);
  };
  out << blank << "= fix, as apply makes it:\n";
  for (const Hunk& h : hunks) {
    for (int line = h.first; line <= h.last; ++line) out << numbered(line) << marked('-', source.line_text(line)) << "\n";
    for (const std::string& line : lines_after(source, h)) out << blank << marked('+', line) << "\n";
  }
}
}  // namespace

std::string full_report(const Run& run, Extent extent) {
  std::map<std::string, const SourceFile*> sources;
  for (const FileReport& f : run.files) sources.emplace(f.file->source.display_path(), &f.file->source);
  std::ostringstream out;
  for (const ReportItem& item : report_items(run)) {
    if (!item.finding && extent == Extent::FindingsOnly) continue;
    out << text_line(item) << "\n";
    const auto source = sources.find(item.file);
    if (item.finding && source != sources.end()) print_finding_context(out, *source->second, item);
  }
  if (extent == Extent::Everything) out << summary_line(summarize(run)) << "\n";
  return out.str();
}

}  // namespace kvpatch
