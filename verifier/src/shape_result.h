// The outcome of verifying one shape, and the judgement shared by the GPU and CPU runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "faults.h"
#include "parity_metrics.h"
#include "request_layout.h"
#include "shape_matrix.h"
#include "tolerance.h"

namespace kvverify {

enum class ShapeStatus { kPass, kFail, kSkipped, kError };

// One computation's result, widened to float (BF16 outputs convert exactly).
struct DecodeOutputs {
  std::vector<float> out;  // [batch, heads, 512]
  std::vector<float> lse;  // [batch, heads]
};

struct ReferenceOutputs {
  DecodeOutputs values;
  std::vector<float> magnitude;  // a per element (tolerance.h)
  std::string kind;              // which implementation produced it
};

struct CastParity {
  BitParity bits;
  bool bit_exact_required = true;  // at unit scales; otherwise within twice the output tolerance
  std::optional<ParityMetrics> within_tolerance;
  bool pass = false;
};

struct ShapeResult {
  ShapeSpec shape;
  Fault fault = Fault::kNone;
  std::string tested;  // what ran as the computation under test
  ShapeStatus status = ShapeStatus::kError;
  std::string reason;  // failure, skip or error in words
  std::string reference_kind;
  std::optional<ParityMetrics> vs_reference;
  std::optional<CastParity> vs_cast_path;  // absent for the BF16-KV pair (there is no cast)
  int64_t bytes_needed = 0;
  double seconds = 0;
};

// Judges tested against the reference and, when given, against the cast path.
void judge_shape(ShapeResult& result, const RequestLayout& layout, const DecodeOutputs& tested,
                 const DecodeOutputs* cast_path, const ReferenceOutputs& reference, const Tolerance& tolerance);

std::string status_name(ShapeStatus status);

}  // namespace kvverify
