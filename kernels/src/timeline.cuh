// Timing experiments only (kernels/bench/timeline.cu): with KVPATCH_TIMELINE defined, thread 0 of
// every decode and merge block (and of the decode block's second warp group) stores %globaltimer and
// %clock64 at marked points, so one launch's fixed costs (launch skew, prologue, first tile,
// epilogue, merge) and the SM clock can be read per block. Never set in a normal build: there every
// mark compiles to nothing.
#pragma once

#ifdef KVPATCH_TIMELINE
#include <cstdint>

namespace kvpatch::mla::device {

inline constexpr int kTimelineBlocks = 8192, kTimelineMarks = 24;
// [0]: decode blocks, [1]: merge blocks; block = x + gridDim.x * (y + gridDim.y * z). Marks 0-22 are
// times in ns (0-19 used); the last slot holds the block's SM + 1.
__device__ uint64_t kvpatch_timeline[2][kTimelineBlocks][kTimelineMarks];
// The SM's cycle counter (%clock64) at the same marks: cycles over nanoseconds between two marks of
// one thread is the SM clock the block ran at.
__device__ uint64_t kvpatch_cycles[2][kTimelineBlocks][kTimelineMarks];

__device__ __forceinline__ void timeline_mark(int kernel, int mark) {
  if (threadIdx.x % 256 != 0) return;  // thread 0 of each 256-thread warp group
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (block >= kTimelineBlocks) return;
  uint64_t now, cycles;
  uint32_t sm;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles));
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  kvpatch_timeline[kernel][block][mark] = now;
  kvpatch_cycles[kernel][block][mark] = cycles;
  kvpatch_timeline[kernel][block][kTimelineMarks - 1] = sm + 1;  // the SM the block ran on (+ 1: 0 = unset)
}

}  // namespace kvpatch::mla::device
#define KVPATCH_MARK(kernel, mark) ::kvpatch::mla::device::timeline_mark(kernel, mark)
#else
#define KVPATCH_MARK(kernel, mark) ((void)0)
#endif
