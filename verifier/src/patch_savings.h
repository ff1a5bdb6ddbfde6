// What removing the whole-pool `.to(q.dtype)` cast buys: bytes (arithmetic) and time (measured).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shape_matrix.h"

namespace kvverify {

struct CastBytes {
  int64_t pool_tokens = 0;
  int layers = 0;
  int64_t read_per_layer = 0;     // pool x 576 bytes of FP8
  int64_t written_per_layer = 0;  // pool x 1152 bytes of BF16
  int64_t moved_per_layer() const { return read_per_layer + written_per_layer; }
  int64_t moved_per_step() const { return moved_per_layer() * layers; }
};

CastBytes cast_bytes(const ModelConfig& model);

// One timed decode shape: median times over --timing-iters runs, L2 flushed before each.
struct CastPathTiming {
  int tp = 1, heads = 0, batch = 0, context_len = 0;
  double cast_ms = 0;          // whole-pool FP8 -> BF16 cast alone
  double cast_path_ms = 0;     // cast + BF16-KV kernel, timed together (the bug's path)
  double direct_ms = 0;        // FP8-KV kernel on the FP8 pool (the patched path)
  std::string error;           // set when the shape could not be timed
  double speedup() const { return direct_ms > 0 ? cast_path_ms / direct_ms : 0; }
};

// The decode shapes timed for each TP: batch 1 and 32 at 4096 tokens, in a pool of the preset's size.
std::vector<ShapeSpec> timing_shapes(const std::vector<ShapeSpec>& matrix, const ModelConfig& model);

}  // namespace kvverify
