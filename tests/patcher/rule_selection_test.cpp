// ruff's rule selection: --select / --ignore and the settings keys select / ignore. The findings of the rules left
// out are reported `ignored`, naming what left them out, and get no edits; leaving a rule out by select never
// vouches for a run() input (flashinfer-mla-kv-run-input), so no select can make apply plan FP8 for a run() that
// is still handed the BF16 cast.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "support/files.h"
#include "support/fixture_sources.h"
#include "support/scratch_backend.h"

using namespace kvpatch_test;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kScales = "flashinfer-mla-run-kv-scales";
const std::string kPlan = "flashinfer-mla-plan-kv-dtype";
const std::string kField = "flashinfer-mla-kv-field";
const std::string kRunInput = "flashinfer-mla-kv-run-input";
}  // namespace

TEST_SUITE("rule_selection") {
  TEST_CASE("--ignore and the settings file's ignore: the rules named are ignored in every file, naming where") {
    const ScratchBackend backend("kvpatch-select");
    const ProcessResult plain = backend.run({"diff", "."});
    CHECK(plain.exit_code == 1);
    CHECK(contains(plain.out, "\"ckv_scale\": 1.0"));

    const ProcessResult check = backend.run({"check", "--ignore", kScales, "."});
    CHECK(check.exit_code == 1);  // the plan sites are still missing
    CHECK(contains(check.out, "\nbackend.py:106:13: ignored: FlashInferMLAAttnBackend.forward_decode: decode_wrapper.run "
                              "is handed the KV cache as stored, "));
    CHECK(contains(check.out, "needs FP8 scales there for an FP8 cache; ignore at --ignore " + kScales + " [" + kScales +
                                  "]\n"));
    CHECK(contains(check.out, "2 FP8 run() calls: 0 with scales, 0 without, 2 ignored; 7 edits\n"));
    const ProcessResult diff = backend.run({"diff", "--ignore", kScales, "."});
    CHECK(diff.exit_code == 1);
    CHECK_FALSE(contains(diff.out, "ckv_scale"));
    CHECK(contains(diff.out, "+                self.kv_data_type,\n"));

    write_bytes(backend.at(".kvpatch.toml"), "# the cluster's FlashInfer is patched for this\nignore = [\"" + kScales +
                                                 "\"]\n");
    const std::string config = backend.at(".kvpatch.toml").string();
    const ProcessResult from_file = backend.run({"check", "."});
    CHECK(from_file.exit_code == 1);
    CHECK(contains(from_file.out, "; ignore at " + config + ":2 [" + kScales + "]\n"));
    CHECK(contains(backend.run({"check", "--show-settings", "."}).out,
                   "\nper-file ignores:\n  every file: " + kScales + "  [ignore at " + config + ":2]\n"));
    // SARIF keeps each as a result suppressed outside the source, as per-file-ignores' are.
    int suppressed = 0;
    const nlohmann::json log = nlohmann::json::parse(backend.run({"check", "--format", "sarif", "."}).out);
    for (const auto& r : log["runs"][0]["results"]) {
      if (!r.contains("suppressions")) continue;
      ++suppressed;
      CHECK(r["suppressions"] == nlohmann::json::parse(R"([{"kind": "external", "justification": "ignore at )" +
                                                       config + R"(:2"}])"));
    }
    CHECK(suppressed == 2);
  }

  TEST_CASE("SARIF tells the settings' ignores from a comment whose reason merely reads like one") {
    const ScratchBackend backend("kvpatch-select");
    std::string source = read_bytes(backend.at("backend.py"));
    const std::string plan_line = "            wrapper.plan(\n";
    const std::size_t at = source.find(plan_line);  // the decode updater's first plan site, line 139
    REQUIRE(at != std::string::npos);
    source.insert(at + plan_line.size() - 1, "  # kvpatch: ignore[" + kPlan + "] ignore at first: a BF16 test path");
    write_bytes(backend.at("backend.py"), source);
    std::map<std::string, std::string> kinds;  // justification -> kind
    const nlohmann::json log = nlohmann::json::parse(backend.run({"check", "--format", "sarif", "--ignore", kScales, "."}).out);
    for (const auto& r : log["runs"][0]["results"]) {
      if (r.contains("suppressions")) kinds[r["suppressions"][0]["justification"]] = r["suppressions"][0]["kind"];
    }
    CHECK(kinds == std::map<std::string, std::string>{{"ignore at first: a BF16 test path", "inSource"},
                                                      {"ignore at --ignore " + kScales, "external"}});
  }

  TEST_CASE("--select: only the rules named count, but a run() input still holds back its plans unless ignore names it") {
    const ScratchBackend backend("kvpatch-select");
    const std::string original = read_bytes(backend.at("backend.py"));
    // Left out, the cast rule keeps both casts; the run-input findings are not left out with it, so the plan sites
    // stay unthreaded and nothing is written.
    const ProcessResult check = backend.run({"check", "--select", kPlan + "," + kField, "."});
    CHECK(check.exit_code == 1);
    CHECK(contains(check.out, "\nbackend.py:105:9: required: FlashInferMLAAttnBackend.forward_decode: k_buffer = "));
    CHECK(contains(check.out, "stays: suppressed by kvpatch: ignore: select at --select " + kPlan + "," + kField +
                                  " [flashinfer-mla-kv-cast]\n"));
    CHECK(contains(check.out, "\nbackend.py:105:20: run-input-converted: "));
    CHECK(contains(check.out, "2 run() inputs unsafe: 2 converted, 0 unknown; "));
    const ProcessResult diff = backend.run({"diff", "--select", kPlan + "," + kField, "."});
    CHECK(diff.exit_code == 0);
    CHECK(diff.out.empty());
    CHECK(backend.run({"apply", "--select", kPlan + "," + kField, "."}).exit_code == 1);
    CHECK(read_bytes(backend.at("backend.py")) == original);
    // Naming the run-input id in ignore is the vouch, as a per-file-ignores entry or a comment is: then the plans
    // are threaded and the casts kept.
    const ProcessResult vouched = backend.run({"diff", "--select", kPlan, "--select", kField, "--ignore", kRunInput, "."});
    CHECK(vouched.exit_code == 1);
    CHECK(contains(vouched.out, "+                self.kv_data_type,\n"));
    CHECK_FALSE(contains(vouched.out, "-        k_buffer = "));
  }

  TEST_CASE("select and ignore in the settings file, in ruff's order: --select replaces both, --ignore adds to them") {
    const ScratchBackend backend("kvpatch-select");
    write_bytes(backend.at(".kvpatch.toml"), "select = [\"" + kPlan + "\", \"" + kField +
                                                 "\", \"flashinfer-mla-kv-cast\", \"" + kScales + "\"]\nignore = [\"" +
                                                 kScales + "\"]\n");
    const std::string config = backend.at(".kvpatch.toml").string();
    CHECK(contains(backend.run({"check", "--show-settings", "."}).out,
                   "\nper-file ignores:\n  every file: fa3-kv-cast  [select at " + config + ":1]\n  every file: " +
                       kScales + "  [ignore at " + config + ":2]\n"));
    CHECK(contains(backend.run({"check", "--show-settings", "--ignore", "fa3-kv-cast", "."}).out,
                   "  [ignore at " + config + ":2]\n  every file: fa3-kv-cast  [ignore at --ignore fa3-kv-cast]\n"));
    CHECK(contains(backend.run({"check", "--show-settings", "--select", kField, "."}).out,
                   "\nper-file ignores:\n  every file: " + kPlan + ", fa3-kv-cast, flashinfer-mla-kv-cast, " + kScales +
                       "  [select at --select " + kField + "]\nparameters"));
    CHECK(contains(backend.run({"check", "--isolated", "--show-settings", "."}).out, "\nper-file ignores: none\n"));
  }

  TEST_CASE("an id no rule reports, or a select or ignore that is not a list, is exit 2 naming where; nothing is written") {
    const ScratchBackend backend("kvpatch-select");
    const std::string original = read_bytes(backend.at("backend.py"));
    const ProcessResult typo = backend.run({"apply", "--ignore", kScales + ",flashinfer-mla-kv-fiel", "."});
    CHECK(typo.exit_code == 2);
    CHECK(typo.out.empty());
    CHECK(contains(typo.err, "kvpatch: error: --ignore " + kScales + ",flashinfer-mla-kv-fiel: ignore names rule id "
                             "'flashinfer-mla-kv-fiel', which no rule reports; did you mean " + kField + "? "));
    const ProcessResult unknown = backend.run({"check", "--select", "no-such-rule", "."});
    CHECK(unknown.exit_code == 2);
    CHECK(contains(unknown.err, "kvpatch: error: --select no-such-rule: select names rule id 'no-such-rule', which no "
                                "rule reports; the ids are " + kPlan + ", "));
    write_bytes(backend.at(".kvpatch.toml"), "\nselect = [\n  \"" + kPlan + "\",\n  \"flashinfer-mla-plan-kv-dtyp\",\n]\n");
    const std::string config = backend.at(".kvpatch.toml").string();
    const ProcessResult in_file = backend.run({"diff", "."});
    CHECK(in_file.exit_code == 2);
    CHECK(in_file.out.empty());
    CHECK(contains(in_file.err, "kvpatch: error: " + config + ":2: select names rule id 'flashinfer-mla-plan-kv-dtyp', "
                                "which no rule reports; did you mean " + kPlan + "? "));
    write_bytes(backend.at(".kvpatch.toml"), "ignore = \"" + kScales + "\"\n");
    const ProcessResult not_list = backend.run({"apply", "."});
    CHECK(not_list.exit_code == 2);
    CHECK(not_list.err == "kvpatch: error: " + config + ":1: 'ignore' must be a list of rule ids; write ignore = [\"" +
                              kScales + "\"] (`kvpatch rule` lists the ids)\n");
    CHECK(read_bytes(backend.at("backend.py")) == original);
  }
}
