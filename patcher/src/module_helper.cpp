#include "kvpatch/module_helper.h"

#include <algorithm>

namespace kvpatch {
using syntax::is;

namespace {
bool binds(const ModuleFacts& facts, const std::string& name) {
  const std::vector<std::string>& names = facts.module_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The file's indentation step, read off the first def or class whose body starts on a line of its own.
std::string indent_step(const ModuleFacts& facts) {
  const SourceFile& source = facts.file().source;
  for (const FunctionFacts& f : facts.functions()) {
    const std::vector<TSNode> body = syntax::statements(f.body);
    if (body.empty()) continue;
    const int def_line = source.position(ts_node_start_byte(f.node)).line;
    const int body_line = source.position(ts_node_start_byte(body.front())).line;
    if (body_line == def_line) continue;
    const std::string outer = source.indentation_of_line(def_line);
    const std::string inner = source.indentation_of_line(body_line);
    if (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0) return inner.substr(outer.size());
  }
  return "    ";
}

// `definition` with the file's line ending, and each leading run of 4 spaces as one indentation step.
std::string laid_out(const std::string& definition, const std::string& step, const std::string& line_ending) {
  std::string out;
  std::size_t start = 0;
  while (start < definition.size()) {
    std::size_t end = definition.find('\n', start);
    if (end == std::string::npos) end = definition.size();
    std::string line = definition.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::size_t spaces = 0;
    while (spaces < line.size() && line[spaces] == ' ') ++spaces;
    std::string indent;
    for (std::size_t i = 0; i < spaces / 4; ++i) indent += step;
    out += (start == 0 ? "" : line_ending) + indent + line.substr(spaces / 4 * 4);
    start = end + 1;
  }
  return out;
}
}  // namespace

std::string module_helper_name(const std::string& definition) {
  PythonTree tree(definition);
  TSNode root = tree.root();
  if (first_syntax_error(root) || syntax::named_child_count(root) != 1) return "";
  TSNode def = syntax::named_child(root, 0);
  if (is(def, "decorated_definition")) def = syntax::field(def, "definition");
  if (!is(def, "function_definition")) return "";
  TSNode name = syntax::field(def, "name");
  return definition.substr(ts_node_start_byte(name), ts_node_end_byte(name) - ts_node_start_byte(name));
}

std::optional<Edit> module_helper_edit(const ModuleHelper& helper, const ModuleFacts& facts, const EditSet& edits) {
  if (helper.name.empty()) return std::nullopt;
  const std::string call = helper.name + "(";
  const bool called = std::any_of(edits.edits().begin(), edits.edits().end(),
                                  [&](const Edit& e) { return e.replacement.find(call) != std::string::npos; });
  if (!called || binds(facts, helper.name)) return std::nullopt;
  const ParsedFile& file = facts.file();
  const std::vector<TSNode> statements = syntax::statements(file.tree.root());
  TSNode anchor{};
  for (TSNode statement : statements) {
    if (is(statement, "import_statement") || is(statement, "import_from_statement") ||
        is(statement, "future_import_statement")) {
      anchor = statement;
    }
  }
  const SourceFile& source = file.source;
  const std::string& le = source.line_ending();
  std::string imports;
  for (const std::string& module : helper.imports) {
    if (!binds(facts, module)) imports += "import " + module + le;
  }
  const std::string definition = laid_out(helper.definition, indent_step(facts), le);
  if (!syntax::is_null(anchor)) {
    // On the lines after the import: `<imports>`, two blank lines, the def, and two blank lines before what
    // follows (PEP 8), counting the blank lines already there.
    const int line = source.position(ts_node_end_byte(anchor)).line;
    int blank = 0;
    while (line + blank < source.line_count() &&
           source.line_text(line + blank + 1).find_first_not_of(" \t") == std::string_view::npos) {
      ++blank;
    }
    const bool follows = line + blank < source.line_count();
    std::string after;
    for (int i = blank; follows && i < 2; ++i) after += le;
    const std::size_t at = source.line_content_end(line);
    return Edit{at, at, le + imports + le + le + definition + after, helper.rule};
  }
  // No top-level import: before the first statement that is not the module's docstring.
  std::size_t first = 0;
  if (!statements.empty() && is(statements.front(), "expression_statement") &&
      is(syntax::named_child(statements.front(), 0), "string")) {
    first = 1;
  }
  if (first >= statements.size()) return std::nullopt;
  const std::size_t at = source.line_start(source.position(ts_node_start_byte(statements[first])).line);
  return Edit{at, at, imports + (imports.empty() ? "" : le + le) + definition + le + le + le, helper.rule};
}

}  // namespace kvpatch
