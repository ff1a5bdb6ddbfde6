// What wgmma (SM90 only, outside issue 3's rules) would buy the FP8 decode kernel's tensor work, for
// the team's decision on allowing it (kernels/bench/NOTES.md, item 30).
//
// A 16-head decode tile fits wgmma with the tokens (QK) or the latent dims (PV) as its 64 rows and
// the heads as its N = 16 columns: A (keys, or values transposed) comes from registers, converted
// from E4M3 by F2FP just before each wgmma, exactly as the kernel converts mma.sync's B today; B (the
// query, or the probabilities) sits in shared memory. So the question is how fast m64n16k16 runs
// with a new, converted A each time, against mma.sync m16n8k16 with a new, converted B each time.
// At 128 heads the heads fit the rows instead (m64n64k16, the query as A and FP16 keys or values as
// B, both in shared memory, converted once per tile for all heads); its last row times that form.
//
// Every case does the same FLOPs per step and SM (524,288: 128 m16n8k16, 16 m64n16k16, 8 m64n32k16
// or 4 m64n64k16) with the same number of F2FP where it converts (256 per SM per step for N = 16;
// half that at N = 32, where one A feeds twice the columns). One 512-thread block per SM: 16 warps
// of mma.sync, or 4 warpgroups of wgmma. Each warpgroup keeps two groups in flight (commit, then
// wait until one is left), two A register sets alternating. Cycles are clock64() per block; the
// slowest block of the second launch counts.
//
// Build and run (GPU machine): nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Ikernels/include -Ikernels/src kernels/bench/wgmma_rate.cu -o /tmp/wr && /tmp/wr
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "device_primitives.cuh"
#include "probe_timing.cuh"

using namespace kvpatch::mla::device;
using namespace kvpatch::probe;

constexpr int kThreads = 512, kIters = 4096, kChains = 8;
constexpr double kFlopPerStep = 128.0 * 2 * 16 * 8 * 16;  // per SM

// Chain inputs whose bytes have bit 3 and bit 7 clear: never an E4M3 NaN (S.1111.111), whatever the
// rotation or the XOR with 0x11 below do to them, so no case pays for NaNs and no loop masks.
template <int kChains>
__device__ inline void seed_finite_codes(uint32_t (&x)[kChains]) {
  seed_chains(x);
  for (int i = 0; i < kChains; ++i) x[i] &= 0x77777777u;
}

// --- mma.sync m16n8k16, the kernel's instruction today ---------------------------------------------

// How each mma.sync's B is made: the same registers throughout; two F2FP per mma (the 16-head
// blocks); two F2FP per pair of mma with different A (the 32-head blocks, where one key fragment
// feeds both 16-row halves of the heads).
// kSwapped: the roles turned round, the converted keys as A (16 tokens x 16 dims, 4 F2FP) feeding
// two mma whose fixed B are the two 8-head halves of the query; the same F2FP per mma as kConverted.
enum class BOperand { kFixed, kConverted, kConvertedShared, kSwapped };

template <BOperand kB>
__global__ void __launch_bounds__(kThreads, 1) mma_sync_loop(uint32_t* sink, long long* cycles) {
  const uint32_t a[4] = {0x3c003c00u, 0x38003800u ^ threadIdx.x, 0x34003400u, 0x30003000u};
  const uint32_t a2[4] = {0x3c003800u, 0x38003c00u ^ threadIdx.x, 0x34003000u, 0x30003400u};
  uint32_t x[kChains];
  float acc[kChains][4] = {};
  seed_finite_codes(x);
  timed(cycles, [&] {
    for (int it = 0; it < kIters; ++it)
#pragma unroll
      for (int i = 0; i < kChains; i += 2) {
        uint32_t b0 = a[1], b1 = a[2], c0 = a[2], c1 = a[3];
        if constexpr (kB == BOperand::kSwapped) {
          uint32_t keys[4];
          e4m3x4_to_f16x2x2(x[i], keys[0], keys[1]);
          e4m3x4_to_f16x2x2(x[i + 1], keys[2], keys[3]);
          mma_f16_m16n8k16(acc[i], keys, a[1], a[2]);
          mma_f16_m16n8k16(acc[i + 1], keys, a2[1], a2[2]);
        } else {
          if constexpr (kB != BOperand::kFixed) e4m3x4_to_f16x2x2(x[i], b0, b1);
          if constexpr (kB == BOperand::kConverted) e4m3x4_to_f16x2x2(x[i + 1], c0, c1);
          if constexpr (kB == BOperand::kConvertedShared) c0 = b0, c1 = b1;
          mma_f16_m16n8k16(acc[i], a, b0, b1);
          mma_f16_m16n8k16(acc[i + 1], a2, c0, c1);
        }
        x[i] = __funnelshift_l(x[i], x[i], 8);
        x[i + 1] = __funnelshift_l(x[i + 1], x[i + 1], 8);
      }
  });
  float total = 0.f;
  for (int i = 0; i < kChains; ++i) total += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3];
  if (total == 1234.5f) sink[0] = x[0] ^ x[1];  // keeps the loop alive
}

