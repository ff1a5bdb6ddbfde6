// The --self-test plan: which shape each negative control and clean control runs on.
#pragma once

#include <vector>

#include "faults.h"
#include "options.h"
#include "shape_matrix.h"

namespace kvverify {

struct ControlPlan {
  ShapeSpec shape;
  Fault fault = Fault::kNone;
  bool expect_pass = false;
};

// Batch 4 (a 64-token request, an empty one, a one-token one, a ragged one), page size 16, the
// model's heads at the first --tp (default: the smallest TP giving at most 16 local heads). Dropping
// a page then removes a quarter or more of every non-empty request's tokens, so each fault moves
// the output far past the tolerance. The wrong-scale control and one clean control use scales
// 0.5/2, so that leaving them out changes the values.
std::vector<ControlPlan> self_test_plan(const Options& options, const ModelConfig& model);

}  // namespace kvverify
