// GPU tests of the MLA decode kernel (plain main: the GPU machine has no doctest). Exit 77 when
// no GPU is present, so CTest reports SKIP. Checks, per shape of the matrix in issue 3:
//  - FP8 kernel vs reference (CPU reference on small shapes; the naive FP32 GPU kernel, itself
//    checked against the CPU reference, on big ones): per-row relative L2 error and LSE error;
//  - FP8 kernel vs BF16 kernel on an exactly cast pool: bit-identical output and LSE;
//  - zero-length requests give zeros and LSE -inf; E4M3 NaN codes make their request NaN;
//  - every output element is written (outputs are poisoned first);
//  - programmatic launches (LaunchOptions::programmatic) right after a kernel that writes the
//    query and the KV late give the bits of a launch in stream order.
// `--small` runs only the small shapes (for compute-sanitizer memcheck); `--sanitize` a few of them
// that still reach every kernel path (for racecheck, synccheck and initcheck, which run far slower).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "decode_problem.h"
#include "kvpatch/mla_decode_launch.h"
#include "kvpatch/mla_naive_gpu.h"
#include "kvpatch/mla_reference.h"
#include "mla_decode_config.h"

using namespace kvtest;
namespace mla = kvpatch::mla;

namespace {

constexpr float kMaxRelL2 = 1e-2f;   // BF16 probabilities and BF16 output rounding: ~3e-3 expected
constexpr float kMaxLseError = 2e-3f;

int g_failures = 0;

void fail(const std::string& what) {
  std::printf("FAIL %s\n", what.c_str());
  ++g_failures;
}

struct RunResult {
  std::vector<uint16_t> out;  // BF16 bits with the problem's out strides
  std::vector<float> lse;
};

struct DeviceProblem {
  DeviceBuffer<uint16_t> q_nope, q_pe;
  DeviceBuffer<uint8_t> pool;
  DeviceBuffer<uint16_t> pool_bf16;
  DeviceBuffer<int32_t> indptr, indices, lens;
  int query_offset = 0;  // elements: a nonzero offset leaves the query views only 2-byte aligned
  // indices stays null when every request is empty, as a zero-element tensor's data pointer is.
  explicit DeviceProblem(const Problem& pr, int query_offset_elems = 0)
      : q_nope(pr.q_nope.size() + query_offset_elems), q_pe(pr.q_pe.size()), pool(pr.pool.size()),
        pool_bf16(pr.pool.size()), indptr(pr.indptr.size()), indices(pr.indices.size()),
        lens(std::max<size_t>(pr.lens.size(), 1)), query_offset(query_offset_elems) {
    KVPATCH_CUDA_CHECK(cudaMemcpy(q_nope.ptr + query_offset, pr.q_nope.data(), pr.q_nope.size() * sizeof(uint16_t),
                             cudaMemcpyHostToDevice));
    if (!pr.q_pe.empty()) q_pe.upload(pr.q_pe);
    pool.upload(pr.pool);
    indptr.upload(pr.indptr);
    if (!pr.indices.empty()) indices.upload(pr.indices);
    if (!pr.lens.empty()) lens.upload(pr.lens);
    KVPATCH_CUDA_CHECK(mla::launch_cast_fp8_to_bf16(pool.ptr, pool_bf16.ptr, pr.pool.size(), nullptr));
  }
  mla::DecodeParams params(const Problem& pr, KvDtype dtype, void* out, float* lse) const {
    const void* kv = dtype == KvDtype::kFp8E4M3 ? static_cast<const void*>(pool.ptr) : pool_bf16.ptr;
    return pr.params(q_nope.ptr + query_offset, q_pe.ptr, kv, dtype, indptr.ptr, indices.ptr, lens.ptr, out, lse);
  }
};

// separate_schedule: a length-aware plan's split table from launch_decode_schedule, then
// launch_decode with schedule_ready (how a decode step's layers would run it).
RunResult run_kernel(const Problem& pr, const DeviceProblem& dp, KvDtype dtype, const mla::DecodePlan& plan,
                     bool separate_schedule = false) {
  DeviceBuffer<uint16_t> out(pr.out_elems());
  DeviceBuffer<float> lse(std::max(pr.batch * pr.shape.num_heads, 1));
  KVPATCH_CUDA_CHECK(cudaMemset(out.ptr, 0xFF, out.count * sizeof(uint16_t)));  // NaN poison
  KVPATCH_CUDA_CHECK(cudaMemset(lse.ptr, 0xFF, lse.count * sizeof(float)));
  DeviceBuffer<uint8_t> workspace(std::max<size_t>(plan.workspace_bytes, 1));
  const mla::DecodeParams params = dp.params(pr, dtype, out.ptr, lse.ptr);
  if (separate_schedule) KVPATCH_CUDA_CHECK(mla::launch_decode_schedule(params, plan, workspace.ptr, nullptr));
  KVPATCH_CUDA_CHECK(mla::launch_decode(params, plan, workspace.ptr, nullptr, separate_schedule));
  KVPATCH_CUDA_CHECK(cudaDeviceSynchronize());
  return {out.download(), lse.download()};
}

mla::ReferenceOutput run_naive(const Problem& pr, const DeviceProblem& dp) {
  DeviceBuffer<float> out(static_cast<size_t>(pr.batch) * pr.shape.num_heads * kHeadDimCkv);
  DeviceBuffer<float> lse(static_cast<size_t>(pr.batch) * pr.shape.num_heads);
  KVPATCH_CUDA_CHECK(mla::launch_naive_decode(dp.params(pr, KvDtype::kFp8E4M3, nullptr, nullptr), out.ptr, lse.ptr, nullptr));
  KVPATCH_CUDA_CHECK(cudaDeviceSynchronize());
  return {out.download(), lse.download()};
}

mla::ReferenceOutput run_cpu_reference(const Problem& pr) {
  const void* q_pe = pr.shape.strided ? nullptr : pr.q_pe.data();
  return mla::reference_decode(pr.params(pr.q_nope.data(), q_pe, pr.pool.data(), KvDtype::kFp8E4M3, pr.indptr.data(),
                                         pr.indices.data(), pr.lens.data(), nullptr, nullptr));
}

struct Errors {
  double max_rel_l2 = 0, max_lse = 0;
  int nan_rows = 0, bad_rows = 0;
};

// Compares BF16 output rows with a reference; `nan_requests` must come out all-NaN.
Errors compare(const Problem& pr, const RunResult& got, const mla::ReferenceOutput& ref, const std::string& label,
               const std::vector<int>& nan_requests = {}) {
  Errors e;
  const int h_count = pr.shape.num_heads;
  for (int b = 0; b < pr.batch; ++b) {
    const bool expect_nan = std::find(nan_requests.begin(), nan_requests.end(), b) != nan_requests.end();
    for (int h = 0; h < h_count; ++h) {
      const float* r = ref.out.data() + (static_cast<size_t>(b) * h_count + h) * kHeadDimCkv;
      const uint16_t* o = got.out.data() + b * pr.out_stride_b + h * pr.out_stride_h;
      const float lse = got.lse[b * h_count + h], ref_lse = ref.lse[b * h_count + h];
      double diff2 = 0, ref2 = 0;
      bool any_nan = false, all_nan = true;
      for (int d = 0; d < kHeadDimCkv; ++d) {
        const float v = mla::bf16_bits_to_float(o[d]);
        any_nan |= std::isnan(v);
        all_nan &= std::isnan(v);
        diff2 += (v - r[d]) * static_cast<double>(v - r[d]);
        ref2 += static_cast<double>(r[d]) * r[d];
      }
      if (expect_nan) {
        if (!all_nan || !std::isnan(lse) || !std::isnan(ref_lse)) ++e.bad_rows;
        ++e.nan_rows;
        continue;
      }
      if (pr.lens[b] == 0) {
        bool zeros = true;
        for (int d = 0; d < kHeadDimCkv; ++d) zeros &= o[d] == 0;
        if (!zeros || !(std::isinf(lse) && lse < 0)) ++e.bad_rows;
        continue;
      }
      if (any_nan || std::isnan(lse)) {
        ++e.bad_rows;
        continue;
      }
      const double rel = std::sqrt(diff2 / std::max(ref2, 1e-30));
      const double lse_err = std::fabs(lse - ref_lse) / std::max(1.0, static_cast<double>(std::fabs(ref_lse)));
      e.max_rel_l2 = std::max(e.max_rel_l2, rel);
      e.max_lse = std::max(e.max_lse, lse_err);
      if (rel > kMaxRelL2 || lse_err > kMaxLseError) ++e.bad_rows;
    }
  }
  if (e.bad_rows) fail(label + ": " + std::to_string(e.bad_rows) + " rows out of tolerance");
  return e;
}

bool bit_identical(const Problem& pr, const RunResult& a, const RunResult& b, const std::string& label,
                   const std::string& what = "FP8 vs BF16-on-cast") {
  size_t diff_out = 0, diff_lse = 0;
  for (int r = 0; r < pr.batch; ++r)
    for (int h = 0; h < pr.shape.num_heads; ++h) {
      const size_t base = r * pr.out_stride_b + h * pr.out_stride_h;
      for (int d = 0; d < kHeadDimCkv; ++d) {
        const uint16_t x = a.out[base + d], y = b.out[base + d];
        const bool both_nan = std::isnan(mla::bf16_bits_to_float(x)) && std::isnan(mla::bf16_bits_to_float(y));
        diff_out += (x != y && !both_nan);
      }
      const float lx = a.lse[r * pr.shape.num_heads + h], ly = b.lse[r * pr.shape.num_heads + h];
      diff_lse += std::memcmp(&lx, &ly, sizeof lx) != 0 && !(std::isnan(lx) && std::isnan(ly));
    }
  if (diff_out || diff_lse)
    fail(label + ": " + what + " differ in " + std::to_string(diff_out) + " outputs, " + std::to_string(diff_lse) + " LSEs");
  return diff_out == 0 && diff_lse == 0;
}

int sm_count() {
  int device = 0, count = 0;
  KVPATCH_CUDA_CHECK(cudaGetDevice(&device));
  KVPATCH_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

mla::DecodePlan forced_plan(const Problem& pr, int splits) { return mla::uniform_plan(pr.batch, pr.shape.num_heads, splits); }

std::string plan_label(const mla::DecodePlan& plan) {
  return plan.num_splits == 0 ? "blocks=" + std::to_string(plan.blocks) : "splits=" + std::to_string(plan.num_splits);
}

// A length-aware plan's table, as the schedule kernel wrote it into the workspace, against the
// host's length_aware_schedule: every request's (first partial, pieces) and every block's share.
void check_split_table(const Problem& pr, const DeviceProblem& dp, int blocks) {
  const mla::DecodePlan plan = mla::length_aware_plan(pr.batch, pr.shape.num_heads, blocks);
  DeviceBuffer<uint16_t> out(pr.out_elems());
  DeviceBuffer<uint8_t> workspace(plan.workspace_bytes);
  KVPATCH_CUDA_CHECK(mla::launch_decode(dp.params(pr, KvDtype::kFp8E4M3, out.ptr, nullptr), plan, workspace.ptr, nullptr));
  KVPATCH_CUDA_CHECK(cudaDeviceSynchronize());
  // The workspace ends with the work table (8 ints per block, 4 per request), then 2 ints per request.
  // Only that tail is read back: the rest holds partials that a plan need not write, and copying it
  // would make compute-sanitizer's initcheck report the test's own read.
  const size_t table_ints = 8 * static_cast<size_t>(blocks) + 4 * pr.batch + 2 * pr.batch;
  std::vector<int32_t> table(table_ints);
  KVPATCH_CUDA_CHECK(cudaMemcpy(table.data(), workspace.ptr + plan.workspace_bytes - table_ints * sizeof(int32_t),
                                table_ints * sizeof(int32_t), cudaMemcpyDeviceToHost));
  const int32_t* shares = table.data();
  const int32_t* parts = table.data() + 8 * blocks + 4 * pr.batch;
  const mla::LengthAwareSchedule expected = mla::length_aware_schedule(pr.lens, blocks);
  int wrong = 0;
  for (int b = 0; b < pr.batch; ++b) wrong += parts[2 * b] != expected.first_part[b] || parts[2 * b + 1] != expected.pieces[b];
  for (int i = 0; i < blocks; ++i) {
    const int32_t* share = shares + 8 * i;
    wrong += share[1] != expected.block_pieces[i] || share[2] != expected.block_tile_begin[i] ||
             share[3] != expected.block_tile_end[i] || (share[1] > 0 && share[0] != expected.block_first_request[i]);
  }
  std::printf("split table B=%-3d blocks=%-3d %s, tiles per block=%-4d most pieces per request=%-3d %s\n", pr.batch,
              blocks, expected.even_shares ? "even shares" : "one piece  ",
              expected.block_tile_end[0] - expected.block_tile_begin[0],
              *std::max_element(expected.pieces.begin(), expected.pieces.end()), wrong ? "WRONG" : "as planned");
  if (wrong) fail("length-aware table differs from length_aware_schedule in " + std::to_string(wrong) + " entries");
}

// One plan: the FP8 kernel against the reference (`nan_requests` must come out all-NaN), then bit
// for bit against the BF16 kernel on the exactly cast cache. A length-aware plan runs FP8 on a
// separately made split table and BF16 with the table made in the launch, so parity covers both.
struct PlanCheck {
  Errors errors;
  bool bit_exact = false;
};

PlanCheck check_plan(const Problem& pr, const DeviceProblem& dp, const mla::ReferenceOutput& ref,
                     const mla::DecodePlan& plan, const std::string& label, const std::vector<int>& nan_requests = {}) {
  const RunResult fp8 = run_kernel(pr, dp, KvDtype::kFp8E4M3, plan, /*separate_schedule=*/plan.num_splits == 0);
  PlanCheck check;
  check.errors = compare(pr, fp8, ref, label, nan_requests);
  const RunResult bf16 = run_kernel(pr, dp, KvDtype::kBf16, plan);
  check.bit_exact = bit_identical(pr, fp8, bf16, label);
  return check;
}

void print_check(const std::string& label, const PlanCheck& check) {
  std::printf("%-44s relL2=%.2e lse=%.1e parity=%s\n", label.c_str(), check.errors.max_rel_l2, check.errors.max_lse,
              check.bit_exact ? "bit-exact" : "DIFFERENT");
}

// One shape: reference comparison for each plan (the planner's, uniform plans with forced split
// counts, length-aware plans over forced block counts), and FP8/BF16 parity.
void check_shape(const std::string& name, const ProblemShape& shape, uint32_t seed, bool cpu_reference,
                 const std::vector<int>& forced_splits = {}, const std::vector<int>& forced_blocks = {}) {
  Problem pr(shape, seed);
  DeviceProblem dp(pr);
  const mla::ReferenceOutput ref = cpu_reference ? run_cpu_reference(pr) : run_naive(pr, dp);
  std::vector<mla::DecodePlan> plans = {mla::plan_decode(pr.batch, shape.num_heads, std::max(pr.max_len, 1), sm_count())};
  for (int s : forced_splits) plans.push_back(forced_plan(pr, s));
  for (int blocks : forced_blocks) plans.push_back(mla::length_aware_plan(pr.batch, shape.num_heads, blocks));
  for (const auto& plan : plans) {
    const PlanCheck check = check_plan(pr, dp, ref, plan, name + " " + plan_label(plan));
    std::printf("%-44s %-5s H=%-3d B=%-3d page=%-2d max_len=%-6d %-10s relL2=%.2e lse=%.1e parity=%s\n",
                name.c_str(), cpu_reference ? "cpu" : "naive", shape.num_heads, pr.batch, shape.page_size, pr.max_len,
                plan_label(plan).c_str(), check.errors.max_rel_l2, check.errors.max_lse,
                check.bit_exact ? "bit-exact" : "DIFFERENT");
  }
  for (const auto& plan : plans)
    if (pr.batch > 0 && plan.num_splits == 0) check_split_table(pr, dp, plan.blocks);
}

// The naive GPU kernel must match the CPU reference before it stands in for it.
void check_naive_against_cpu(const ProblemShape& shape, uint32_t seed) {
  Problem pr(shape, seed);
  DeviceProblem dp(pr);
  const mla::ReferenceOutput cpu = run_cpu_reference(pr), gpu = run_naive(pr, dp);
  double worst = 0;
  for (size_t i = 0; i < cpu.out.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(cpu.out[i] - gpu.out[i])));
  for (size_t i = 0; i < cpu.lse.size(); ++i) {
    const bool both_inf = std::isinf(cpu.lse[i]) && cpu.lse[i] == gpu.lse[i];
    if (!both_inf) worst = std::max(worst, static_cast<double>(std::fabs(cpu.lse[i] - gpu.lse[i])));
  }
  std::printf("naive GPU vs CPU reference: H=%d B=%d max abs diff %.2e\n", shape.num_heads, pr.batch, worst);
  if (!(worst < 1e-4)) fail("naive GPU kernel disagrees with the CPU reference");
}

// NaN codes (0x7F, 0xFF) in one referenced slot of request 1 poison exactly that request.
void check_nan_propagation(int num_heads, int page_size, uint8_t nan_code) {
  ProblemShape shape;
  shape.num_heads = num_heads, shape.page_size = page_size, shape.lens = {200, 300, 0, 90};
  Problem pr(shape, 99 + nan_code);
  const int token = 123;
  const int64_t page = pr.indices[pr.indptr[1] + token / page_size];
  pr.pool[(page * page_size + token % page_size) * pr.slot_stride + 7] = nan_code;
  DeviceProblem dp(pr);
  const mla::ReferenceOutput ref = run_cpu_reference(pr);
  for (int splits : {1, 4, 24}) {
    const std::string label = "nan code " + std::to_string(nan_code) + " splits=" + std::to_string(splits);
    const Errors e = check_plan(pr, dp, ref, forced_plan(pr, splits), label, {1}).errors;
    std::printf("%-44s H=%-3d rows NaN as expected: %d, other rows relL2=%.2e\n", label.c_str(), num_heads, e.nan_rows,
                e.max_rel_l2);
  }
}

// Query rows of extreme magnitude (powers of two times the usual values, per head): huge rows
// beyond FP16's range (x 2^40, x 2^115: the FP8 path's per-row shift must bring them down without
// overflow), tiny rows (x 2^-60, x 2^-110: below FP16's normal range), all-zero rows, and
// unscaled rows. Checked against the CPU reference and for FP8/BF16 parity.
void check_extreme_queries(int num_heads, int page_size) {
  ProblemShape shape;
  shape.num_heads = num_heads, shape.page_size = page_size, shape.lens = {40, 500, 1000, 3000};
  Problem pr(shape, 4242 + num_heads);
  const int exponents[] = {40, 115, -60, -110, 0};
  for (int b = 0; b < pr.batch; ++b)
    for (int h = 0; h < num_heads; ++h) {
      const int kind = (h + b) % 6;  // 5 = all zeros
      auto scale_row = [&](std::vector<uint16_t>& q, int64_t base, int dims) {
        for (int d = 0; d < dims; ++d) {
          const float v = mla::bf16_bits_to_float(q[base + d]);
          q[base + d] = mla::float_to_bf16_bits(kind == 5 ? 0.f : std::ldexp(v, exponents[kind]));
        }
      };
      scale_row(pr.q_nope, b * pr.q_stride_b + h * pr.q_stride_h, kHeadDimCkv);
      scale_row(pr.q_pe, (static_cast<int64_t>(b) * num_heads + h) * kHeadDimKpe, kHeadDimKpe);
    }
  DeviceProblem dp(pr);
  const mla::ReferenceOutput ref = run_cpu_reference(pr);
  for (int splits : {1, 5}) {
    const std::string label = "extreme queries H=" + std::to_string(num_heads) + " splits=" + std::to_string(splits);
    print_check(label, check_plan(pr, dp, ref, forced_plan(pr, splits), label));
  }
}

// Query views that are only 2-byte aligned (packed [B, H, 576] query at an odd element offset): the
// kernel stages them with 2-byte copies instead of 16-byte cp.async. Same checks as check_shape.
void check_unaligned_query(int num_heads, bool strided) {
  ProblemShape shape;
  shape.num_heads = num_heads, shape.strided = strided, shape.lens = {0, 1, 70, 900};
  Problem pr(shape, 777 + num_heads);
  DeviceProblem dp(pr, /*query_offset_elems=*/1);
  const mla::ReferenceOutput ref = run_cpu_reference(pr);
  for (int splits : {1, 4}) {
    const std::string label = std::string("unaligned query") + (strided ? " strided" : "") + " H=" +
                              std::to_string(num_heads) + " splits=" + std::to_string(splits);
    print_check(label, check_plan(pr, dp, ref, forced_plan(pr, splits), label));
  }
}

// The kernel pages by shift and mask: a page size that is not a power of two is refused at launch.
void check_page_size_contract() {
  ProblemShape shape;
  shape.num_heads = 16, shape.page_size = 16, shape.lens = {40};
  const Problem pr(shape, 5);
  const DeviceProblem dp(pr);
  DeviceBuffer<uint16_t> out(pr.out_elems());
  mla::DecodeParams params = dp.params(pr, KvDtype::kFp8E4M3, out.ptr, nullptr);
  params.page_size = 48;
  const mla::DecodePlan plan = mla::plan_decode(pr.batch, shape.num_heads, 40, 132);
  DeviceBuffer<uint8_t> workspace(std::max<size_t>(plan.workspace_bytes, 1));
  if (mla::launch_decode(params, plan, workspace.ptr, nullptr) != cudaErrorInvalidValue)
    fail("page size 48 was not refused with cudaErrorInvalidValue");
}

// Head rows per block: 16 up to 16 heads; 32 for more heads where the device's shared memory per
// block holds wide blocks (SM90) and no environment variable asks for narrow ones, so that the
// matrix below runs the wide instances there.
void check_head_rows() {
  int device = 0, smem = 0;
  KVPATCH_CUDA_CHECK(cudaGetDevice(&device));
  KVPATCH_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const char* rows_env = std::getenv("KVPATCH_HEAD_ROWS");
  const char* shallow_env = std::getenv("KVPATCH_SHALLOW_PIPELINE");
  const bool narrow_asked = (rows_env && std::strcmp(rows_env, "16") == 0) || (shallow_env && std::strcmp(shallow_env, "1") == 0);
  const int expected = mla::tiling::wide_blocks_fit(static_cast<size_t>(smem)) && !narrow_asked ? mla::tiling::kMaxRows : mla::tiling::kMTileRows;
  std::printf("head rows per block for H > 16: %d (device shared memory per block %d B%s)\n",
              mla::decode_head_rows(32), smem, narrow_asked ? ", narrow blocks asked for" : "");
  if (mla::decode_head_rows(16) != mla::tiling::kMTileRows || mla::decode_head_rows(1) != mla::tiling::kMTileRows)
    fail("16 heads or fewer must run narrow blocks");
  for (int h : {17, 32, 128})
    if (mla::decode_head_rows(h) != expected) fail("decode_head_rows(" + std::to_string(h) + ") is not " + std::to_string(expected));
  // plan_decode's width: a tile or two per block stays narrow (more blocks), long contexts go wide.
  const int sms = sm_count();
  const mla::DecodePlan short_plan = mla::plan_decode(1, 64, 4096, sms), long_plan = mla::plan_decode(32, 32, 16384, sms);
  std::printf("plan_decode head rows: B=1 H=64 4K -> %d, B=32 H=32 16K -> %d\n", short_plan.head_rows, long_plan.head_rows);
  if (short_plan.head_rows != mla::tiling::kMTileRows) fail("B=1 H=64 4K should run narrow blocks");
  if (long_plan.head_rows != expected) fail("B=32 H=32 16K should run blocks of " + std::to_string(expected) + " heads");
}

// Stands in for the kernel a server runs just before attention (the query's projection, the new
// token's KV write): it lets programmatic dependents launch at once, waits ~200 us, then copies the
// real query and KV pool over poisoned ones.
__global__ void late_writer(const uint8_t* pool_src, uint8_t* pool, size_t pool_bytes, const uint16_t* q_src,
                            uint16_t* q, size_t q_elems, const uint16_t* q_pe_src, uint16_t* q_pe, size_t q_pe_elems) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if (threadIdx.x == 0) {
    long long start = 0, now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    while (now - start < 200000);
  }
  __syncthreads();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < pool_bytes; i += stride) pool[i] = pool_src[i];
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < q_elems; i += stride) q[i] = q_src[i];
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < q_pe_elems; i += stride) q_pe[i] = q_pe_src[i];
}

