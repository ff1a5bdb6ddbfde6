// The GPU run: the kernel under test, its cast path and an FP32-or-better reference on the device.
// Plain C++ interface; the CUDA code lives in gpu_runner.cu.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "faults.h"
#include "patch_savings.h"
#include "shape_result.h"
#include "tolerance.h"

namespace kvverify {

struct GpuDevice {
  int index = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int64_t total_memory = 0;
};

// The usable GPU, or nullopt with the reason (no driver, no device, bad index) in `why_not`.
std::optional<GpuDevice> open_gpu(int device, std::string& why_not);

// The CUDA context is lost (a sticky error such as an illegal address): later shapes cannot run.
struct GpuContextLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Shapes with at most this many head-tokens use the CPU reference_decode; larger ones the naive
// GPU reference (verifier/src/gpu_reference.cu).
inline constexpr int64_t kCpuReferenceHeadTokens = int64_t{1} << 16;

// Device bytes one shape needs.
int64_t gpu_bytes_needed(const ShapeSpec& shape, const RequestLayout& layout, Fault fault, int sm_count);

// Runs one shape; out-of-memory and launch errors come back as a SKIPPED/ERROR result. Throws
// GpuContextLost when the device cannot go on.
ShapeResult verify_shape_gpu(const GpuDevice& gpu, const ShapeSpec& shape, Fault fault, const Tolerance& tolerance,
                             std::optional<int64_t> memory_limit);

// Times the cast path (whole-pool cast of `pool_tokens` slots + BF16-KV kernel) against the FP8-KV
// kernel for one decode shape; errors come back in CastPathTiming::error.
CastPathTiming time_cast_path_gpu(const GpuDevice& gpu, const ShapeSpec& shape, int64_t pool_tokens, int iters);

}  // namespace kvverify
