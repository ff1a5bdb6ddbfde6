// The host side of the split plan (no GPU needed): which kind of plan and block width plan_decode
// picks, and length-aware schedules: one piece per block against a brute-force search for the
// smallest tile cap, even shares against a tile-by-tile brute force, and the choice between them.
// gpu_decode_test checks that the schedule kernel writes the same table on the device. Last, the
// order the split partials are stored in.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "kvpatch/mla_decode_launch.h"
#include "mla_decode_config.h"

namespace {

using namespace kvpatch::mla;

// Checks a schedule against its definition, tile by tile: the batch's tiles laid end to end go to
// the blocks in order, ceil(T / n) each to the first T % n blocks and floor(T / n) to the rest; a request's pieces are the blocks
// that own its tiles (an empty request: the owner of the tile where it would start, or the last
// tile's owner past the end, or block 0 when all are empty); partial index = block + request.
void check_shares(const std::vector<int>& lens, int blocks) {
  const LengthAwareSchedule s = length_aware_schedule(lens, blocks, LengthAwareMode::kEvenShares);
  const int batch = static_cast<int>(lens.size());
  long long total = 0;
  for (const int len : lens) total += tiling::request_tiles(len);
  REQUIRE(s.even_shares);
  REQUIRE(s.block_tile_begin.size() == static_cast<size_t>(blocks));
  CHECK(s.block_tile_begin.front() == 0);
  CHECK(s.block_tile_end.back() == total);
  std::vector<long long> owner(static_cast<size_t>(total));
  for (int i = 0; i < blocks; ++i) {
    const long long size = s.block_tile_end[i] - s.block_tile_begin[i];
    CHECK(size == total / blocks + (i < total % blocks ? 1 : 0));
    if (i > 0) CHECK(s.block_tile_begin[i] == s.block_tile_end[i - 1]);
    for (long long x = s.block_tile_begin[i]; x < s.block_tile_end[i]; ++x) owner[x] = i;
  }
  std::vector<std::set<int>> blocks_of(batch);
  long long first = 0;
  for (int b = 0; b < batch; ++b) {
    const int tiles = tiling::request_tiles(lens[b]);
    for (long long x = first; x < first + tiles; ++x) blocks_of[b].insert(static_cast<int>(owner[x]));
    if (tiles == 0) blocks_of[b].insert(total == 0 ? 0 : static_cast<int>(owner[std::min(first, total - 1)]));
    first += tiles;
  }
  std::set<int> parts;
  for (int b = 0; b < batch; ++b) {
    CAPTURE(b);
    const int lo = *blocks_of[b].begin(), hi = *blocks_of[b].rbegin();
    CHECK(static_cast<int>(blocks_of[b].size()) == hi - lo + 1);  // contiguous blocks
    CHECK(s.pieces[b] == hi - lo + 1);
    CHECK(s.first_part[b] == lo + b);
    for (int i = lo; i <= hi; ++i) CHECK(parts.insert(i + b).second);  // partial indices unique
  }
  if (!parts.empty()) CHECK(*parts.rbegin() < blocks + batch);
  for (int i = 0; i < blocks; ++i) {
    CAPTURE(i);
    int count = 0, first_request = 0;
    for (int b = batch - 1; b >= 0; --b)
      if (blocks_of[b].count(i)) ++count, first_request = b;
    CHECK(s.block_pieces[i] == count);
    if (count > 0) CHECK(s.block_first_request[i] == first_request);
  }
}

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

TEST_CASE("length-aware, one piece per block: uniform batches split as evenly as before") {
  auto pieces = [](const std::vector<int>& lens) {
    return length_aware_schedule(lens, 132, LengthAwareMode::kOnePiece).pieces;
  };
  CHECK(pieces(std::vector<int>(32, 32768)) == std::vector<int>(32, 4));
  CHECK(pieces(std::vector<int>(64, 8192)) == std::vector<int>(64, 2));
  CHECK(pieces({131072}) == std::vector<int>{128});
  std::vector<int> lens(32, 4096);
  lens[0] = 131072;  // 2,048 tiles against 31 x 64
  const LengthAwareSchedule s = length_aware_schedule(lens, 132, LengthAwareMode::kOnePiece);
  CHECK(s.pieces[0] == 64);  // cap 32 tiles: 64 + 31 x 2 = 126 blocks; cap 31 would need 67 + 31 x 3
  CHECK(s.pieces[1] == 2);
  CHECK(s.first_part[1] == 64 + 1);  // block 64 + request 1
  CHECK(s.block_first_request[64] == 1);
  CHECK(s.block_tile_end[0] == 32);
  CHECK(s.block_pieces[126] == 0);  // spare blocks
}

TEST_CASE("length-aware, one piece per block: the smallest cap that fits, empty requests get one block") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int batch = 1 + static_cast<int>(rng() % 60);
    const int blocks = batch + static_cast<int>(rng() % 200);
    std::vector<int> lens(batch);
    for (int& len : lens) len = rng() % 5 == 0 ? 0 : static_cast<int>(rng() % 300000);
    const LengthAwareSchedule s = length_aware_schedule(lens, blocks, LengthAwareMode::kOnePiece);
    const int cap = brute_force_cap(lens, blocks);
    CAPTURE(trial);
    CHECK(s.one_piece_cap == cap);
    REQUIRE(s.pieces.size() == lens.size());
    int block = 0;
    for (int b = 0; b < batch; ++b) {
      CHECK(s.pieces[b] == tiling::capped_splits(tiling::request_tiles(lens[b]), cap));
      CHECK(s.first_part[b] == block + b);
      int tiles = 0;
      for (int k = 0; k < s.pieces[b]; ++k, ++block) {
        CHECK(s.block_first_request[block] == b);
        CHECK(s.block_pieces[block] == 1);
        CHECK(s.block_tile_end[block] <= cap);
        tiles += s.block_tile_end[block];
      }
      CHECK(tiles == tiling::request_tiles(lens[b]));
    }
    CHECK(block == blocks_needed(lens, cap));
  }
}