// A programmatic dependent that does not wait: what a grid that read its inputs before
// griddepcontrol.wait would see.
__global__ void eager_reader(const uint16_t* q, uint16_t* seen) { *seen = *q; }

// LaunchOptions::programmatic: launched right after late_writer, two launches in a row on one
// workspace (the second's blocks may launch while the first's merge runs), each must give the bits
// of a launch in stream order. Without the waits they would read the poisoned query and pool (NaN
// codes) or overwrite partials the first merge still reads. The control line says whether a
// dependent that does not wait did run before the writer finished (else this check cannot fail here).
void check_programmatic_launch() {
  ProblemShape shape;
  shape.num_heads = 16, shape.lens = {3000, 1, 700, 0, 257, 2048};
  Problem pr(shape, 4711);
  DeviceProblem dp(pr);
  DeviceBuffer<uint8_t> pool_src(dp.pool.count);
  DeviceBuffer<uint16_t> q_src(dp.q_nope.count), q_pe_src(dp.q_pe.count), seen(1);
  KVPATCH_CUDA_CHECK(cudaMemcpy(pool_src.ptr, dp.pool.ptr, dp.pool.count, cudaMemcpyDeviceToDevice));
  KVPATCH_CUDA_CHECK(cudaMemcpy(q_src.ptr, dp.q_nope.ptr, q_src.count * 2, cudaMemcpyDeviceToDevice));
  KVPATCH_CUDA_CHECK(cudaMemcpy(q_pe_src.ptr, dp.q_pe.ptr, q_pe_src.count * 2, cudaMemcpyDeviceToDevice));
  cudaStream_t stream = nullptr;
  KVPATCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto poison_then_write = [&] {
    KVPATCH_CUDA_CHECK(cudaMemsetAsync(dp.pool.ptr, 0xFF, dp.pool.count, stream));
    KVPATCH_CUDA_CHECK(cudaMemsetAsync(dp.q_nope.ptr, 0xFF, dp.q_nope.count * 2, stream));
    KVPATCH_CUDA_CHECK(cudaMemsetAsync(dp.q_pe.ptr, 0xFF, dp.q_pe.count * 2, stream));
    late_writer<<<64, 256, 0, stream>>>(pool_src.ptr, dp.pool.ptr, dp.pool.count, q_src.ptr, dp.q_nope.ptr,
                                         q_src.count, q_pe_src.ptr, dp.q_pe.ptr, q_pe_src.count);
    KVPATCH_CUDA_CHECK(cudaGetLastError());
  };
  {  // the control; its kernel is run once first: loading a module (lazy loading, CUDA's default)
     // waits for the work in flight, which would hide any overlap
    eager_reader<<<1, 1, 0, stream>>>(q_src.ptr, seen.ptr);
    KVPATCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    poison_then_write();
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute = {};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.gridDim = dim3(1), config.blockDim = dim3(1), config.stream = stream, config.attrs = &attribute;
    config.numAttrs = 1;
    KVPATCH_CUDA_CHECK(cudaLaunchKernelEx(&config, eager_reader, static_cast<const uint16_t*>(dp.q_nope.ptr), seen.ptr));
    KVPATCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::printf("programmatic control: a dependent that does not wait ran %s the writer finished\n",
                seen.download()[0] == 0xFFFF ? "before" : "after");
  }
  const mla::DecodePlan plans[] = {forced_plan(pr, 1), forced_plan(pr, 4), mla::length_aware_plan(pr.batch, 16, 9)};
  for (const mla::DecodePlan& plan : plans)
    for (bool schedule_ready : {false, true}) {
      if (schedule_ready && plan.num_splits != 0) continue;
      const RunResult expected = run_kernel(pr, dp, KvDtype::kFp8E4M3, plan, schedule_ready);
      DeviceBuffer<uint8_t> workspace(std::max<size_t>(plan.workspace_bytes, 1));
      RunResult got[2];
      DeviceBuffer<uint16_t> out[2] = {DeviceBuffer<uint16_t>(pr.out_elems()), DeviceBuffer<uint16_t>(pr.out_elems())};
      DeviceBuffer<float> lse[2] = {DeviceBuffer<float>(pr.batch * 16), DeviceBuffer<float>(pr.batch * 16)};
      mla::LaunchOptions options;
      options.schedule_ready = schedule_ready, options.programmatic = true;
      if (schedule_ready)
        KVPATCH_CUDA_CHECK(mla::launch_decode_schedule(dp.params(pr, KvDtype::kFp8E4M3, out[0].ptr, lse[0].ptr), plan,
                                                       workspace.ptr, stream));
      poison_then_write();
      for (int i = 0; i < 2; ++i) {
        KVPATCH_CUDA_CHECK(cudaMemsetAsync(out[i].ptr, 0xFF, out[i].count * 2, stream));
        KVPATCH_CUDA_CHECK(cudaMemsetAsync(lse[i].ptr, 0xFF, lse[i].count * 4, stream));
      }
      for (int i = 0; i < 2; ++i)
        KVPATCH_CUDA_CHECK(mla::launch_decode(dp.params(pr, KvDtype::kFp8E4M3, out[i].ptr, lse[i].ptr), plan,
                                              workspace.ptr, stream, options));
      KVPATCH_CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::string label = "programmatic " + plan_label(plan) + (schedule_ready ? " schedule ready" : "");
      bool same = true;
      for (int i = 0; i < 2; ++i) {
        got[i] = {out[i].download(), lse[i].download()};
        same &= bit_identical(pr, expected, got[i], label + " launch " + std::to_string(i + 1),
                              "stream order vs programmatic");
      }
      std::printf("%-44s two launches after a late writer: %s\n", label.c_str(),
                  same ? "bit-identical to stream order" : "DIFFERENT");
    }
  KVPATCH_CUDA_CHECK(cudaStreamDestroy(stream));
}

