#include "gpu_runner.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "gpu_inputs.cuh"
#include "gpu_reference.cuh"
#include "host_attention.h"
#include "host_inputs.h"
#include "kvpatch/mla_decode_launch.h"
#include "kvpatch/mla_reference.h"
#include "kvpatch/numeric.h"

namespace kvverify {

namespace mla = kvpatch::mla;

namespace {

// Owns one device allocation; a failed cudaMalloc throws CudaFailure(cudaErrorMemoryAllocation).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) KVV_CUDA(cudaMalloc(&data_, bytes));
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

template <typename T>
void upload(DeviceBuffer& buffer, const std::vector<T>& host) {
  KVV_CUDA(cudaMemcpy(buffer.as<void>(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
}

template <typename T>
std::vector<T> download(const DeviceBuffer& buffer, size_t count) {
  std::vector<T> host(count);
  KVV_CUDA(cudaMemcpy(host.data(), buffer.as<void>(), count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<float> widen_bf16(const std::vector<uint16_t>& bits) {
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) values[i] = mla::bf16_bits_to_float(bits[i]);
  return values;
}

int64_t head_tokens(const ShapeSpec& shape, const RequestLayout& layout) {
  return static_cast<int64_t>(shape.heads) * layout.total_tokens();
}

// A shape's device inputs: q, the KV cache, the page table.
struct DeviceInputs {
  DeviceInputs(const ShapeSpec& shape, const RequestLayout& layout)
      : kv_count(layout.num_slots * kSlotWidth),
        q(static_cast<size_t>(shape.batch) * shape.heads * kSlotWidth * 2),
        kv(static_cast<size_t>(kv_count) * (shape.kv_dtype == Dtype::kFp8E4M3 ? 1 : 2)),
        kv_indptr(layout.kv_indptr.size() * 4),
        kv_indices(layout.kv_indices.size() * 4),
        kv_len(layout.kv_len.size() * 4) {
    fill_query_bf16(q.as<uint16_t>(), static_cast<int64_t>(q.bytes() / 2), shape.seed, nullptr);
    if (shape.kv_dtype == Dtype::kFp8E4M3) {
      fill_kv_fp8(kv.as<uint8_t>(), kv_count, shape.seed, nullptr);
    } else {
      fill_kv_bf16(kv.as<uint16_t>(), kv_count, shape.seed, nullptr);
    }
    KVV_CUDA(cudaGetLastError());
    upload(kv_indptr, layout.kv_indptr);
    upload(kv_indices, layout.kv_indices);
    upload(kv_len, layout.kv_len);
  }

  // The shape's DecodeParams over device pointers; `cache` replaces the KV buffer.
  mla::DecodeParams params(const ShapeSpec& shape, const void* cache, mla::KvDtype dtype) const {
    return layout_params(shape, q.as<uint16_t>(), cache, dtype, kv_indptr.as<int32_t>(), kv_indices.as<int32_t>(),
                         kv_len.as<int32_t>());
  }

  int64_t kv_count;
  DeviceBuffer q, kv, kv_indptr, kv_indices, kv_len;
};

// Device copies a fault needs; they outlive the launch.
struct FaultedDeviceBuffers {
  std::unique_ptr<DeviceBuffer> kv_bytes, zero_q_pe, lengths;
};

mla::DecodeParams apply_fault(Fault fault, mla::DecodeParams p, const ShapeSpec& shape, const RequestLayout& layout,
                              const DeviceInputs& inputs, FaultedDeviceBuffers& buffers) {
  const size_t kv_bytes = static_cast<size_t>(inputs.kv_count);
  switch (fault) {
    case Fault::kNone: break;
    case Fault::kFp8AsBf16:
      // The FP8 buffer read through BF16 eyes (see cpu_runner.cpp): twice the bytes are read.
      buffers.kv_bytes = std::make_unique<DeviceBuffer>(2 * kv_bytes);
      KVV_CUDA(cudaMemcpy(buffers.kv_bytes->as<void>(), inputs.kv.as<void>(), kv_bytes, cudaMemcpyDeviceToDevice));
      KVV_CUDA(cudaMemcpy(buffers.kv_bytes->as<char>() + kv_bytes, inputs.kv.as<void>(), kv_bytes,
                          cudaMemcpyDeviceToDevice));
      p.kv_dtype = mla::KvDtype::kBf16;
      p.ckv = buffers.kv_bytes->as<char>();
      p.kpe = buffers.kv_bytes->as<char>() + mla::kHeadDimCkv;
      break;
    case Fault::kWrongScale:
      p.ckv_scale = 1.f;
      p.kpe_scale = 1.f;
      break;
    case Fault::kLastPageDropped: {
      const std::vector<int32_t> lengths = lengths_without_last_page(layout);
      buffers.lengths = std::make_unique<DeviceBuffer>(lengths.size() * 4);
      upload(*buffers.lengths, lengths);
      p.kv_len = buffers.lengths->as<int32_t>();
      break;
    }
    case Fault::kRopeIgnored: {
      const size_t count = static_cast<size_t>(shape.batch) * shape.heads * mla::kHeadDimKpe;
      buffers.zero_q_pe = std::make_unique<DeviceBuffer>(count * 2);
      KVV_CUDA(cudaMemset(buffers.zero_q_pe->as<void>(), 0, count * 2));
      p.q_pe = buffers.zero_q_pe->as<uint16_t>();
      p.q_pe_stride_b = static_cast<int64_t>(shape.heads) * mla::kHeadDimKpe;
      p.q_pe_stride_h = mla::kHeadDimKpe;
      break;
    }
    case Fault::kNanIntroduced: {
      buffers.kv_bytes = std::make_unique<DeviceBuffer>(kv_bytes);
      KVV_CUDA(cudaMemcpy(buffers.kv_bytes->as<void>(), inputs.kv.as<void>(), kv_bytes, cudaMemcpyDeviceToDevice));
      const unsigned char nan_code = kFp8NanCode;
      KVV_CUDA(cudaMemcpy(buffers.kv_bytes->as<char>() + layout.slot(0, 0) * kSlotWidth, &nan_code, 1,
                          cudaMemcpyHostToDevice));
      p.ckv = buffers.kv_bytes->as<char>();
      p.kpe = buffers.kv_bytes->as<char>() + mla::kHeadDimCkv;
      break;
    }
  }
  return p;
}

DecodeOutputs run_kernel(const mla::DecodeParams& params, const mla::DecodePlan& plan, int64_t rows) {
  DeviceBuffer out(static_cast<size_t>(rows) * mla::kHeadDimCkv * 2), lse(static_cast<size_t>(rows) * 4);
  DeviceBuffer workspace(plan.workspace_bytes);
  // Poisoned first, so an element the kernel never writes cannot pass as a zero.
  KVV_CUDA(cudaMemset(out.as<void>(), 0xFF, out.bytes()));
  KVV_CUDA(cudaMemset(lse.as<void>(), 0xFF, lse.bytes()));
  mla::DecodeParams launched = params;
  launched.out = out.as<void>();
  launched.out_stride_b = static_cast<int64_t>(params.num_heads) * mla::kHeadDimCkv;
  launched.out_stride_h = mla::kHeadDimCkv;
  launched.lse = lse.as<float>();
  KVV_CUDA(mla::launch_decode(launched, plan, workspace.as<void>(), nullptr));
  KVV_CUDA(cudaDeviceSynchronize());
  return {widen_bf16(download<uint16_t>(out, static_cast<size_t>(rows) * mla::kHeadDimCkv)),
          download<float>(lse, static_cast<size_t>(rows))};
}

ReferenceOutputs cpu_reference(const ShapeSpec& shape, const RequestLayout& layout, const DeviceInputs& inputs) {
  HostInputs host;
  host.layout = layout;
  host.q = download<uint16_t>(inputs.q, inputs.q.bytes() / 2);
  mla::KvDtype dtype = mla::KvDtype::kBf16;
  if (shape.kv_dtype == Dtype::kFp8E4M3) {
    host.kv_fp8 = download<uint8_t>(inputs.kv, static_cast<size_t>(inputs.kv_count));
    dtype = mla::KvDtype::kFp8E4M3;
  } else {
    host.kv_bf16 = download<uint16_t>(inputs.kv, static_cast<size_t>(inputs.kv_count));
  }
  const mla::DecodeParams params = host_params(shape, host, dtype);
  mla::ReferenceOutput reference = mla::reference_decode(params);
  AttentionEvaluation exact = evaluate_attention_host(params);
  return {{std::move(reference.out), std::move(reference.lse)}, std::move(exact.magnitude),
          "reference_decode (CPU, FP32)"};
}

ReferenceOutputs gpu_reference(const ShapeSpec& shape, const RequestLayout& layout, const mla::DecodeParams& clean) {
  const int64_t rows = static_cast<int64_t>(shape.batch) * shape.heads;
  DeviceBuffer token_offset(layout.token_offset.size() * 8);
  upload(token_offset, layout.token_offset);
  DeviceBuffer scores(static_cast<size_t>(head_tokens(shape, layout)) * 8);
  DeviceBuffer out(static_cast<size_t>(rows) * mla::kHeadDimCkv * 4), magnitude(out.bytes()),
      lse(static_cast<size_t>(rows) * 4);
  GpuReferenceArgs args;
  args.params = clean;
  args.token_offset = token_offset.as<int64_t>();
  args.total_tokens = layout.total_tokens();
  args.scores = scores.as<double>();
  args.out = out.as<float>();
  args.magnitude = magnitude.as<float>();
  args.lse = lse.as<float>();
  KVV_CUDA(launch_gpu_reference(args, nullptr));
  KVV_CUDA(cudaDeviceSynchronize());
  const size_t elements = static_cast<size_t>(rows) * mla::kHeadDimCkv;
  return {{download<float>(out, elements), download<float>(lse, static_cast<size_t>(rows))},
          download<float>(magnitude, elements), "naive GPU reference (FP64 accumulation)"};
}

// Five CUDA events around the timed regions, destroyed however the timing ends.
struct TimingEvents {
  TimingEvents() {
    for (cudaEvent_t& event : events) KVV_CUDA(cudaEventCreate(&event));
  }
  ~TimingEvents() {
    for (cudaEvent_t event : events) {
      if (event != nullptr) cudaEventDestroy(event);
    }
  }
  cudaEvent_t events[5] = {};
};

std::string bytes_text(int64_t bytes) { return std::to_string(bytes) + " bytes"; }

// After a failure: clear a non-sticky error; a sticky one means the context is gone.
void recover_or_throw(const std::string& what) {
  cudaGetLastError();
  if (const cudaError_t error = cudaDeviceSynchronize(); error != cudaSuccess) {
    throw GpuContextLost(what + "; the CUDA context is lost (" + cudaGetErrorName(error) + "), so no further shape can run");
  }
}

// Fills `result` for one shape; CUDA failures propagate to verify_shape_gpu.
void run_shape(const GpuDevice& gpu, const ShapeSpec& shape, Fault fault, const Tolerance& tolerance,
               std::optional<int64_t> memory_limit, ShapeResult& result) {
  const bool fp8 = shape.kv_dtype == Dtype::kFp8E4M3;
  const RequestLayout layout = make_request_layout(shape);
  result.bytes_needed = gpu_bytes_needed(shape, layout, fault, gpu.sm_count);
  size_t free_bytes = 0, total_bytes = 0;
  KVV_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (memory_limit && result.bytes_needed > *memory_limit) {
    result.status = ShapeStatus::kSkipped;
    result.reason = "out of memory: needs " + bytes_text(result.bytes_needed) + ", --memory-limit is " +
                    bytes_text(*memory_limit);
    return;
  }
  if (result.bytes_needed > static_cast<int64_t>(free_bytes)) {
    result.status = ShapeStatus::kSkipped;
    result.reason = "out of memory: needs " + bytes_text(result.bytes_needed) + ", the device has " +
                    bytes_text(static_cast<int64_t>(free_bytes)) + " free";
    return;
  }

  const int64_t rows = static_cast<int64_t>(shape.batch) * shape.heads;
  const DeviceInputs inputs(shape, layout);
  const mla::DecodeParams clean =
      inputs.params(shape, inputs.kv.as<void>(), fp8 ? mla::KvDtype::kFp8E4M3 : mla::KvDtype::kBf16);
  FaultedDeviceBuffers buffers;
  const mla::DecodeParams faulted = apply_fault(fault, clean, shape, layout, inputs, buffers);
  const mla::DecodePlan plan = mla::plan_decode(shape.batch, shape.heads, layout.max_len(), gpu.sm_count);

  const DecodeOutputs tested = run_kernel(faulted, plan, rows);
  std::optional<DecodeOutputs> cast_path;
  if (fp8) {
    // The bug's path: the whole cache cast to BF16 exactly, then the BF16-KV instantiation.
    DeviceBuffer cast(static_cast<size_t>(inputs.kv_count) * 2);
    KVV_CUDA(mla::launch_cast_fp8_to_bf16(inputs.kv.as<void>(), cast.as<void>(), static_cast<size_t>(inputs.kv_count),
                                          nullptr));
    cast_path = run_kernel(inputs.params(shape, cast.as<void>(), mla::KvDtype::kBf16), plan, rows);
  }
  const ReferenceOutputs reference = head_tokens(shape, layout) <= kCpuReferenceHeadTokens
                                         ? cpu_reference(shape, layout, inputs)
                                         : gpu_reference(shape, layout, clean);
  judge_shape(result, layout, tested, cast_path ? &*cast_path : nullptr, reference, tolerance);
}

}  // namespace

std::optional<GpuDevice> open_gpu(int device, std::string& why_not) {
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) {
    why_not = std::string("CUDA reports ") + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
    return std::nullopt;
  }
  if (count == 0) {
    why_not = "CUDA finds no device";
    return std::nullopt;
  }
  if (device >= count) {
    why_not = "--device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " device(s))";
    return std::nullopt;
  }
  cudaDeviceProp properties{};
  if (cudaSetDevice(device) != cudaSuccess || cudaGetDeviceProperties(&properties, device) != cudaSuccess) {
    why_not = "device " + std::to_string(device) + " cannot be opened";
    return std::nullopt;
  }
  GpuDevice gpu;
  gpu.index = device;
  gpu.name = properties.name;
  gpu.sm_count = properties.multiProcessorCount;
  gpu.cc_major = properties.major;
  gpu.cc_minor = properties.minor;
  gpu.total_memory = static_cast<int64_t>(properties.totalGlobalMem);
  return gpu;
}

int64_t gpu_bytes_needed(const ShapeSpec& shape, const RequestLayout& layout, Fault fault, int sm_count) {
  const int64_t rows = static_cast<int64_t>(shape.batch) * shape.heads;
  const int64_t kv = layout.num_slots * kSlotWidth;
  const bool fp8 = shape.kv_dtype == Dtype::kFp8E4M3;
  int64_t bytes = rows * kSlotWidth * 2 + (fp8 ? kv * 3 : kv * 2);  // q; cache (+ its BF16 cast)
  bytes += static_cast<int64_t>(layout.kv_indices.size() + 3 * layout.kv_len.size() + 2) * 4;
  bytes += 2 * (rows * mla::kHeadDimCkv * 2 + rows * 4);  // tested and cast-path outputs
  bytes += static_cast<int64_t>(mla::plan_decode(shape.batch, shape.heads, layout.max_len(), sm_count).workspace_bytes);
  if (fault == Fault::kFp8AsBf16) bytes += 2 * kv;
  if (fault == Fault::kNanIntroduced) bytes += kv;
  if (fault == Fault::kRopeIgnored) bytes += rows * mla::kHeadDimKpe * 2;
  if (head_tokens(shape, layout) > kCpuReferenceHeadTokens) {
    bytes += head_tokens(shape, layout) * 8 + rows * mla::kHeadDimCkv * 8 + rows * 4 + (shape.batch + 1) * 8;
  }
  return bytes;
}

ShapeResult verify_shape_gpu(const GpuDevice& gpu, const ShapeSpec& shape, Fault fault, const Tolerance& tolerance,
                             std::optional<int64_t> memory_limit) {
  const auto start = std::chrono::steady_clock::now();
  ShapeResult result;
  result.shape = shape;
  result.fault = fault;
  const bool fp8 = shape.kv_dtype == Dtype::kFp8E4M3;
  result.tested = std::string("kvpatch MLA decode kernel, ") + (fp8 ? "FP8 E4M3" : "BF16") + " KV, on " + gpu.name;
  try {
    run_shape(gpu, shape, fault, tolerance, memory_limit, result);
  } catch (const CudaFailure& failure) {
    if (failure.error == cudaErrorMemoryAllocation) {
      result.status = ShapeStatus::kSkipped;
      result.reason = "out of memory: needs " + bytes_text(result.bytes_needed) + " (" + failure.what() + ")";
    } else {
      result.status = ShapeStatus::kError;
      result.reason = failure.what();
    }
    recover_or_throw(result.reason);
  } catch (const std::bad_alloc&) {
    result.status = ShapeStatus::kSkipped;
    result.reason = "out of host memory for the shape's page table and host copies";
  } catch (const std::invalid_argument& error) {
    result.status = ShapeStatus::kError;
    result.reason = std::string("reference_decode refused the shape: ") + error.what();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

CastPathTiming time_cast_path_gpu(const GpuDevice& gpu, const ShapeSpec& shape, int64_t pool_tokens, int iters) {
  CastPathTiming timing;
  timing.tp = shape.tp;
  timing.heads = shape.heads;
  timing.batch = shape.batch;
  timing.context_len = shape.context_len;
  try {
    const RequestLayout layout = make_request_layout(shape);
    const int64_t slots = std::max(pool_tokens, layout.num_slots);
    const int64_t pool_values = slots * kSlotWidth;
    const DeviceInputs inputs(shape, layout);  // q and page table; its cache is replaced below
    DeviceBuffer pool_fp8(static_cast<size_t>(pool_values)), pool_bf16(static_cast<size_t>(pool_values) * 2);
    fill_kv_fp8(pool_fp8.as<uint8_t>(), pool_values, shape.seed, nullptr);
    KVV_CUDA(cudaGetLastError());
    int l2_bytes = 0;
    KVV_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, gpu.index));
    DeviceBuffer flush(std::max<size_t>(size_t{4} * static_cast<size_t>(l2_bytes), size_t{256} << 20));

    const int64_t rows = static_cast<int64_t>(shape.batch) * shape.heads;
    DeviceBuffer out(static_cast<size_t>(rows) * mla::kHeadDimCkv * 2);
    const mla::DecodePlan plan = mla::plan_decode(shape.batch, shape.heads, layout.max_len(), gpu.sm_count);
    DeviceBuffer workspace(plan.workspace_bytes);
    auto with_output = [&](mla::DecodeParams p) {
      p.out = out.as<void>();
      p.out_stride_b = static_cast<int64_t>(shape.heads) * mla::kHeadDimCkv;
      p.out_stride_h = mla::kHeadDimCkv;
      return p;
    };
    const mla::DecodeParams direct = with_output(inputs.params(shape, pool_fp8.as<void>(), mla::KvDtype::kFp8E4M3));
    const mla::DecodeParams after_cast = with_output(inputs.params(shape, pool_bf16.as<void>(), mla::KvDtype::kBf16));

    // A length-aware plan's split table depends only on kv_len: made once, as a decode step makes
    // it once for all its layers; both paths' launches read it.
    const bool length_aware = plan.num_splits == 0;
    if (length_aware) KVV_CUDA(mla::launch_decode_schedule(direct, plan, workspace.as<void>(), nullptr));
    TimingEvents timing_events;
    cudaEvent_t* events = timing_events.events;
    std::vector<double> cast_ms, cast_path_ms, direct_ms;
    constexpr int kWarmup = 3;
    for (int i = 0; i < kWarmup + iters; ++i) {
      KVV_CUDA(cudaMemsetAsync(flush.as<void>(), i & 0xFF, flush.bytes(), nullptr));
      KVV_CUDA(cudaEventRecord(events[0], nullptr));
      KVV_CUDA(mla::launch_cast_fp8_to_bf16(pool_fp8.as<void>(), pool_bf16.as<void>(), static_cast<size_t>(pool_values),
                                            nullptr));
      KVV_CUDA(cudaEventRecord(events[1], nullptr));
      KVV_CUDA(mla::launch_decode(after_cast, plan, workspace.as<void>(), nullptr, length_aware));
      KVV_CUDA(cudaEventRecord(events[2], nullptr));
      KVV_CUDA(cudaMemsetAsync(flush.as<void>(), (i + 1) & 0xFF, flush.bytes(), nullptr));
      KVV_CUDA(cudaEventRecord(events[3], nullptr));
      KVV_CUDA(mla::launch_decode(direct, plan, workspace.as<void>(), nullptr, length_aware));
      KVV_CUDA(cudaEventRecord(events[4], nullptr));
      KVV_CUDA(cudaEventSynchronize(events[4]));
      if (i < kWarmup) continue;
      float ms = 0;
      KVV_CUDA(cudaEventElapsedTime(&ms, events[0], events[1]));
      cast_ms.push_back(ms);
      KVV_CUDA(cudaEventElapsedTime(&ms, events[0], events[2]));
      cast_path_ms.push_back(ms);
      KVV_CUDA(cudaEventElapsedTime(&ms, events[3], events[4]));
      direct_ms.push_back(ms);
    }
    auto median = [](std::vector<double> values) {
      std::sort(values.begin(), values.end());
      return values.empty() ? 0.0 : values[values.size() / 2];
    };
    timing.cast_ms = median(cast_ms);
    timing.cast_path_ms = median(cast_path_ms);
    timing.direct_ms = median(direct_ms);
  } catch (const CudaFailure& failure) {
    timing.error = failure.what();
    recover_or_throw(timing.error);
  }
  return timing;
}

}  // namespace kvverify
