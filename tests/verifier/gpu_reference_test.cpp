// GPU test (exit 77 without a GPU): the verifier's naive GPU reference against the contract's
// reference_decode and the host evaluation on small shapes, and the device input generator against
// the host one. Plain main: the GPU machine has no doctest.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "kvpatch/mla_reference.h"
#include "src/gpu_inputs.cuh"
#include "src/gpu_reference.cuh"
#include "src/host_attention.h"
#include "src/host_inputs.h"

namespace {

namespace mla = kvpatch::mla;
using namespace kvverify;

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::printf("FAIL: %s\n", what.c_str());
}

void check(cudaError_t error, const char* call) {
  if (error == cudaSuccess) return;
  std::printf("FAIL: %s: %s\n", call, cudaGetErrorString(error));
  std::exit(1);
}
#define CHECK_CUDA(call) check((call), #call)

template <typename T>
T* to_device(const std::vector<T>& host) {
  T* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, std::max<size_t>(host.size(), 1) * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

template <typename T>
std::vector<T> to_host(const T* device, size_t count) {
  std::vector<T> host(count);
  CHECK_CUDA(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

void check_shape(const ShapeSpec& shape) {
  const HostInputs inputs = make_host_inputs(shape);
  const bool fp8 = shape.kv_dtype == Dtype::kFp8E4M3;
  const mla::KvDtype dtype = fp8 ? mla::KvDtype::kFp8E4M3 : mla::KvDtype::kBf16;
  const mla::DecodeParams host = host_params(shape, inputs, dtype);
  const mla::ReferenceOutput reference = mla::reference_decode(host);
  const AttentionEvaluation exact = evaluate_attention_host(host);

  // The same params over device copies.
  mla::DecodeParams device = host;
  uint16_t* q = to_device(inputs.q);
  void* kv = fp8 ? static_cast<void*>(to_device(inputs.kv_fp8)) : static_cast<void*>(to_device(inputs.kv_bf16));
  device.q_nope = q;
  device.q_pe = q + mla::kHeadDimCkv;
  device.ckv = kv;
  device.kpe = static_cast<char*>(kv) + static_cast<ptrdiff_t>(mla::kHeadDimCkv) * (fp8 ? 1 : 2);
  int32_t* indptr = to_device(inputs.layout.kv_indptr);
  int32_t* indices = to_device(inputs.layout.kv_indices);
  int32_t* lengths = to_device(inputs.layout.kv_len);
  int64_t* offsets = to_device(inputs.layout.token_offset);
  device.kv_indptr = indptr;
  device.kv_indices = indices;
  device.kv_len = lengths;
  const size_t rows = static_cast<size_t>(shape.batch) * shape.heads;
  GpuReferenceArgs args;
  args.params = device;
  args.token_offset = offsets;
  args.total_tokens = inputs.layout.total_tokens();
  CHECK_CUDA(cudaMalloc(&args.scores, std::max<int64_t>(args.total_tokens * shape.heads, 1) * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&args.out, rows * 512 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&args.magnitude, rows * 512 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&args.lse, rows * sizeof(float)));
  CHECK_CUDA(launch_gpu_reference(args, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<float> out = to_host(args.out, rows * 512);
  const std::vector<float> magnitude = to_host(args.magnitude, rows * 512);
  const std::vector<float> lse = to_host(args.lse, rows);

  int bad_vs_reference = 0, bad_vs_exact = 0, bad_lse = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    // FP32 reference: its own accumulation error, well inside 1e-5 a for these lengths.
    if (!(std::fabs(out[i] - reference.out[i]) <= 1e-5 * magnitude[i] + 1e-30)) ++bad_vs_reference;
    // Both FP64: agreement to float rounding.
    if (!(std::fabs(out[i] - exact.out[i]) <= 1e-6 * magnitude[i] + 1e-30)) ++bad_vs_exact;
    if (!(std::fabs(magnitude[i] - exact.magnitude[i]) <= 1e-6 * exact.magnitude[i] + 1e-30)) ++bad_vs_exact;
  }
  for (size_t i = 0; i < lse.size(); ++i) {
    const bool both_empty = std::isinf(lse[i]) && lse[i] == reference.lse[i];
    if (!both_empty && !(std::fabs(lse[i] - reference.lse[i]) <= 1e-4)) ++bad_lse;
  }
  expect(bad_vs_reference == 0, shape.label() + ": " + std::to_string(bad_vs_reference) + " elements differ from reference_decode");
  expect(bad_vs_exact == 0, shape.label() + ": " + std::to_string(bad_vs_exact) + " values differ from the host evaluation");
  expect(bad_lse == 0, shape.label() + ": " + std::to_string(bad_lse) + " LSE values differ from reference_decode");

  // The device generator writes what the host generator writes.
  uint16_t* q_generated = nullptr;
  CHECK_CUDA(cudaMalloc(&q_generated, inputs.q.size() * 2));
  fill_query_bf16(q_generated, static_cast<int64_t>(inputs.q.size()), shape.seed, nullptr);
  expect(to_host(q_generated, inputs.q.size()) == inputs.q, shape.label() + ": device query differs from host query");
  if (fp8) {
    uint8_t* kv_generated = nullptr;
    CHECK_CUDA(cudaMalloc(&kv_generated, inputs.kv_fp8.size()));
    fill_kv_fp8(kv_generated, static_cast<int64_t>(inputs.kv_fp8.size()), shape.seed, nullptr);
    expect(to_host(kv_generated, inputs.kv_fp8.size()) == inputs.kv_fp8, shape.label() + ": device FP8 cache differs");
    CHECK_CUDA(cudaFree(kv_generated));
  } else {
    uint16_t* kv_generated = nullptr;
    CHECK_CUDA(cudaMalloc(&kv_generated, inputs.kv_bf16.size() * 2));
    fill_kv_bf16(kv_generated, static_cast<int64_t>(inputs.kv_bf16.size()), shape.seed, nullptr);
    expect(to_host(kv_generated, inputs.kv_bf16.size()) == inputs.kv_bf16, shape.label() + ": device BF16 cache differs");
    CHECK_CUDA(cudaFree(kv_generated));
  }
  for (void* p : {static_cast<void*>(q), kv, static_cast<void*>(indptr), static_cast<void*>(indices),
                  static_cast<void*>(lengths), static_cast<void*>(offsets), static_cast<void*>(args.scores),
                  static_cast<void*>(args.out), static_cast<void*>(args.magnitude), static_cast<void*>(args.lse),
                  static_cast<void*>(q_generated)}) {
    CHECK_CUDA(cudaFree(p));
  }
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no usable CUDA GPU: skipped\n");
    return 77;
  }
  int shapes = 0;
  for (const Dtype kv : {Dtype::kFp8E4M3, Dtype::kBf16}) {
    struct Small {
      int batch, context, page, heads;
    };
    for (const Small& s : {Small{1, 1, 1, 16}, Small{4, 100, 1, 8}, Small{5, 300, 16, 4}, Small{3, 700, 64, 32}}) {
      ShapeSpec shape;
      shape.model = "test";
      shape.heads = s.heads;
      shape.batch = s.batch;
      shape.context_len = s.context;
      shape.page_size = s.page;
      shape.sm_scale = 0.0722;
      shape.ckv_scale = kv == Dtype::kFp8E4M3 ? 0.5 : 1.0;
      shape.kpe_scale = kv == Dtype::kFp8E4M3 ? 2.0 : 1.0;
      shape.kv_dtype = kv;
      shape.seed = 1000 + shapes;
      check_shape(shape);
      ++shapes;
    }
  }
  std::printf("%d shapes checked, %d failures\n", shapes, failures);
  return failures == 0 ? 0 : 1;
}