void small_matrix() {
  check_programmatic_launch();
  check_head_rows();
  check_page_size_contract();
  for (int h : {16, 32, 128}) check_naive_against_cpu({h, 16, {0, 1, 33, 700}, true, 0.5f, 2.f}, 7 + h);
  uint32_t seed = 1000;
  for (int h : {1, 8, 16, 24, 32, 48, 64, 128})
    for (int page : {1, 16, 64})
      for (bool strided : {false, true}) {
        ProblemShape s;
        s.num_heads = h, s.page_size = page, s.strided = strided;
        s.lens = {0, 1, 31, 32, 33, 257, 1000};
        if (strided) s.ckv_scale = 0.75f, s.kpe_scale = 1.5f;
        // 40 splits: most of them empty. Length-aware over 7 blocks (one per request), 9 and 132.
        check_shape("small" + std::string(strided ? " strided" : ""), s, ++seed, true, {1, 3, 8, 40}, {7, 9, 132});
      }
  for (uint8_t code : {uint8_t{0x7F}, uint8_t{0xFF}})
    for (int page : {1, 64}) check_nan_propagation(32, page, code);
  for (int h : {16, 48}) check_extreme_queries(h, h == 16 ? 1 : 16);
  for (bool strided : {false, true}) check_unaligned_query(24, strided);
  ProblemShape empty;
  empty.num_heads = 16, empty.lens = {0, 0, 0};
  check_shape("all requests empty", empty, 5, true, {1, 2}, {3, 4});
  // Equal lengths: the schedule kernel's closed form for the tile cap.
  ProblemShape equal;
  equal.num_heads = 16, equal.lens = std::vector<int>(7, 1000);
  check_shape("equal lengths", equal, 8, true, {}, {7, 30});
  // One long request among short ones: a length-aware plan gives it most of the blocks.
  ProblemShape ragged;
  ragged.num_heads = 16, ragged.lens = {20000, 64, 65, 0, 700, 128, 1, 3000};
  check_shape("one long among short", ragged, 6, true, {1, 4}, {8, 20, 66, 132, 256});
}

