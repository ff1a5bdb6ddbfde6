// kvverify: proves numerical parity of the BF16-query x FP8-KV MLA decode kernel with the cast path
// and with an FP32-or-better reference, and measures what removing the cast buys.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "src/check_report.h"
#include "src/report_requests.h"
#include "src/cpu_runner.h"
#include "src/flag_parser.h"
#include "src/gpu_runner.h"
#include "src/patch_savings.h"
#include "src/progress.h"
#include "src/run_report.h"
#include "src/self_test.h"

namespace kvverify {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;

struct Job {
  ShapeSpec shape;
  Fault fault = Fault::kNone;
  bool expect_pass = true;
};

std::string describe(const GpuDevice& gpu) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, "GPU %d: %s (SM %d.%d, %d SMs, %.1f GB)", gpu.index, gpu.name.c_str(),
                gpu.cc_major, gpu.cc_minor, gpu.sm_count, static_cast<double>(gpu.total_memory) / 1e9);
  return buffer;
}

int probe(const Options& options) {
  std::string why_not;
  const auto gpu = open_gpu(options.device, why_not);
  if (!gpu) {
    std::fprintf(stderr, "kvverify: no usable CUDA GPU: %s\n", why_not.c_str());
    return kExitNoGpu;
  }
  std::printf("kvverify: %s\n", describe(*gpu).c_str());
  return 0;
}

int run(const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  std::ofstream json_file;
  if (!options.json_path.empty()) {
    json_file.open(options.json_path, std::ios::binary | std::ios::trunc);
    if (!json_file) throw UsageError("--json: cannot write '" + options.json_path + "' (check the directory exists)");
  }
  RunReport report;
  report.model = resolve_model(options);

  // Plan everything first: flag and report errors exit 2 before any GPU work.
  std::vector<Job> jobs;
  std::vector<ShapeSpec> fp8_matrix;
  if (options.self_test) {
    report.self_test = true;
    for (const ControlPlan& control : self_test_plan(options, report.model)) {
      jobs.push_back({control.shape, control.fault, control.expect_pass});
    }
  } else if (!options.from_report.empty()) {
    const CheckReport check = read_check_report(options.from_report);
    FromReport from;
    from.path = check.path;
    from.plan_sites = check.plan_sites.size();
    from.requests = collect_requests(check, options.model_dtype, options.kv_cache_dtype);
    from.patcher_errors = check.errors;
    from.model_dtype = options.model_dtype;
    from.kv_cache_dtype = options.kv_cache_dtype;
    for (const DtypeRequest& pair : from.requests.pairs) {
      if (!pair.supported) continue;
      const auto kv = pair.kv_dtype == Dtype::kFp8E4M3 ? Dtype::kFp8E4M3 : Dtype::kBf16;
      for (const ShapeSpec& shape : build_matrix(options, report.model, kv)) jobs.push_back({shape});
    }
    report.from = from;
  } else {
    fp8_matrix = build_matrix(options, report.model, Dtype::kFp8E4M3);
    for (const ShapeSpec& shape : fp8_matrix) jobs.push_back({shape});
    report.savings_bytes = cast_bytes(report.model);
  }

  std::optional<GpuDevice> gpu;
  if (options.cpu) {
    report.device = "CPU only (--cpu)";
  } else {
    std::string why_not;
    gpu = open_gpu(options.device, why_not);
    if (!gpu) {
      std::fprintf(stderr,
                   "kvverify: no usable CUDA GPU: %s.\n"
                   "kvverify: run on a machine with an NVIDIA GPU (SM90 or SM120), or add --cpu for the\n"
                   "          reference-level checks on small shapes (the GPU kernel is not launched then).\n",
                   why_not.c_str());
      return kExitNoGpu;
    }
    report.gpu = true;
    report.device = describe(*gpu);
  }

  const std::vector<ShapeSpec> timed = gpu && options.timing_iters > 0 ? timing_shapes(fp8_matrix, report.model)
                                                                      : std::vector<ShapeSpec>{};
  Progress progress(jobs.size() + timed.size());
  size_t done = 0;
  try {
    for (const Job& job : jobs) {
      progress.step(done++, job.shape.label() + (job.fault == Fault::kNone ? "" : " " + fault_info(job.fault).id));
      ShapeResult result = gpu ? verify_shape_gpu(*gpu, job.shape, job.fault, report.tolerance, options.memory_limit)
                               : verify_shape_cpu(job.shape, job.fault, report.tolerance, options.memory_limit);
      if (report.self_test) {
        report.controls.push_back({std::move(result), job.expect_pass});
      } else {
        report.shapes.push_back(std::move(result));
      }
    }
    for (const ShapeSpec& shape : timed) {
      progress.step(done++, "timing " + shape.label());
      report.timings.push_back(time_cast_path_gpu(*gpu, shape, report.model.pool_tokens, options.timing_iters));
    }
  } catch (const GpuContextLost& lost) {
    report.fatal = lost.what();
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::string text = options.format == OutputFormat::kJson ? render_json(report) : render_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (json_file.is_open()) json_file << render_json(report);
  return report.exit_code();
}

}  // namespace
}  // namespace kvverify

int main(int argc, char** argv) {
  using namespace kvverify;
  Options options;
  try {
    options = parse_flags(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& error) {
    std::fprintf(stderr, "kvverify: %s\n", error.what());
    return kExitUsage;
  }
  if (options.show_help) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  if (options.show_version) {
    std::puts("kvverify 0.1.0");
    return 0;
  }
  if (options.probe_gpu) return probe(options);
  try {
    return run(options);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "kvverify: %s\n", error.what());
    return kExitUsage;
  } catch (const InputError& error) {
    std::fprintf(stderr, "kvverify: %s\n", error.what());
    return kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kvverify: stopped: %s\n", error.what());
    return 1;
  }
}
