// `kvpatch rule [ID]`: every finding id a report can carry is listed and explained from the rule files, so a
// reader of `[flashinfer-mla-kv-run-input]` in a report can look it up; an unknown id is a usage error.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/files.h"
#include "support/fixture_sources.h"
#include "support/kvpatch_cli.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_SUITE("rule_command") {
  TEST_CASE("without an id: every finding id with the first sentence of its description") {
    TempDir scratch("kvpatch-rule");
    const ProcessResult r = run_kvpatch({"rule"}, scratch.path());
    CHECK(r.exit_code == 0);
    for (const char* id : {"flashinfer-mla-plan-kv-dtype", "flashinfer-mla-kv-field", "fa3-kv-cast", "flashinfer-mla-kv-cast",
                           "flashinfer-mla-kv-run-input", "flashinfer-mla-run-kv-scales", "kvpatch-ignore-comment",
                           "kvpatch-input-error"}) {
      CAPTURE(id);
      CHECK(contains(r.out, std::string(id) + "\n    "));
    }
    CHECK(contains(r.out, "flashinfer-mla-plan-kv-dtype\n    Every call that reaches BatchMLAPagedAttentionWrapper.plan "
                          "must pass the KV-cache dtype as kv_data_type.\n"));
  }

  TEST_CASE("with an id: its whole description, read from the rules in force") {
    TempDir scratch("kvpatch-rule");
    const ProcessResult r = run_kvpatch({"rule", "flashinfer-mla-kv-cast"}, scratch.path());
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("flashinfer-mla-kv-cast\n\n`.to(<x>.dtype)` on the per-layer KV pool", 0) == 0);
    CHECK(contains(r.out, "unbuildable"));  // the whole text, not the first sentence
    // A project's own rules directory is what is explained.
    const fs::path rules = scratch.path() / "my-rules";
    fs::copy(required_env("KVPATCH_RULES_DIR"), rules);
    const std::string field = read_bytes(rules / "flashinfer-mla-kv-field.yaml");
    write_bytes(rules / "flashinfer-mla-kv-field.yaml", replace_all(field, "Each MLA indices updater", "Every MLA updater"));
    write_bytes(scratch.path() / "kvpatch.toml", "rules = \"my-rules\"\n");
    CHECK(contains(run_kvpatch({"rule", "flashinfer-mla-kv-field"}, scratch.path()).out, "Every MLA updater"));
  }

  TEST_CASE("kvpatch's own id for ignore comments that suppress nothing, as SARIF names it") {
    TempDir scratch("kvpatch-rule");
    const ProcessResult r = run_kvpatch({"rule", "kvpatch-ignore-comment"}, scratch.path());
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("kvpatch-ignore-comment\n\nA # kvpatch: ignore[...] comment suppresses nothing.", 0) == 0);
    CHECK(contains(r.out, "leave the exit code as it is, unless the run's unused-ignores setting is error"));
  }

  TEST_CASE("kvpatch's own name for a file it could not check, as GitLab's report names it; no ignore accepts it") {
    TempDir scratch("kvpatch-rule");
    const ProcessResult r = run_kvpatch({"rule", "kvpatch-input-error"}, scratch.path());
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("kvpatch-input-error\n\nA file kvpatch could not check:", 0) == 0);
    write_bytes(scratch.path() / "backend.py", "# kvpatch: ignore[kvpatch-input-error]\n" + fixture_source("gen-b-unpatched"));
    const ProcessResult ignored = run_kvpatch({"check", "backend.py"}, scratch.path());
    CHECK(contains(ignored.err, "ignore[kvpatch-input-error] names a rule id that no rule reports"));
  }

  TEST_CASE("--output-format json (ruff's): each rule's id, summary and explanation, as the text forms give them") {
    TempDir scratch("kvpatch-rule");
    const ProcessResult list = run_kvpatch({"rule", "--output-format", "json"}, scratch.path());
    REQUIRE_MESSAGE(list.exit_code == 0, list.err);
    const nlohmann::json all = nlohmann::json::parse(list.out);
    REQUIRE(all.is_array());
    // The same ids, in the same order, as the text list; each summary is that list's line.
    std::string as_text;
    for (const nlohmann::json& rule : all) {
      CHECK(rule.size() == 3);
      as_text += rule["id"].get<std::string>() + "\n    " + rule["summary"].get<std::string>() + "\n";
      // One id's object is that array's entry, and its explanation is what `rule ID` prints under the id.
      const ProcessResult one = run_kvpatch({"rule", "--format", "json", rule["id"]}, scratch.path());
      CHECK(nlohmann::json::parse(one.out) == rule);
      const ProcessResult text = run_kvpatch({"rule", rule["id"]}, scratch.path());
      CHECK(text.out == rule["id"].get<std::string>() + "\n\n" + rule["explanation"].get<std::string>() + "\n");
    }
    CHECK(as_text == run_kvpatch({"rule"}, scratch.path()).out);
    CHECK(run_kvpatch({"rule", "--all"}, scratch.path()).out == as_text);
    CHECK(all.size() == 8);
    // --all with an id, and a form rule does not print, are usage errors.
    const ProcessResult both = run_kvpatch({"rule", "--all", "fa3-kv-cast"}, scratch.path());
    CHECK(both.exit_code == 2);
    CHECK(contains(both.err, "--all lists every rule, an ID explains one; pass one of the two"));
    CHECK(run_kvpatch({"rule", "--output-format", "sarif"}, scratch.path()).exit_code == 2);
  }

  TEST_CASE("an unknown id: exit 2, naming the ids there are") {
    TempDir scratch("kvpatch-rule");
    const ProcessResult r = run_kvpatch({"rule", "flashinfer-mla-kv-casts"}, scratch.path());
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "kvpatch: error: unknown rule id 'flashinfer-mla-kv-casts'; the rules in "));
    CHECK(contains(r.err, " report flashinfer-mla-plan-kv-dtype, flashinfer-mla-kv-field, "));
  }
}
