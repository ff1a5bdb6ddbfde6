#include "cpu_runner.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "host_attention.h"
#include "host_inputs.h"
#include "kvpatch/mla_reference.h"

namespace kvverify {

namespace mla = kvpatch::mla;

namespace {

DecodeOutputs to_outputs(mla::ReferenceOutput output) { return {std::move(output.out), std::move(output.lse)}; }

// Host copies a fault needs; they must outlive the params that point into them.
struct FaultedBuffers {
  std::vector<uint8_t> kv_bytes;
  std::vector<uint16_t> zero_q_pe;
  std::vector<int32_t> lengths;
};

mla::DecodeParams apply_fault(Fault fault, mla::DecodeParams p, const ShapeSpec& shape, const HostInputs& inputs,
                              FaultedBuffers& buffers) {
  switch (fault) {
    case Fault::kNone: break;
    case Fault::kFp8AsBf16: {
      // The FP8 buffer read through BF16 eyes: same base pointers, same strides in elements, so
      // every read covers twice the bytes. The second copy stands for the memory that follows.
      buffers.kv_bytes = inputs.kv_fp8;
      buffers.kv_bytes.insert(buffers.kv_bytes.end(), inputs.kv_fp8.begin(), inputs.kv_fp8.end());
      p.kv_dtype = mla::KvDtype::kBf16;
      p.ckv = buffers.kv_bytes.data();
      p.kpe = buffers.kv_bytes.data() + mla::kHeadDimCkv;
      break;
    }
    case Fault::kWrongScale:
      p.ckv_scale = 1.f;
      p.kpe_scale = 1.f;
      break;
    case Fault::kLastPageDropped:
      buffers.lengths = lengths_without_last_page(inputs.layout);
      p.kv_len = buffers.lengths.data();
      break;
    case Fault::kRopeIgnored:
      buffers.zero_q_pe.assign(static_cast<size_t>(shape.batch) * shape.heads * mla::kHeadDimKpe, 0);
      p.q_pe = buffers.zero_q_pe.data();
      p.q_pe_stride_b = static_cast<int64_t>(shape.heads) * mla::kHeadDimKpe;
      p.q_pe_stride_h = mla::kHeadDimKpe;
      break;
    case Fault::kNanIntroduced: {
      buffers.kv_bytes = inputs.kv_fp8;
      const int64_t slot = inputs.layout.slot(0, 0);
      buffers.kv_bytes[static_cast<size_t>(slot * kSlotWidth)] = kFp8NanCode;
      p.ckv = buffers.kv_bytes.data();
      p.kpe = buffers.kv_bytes.data() + mla::kHeadDimCkv;
      break;
    }
  }
  return p;
}

}  // namespace

int64_t cpu_bytes_needed(const ShapeSpec& shape, const RequestLayout& layout, Fault fault) {
  const int64_t rows = static_cast<int64_t>(shape.batch) * shape.heads;
  const int64_t kv = layout.num_slots * kSlotWidth;
  int64_t bytes = rows * kSlotWidth * 2 + kv * 3;  // q, FP8 and BF16 caches
  if (fault == Fault::kFp8AsBf16 || fault == Fault::kNanIntroduced) bytes += 2 * kv;
  bytes += rows * mla::kHeadDimCkv * 4 * 5;       // three outputs, the double evaluation, magnitudes
  bytes += static_cast<int64_t>(layout.max_len()) * mla::kHeadDimCkv * 8;  // one request's values
  return bytes;
}

ShapeResult verify_shape_cpu(const ShapeSpec& shape, Fault fault, const Tolerance& tolerance,
                             std::optional<int64_t> memory_limit) {
  const auto start = std::chrono::steady_clock::now();
  ShapeResult result;
  result.shape = shape;
  result.fault = fault;
  result.tested = "reference_decode (CPU, FP32): the GPU kernel was not launched";
  const RequestLayout layout = make_request_layout(shape);
  result.bytes_needed = cpu_bytes_needed(shape, layout, fault);
  if (memory_limit && result.bytes_needed > *memory_limit) {
    result.status = ShapeStatus::kSkipped;
    result.reason = "out of memory: needs " + std::to_string(result.bytes_needed) + " bytes, --memory-limit is " +
                    std::to_string(*memory_limit);
    return result;
  }
  const int64_t available = static_cast<int64_t>(sysconf(_SC_AVPHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (available > 0 && result.bytes_needed > available) {
    result.status = ShapeStatus::kSkipped;
    result.reason = "out of memory: needs " + std::to_string(result.bytes_needed) + " bytes, " +
                    std::to_string(available) + " bytes of host memory are free";
    return result;
  }
  try {
    const HostInputs inputs = make_host_inputs(shape);
    const bool fp8 = shape.kv_dtype == Dtype::kFp8E4M3;
    const mla::DecodeParams clean = host_params(shape, inputs, fp8 ? mla::KvDtype::kFp8E4M3 : mla::KvDtype::kBf16);
    FaultedBuffers buffers;
    const mla::DecodeParams faulted = apply_fault(fault, clean, shape, inputs, buffers);

    const DecodeOutputs tested = to_outputs(mla::reference_decode(faulted));
    std::optional<DecodeOutputs> cast_path;
    if (fp8) cast_path = to_outputs(mla::reference_decode(host_params(shape, inputs, mla::KvDtype::kBf16)));
    AttentionEvaluation exact = evaluate_attention_host(clean);
    ReferenceOutputs reference{{std::move(exact.out), std::move(exact.lse)}, std::move(exact.magnitude),
                               "host evaluation (double precision)"};
    judge_shape(result, inputs.layout, tested, cast_path ? &*cast_path : nullptr, reference, tolerance);
  } catch (const std::bad_alloc&) {
    result.status = ShapeStatus::kSkipped;
    result.reason = "out of memory: needs about " + std::to_string(result.bytes_needed) + " bytes of host memory";
  } catch (const std::exception& error) {
    result.status = ShapeStatus::kError;
    result.reason = std::string("reference_decode refused the shape: ") + error.what();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace kvverify
