// Everything one kvverify run found, for the text and JSON writers and the exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report_requests.h"
#include "patch_savings.h"
#include "shape_matrix.h"
#include "shape_result.h"
#include "tolerance.h"

namespace kvverify {

struct SelfTestControl {
  ShapeResult result;
  bool expect_pass = false;  // the clean controls
  bool as_expected() const {
    return expect_pass ? result.status == ShapeStatus::kPass : result.status == ShapeStatus::kFail;
  }
};

struct FromReport {
  std::string path;
  size_t plan_sites = 0;
  ReportRequests requests;
  // The report's errors[]: files kvpatch could not read, whose plan sites, if any, are not in the report.
  // Each fails the run, as it makes `kvpatch check` exit 2.
  std::vector<std::string> patcher_errors;
  Dtype model_dtype = Dtype::kBf16, kv_cache_dtype = Dtype::kFp8E4M3;
};

struct RunReport {
  bool gpu = false;          // false: --cpu, the kernel was not launched
  std::string device;        // the GPU in words, or why none was used
  ModelConfig model;
  Tolerance tolerance;
  std::vector<ShapeResult> shapes;
  bool self_test = false;
  std::vector<SelfTestControl> controls;
  std::optional<FromReport> from;
  std::optional<CastBytes> savings_bytes;
  std::vector<CastPathTiming> timings;
  std::string fatal;         // the CUDA context was lost; later shapes did not run
  double seconds = 0;

  bool passed() const;
  int exit_code() const { return passed() ? 0 : 1; }
};

std::string render_text(const RunReport& report);
std::string render_json(const RunReport& report);

}  // namespace kvverify
