// --cpu: the harness without the GPU. The computation under test is the contract's
// reference_decode (FP32), checked against the cast path (reference_decode on an exactly cast BF16
// cache: bit for bit at unit scales) and against the independent double-precision evaluation.
#pragma once

#include <cstdint>
#include <optional>

#include "faults.h"
#include "shape_result.h"
#include "tolerance.h"

namespace kvverify {

// Host bytes one shape needs (inputs, fault copies, outputs, references).
int64_t cpu_bytes_needed(const ShapeSpec& shape, const RequestLayout& layout, Fault fault);

ShapeResult verify_shape_cpu(const ShapeSpec& shape, Fault fault, const Tolerance& tolerance,
                             std::optional<int64_t> memory_limit);

}  // namespace kvverify