// A few shapes that reach every kernel and path of the small matrix: narrow blocks (16 heads), wide
// blocks (32), the 128-head split, page sizes 1 and 64, strided views, empty and partial tiles, a
// uniform split plan with its merge and a length-aware plan with its schedule kernel, each for the FP8
// and the BF16 instance (check_shape runs both), and programmatic launches.
void sanitize_matrix() {
  check_programmatic_launch();
  uint32_t seed = 3000;
  for (int h : {16, 32, 128})
    for (int page : {1, 64}) {
      ProblemShape s;
      s.num_heads = h, s.page_size = page, s.strided = page == 64;
      s.lens = {0, 1, 33, 257, 1000};
      if (s.strided) s.ckv_scale = 0.75f, s.kpe_scale = 1.5f;
      check_shape("sanitize", s, ++seed, true, {3}, {7});
    }
}

// The matrix of issue 3: H in {16, 32, 64, 128}, B in {1, 4, 16, 64, 128}, ragged lengths up to
// 128K (total tokens bounded per batch), page sizes 1 and 64; then 256K-token requests.
void full_matrix() {
  uint32_t seed = 5000;
  for (int h : {16, 32, 64, 128})
    for (int b : {1, 4, 16, 64, 128})
      for (int page : {1, 64}) {
        std::mt19937 rng(++seed);
        const int max_len = b == 1 ? 131072 : b == 4 ? 65536 : b == 16 ? 16384 : b == 64 ? 4096 : 2048;
        std::uniform_int_distribution<int> len_dist(1, max_len);
        ProblemShape s;
        s.num_heads = h, s.page_size = page, s.strided = (b % 2 == 0);
        for (int i = 0; i < b; ++i) s.lens.push_back(len_dist(rng));
        s.lens[0] = max_len;
        if (b >= 4) s.lens[1] = 0, s.lens[2] = 1;
        check_shape("matrix", s, seed, false);
      }
  // The issue's longest requests, 256K tokens (the matrix stops at 128K): alone, as one split (4,096
  // tiles through one block's online softmax) and as the most splits a request may have; and two of
  // them side by side, one a token short, under length-aware plans over 2 and 66 blocks besides the
  // planner's (132 on the H200).
  for (int h : {16, 128}) {
    ProblemShape s;
    s.num_heads = h, s.page_size = h == 16 ? 1 : 64, s.lens = {262144};
    check_shape("256K", s, ++seed, false, {1, 256});
  }
  ProblemShape pair;
  pair.num_heads = 32, pair.page_size = 16, pair.strided = true, pair.lens = {262144, 262143};
  check_shape("256K pair", pair, ++seed, false, {}, {2, 66});
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // keep every line if a check aborts
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--sanitize") {
    sanitize_matrix();
  } else {
    small_matrix();
    if (mode != "--small") full_matrix();
  }
  std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "PASSED", g_failures);
  return g_failures ? 1 : 0;
}
