#include "text_edits.h"

#include <doctest/doctest.h>

#include <vector>

namespace kvpatch_test {

std::string with_edits(const std::string& content, const std::set<TextEdit>& edits) {
  const std::string bom = content.rfind("\xEF\xBB\xBF", 0) == 0 ? content.substr(0, 3) : "";
  std::string text = content.substr(bom.size());
  std::vector<std::size_t> starts = {0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts.push_back(i + 1);
  }
  auto offset = [&](int line, int column) {
    REQUIRE((line >= 1 && static_cast<std::size_t>(line) <= starts.size() && column >= 1));
    const std::size_t at = starts[static_cast<std::size_t>(line - 1)] + static_cast<std::size_t>(column - 1);
    REQUIRE(at <= text.size());
    return at;
  };
  // From the end backwards, so that earlier offsets stay valid.
  std::size_t limit = text.size();
  for (auto it = edits.rbegin(); it != edits.rend(); ++it) {
    const std::size_t begin = offset(it->line, it->column);
    const std::size_t end = offset(it->end_line, it->end_column);
    REQUIRE(begin <= end);
    REQUIRE_MESSAGE(end <= limit, "overlapping edits at line ", it->line);
    text.replace(begin, end - begin, it->content);
    limit = begin;
  }
  return bom + text;
}

std::set<TextEdit> json_entry_edits(const nlohmann::json& entry) {
  std::set<TextEdit> out;
  for (const nlohmann::json& e : entry.value("edits", nlohmann::json::array())) {
    out.insert({e["location"]["line"], e["location"]["column"], e["end_location"]["line"], e["end_location"]["column"],
                e["content"]});
  }
  return out;
}

}  // namespace kvpatch_test
