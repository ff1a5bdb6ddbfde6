#include "request_layout.h"

#include <algorithm>
#include <utility>

#include "random_values.h"

namespace kvverify {

int RequestLayout::max_len() const {
  return kv_len.empty() ? 0 : *std::max_element(kv_len.begin(), kv_len.end());
}

RequestLayout make_request_layout(const ShapeSpec& shape) {
  RequestLayout layout;
  layout.page_size = shape.page_size;
  const int longest = shape.context_len;
  const int shortest = (longest + 1) / 2;
  for (int b = 0; b < shape.batch; ++b) {
    int len;
    if (b == 0) {
      len = longest;
    } else if (shape.batch >= 4 && b == 1) {
      len = 0;
    } else if (shape.batch >= 4 && b == 2) {
      len = std::min(longest, 1);
    } else {
      const uint64_t span = static_cast<uint64_t>(longest - shortest) + 1;
      len = shortest + static_cast<int>(random_bits(shape.seed, RandomStream::kLengths, b) % span);
    }
    layout.kv_len.push_back(len);
  }

  layout.kv_indptr.push_back(0);
  layout.token_offset.push_back(0);
  for (const int32_t len : layout.kv_len) {
    layout.kv_indptr.push_back(layout.kv_indptr.back() + (len + shape.page_size - 1) / shape.page_size);
    layout.token_offset.push_back(layout.token_offset.back() + len);
  }
  const int32_t pages = layout.kv_indptr.back();
  layout.kv_indices.resize(static_cast<size_t>(pages));
  for (int32_t p = 0; p < pages; ++p) layout.kv_indices[static_cast<size_t>(p)] = p;
  for (int32_t p = pages - 1; p > 0; --p) {  // Fisher-Yates with the counter-based generator
    const auto j = static_cast<int32_t>(random_bits(shape.seed, RandomStream::kPages, p) % static_cast<uint64_t>(p + 1));
    std::swap(layout.kv_indices[static_cast<size_t>(p)], layout.kv_indices[static_cast<size_t>(j)]);
  }
  // An all-empty batch still gets one (unreferenced) page, so no pointer in DecodeParams is null.
  if (pages == 0) layout.kv_indices.push_back(0);
  layout.num_slots = static_cast<int64_t>(std::max(pages, 1)) * shape.page_size;
  return layout;
}

std::vector<int32_t> lengths_without_last_page(const RequestLayout& layout) {
  std::vector<int32_t> lengths = layout.kv_len;
  for (int32_t& len : lengths) {
    const int32_t pages = (len + layout.page_size - 1) / layout.page_size;
    len = pages == 0 ? 0 : std::min(len, (pages - 1) * layout.page_size);
  }
  return lengths;
}

}  // namespace kvverify
