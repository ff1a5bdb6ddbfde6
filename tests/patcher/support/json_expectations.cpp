#include "support/json_expectations.h"

#include <doctest/doctest.h>

#include <regex>

#include "support/files.h"
#include "support/process.h"

namespace kvpatch_test {
using nlohmann::json;

std::multiset<Finding> json_findings(const json& report) {
  std::multiset<Finding> out;
  auto add = [&](const json& j) {
    out.insert({j["line"].get<int>(), j.at("column").get<int>(), j["rule"].get<std::string>(),
                j["status"].get<std::string>()});
  };
  for (const json& s : report["plan_sites"]) {
    if (s["status"] == "missing" || s["status"] == "unknown") add(s);
    // A threaded or gated site its FlashInfer cannot build keeps its status and carries `unbuildable`.
    if (s.contains("unbuildable")) {
      out.insert({s["line"].get<int>(), s["column"].get<int>(), s["rule"].get<std::string>(), "unbuildable"});
    }
  }
  for (const json& c : report["casts"]) {
    if (c["status"] == "redundant") add(c);
  }
  for (const json& f : report["fields"]) {
    if (f["status"] == "missing") add(f);
  }
  for (const json& r : report["run_inputs"]) {
    if (r["status"] != "ignored") add(r);
  }
  for (const json& r : report["run_scales"]) {
    if (r["status"] == "missing") add(r);
  }
  return out;
}

std::multiset<Finding> json_ignored(const json& report) {
  std::multiset<Finding> out;
  for (const char* section : {"plan_sites", "fields", "run_inputs", "run_scales"}) {
    for (const json& j : report[section]) {
      if (j["status"] != "ignored") continue;
      out.insert({j["line"].get<int>(), j["column"].get<int>(), j["rule"].get<std::string>(),
                  j.value("reason", std::string())});
    }
  }
  return out;
}

std::multiset<Finding> ignore_comments(const json& report) {
  std::multiset<Finding> out;
  for (const json& c : report["ignore_comments"]) {
    out.insert({c["line"].get<int>(), c["column"].get<int>(), c["level"].get<std::string>(),
                c["problem"].get<std::string>()});
  }
  return out;
}

std::multiset<Finding> at_level(const std::multiset<Finding>& comments, const std::string& level) {
  std::multiset<Finding> out;
  for (const auto& [line, column, was, problem] : comments) out.insert({line, column, level, problem});
  return out;
}

std::size_t json_entry_count(const json& report) {
  std::size_t n = 0;
  for (const char* section : {"plan_sites", "fields", "casts", "run_inputs", "run_scales"}) n += report[section].size();
  return n;
}

bool is_warning(const std::string& status) { return status == "unknown" || status == "run-input-unknown"; }

std::filesystem::path stage_in_repository(const Fixture& fixture, const std::filesystem::path& top) {
  std::filesystem::path pkg = top / "pkg";
  std::filesystem::create_directories(pkg);
  fixture.stage(pkg);
  REQUIRE(run_process({required_env("KVPATCH_GIT"), "init", "-q", top.string()}).exit_code == 0);
  return pkg;
}

std::filesystem::path stage_moved_in_repository(const Fixture& fixture, const std::filesystem::path& top) {
  std::filesystem::path pkg = stage_in_repository(fixture, top);
  std::string source = read_bytes(pkg / fixture.input);
  const std::string newline = source.find("\r\n") != std::string::npos ? "\r\n" : "\n";
  static const std::regex first_import("(^|\n)(import |from )");
  std::smatch import_at;
  REQUIRE(std::regex_search(source, import_at, first_import));
  source.insert(static_cast<std::size_t>(import_at.position(2)), "# a line added above the code" + newline);
  write_bytes(pkg / fixture.input, source);
  return pkg;
}

}  // namespace kvpatch_test
