#include "self_test.h"


namespace kvverify {

std::vector<ControlPlan> self_test_plan(const Options& options, const ModelConfig& model) {
  int tp = 1;
  if (!options.tp.empty()) {
    tp = options.tp.front();
  } else {
    for (const int candidate : {1, 2, 4, 8}) {
      tp = candidate;
      if (model.heads % candidate == 0 && model.heads / candidate <= 16) break;
    }
  }
  Options shape_options = options;
  shape_options.tp = {tp};
  shape_options.batch_sizes = {4};
  shape_options.context_lengths = {64};
  shape_options.page_sizes = {16};
  shape_options.ckv_scale = 1;
  shape_options.kpe_scale = 1;
  const ShapeSpec unit = build_matrix(shape_options, model, Dtype::kFp8E4M3).front();
  shape_options.ckv_scale = 0.5;
  shape_options.kpe_scale = 2;
  const ShapeSpec scaled = build_matrix(shape_options, model, Dtype::kFp8E4M3).front();

  return {
      {unit, Fault::kNone, true},
      {scaled, Fault::kNone, true},
      {unit, Fault::kFp8AsBf16, false},
      {scaled, Fault::kWrongScale, false},
      {unit, Fault::kLastPageDropped, false},
      {unit, Fault::kRopeIgnored, false},
      {unit, Fault::kNanIntroduced, false},
  };
}

}  // namespace kvverify
