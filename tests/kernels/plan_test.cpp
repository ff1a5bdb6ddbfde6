// The host side of the split plan (no GPU needed): which kind of plan and block width plan_decode
// picks, and the split counts of length-aware plans against a brute-force search for the smallest
// tile cap.
// gpu_decode_test checks that the kernel's own on-device search writes the same table.
#include <doctest/doctest.h>

#include <numeric>
#include <random>
#include <vector>

#include "kvpatch/mla_decode_launch.h"
#include "mla_decode_config.h"

namespace {

using namespace kvpatch::mla;

long long blocks_needed(const std::vector<int>& lens, int cap) {
  long long sum = 0;
  for (const int len : lens) sum += tiling::capped_splits(tiling::request_tiles(len), cap);
  return sum;
}

// The smallest cap whose splits fit, by trying every cap from 1 up.
int brute_force_cap(const std::vector<int>& lens, int blocks) {
  for (int cap = 1;; ++cap)
    if (blocks_needed(lens, cap) <= blocks) return cap;
}

}  // namespace

TEST_CASE("plan_decode: length-aware while the batch alone leaves SMs idle, uniform once it fills them") {
  const DecodePlan small = plan_decode(32, 16, 32768, 132);
  CHECK(small.num_splits == 0);
  CHECK(small.blocks == 132);
  CHECK(small.workspace_bytes == length_aware_plan(32, 16, 132).workspace_bytes);
  // 32 heads in narrow blocks (SM120): two 16-head groups share the SMs.
  const DecodePlan narrow = plan_decode(8, 32, 32768, 132, 16);
  CHECK(narrow.blocks == 66);
  CHECK(narrow.head_rows == 16);
  // A batch as large as the GPU: uniform, and one split at short contexts.
  CHECK(plan_decode(132, 16, 1024, 132).num_splits == 1);
  CHECK(plan_decode(200, 16, 65536, 132).num_splits >= 1);
  // One request: the uniform plan splits it as evenly.
  CHECK(plan_decode(1, 16, 131072, 132).num_splits == 128);
  // One tile per request: nothing to split.
  const DecodePlan one_tile = plan_decode(4, 16, 64, 132);
  CHECK(one_tile.num_splits == 1);
  CHECK(one_tile.workspace_bytes == 0);
  // Beyond the schedule's shared-memory table (256 requests), uniform even on a larger GPU.
  CHECK(plan_decode(300, 16, 65536, 1000).num_splits >= 1);
}

TEST_CASE("plan_decode: wide blocks where the cost estimate finds them faster (SM90)") {
  // Long contexts: one group of 32 heads gets all 132 SMs.
  const DecodePlan b32 = plan_decode(32, 32, 16384, 132, 32);
  CHECK(b32.head_rows == 32);
  CHECK(b32.num_splits == 0);
  CHECK(b32.blocks == 132);
  CHECK(plan_decode(16, 128, 16384, 132, 32).head_rows == 32);
  CHECK(plan_decode(1, 128, 65536, 132, 32).head_rows == 32);
  CHECK(plan_decode_uniform(32, 64, 4096, 132, 32).head_rows == 32);
  // A tile or two per block (kvverify's batch-1 4K presets, measured slower wide): narrow blocks,
  // which give twice the blocks.
  CHECK(plan_decode(1, 64, 4096, 132, 32).head_rows == 16);
  CHECK(plan_decode(1, 32, 4096, 132, 32).head_rows == 16);
  // 16 heads or fewer: always narrow; the workspace does not depend on the width.
  CHECK(plan_decode(32, 16, 32768, 132, 32).head_rows == 16);
  CHECK(b32.workspace_bytes == length_aware_plan(32, 32, 132, 16).workspace_bytes);
}

TEST_CASE("length-aware splits: uniform batches split as evenly as before") {
  CHECK(length_aware_splits(std::vector<int>(32, 32768), 132) == std::vector<int>(32, 4));
  CHECK(length_aware_splits(std::vector<int>(64, 8192), 132) == std::vector<int>(64, 2));
  CHECK(length_aware_splits({131072}, 132) == std::vector<int>{128});
}

TEST_CASE("length-aware splits: one long request among short ones gets most of the blocks") {
  std::vector<int> lens(32, 4096);
  lens[0] = 131072;  // 2,048 tiles against 31 x 64
  const std::vector<int> splits = length_aware_splits(lens, 132);
  CHECK(std::accumulate(splits.begin(), splits.end(), 0) <= 132);
  CHECK(splits[0] == 64);  // cap 32 tiles: 64 + 31 x 2 = 126 blocks; cap 31 would need 67 + 31 x 3
  CHECK(splits[1] == 2);
}

TEST_CASE("length-aware splits: the smallest cap that fits, empty requests get one block") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int batch = 1 + static_cast<int>(rng() % 60);
    const int blocks = batch + static_cast<int>(rng() % 200);
    std::vector<int> lens(batch);
    for (int& len : lens) len = rng() % 5 == 0 ? 0 : static_cast<int>(rng() % 300000);
    const std::vector<int> splits = length_aware_splits(lens, blocks);
    const int cap = brute_force_cap(lens, blocks);
    CAPTURE(trial);
    REQUIRE(splits.size() == lens.size());
    CHECK(std::accumulate(splits.begin(), splits.end(), 0LL) == blocks_needed(lens, cap));
    for (int b = 0; b < batch; ++b) CHECK(splits[b] == tiling::capped_splits(tiling::request_tiles(lens[b]), cap));
  }
}
