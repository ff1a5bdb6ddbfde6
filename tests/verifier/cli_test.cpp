// kvverify as a program: exit codes and the JSON report of --cpu runs, --self-test and --from.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "src/json.h"

using kvverify::JsonValue;

namespace {

struct Run {
  int exit_code = -1;
  std::string out;
};

// Runs kvverify with `args` (shell words); stderr is discarded unless merged by the caller.
Run run_kvverify(const std::string& args) {
  Run run;
  const std::string command = std::string(KVVERIFY_EXE) + " " + args;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.out.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

JsonValue json_of(const Run& run) {
  try {
    return kvverify::parse_json(run.out);
  } catch (const kvverify::JsonSyntaxError& error) {
    FAIL("kvverify did not write JSON: " << error.what() << "\n" << run.out);
  }
  return {};
}

const std::string kData = KVVERIFY_DATA_DIR;

}  // namespace

TEST_SUITE("cli") {
  TEST_CASE("--self-test --cpu: every fault FAILs naming itself, the clean controls PASS") {
    const Run run = run_kvverify("--self-test --cpu --format json");
    CHECK(run.exit_code == 0);
    const JsonValue report = json_of(run);
    CHECK_FALSE(report.find("kernel_launched")->as_bool());
    const auto& controls = report.find("self_test")->as_array();
    REQUIRE(controls.size() == 7);
    int clean = 0;
    for (const char* fault : {"fp8-as-bf16", "wrong-scale", "last-page-dropped", "rope-ignored", "nan-introduced"}) {
      bool seen = false;
      for (const JsonValue& control : controls) {
        if (control.find("control")->as_string() != fault) continue;
        seen = true;
        CAPTURE(fault);
        CHECK(control.find("status")->as_string() == "FAIL");
        CHECK(control.find("as_expected")->as_bool());
        CHECK_FALSE(control.find("fault")->as_string().empty());
        CHECK_FALSE(control.find("shape")->find("reason")->as_string().empty());
      }
      CHECK(seen);
    }
    for (const JsonValue& control : controls) {
      if (control.find("control")->as_string() != "clean") continue;
      ++clean;
      CHECK(control.find("status")->as_string() == "PASS");
    }
    CHECK(clean == 2);
    const auto& nan = controls[6];
    CHECK(nan.find("shape")->find("vs_reference")->find("nonfinite")->as_number() > 0);
  }

  TEST_CASE("--self-test text names each fault") {
    const Run run = run_kvverify("--self-test --cpu");
    CHECK(run.exit_code == 0);
    for (const char* words : {"FP8 bytes reinterpreted as BF16", "wrong scale", "last page dropped", "rope part ignored",
                              "NaN introduced", "the GPU kernel was NOT launched"}) {
      CHECK_MESSAGE(run.out.find(words) != std::string::npos, words);
    }
  }

  TEST_CASE("--cpu run of a preset passes and says the kernel was not launched") {
    const Run run = run_kvverify("--cpu --preset kimi-k2 --tp 8 --format json");
    CHECK(run.exit_code == 0);
    const JsonValue report = json_of(run);
    CHECK(report.find("mode")->as_string() == "cpu");
    CHECK(report.find("summary")->find("result")->as_string() == "PASS");
    const auto& shapes = report.find("shapes")->as_array();
    REQUIRE(shapes.size() == 8);
    for (const JsonValue& shape : shapes) {
      CHECK(shape.find("status")->as_string() == "PASS");
      CHECK(shape.find("heads")->as_number() == 8);
      CHECK(shape.find("vs_cast_path")->find("bit_identical")->as_bool());
      CHECK(shape.find("tested")->as_string().find("not launched") != std::string::npos);
    }
    CHECK(report.find("savings")->find("cast_moved_bytes_per_layer")->as_number() == 495552.0 * 1728);
  }

  TEST_CASE("custom shape flags reach the shapes; scaled shapes judge the cast path by tolerance") {
    const Run run = run_kvverify("--cpu --heads 16 --tp 2 --batch-sizes 5 --context-lengths 33 --page-sizes 8 "
                             "--ckv-scale 0.5 --kpe-scale 3 --sm-scale 0.1 --seed 99 --format json");
    CHECK(run.exit_code == 0);
    const JsonValue report = json_of(run);
    const auto& shapes = report.find("shapes")->as_array();
    REQUIRE(shapes.size() == 1);
    const JsonValue& shape = shapes[0];
    CHECK(shape.find("heads")->as_number() == 8);
    CHECK(shape.find("batch")->as_number() == 5);
    CHECK(shape.find("page_size")->as_number() == 8);
    CHECK(shape.find("ckv_scale")->as_number() == 0.5);
    CHECK(shape.find("sm_scale")->as_number() == doctest::Approx(0.1));
    CHECK(shape.find("vs_cast_path")->find("required")->as_string() == "within twice the output tolerance");
  }

  TEST_CASE("--from: supported pairs verified; unsupported and unknown ones make the run fail") {
    Run run = run_kvverify("--cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from " + kData +
                       "/check_report_patched.json --format json");
    CHECK(run.exit_code == 0);
    JsonValue report = json_of(run);
    const auto& pairs = report.find("from_report")->find("pairs")->as_array();
    REQUIRE(pairs.size() == 2);
    CHECK(report.find("shapes")->as_array().size() == 4);  // 2 pairs x 2 page sizes
    CHECK(report.find("from_report")->find("patch_gaps")->as_array().empty());
    CHECK(report.find("summary")->find("patch_gaps")->as_number() == 0);

    run = run_kvverify("--cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from " + kData +
                   "/check_report_unsupported.json --format json");
    CHECK(run.exit_code == 1);
    report = json_of(run);
    const JsonValue& from = *report.find("from_report");
    int unsupported = 0;
    for (const JsonValue& pair : from.find("pairs")->as_array()) unsupported += pair.find("supported")->as_bool() ? 0 : 1;
    CHECK(unsupported == 2);
    CHECK(from.find("unverifiable")->as_array().size() == 1);
    CHECK(report.find("summary")->find("result")->as_string() == "FAIL");
    CHECK(report.find("summary")->find("unsupported_pairs")->as_number() == 2);
    CHECK(report.find("summary")->find("unverifiable_sites")->as_number() == 1);
  }

  TEST_CASE("--from a report taken before `kvpatch apply`: what can be verified is, and the run exits 1") {
    const std::string args = "--cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from " + kData +
                             "/check_report_before_apply.json";
    Run run = run_kvverify(args + " --format json");
    CHECK(run.exit_code == 1);
    const JsonValue report = json_of(run);
    const JsonValue& from = *report.find("from_report");
    REQUIRE(from.find("pairs")->as_array().size() == 1);
    CHECK(from.find("pairs")->as_array()[0].find("kv_dtype")->as_string() == "fp8_e4m3");
    const auto& shapes = report.find("shapes")->as_array();
    REQUIRE(shapes.size() == 2);  // the threaded site's pair x 2 page sizes, still verified
    for (const JsonValue& shape : shapes) CHECK(shape.find("status")->as_string() == "PASS");
    const auto& unverifiable = from.find("unverifiable")->as_array();
    REQUIRE(unverifiable.size() == 3);
    CHECK(unverifiable[0].find("status")->as_string() == "missing");
    CHECK(unverifiable[0].find("reason")->as_string().find("run `kvpatch apply`") != std::string::npos);
    CHECK(unverifiable[2].find("status")->as_string() == "unknown");
    REQUIRE(from.find("ignored")->as_array().size() == 1);
    const JsonValue& summary = *report.find("summary");
    CHECK(summary.find("result")->as_string() == "FAIL");
    CHECK(summary.find("unverifiable_sites")->as_number() == 3);
    CHECK(summary.find("missing_sites")->as_number() == 2);
    CHECK(summary.find("ignored_sites")->as_number() == 1);
    CHECK(summary.find("patch_gaps")->as_number() == 1);

    run = run_kvverify(args);
    CHECK(run.exit_code == 1);
    CHECK(run.out.find("UNVERIFIABLE python/sglang/srt/layers/attention/flashinfer_mla_backend.py:734:13: site is "
                       "missing kv_data_type") != std::string::npos);
    CHECK(run.out.find("ignored (not verified) python/sglang/srt/layers/attention/flashinfer_mla_backend.py:912:13") !=
          std::string::npos);
    CHECK(run.out.find("not verified: 4 of 5 plan sites: 2 missing kv_data_type (the report predates `kvpatch "
                       "apply`: FAIL), 1 with a dtype kvpatch could not determine (FAIL), 1 ignored") !=
          std::string::npos);
    // The decode updater's KV dtype field, which apply adds, is missing too (the report has no column for it).
    CHECK(run.out.find("PATCH GAP python/sglang/srt/layers/attention/flashinfer_mla_backend.py:666: kvpatch: "
                       "FlashInferMLAIndicesUpdaterDecode sets no KV dtype field") != std::string::npos);
    CHECK(run.out.find("3 unverifiable sites, 1 ignored site, 1 patch gap: FAIL") != std::string::npos);
  }

  TEST_CASE("--from: an ignored site is listed but does not fail the run") {
    const Run run = run_kvverify("--cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from " + kData +
                                 "/check_report_ignored_site.json --format json");
    CHECK(run.exit_code == 0);
    const JsonValue report = json_of(run);
    CHECK(report.find("from_report")->find("ignored")->as_array().size() == 1);
    CHECK(report.find("from_report")->find("unverifiable")->as_array().empty());
    CHECK(report.find("summary")->find("ignored_sites")->as_number() == 1);
    CHECK(report.find("summary")->find("result")->as_string() == "PASS");
  }

  TEST_CASE("usage and input errors exit 2") {
    for (const char* args : {"--bogus", "--tp", "--preset nope", "--heads 78 --tp 8", "--heads 512 --tp 1",
                             "--context-lengths 999999", "--page-sizes 1,3", "--from /nonexistent/report.json"}) {
      CAPTURE(args);
      CHECK(run_kvverify(std::string(args) + " --cpu 2>/dev/null").exit_code == 2);
    }
    CHECK(run_kvverify("--cpu --from " + kData + "/check_report_bad_role.json 2>/dev/null").exit_code == 2);
    const Run pages = run_kvverify("--cpu --page-sizes 48 2>&1");
    CHECK(pages.out.find("--page-sizes: 48 is not a power of two") != std::string::npos);
    const Run merged = run_kvverify("--cpu --from " + kData + "/check_report_not_json.json 2>&1");
    CHECK(merged.out.find("check_report_not_json.json:5:21") != std::string::npos);
  }

  TEST_CASE("a shape over --memory-limit is skipped with the bytes it needs; the run goes on and fails") {
    const Run run = run_kvverify("--cpu --tp 8 --batch-sizes 1,16 --context-lengths 3000 --page-sizes 1 "
                             "--memory-limit 32M --format json");
    CHECK(run.exit_code == 1);
    const JsonValue report = json_of(run);
    const auto& shapes = report.find("shapes")->as_array();
    REQUIRE(shapes.size() == 2);
    CHECK(shapes[0].find("status")->as_string() == "PASS");
    CHECK(shapes[1].find("status")->as_string() == "SKIPPED");
    CHECK(shapes[1].find("reason")->as_string().find("out of memory: needs") != std::string::npos);
    CHECK(shapes[1].find("bytes_needed")->as_number() > 32 << 20);
  }

  TEST_CASE("--json FILE writes the JSON report besides the text on stdout") {
    const std::string path = std::string(KVVERIFY_JSON_SCRATCH);
    std::remove(path.c_str());
    const Run run = run_kvverify("--cpu --tp 8 --batch-sizes 1 --context-lengths 9 --page-sizes 1 --json " + path);
    CHECK(run.exit_code == 0);
    CHECK(run.out.find("summary: 1 shapes") != std::string::npos);
    FILE* file = std::fopen(path.c_str(), "r");
    REQUIRE(file != nullptr);
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
    std::fclose(file);
    CHECK(kvverify::parse_json(text).find("summary")->find("result")->as_string() == "PASS");
    CHECK(run_kvverify("--cpu --json /nonexistent-dir/report.json 2>/dev/null").exit_code == 2);
  }

  TEST_CASE("--help and --version exit 0") {
    CHECK(run_kvverify("--help").exit_code == 0);
    CHECK(run_kvverify("--help").out.find("Exit codes:") != std::string::npos);
    CHECK(run_kvverify("--version").exit_code == 0);
  }
}
