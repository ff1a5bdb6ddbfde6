// PTX wrappers shared by SM90 and SM120: cp.async, ldmatrix, mma.sync (BF16, FP16), E4M3 conversion.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace kvpatch::mla::device {

__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// 16-byte global -> shared copy; an invalid source reads nothing and zero-fills the destination.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

// 4-byte variant, for page ids.
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&frag)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(frag[0]), "=r"(frag[1]), "=r"(frag[2]), "=r"(frag[3])
               : "r"(address));
}

// The mma.sync forms below differ only in their instruction (an asm string must be a literal, so
// the shared operand lists come from this macro): acc += A (16 x k, row) * B (k x 8, col), FP32
// accumulation in place, A in 4 registers and B in 2 per thread.
#define KVPATCH_MMA_SYNC(instruction)                                                                     \
  asm volatile(instruction " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"        \
               : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])                                 \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

// BF16 operands, k = 16.
__device__ __forceinline__ void mma_bf16_m16n8k16(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  KVPATCH_MMA_SYNC("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
}

// FP16 operands, k = 16 (the FP8 path: see mma_operand.cuh).
__device__ __forceinline__ void mma_f16_m16n8k16(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  KVPATCH_MMA_SYNC("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
}

// E4M3 operands (4 codes per register, k = 32; sm_89+). Not used by the decode kernel: sm_90a has
// no such instruction (ptxas emulates it with F2FP, two FP16 mma and FP32 adds), sm_120a runs it as
// one QMMA. kernels/bench/mma_peak.cu times it.
__device__ __forceinline__ void mma_e4m3_m16n8k32(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  KVPATCH_MMA_SYNC("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32");
}

#undef KVPATCH_MMA_SYNC

// Two E4M3 codes in the low 16 bits (low byte -> low half) to two FP16, exactly, in one instruction
// (sm_89+): every E4M3 value, subnormals included, is a normal FP16, and NaN stays NaN.
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t codes) {
  uint32_t halves;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(halves) : "h"(static_cast<unsigned short>(codes)));
  return halves;
}

// Four E4M3 codes (bytes 0-3) to FP16 pairs (bytes 0-1 -> lo, 2-3 -> hi). The high pair is named as
// the register's upper half, which the conversion reads directly (no shift).
__device__ __forceinline__ void e4m3x4_to_f16x2x2(uint32_t codes, uint32_t& lo, uint32_t& hi) {
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
      : "=r"(lo), "=r"(hi)
      : "r"(codes));
}

// Shared-memory mbarriers (SM90 and SM120) link the block's two warp groups: arrive has release and
// the wait acquire semantics at CTA scope, so data written before an arrive is visible after the wait.
__device__ __forceinline__ void mbarrier_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the phase with the given parity (0 for phases 0, 2, ...) has completed. The suspend-
// time hint (ns) lets the warp sleep until the phase completes: without it the wait returns after a
// short time and the retries took ~10% of the decode kernel's issue slots (ncu, B=32 H=16 32K).
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nretry:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, 10000000;\n@!done bra "
      "retry;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// One arrival on `bar` once every cp.async this thread issued so far has landed (counted in the
// barrier's expected arrivals).
__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Barrier `id` (1-15) among `threads` threads: one warp group's own synchronisation.
__device__ __forceinline__ void group_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Moves registers between warp groups (a whole warpgroup executes it; SM90 and SM120): the caller's
// warps keep `kCount` per thread from here on, and ptxas allocates the code that follows to it.
template <int kCount>
__device__ __forceinline__ void registers_increase() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kCount)); }
template <int kCount>
__device__ __forceinline__ void registers_decrease() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kCount)); }

// Programmatic dependent launch (SM90 and SM120): the primary grid lets its dependent grid start
// launching; the dependent waits until the primary grid has completed and its writes are visible.
// Both are no-ops when the launch did not ask for programmatic serialization.
__device__ __forceinline__ void grid_dependents_launch() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// 2^x in one MUFU op; results below 2^-126 flush to zero (both instantiations alike).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t selector) {
  return __byte_perm(a, b, selector);
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
}

__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  uint32_t packed;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
}

}  // namespace kvpatch::mla::device