TEST_CASE("length-aware: even shares only where they beat one piece per block by more than the switches") {
  // Uniform batches at short contexts: 4 more SMs do not pay for a piece switch.
  CHECK_FALSE(length_aware_schedule(std::vector<int>(32, 8192), 132).even_shares);
  CHECK_FALSE(length_aware_schedule(std::vector<int>(64, 8192), 132).even_shares);
  // Ragged: lengths 1K-32K (cap 75-82 tiles per block against 65-73 in even shares).
  std::mt19937 rng(3);
  std::vector<int> ragged(32);
  for (int& len : ragged) len = 1024 + static_cast<int>(rng() % 31745);
  CHECK(length_aware_schedule(ragged, 132).even_shares);
}

TEST_CASE("length-aware, even shares: uniform batches use every block, tiles differ by one at most") {
  // B=32 32K: 16,384 tiles over 132 blocks, 125 each for 16 of them and 124 for the rest, against
  // 128 per block (4 splits each, 128 blocks busy) when every block held one request.
  const LengthAwareSchedule s = length_aware_schedule(std::vector<int>(32, 32768), 132, LengthAwareMode::kEvenShares);
  CHECK(s.block_tile_end[0] == 125);
  CHECK(s.block_tile_end[16] - s.block_tile_begin[16] == 124);
  CHECK(s.block_tile_end[131] == 16384);
  CHECK(std::count(s.block_pieces.begin(), s.block_pieces.end(), 0) == 0);
  CHECK(*std::max_element(s.block_pieces.begin(), s.block_pieces.end()) == 2);
  CHECK(*std::max_element(s.pieces.begin(), s.pieces.end()) == 6);  // 512 tiles over 5 or 6 shares
  check_shares(std::vector<int>(32, 32768), 132);
  check_shares(std::vector<int>(64, 8192), 132);
  check_shares({131072}, 132);
}

TEST_CASE("length-aware, even shares: one long request among short ones") {
  std::vector<int> lens(32, 4096);
  lens[0] = 131072;  // 2,048 tiles and 31 x 64: 4,032 tiles, 31 for the first 72 blocks, then 30
  const LengthAwareSchedule s = length_aware_schedule(lens, 132, LengthAwareMode::kEvenShares);
  CHECK(s.pieces[0] == 67);  // its 2,048 tiles end inside block 66
  CHECK(s.block_tile_end[0] == 31);
  check_shares(lens, 132);
}

TEST_CASE("length-aware, even shares: random batches, empty requests, fewer tiles than blocks") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int batch = 1 + static_cast<int>(rng() % 60);
    const int blocks = batch + static_cast<int>(rng() % 200);
    std::vector<int> lens(batch);
    const int longest = trial % 3 == 0 ? 200 : 300000;  // some batches have fewer tiles than blocks
    for (int& len : lens) len = rng() % 5 == 0 ? 0 : static_cast<int>(rng() % longest);
    CAPTURE(trial);
    check_shares(lens, blocks);
  }
  check_shares({0, 0, 0}, 132);  // every request empty: block 0 writes their zeros
  check_shares({0, 64, 0}, 4);
}

// The split partials' store order (mla_decode_config.h): the decode kernel stores dims dim0 + 4 k
// .. + 3 of lane (g, c) at partial_position(dim0 + 4 k), dim0 = 64 w + 16 c, and the merge writes
// out through the same map, so it must be a permutation within each 64-dim block, its own inverse,
// keep 4 consecutive dims together, and give a quad's k-th stores 64 contiguous bytes.
TEST_CASE("split partials' store order: a permutation per 64-dim block, its own inverse, a quad's stores contiguous") {
  std::set<int> seen;
  for (int dim = 0; dim < kHeadDimCkv; ++dim) {
    const int pos = tiling::partial_position(dim);
    CHECK(pos / 64 == dim / 64);
    CHECK(tiling::partial_position(pos) == dim);
    CHECK(tiling::partial_position(dim - dim % 4) + dim % 4 == pos);
    seen.insert(pos);
  }
  CHECK(seen.size() == static_cast<size_t>(kHeadDimCkv));
  for (int warp = 0; warp < 8; ++warp)
    for (int k = 0; k < 4; ++k)
      for (int c = 0; c < 4; ++c) CHECK(tiling::partial_position(64 * warp + 16 * c + 4 * k) == 64 * warp + 16 * k + 4 * c);
}
