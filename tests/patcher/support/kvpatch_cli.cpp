#include "kvpatch_cli.h"

#include <algorithm>

#include "files.h"

namespace kvpatch_test {

ProcessResult run_kvpatch(const std::vector<std::string>& args, const std::filesystem::path& working_dir,
                          const ProcessOptions& extra) {
  std::vector<std::string> argv{required_env("KVPATCH_BIN")};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options = extra;
  options.working_dir = working_dir;
  return run_process(argv, options);
}

std::string render_for_golden(const ProcessResult& result, const std::filesystem::path& scratch_dir) {
  std::string text = result.out;
  if (!result.err.empty()) text += "--- stderr ---\n" + result.err;
  return replace_all(text, scratch_dir.string(), "<tmp>");
}

std::string first_difference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return "";
  std::vector<std::string> e = split_lines_keep_ends(expected);
  std::vector<std::string> a = split_lines_keep_ends(actual);
  std::size_t n = std::min(e.size(), a.size());
  std::size_t i = 0;
  while (i < n && e[i] == a[i]) ++i;
  auto show = [](const std::vector<std::string>& lines, std::size_t k) {
    return k < lines.size() ? "<" + lines[k] + ">" : std::string("<end of output>");
  };
  return "line " + std::to_string(i + 1) + ": expected " + show(e, i) + " / actual " + show(a, i);
}

}  // namespace kvpatch_test
