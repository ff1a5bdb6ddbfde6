// The C++ launch API as an outside program sees it after `cmake --install`: kvpatch/mla_decode_launch.h
// from the installed headers, its functions from the installed libkvpatch_mla_capi.so (they are
// exported there beside the C ABI), through kvpatch::mla_decode. Host-side plans only: no GPU needed.
#include <cstdio>

#include "kvpatch/mla_capi.h"
#include "kvpatch/mla_decode_launch.h"

namespace {
int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "check failed: %s\n", what);
    ++failures;
  }
}
}  // namespace

int main() {
  using namespace kvpatch::mla;
  // The widest block is passed in (16 heads), so no device is asked.
  const DecodePlan uniform = uniform_plan(8, 16, 3);
  check(uniform.num_splits == 3 && uniform.workspace_bytes > 0, "uniform_plan keeps its split count");
  check(uniform.workspace_bytes == kvpatch_mla_workspace_bytes(8, 16, 3),
        "the C++ and C ABIs agree on a uniform plan's workspace");
  const DecodePlan ragged = plan_decode(32, 16, 16384, 132, 16);
  check(ragged.num_splits == 0 && ragged.blocks >= 32 && ragged.blocks <= 256,
        "32 requests of 16 heads do not fill 132 SMs alone: a length-aware plan");
  const DecodePlan single = plan_decode(1, 16, 131072, 132, 16);
  check(single.num_splits > 1, "one long request is split across the SMs");
  std::printf("C++ launch API: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
