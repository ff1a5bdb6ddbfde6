#include "patch_savings.h"

#include <set>

#include "host_inputs.h"
#include "kvpatch/mla_decode.h"

namespace kvverify {

CastBytes cast_bytes(const ModelConfig& model) {
  CastBytes bytes;
  bytes.pool_tokens = model.pool_tokens;
  bytes.layers = model.layers;
  bytes.read_per_layer = model.pool_tokens * kSlotWidth;       // 1 byte per FP8 value
  bytes.written_per_layer = model.pool_tokens * kSlotWidth * 2;  // 2 bytes per BF16 value
  return bytes;
}

std::vector<ShapeSpec> timing_shapes(const std::vector<ShapeSpec>& matrix, const ModelConfig& model) {
  std::vector<ShapeSpec> shapes;
  std::set<int> tps;
  for (const ShapeSpec& shape : matrix) {
    if (shape.kv_dtype != Dtype::kFp8E4M3 || !tps.insert(shape.tp).second) continue;
    for (const int batch : {1, 32}) {
      ShapeSpec timed = shape;
      timed.batch = batch;
      timed.context_len = static_cast<int>(std::min<int64_t>(4096, model.pool_tokens / batch));
      timed.page_size = 1;  // SGLang's layout
      shapes.push_back(timed);
    }
  }
  return shapes;
}

}  // namespace kvverify