// --- wgmma ----------------------------------------------------------------------------------------

// Shared-memory matrix descriptor, no swizzle: 8 x 8 core matrices of 128 contiguous bytes, the next
// core matrix along K 128 bytes on, along N 256 bytes on. (The values only need to be finite.)
__device__ __forceinline__ uint64_t no_swizzle_descriptor(const void* smem) {
  const uint64_t address = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return ((address & 0x3FFFF) >> 4) | (uint64_t{128 >> 4} << 16) | (uint64_t{256 >> 4} << 32);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kLeft>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kLeft) : "memory");
}

// D[64 x 16] += A[64 x 16] (registers, FP16) x B[16 x 16] (shared memory, FP16), FP32 accumulators.
__device__ __forceinline__ void wgmma_m64n16k16_rs(float (&d)[8], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, "
      "{%8, %9, %10, %11}, %12, 1, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// The same with N = 32 (a 32-head block).
__device__ __forceinline__ void wgmma_m64n32k16_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15}, {%16, %17, %18, %19}, %20, 1, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// D[64 x 16] += A[64 x 16] x B[16 x 16], both from shared memory.
__device__ __forceinline__ void wgmma_m64n16k16_ss(float (&d)[8], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(a), "l"(b));
}

// D[64 x 64] += A[64 x 16] x B[16 x 64], both from shared memory: 64 heads in the rows, 64 tokens
// (QK) or latent dims (PV) in the columns.
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, 1, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b));
}

template <int kN>
__device__ __forceinline__ void wgmma_ss(float (&d)[kN / 2], uint64_t a, uint64_t b) {
  if constexpr (kN == 16) wgmma_m64n16k16_ss(d, a, b);
  else wgmma_m64n64k16_ss(d, a, b);
}

template <int kN>
__device__ __forceinline__ void wgmma_rs(float (&d)[kN / 2], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kN == 16) wgmma_m64n16k16_rs(d, a, b);
  else wgmma_m64n32k16_rs(d, a, b);
}

// How each wgmma's A is made: the same registers throughout, new raw FP16 bits, four F2FP from two
// words of E4M3 codes (what the kernel would do), or read from shared memory (a 64 x 16 tile per
// wgmma of the step; what a design whose producer warps convert the stage into FP16 would feed, the
// conversions and stores not counted).
enum class AOperand { kFixed, kFreshRaw, kFreshConverted, kSharedMemory };

