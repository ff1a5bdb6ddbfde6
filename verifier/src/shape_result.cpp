#include "shape_result.h"

namespace kvverify {

void judge_shape(ShapeResult& result, const RequestLayout& layout, const DecodeOutputs& tested,
                 const DecodeOutputs* cast_path, const ReferenceOutputs& reference, const Tolerance& tolerance) {
  result.reference_kind = reference.kind;
  const ParityInput vs_reference{tested.out, reference.values.out, reference.magnitude, tested.lse,
                                 reference.values.lse, layout.kv_len, result.shape.heads};
  result.vs_reference = compare_to_reference(vs_reference, tolerance);

  if (cast_path != nullptr) {
    CastParity cast;
    cast.bits = compare_bits(tested.out, cast_path->out, tested.lse, cast_path->lse);
    cast.bit_exact_required = result.shape.unit_scales();
    if (cast.bit_exact_required) {
      cast.pass = cast.bits.identical();
    } else {
      // Both paths are within one bound of the truth, so they may differ by two.
      Tolerance doubled = tolerance;
      doubled.output_rtol *= 2;
      doubled.output_atol *= 2;
      doubled.output_per_token *= 2;
      doubled.lse_atol *= 2;
      doubled.lse_per_token *= 2;
      const ParityInput vs_cast{tested.out, cast_path->out, reference.magnitude, tested.lse, cast_path->lse,
                                layout.kv_len, result.shape.heads};
      cast.within_tolerance = compare_to_reference(vs_cast, doubled);
      cast.pass = cast.within_tolerance->pass;
    }
    result.vs_cast_path = cast;
  }

  const bool reference_ok = result.vs_reference->pass;
  const bool cast_ok = !result.vs_cast_path || result.vs_cast_path->pass;
  result.status = reference_ok && cast_ok ? ShapeStatus::kPass : ShapeStatus::kFail;
  if (!reference_ok) {
    result.reason = "vs reference: " + result.vs_reference->diagnosis;
  }
  if (!cast_ok) {
    const CastParity& cast = *result.vs_cast_path;
    std::string text = cast.bit_exact_required
                           ? "vs cast path: not bit-identical (" + std::to_string(cast.bits.differing) +
                                 " output and " + std::to_string(cast.bits.lse_differing) + " LSE values differ)"
                           : "vs cast path: " + cast.within_tolerance->diagnosis;
    result.reason = result.reason.empty() ? text : result.reason + "; " + text;
  }
}

std::string status_name(ShapeStatus status) {
  switch (status) {
    case ShapeStatus::kPass: return "PASS";
    case ShapeStatus::kFail: return "FAIL";
    case ShapeStatus::kSkipped: return "SKIPPED";
    case ShapeStatus::kError: return "ERROR";
  }
  return "ERROR";
}

}  // namespace kvverify
