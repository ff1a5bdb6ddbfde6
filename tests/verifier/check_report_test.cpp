// Reading `kvpatch check --format json` reports (hand-written ones in data/) into dtype requests.
#include <doctest/doctest.h>

#include <string>

#include "src/check_report.h"
#include "src/report_requests.h"

using namespace kvverify;

namespace {
const std::string kData = KVVERIFY_DATA_DIR;
}

TEST_SUITE("check_report") {
  TEST_CASE("patched report: roles become dtype pairs; gated gives both branches") {
    const CheckReport report = read_check_report(kData + "/check_report_patched.json");
    REQUIRE(report.plan_sites.size() == 3);
    CHECK(report.root == "/srv/sglang");
    CHECK(report.plan_sites[0].where() == "python/sglang/srt/layers/attention/flashinfer_mla_backend.py:734:13");
    CHECK(report.plan_sites[1].head_dim_ckv == 512);
    CHECK_FALSE(report.plan_sites[0].head_dim_ckv.has_value());
    CHECK(report.plan_sites[2].kv_role == DtypeRole::kGated);

    const ReportRequests requests = collect_requests(report, Dtype::kBf16, Dtype::kFp8E4M3);
    REQUIRE(requests.pairs.size() == 2);
    CHECK(requests.pairs[0].q_dtype == Dtype::kBf16);
    CHECK(requests.pairs[0].kv_dtype == Dtype::kFp8E4M3);
    CHECK(requests.pairs[0].sites.size() == 3);  // two threaded sites and the gate's FP8 branch
    CHECK(requests.pairs[0].supported);
    CHECK(requests.pairs[1].kv_dtype == Dtype::kBf16);
    CHECK(requests.pairs[1].supported);
    CHECK(requests.unverifiable.empty());
  }

  TEST_CASE("--model-dtype and --kv-cache-dtype decide what the roles mean") {
    const CheckReport report = read_check_report(kData + "/check_report_patched.json");
    const ReportRequests requests = collect_requests(report, Dtype::kFp16, Dtype::kFp8E5M2);
    REQUIRE(requests.pairs.size() == 2);
    CHECK(requests.pairs[0].q_dtype == Dtype::kFp16);
    CHECK_FALSE(requests.pairs[0].supported);
    CHECK(requests.pairs[0].reason.find("BF16 query") != std::string::npos);
    // A gate between two equal dtypes is one branch.
    CHECK(collect_requests(report, Dtype::kBf16, Dtype::kBf16).pairs.size() == 1);
  }

  TEST_CASE("unsupported pairs, literal head dims and unknown roles are reported as such") {
    const CheckReport report = read_check_report(kData + "/check_report_unsupported.json");
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors[0] == "backend/other.py:12: syntax error");
    const ReportRequests requests = collect_requests(report, Dtype::kBf16, Dtype::kFp8E4M3);
    REQUIRE(requests.pairs.size() == 3);
    CHECK(requests.pairs[0].supported);
    CHECK(requests.pairs[1].head_dim_ckv == 128);
    CHECK_FALSE(requests.pairs[1].supported);
    CHECK(requests.pairs[1].reason.find("head_dim_ckv 512") != std::string::npos);
    CHECK(requests.pairs[2].q_dtype == Dtype::kFp8E4M3);
    CHECK_FALSE(requests.pairs[2].supported);
    REQUIRE(requests.unverifiable.size() == 1);
    CHECK(requests.unverifiable[0].site == "backend/mla.py:151:13");
    CHECK(requests.unverifiable[0].reason.find("q_data_type has role unknown") != std::string::npos);
    CHECK(requests.unverifiable[0].reason.find("(kvpatch: arguments forwarded through **kwargs)") != std::string::npos);
  }

  TEST_CASE("a report taken before `kvpatch apply`: missing and unknown sites are unverifiable, ignored ones listed") {
    const CheckReport report = read_check_report(kData + "/check_report_before_apply.json");
    REQUIRE(report.plan_sites.size() == 5);
    CHECK(report.plan_sites[0].status == SiteStatus::kMissing);
    CHECK(report.plan_sites[2].status == SiteStatus::kThreaded);
    CHECK(report.plan_sites[3].status == SiteStatus::kIgnored);
    CHECK(report.plan_sites[4].status == SiteStatus::kUnknown);

    const ReportRequests requests = collect_requests(report, Dtype::kBf16, Dtype::kFp8E4M3);
    // Only the threaded site requests a pair: the missing sites' BF16 x BF16 is the unpatched plan.
    REQUIRE(requests.pairs.size() == 1);
    CHECK(requests.pairs[0].kv_dtype == Dtype::kFp8E4M3);
    REQUIRE(requests.pairs[0].sites.size() == 1);
    CHECK(requests.pairs[0].sites[0] == "python/sglang/srt/layers/attention/flashinfer_mla_backend.py:402:9");

    REQUIRE(requests.unverifiable.size() == 3);
    for (size_t i : {0, 1}) {
      CAPTURE(i);
      CHECK(requests.unverifiable[i].status == SiteStatus::kMissing);
      CHECK(requests.unverifiable[i].reason.find("site is missing kv_data_type") != std::string::npos);
      CHECK(requests.unverifiable[i].reason.find("run `kvpatch apply` and re-run `kvpatch check --format json`") !=
            std::string::npos);
    }
    CHECK(requests.unverifiable[0].reason.find("'self.data_type' (role model)") != std::string::npos);
    CHECK(requests.unverifiable[1].site == "python/sglang/srt/layers/attention/flashinfer_mla_backend.py:861:17");
    // Known roles do not rescue a site kvpatch itself could not classify.
    CHECK(requests.unverifiable[2].status == SiteStatus::kUnknown);
    CHECK(requests.unverifiable[2].reason.find("could not classify") != std::string::npos);
    CHECK(requests.unverifiable[2].reason.find("(kvpatch: call unpacks **plan_overrides") != std::string::npos);

    REQUIRE(requests.ignored.size() == 1);
    CHECK(requests.ignored[0].site == "python/sglang/srt/layers/attention/flashinfer_mla_backend.py:912:13");
    CHECK(requests.ignored[0].reason.find("calibration plans a BF16 copy") != std::string::npos);
  }

  TEST_CASE("threaded and gated sites are verified; an ignored one is neither verified nor unverifiable") {
    const ReportRequests patched =
        collect_requests(read_check_report(kData + "/check_report_patched.json"), Dtype::kBf16, Dtype::kFp8E4M3);
    CHECK(patched.ignored.empty());
    const ReportRequests ignored =
        collect_requests(read_check_report(kData + "/check_report_ignored_site.json"), Dtype::kBf16, Dtype::kFp8E4M3);
    REQUIRE(ignored.pairs.size() == 1);
    CHECK(ignored.pairs[0].kv_dtype == Dtype::kFp8E4M3);
    CHECK(ignored.unverifiable.empty());
    CHECK(ignored.ignored.size() == 1);
    CHECK(site_status_name(SiteStatus::kGated) == "gated");
  }

  TEST_CASE("malformed reports name file, line, column and field") {
    auto error_of = [](const std::string& path) {
      try {
        read_check_report(path);
      } catch (const InputError& error) {
        return std::string(error.what());
      }
      return std::string("no error");
    };
    CHECK(error_of(kData + "/check_report_bad_role.json")
              .find("check_report_bad_role.json:10:61: plan_sites[0].kv_data_type.role: 'kv-cache'") != std::string::npos);
    CHECK(error_of(kData + "/check_report_not_json.json").find("check_report_not_json.json:5:21: not valid JSON") !=
          std::string::npos);
    CHECK(error_of(kData + "/does_not_exist.json").find("cannot open the report") != std::string::npos);

    auto parse_error = [](const std::string& text) {
      try {
        parse_check_report(text, "r.json");
      } catch (const InputError& error) {
        return std::string(error.what());
      }
      return std::string("no error");
    };
    CHECK(parse_error(R"({"tool": "other", "format_version": 1, "plan_sites": []})").find("not written by kvpatch") !=
          std::string::npos);
    CHECK(parse_error(R"({"tool": "kvpatch", "format_version": 2, "plan_sites": []})").find("format_version 1 only") !=
          std::string::npos);
    CHECK(parse_error(R"({"tool": "kvpatch", "format_version": 1})").find("missing member \"plan_sites\"") !=
          std::string::npos);
    CHECK(parse_error(R"({"tool": "kvpatch", "format_version": 1, "plan_sites": [{"file": "a.py", "line": "3"}]})")
              .find("plan_sites[0].line: expected an integer") != std::string::npos);
    CHECK(parse_error(R"({"tool": "kvpatch", "format_version": 1, "plan_sites": [{"file": "a.py", "line": 3, "column": 0}]})")
              .find("r.json:1:95: plan_sites[0].column: expected a 1-based position, got 0") != std::string::npos);
    const std::string site = R"({"file": "a.py", "line": 3, "column": 1, "callee": "plan", "status": "patched",
      "q_data_type": {"expr": null, "role": "model"}, "kv_data_type": {"expr": null, "role": "kv_cache"},
      "head_dim_ckv": {"expr": null}, "head_dim_kpe": {"expr": null}})";
    CHECK(parse_error(R"({"tool": "kvpatch", "format_version": 1, "plan_sites": [)" + site + "]}")
              .find("r.json:1:126: plan_sites[0].status: 'patched' is not one of threaded, missing") != std::string::npos);
  }

  TEST_CASE("kvpatch's unbuildable: the pair is still verified, the site listed apart; a BF16 cache is buildable") {
    auto report_with = [](const std::string& unbuildable_member) {
      return parse_check_report(R"({"tool": "kvpatch", "format_version": 1, "plan_sites": [{"file": "a.py",
        "line": 3, "column": 9, "callee": "BatchMLAPagedAttentionWrapper.plan", "status": "threaded",
        "q_data_type": {"expr": "self.data_type", "role": "model"},
        "kv_data_type": {"expr": "self.kv_data_type", "role": "kv_cache"},
        "head_dim_ckv": {"expr": null}, "head_dim_kpe": {"expr": null})" + unbuildable_member + "}]}",
                                "r.json");
    };
    const CheckReport old_flashinfer = report_with(R"(, "unbuildable": "FlashInfer 0.6.13 cannot build this plan")");
    REQUIRE(old_flashinfer.plan_sites.size() == 1);
    CHECK(old_flashinfer.plan_sites[0].unbuildable == "FlashInfer 0.6.13 cannot build this plan");

    const ReportRequests fp8 = collect_requests(old_flashinfer, Dtype::kBf16, Dtype::kFp8E4M3);
    REQUIRE(fp8.pairs.size() == 1);
    CHECK(fp8.pairs[0].supported);
    CHECK(fp8.unverifiable.empty());
    REQUIRE(fp8.unbuildable.size() == 1);
    CHECK(fp8.unbuildable[0].site == "a.py:3:9");
    CHECK(fp8.unbuildable[0].reason.find("kvpatch: FlashInfer 0.6.13 cannot build this plan") == 0);
    // kvpatch's verdict is about an FP8 cache; a server that keeps the cache in BF16 plans BF16 x BF16.
    CHECK(collect_requests(old_flashinfer, Dtype::kBf16, Dtype::kBf16).unbuildable.empty());

    CHECK(collect_requests(report_with(""), Dtype::kBf16, Dtype::kFp8E4M3).unbuildable.empty());
    CHECK(collect_requests(report_with(R"(, "unbuildable": null)"), Dtype::kBf16, Dtype::kFp8E4M3).unbuildable.empty());
    for (const char* bad : {R"(, "unbuildable": true)", R"(, "unbuildable": "")", R"(, "unbuildable": ["x"])"}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH_AS(report_with(bad), doctest::Contains("plan_sites[0].unbuildable: expected a non-empty string"),
                           InputError);
    }
  }

  TEST_CASE("patch gaps: read from casts, run_inputs, run_scales and fields; run() ones apply to an FP8 cache only") {
    const std::string site = R"({"file": "a.py", "line": 30, "column": 9, "callee": "BatchMLAPagedAttentionWrapper.plan",
      "status": "threaded", "q_data_type": {"expr": "self.data_type", "role": "model"},
      "kv_data_type": {"expr": "self.kv_data_type", "role": "kv_cache"}, "head_dim_ckv": {"expr": null},
      "head_dim_kpe": {"expr": null}})";
    auto report_with = [&site](const std::string& members) {
      return parse_check_report(R"({"tool": "kvpatch", "format_version": 1, "plan_sites": [)" + site + "]" + members + "}",
                                "r.json");
    };
    // What a hand-patched file looks like to kvpatch: plans threaded, but a cast left, a converted input and
    // a run() without scales. Every entry kvpatch lists that is not a problem is passed by.
    const CheckReport report = report_with(R"js(,
      "casts": [{"file": "a.py", "line": 10, "column": 9, "expr": "kv.to(q.dtype)", "status": "redundant",
                 "consumer": "decode_wrapper.run at 11:13"},
                {"file": "a.py", "line": 12, "column": 9, "expr": "kv.to(q.dtype)", "status": "required"}],
      "run_inputs": [{"file": "a.py", "line": 14, "column": 20, "expr": "pool.to(q.dtype)",
                      "status": "run-input-converted", "why": "it converts", "consumer": "w.run at 15:13",
                      "effect": "kvpatch leaves the wrapper's plan sites unthreaded"},
                     {"file": "a.py", "line": 16, "column": 20, "expr": "x", "status": "ignored"}],
      "run_scales": [{"file": "a.py", "line": 20, "column": 13, "call": "decode_wrapper.run", "status": "missing",
                      "flashinfer": "FlashInfer 0.7.4 (pinned)", "fix": "ckv_scale=1.0"},
                     {"file": "a.py", "line": 22, "column": 13, "call": "w.run", "status": "missing",
                      "flashinfer": "FlashInfer 0.7.4 (pinned)", "reason": "its KV argument is a call"},
                     {"file": "a.py", "line": 24, "column": 13, "call": "w.run", "status": "present"}],
      "parameters": {"kv_field": "self.kv_data_type"},
      "fields": [{"file": "a.py", "line": 26, "column": 9, "class": "Decode", "status": "missing"},
                 {"file": "a.py", "line": 27, "column": 9, "class": "Prefill", "status": "missing",
                  "reason": "no plan site of Prefill is threaded, so no field is added"},
                 {"file": "a.py", "line": 28, "column": 9, "class": "Other", "status": "present"}])js");
    REQUIRE(report.patch_gaps.size() == 5);
    const ReportRequests fp8 = collect_requests(report, Dtype::kBf16, Dtype::kFp8E4M3);
    REQUIRE(fp8.pairs.size() == 1);
    CHECK(fp8.pairs[0].supported);  // the plans themselves verify; the run() calls are listed apart
    REQUIRE(fp8.patch_gaps.size() == 5);
    CHECK(fp8.patch_gaps[0].site == "a.py:10:9");
    CHECK(fp8.patch_gaps[0].kind == PatchGapKind::kRedundantCast);
    CHECK(fp8.patch_gaps[0].reason.find("redundant cast `kv.to(q.dtype)` (feeds decode_wrapper.run at 11:13)") !=
          std::string::npos);
    CHECK(fp8.patch_gaps[0].reason.find("run `kvpatch apply` (it removes the cast)") != std::string::npos);
    CHECK(fp8.patch_gaps[1].kind == PatchGapKind::kRunInput);
    CHECK(fp8.patch_gaps[1].reason.find("run-input-converted `pool.to(q.dtype)` into w.run at 15:13: it converts; "
                                       "kvpatch leaves") != std::string::npos);
    CHECK(fp8.patch_gaps[1].reason.find("`kvpatch apply` cannot change this input") != std::string::npos);
    CHECK(fp8.patch_gaps[2].kind == PatchGapKind::kScalesMissing);
    CHECK(fp8.patch_gaps[2].reason.find("decode_wrapper.run passes no ckv_scale/kpe_scale, which FlashInfer 0.7.4 "
                                       "(pinned) requires") != std::string::npos);
    CHECK(fp8.patch_gaps[2].reason.find("run `kvpatch apply` (it adds ckv_scale=1.0)") != std::string::npos);
    CHECK(fp8.patch_gaps[3].reason.find("; its KV argument is a call, then re-run") != std::string::npos);
    // The field apply adds; the one it does not add (nothing would read it) is no gap.
    CHECK(fp8.patch_gaps[4].kind == PatchGapKind::kFieldMissing);
    CHECK(fp8.patch_gaps[4].site == "a.py:26:9");
    CHECK(fp8.patch_gaps[4].reason.find("Decode sets no KV dtype field (self.kv_data_type)") != std::string::npos);
    // A BF16 cache: the cast converts BF16 to BF16 and no scales are needed; the field is still missing.
    const ReportRequests bf16 = collect_requests(report, Dtype::kBf16, Dtype::kBf16);
    REQUIRE(bf16.patch_gaps.size() == 1);
    CHECK(bf16.patch_gaps[0].kind == PatchGapKind::kFieldMissing);
    // Reports without the arrays (run_scales was added within format_version 1) have no patch gaps.
    CHECK(collect_requests(report_with(""), Dtype::kBf16, Dtype::kFp8E4M3).patch_gaps.empty());

    // A status that could hide a finding is an input error, with its place.
    CHECK_THROWS_WITH_AS(report_with(R"js(, "run_scales": [{"file": "a.py", "line": 2, "column": 1, "status": "absent"}])js"),
                         doctest::Contains("run_scales[0].status: 'absent' is not one of missing, present, ignored"),
                         InputError);
    CHECK_THROWS_WITH_AS(report_with(R"js(, "casts": [{"file": "a.py", "line": 0, "column": 1, "status": "redundant"}])js"),
                         doctest::Contains("casts[0].line: expected a 1-based position"), InputError);
    CHECK_THROWS_WITH_AS(report_with(R"js(, "fields": [{"file": "a.py", "line": 2, "column": 1, "status": "absent"}])js"),
                         doctest::Contains("fields[0].status: 'absent' is not one of missing, present, ignored"),
                         InputError);
    CHECK_THROWS_WITH_AS(report_with(R"js(, "run_inputs": {"status": "run-input-unknown"})js"),
                         doctest::Contains("run_inputs: expected an array"), InputError);
    CHECK_THROWS_WITH_AS(report_with(R"js(, "casts": [{"file": "a.py", "line": 2, "column": 1, "status": "redundant",
                                     "expr": 7}])js"),
                         doctest::Contains("casts[0].expr: expected a string"), InputError);
  }

  TEST_CASE("a missing site that apply leaves: kvpatch's reason, not 'the report predates apply'") {
    const CheckReport report = parse_check_report(R"({"tool": "kvpatch", "format_version": 1, "plan_sites": [
      {"file": "a.py", "line": 3, "column": 9, "callee": "BatchMLAPagedAttentionWrapper.plan", "status": "missing",
       "q_data_type": {"expr": "self.data_type", "role": "model"}, "kv_data_type": {"expr": "self.data_type", "role": "model"},
       "head_dim_ckv": {"expr": null}, "head_dim_kpe": {"expr": null}, "reason": "Fix that input first"},
      {"file": "a.py", "line": 5, "column": 9, "callee": "BatchMLAPagedAttentionWrapper.plan", "status": "missing",
       "q_data_type": {"expr": "self.data_type", "role": "model"}, "kv_data_type": {"expr": "self.data_type", "role": "model"},
       "head_dim_ckv": {"expr": null}, "head_dim_kpe": {"expr": null}}]})",
                                                  "r.json");
    const ReportRequests requests = collect_requests(report, Dtype::kBf16, Dtype::kFp8E4M3);
    REQUIRE(requests.unverifiable.size() == 2);
    CHECK(requests.unverifiable[0].apply_leaves);
    CHECK(requests.unverifiable[0].reason.find("`kvpatch apply` leaves it (kvpatch: Fix that input first)") !=
          std::string::npos);
    CHECK(requests.unverifiable[0].reason.find("report was taken before the patch") == std::string::npos);
    CHECK_FALSE(requests.unverifiable[1].apply_leaves);
    CHECK(requests.unverifiable[1].reason.find("report was taken before the patch") != std::string::npos);
  }

  TEST_CASE("an empty report has no requests") {
    const CheckReport report = parse_check_report(R"({"tool": "kvpatch", "format_version": 1, "plan_sites": []})", "r");
    CHECK(collect_requests(report, Dtype::kBf16, Dtype::kFp8E4M3).pairs.empty());
  }
}