template <int kN, AOperand kA>
__global__ void __launch_bounds__(kThreads, 1) wgmma_loop(uint32_t* sink, long long* cycles) {
  constexpr int kPerStep = 64 / kN;  // wgmma per warpgroup and step: the step's FLOPs over 4 warpgroups
  __shared__ alignas(128) uint16_t b_tile[16 * kN];
  __shared__ alignas(128) uint16_t a_tiles[kPerStep][64 * 16];
  for (int i = threadIdx.x; i < 16 * kN; i += kThreads) b_tile[i] = 0x2000 + (i & 7);  // small FP16
  for (int i = threadIdx.x; i < kPerStep * 64 * 16; i += kThreads) (&a_tiles[0][0])[i] = 0x3000 + (i & 15);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // ordinary stores, then wgmma reads
  __syncthreads();
  const uint64_t b = no_swizzle_descriptor(b_tile);

  uint32_t x[kPerStep];
  seed_finite_codes(x);
  uint32_t a[2][kPerStep][4];
  for (int s = 0; s < 2; ++s)
    for (int j = 0; j < kPerStep; ++j)
      for (int r = 0; r < 4; ++r) a[s][j][r] = 0x3c003c00u ^ (threadIdx.x << r);
  float d[kPerStep][kN / 2] = {};

  auto step = [&](uint32_t (&set)[kPerStep][4]) {
#pragma unroll
    for (int j = 0; j < kPerStep; ++j) {
      if constexpr (kA == AOperand::kFreshConverted) {
        e4m3x4_to_f16x2x2(x[j], set[j][0], set[j][1]);
        e4m3x4_to_f16x2x2(x[j] ^ 0x11111111u, set[j][2], set[j][3]);
      } else if constexpr (kA == AOperand::kFreshRaw) {
        for (int r = 0; r < 4; ++r) set[j][r] = (x[j] ^ (r * 0x01010101u)) & 0x3fff3fffu;
      }
      x[j] = __funnelshift_l(x[j], x[j], 8);
    }
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kPerStep; ++j) {
      if constexpr (kA == AOperand::kSharedMemory) wgmma_ss<kN>(d[j], no_swizzle_descriptor(a_tiles[j]), b);
      else wgmma_rs<kN>(d[j], set[j], b);
    }
    wgmma_commit();
    wgmma_wait<1>();  // the group before this one is done: its A set may be rewritten next step
  };
  timed(cycles, [&] {
    for (int it = 0; it < kIters; it += 2) {
      step(a[0]);
      step(a[1]);
    }
    wgmma_wait<0>();
  });
  float total = 0.f;
  for (int j = 0; j < kPerStep; ++j)
    for (int r = 0; r < kN / 2; ++r) total += d[j][r];
  if (total == 1234.5f) sink[0] = x[0];  // keeps the loop alive
}

// --- host -----------------------------------------------------------------------------------------

template <typename Kernel>
double cycles_per_step(int sms, Kernel kernel) {
  const long long worst = worst_block_cycles(
      sms, [&](uint32_t* sink, long long* cycles) { kernel<<<sms, kThreads>>>(sink, cycles); });
  return static_cast<double>(worst) / kIters;
}

void report(const char* name, double cycles, double baseline) {
  // A 16-head, 64-token tile is 544 m16n8k16 (QK 288, PV 256): 4.25 steps.
  std::printf("%-60s %7.1f cycles per step  %6.0f FLOP per SM-cycle  %6.0f cycles per 16-head tile  %.2fx\n",
              name, cycles, kFlopPerStep / cycles, cycles * 544.0 / 128.0, baseline / cycles);
}

int main() {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return 77;
  const double converted = cycles_per_step(sms, mma_sync_loop<BOperand::kConverted>);
  std::printf("one 512-thread block per SM, %d SMs; each step 524,288 FLOP per SM; last column: speed against "
              "the first row\n", sms);
  report("mma.sync m16n8k16, B from 2 F2FP (the kernel today)", converted, converted);
  report("mma.sync m16n8k16, one B throughout", cycles_per_step(sms, mma_sync_loop<BOperand::kFixed>), converted);
  report("mma.sync m16n8k16, A from 4 F2FP per 2 mma (roles swapped)",
         cycles_per_step(sms, mma_sync_loop<BOperand::kSwapped>), converted);
  report("mma.sync m16n8k16, B from 2 F2FP per 2 mma (32 heads)",
         cycles_per_step(sms, mma_sync_loop<BOperand::kConvertedShared>), converted);
  report("wgmma m64n16k16, A from 4 F2FP (16 heads)", cycles_per_step(sms, wgmma_loop<16, AOperand::kFreshConverted>),
         converted);
  report("wgmma m64n16k16, A new raw FP16 each time", cycles_per_step(sms, wgmma_loop<16, AOperand::kFreshRaw>),
         converted);
  report("wgmma m64n16k16, one A throughout", cycles_per_step(sms, wgmma_loop<16, AOperand::kFixed>), converted);
  report("wgmma m64n16k16, A from shared memory", cycles_per_step(sms, wgmma_loop<16, AOperand::kSharedMemory>),
         converted);
  report("wgmma m64n32k16, A from 4 F2FP (32 heads)", cycles_per_step(sms, wgmma_loop<32, AOperand::kFreshConverted>),
         converted);
  report("wgmma m64n32k16, one A throughout", cycles_per_step(sms, wgmma_loop<32, AOperand::kFixed>), converted);
  report("wgmma m64n64k16, A and B from shared memory (heads in rows)",
         cycles_per_step(sms, wgmma_loop<64, AOperand::kSharedMemory>), converted);
  return 0;
}
