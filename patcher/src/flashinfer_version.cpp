#include "kvpatch/flashinfer_version.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <vector>

namespace kvpatch {
namespace fs = std::filesystem;

namespace {
std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// An exact pin of the distribution in requirement text (PEP 508; either spelling, extras allowed).
std::optional<std::string> pinned_version(const std::string& text) {
  static const std::regex pin(R"(flashinfer[-_]python\s*(?:\[[^\]]*\])?\s*==\s*([0-9][0-9A-Za-z.+!]*))",
                              std::regex::icase);
  std::smatch m;
  if (!std::regex_search(text, m, pin)) return std::nullopt;
  return m[1].str();
}

// A requirement of the distribution that pins no single release (`flashinfer_python>=0.2.1.post1`, or no
// specifier at all), as written, without environment markers.
std::optional<std::string> unpinned_requirement(const std::string& text) {
  static const std::regex requirement(R"(flashinfer[-_]python\s*(\[[^\]]*\])?\s*([<>=!~][^"';\n]*)?)", std::regex::icase);
  std::smatch m;
  if (!std::regex_search(text, m, requirement)) return std::nullopt;
  std::string spec = m[2].str();
  while (!spec.empty() && (spec.back() == ' ' || spec.back() == ',' || spec.back() == '\r')) spec.pop_back();
  return "flashinfer_python" + m[1].str() + spec;
}

FlashInferLookup::Directory read_directory(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  if (ec) return {};
  std::sort(entries.begin(), entries.end());
  static const std::regex installed(R"(flashinfer_python-([0-9][0-9A-Za-z.+!]*)\.dist-info)", std::regex::icase);
  FlashInferLookup::Directory out;
  for (const fs::path& p : entries) {
    std::smatch m;
    const std::string name = p.filename().string();
    if (std::regex_match(name, m, installed)) return {FlashInferVersion{m[1].str(), "installed " + p.string()}, ""};
  }
  const fs::path pyproject = dir / "pyproject.toml";
  if (fs::is_regular_file(pyproject, ec)) {
    const std::string text = read_text(pyproject);
    if (auto v = pinned_version(text)) return {FlashInferVersion{*v, "flashinfer_python==" + *v + " in " + pyproject.string()}, ""};
    if (auto r = unpinned_requirement(text)) out.unpinned = *r + " in " + pyproject.string();
  }
  for (const fs::path& p : entries) {
    const std::string name = p.filename().string();
    if (name.rfind("sglang-", 0) != 0 || p.extension() != ".dist-info") continue;
    const std::string text = read_text(p / "METADATA");
    if (auto v = pinned_version(text)) {
      return {FlashInferVersion{*v, "flashinfer_python==" + *v + " required by " + (p / "METADATA").string()}, ""};
    }
    if (auto r = unpinned_requirement(text); r && out.unpinned.empty()) {
      out.unpinned = *r + " required by " + (p / "METADATA").string();
    }
  }
  return out;
}

std::vector<long> components(const std::string& version) {
  std::vector<long> out;
  std::size_t i = 0;
  while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) {
    long n = 0;
    while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) n = n * 10 + (version[i++] - '0');
    out.push_back(n);
    if (i < version.size() && version[i] == '.') ++i;
  }
  return out;
}
}  // namespace

std::optional<FlashInferVersion> find_flashinfer_version(const fs::path& file, std::string* unpinned) {
  return FlashInferLookup{}.find(file, unpinned);
}

std::optional<FlashInferVersion> FlashInferLookup::find(const fs::path& file, std::string* unpinned) {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(file, ec), ec).parent_path();
  std::string passed_over;
  for (;;) {
    auto it = directories_.find(dir);
    if (it == directories_.end()) it = directories_.emplace(dir, read_directory(dir)).first;
    const Directory& here = it->second;
    if (here.found) return here.found;
    if (passed_over.empty()) passed_over = here.unpinned;
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  if (unpinned != nullptr) *unpinned = passed_over;
  return std::nullopt;
}

std::optional<FlashInferVersion> given_flashinfer_version(const std::map<std::string, std::string>& parameters,
                                                          const std::string& evidence) {
  const auto given = parameters.find("flashinfer_version");
  if (given == parameters.end() || given->second == "auto") return std::nullopt;
  return FlashInferVersion{given->second, evidence};
}

std::optional<FlashInferVersion> flashinfer_target(const std::map<std::string, std::string>& parameters,
                                                   const fs::path& file,
                                                   const std::map<std::string, std::string>& given_by,
                                                   std::string* unpinned, FlashInferLookup* lookup) {
  const auto origin = given_by.find("flashinfer_version");
  const std::string evidence = "given by " + (origin == given_by.end() ? "--flashinfer-version" : origin->second);
  if (auto given = given_flashinfer_version(parameters, evidence)) return given;
  return lookup != nullptr ? lookup->find(file, unpinned) : find_flashinfer_version(file, unpinned);
}

bool version_at_least(const std::string& version, const std::string& since) {
  std::vector<long> a = components(version);
  std::vector<long> b = components(since);
  const std::size_t n = std::max(a.size(), b.size());
  a.resize(n, 0);
  b.resize(n, 0);
  return a >= b;
}

}  // namespace kvpatch
