// Where each request's tokens live in the paged KV pool: ragged lengths, page table, slot count.
#pragma once

#include <cstdint>
#include <vector>

#include "shape_matrix.h"

namespace kvverify {

struct RequestLayout {
  int page_size = 1;
  std::vector<int32_t> kv_len;      // [batch] tokens per request
  std::vector<int32_t> kv_indptr;   // [batch + 1] offsets into kv_indices, in pages
  std::vector<int32_t> kv_indices;  // page ids: a seeded permutation of all pages, so neighbours
                                    // in a request are not neighbours in the pool
  int64_t num_slots = 0;            // pool slots = pages x page_size
  std::vector<int64_t> token_offset;  // [batch + 1] prefix sums of kv_len (flattened tokens)

  int batch() const { return static_cast<int>(kv_len.size()); }
  int64_t total_tokens() const { return token_offset.back(); }
  int max_len() const;
  // Pool slot of token t of request b.
  int64_t slot(int b, int64_t t) const {
    return static_cast<int64_t>(kv_indices[kv_indptr[b] + t / page_size]) * page_size + t % page_size;
  }
};

// Request 0 has context_len tokens; in batches of 4 or more request 1 is empty and request 2 holds
// one token (the kernel's edge cases); the rest are uniform in [ceil(context_len/2), context_len].
RequestLayout make_request_layout(const ShapeSpec& shape);

// The "last page dropped" fault: every request loses its last page (an off-by-one page count).
std::vector<int32_t> lengths_without_last_page(const RequestLayout& layout);

}  // namespace kvverify
