// SM120 limits of every kernel in kvpatch_mla_kernels, read from ptxas's report of an sm_120a
// cubin build (the CMake rule next to this test makes the logs; no GPU needed): per block at most
// 101,376 B of shared memory (static + the dynamic amount the launcher requests), registers x
// threads within the 64K register file, at most 48 warps resident per SM, no spills, no stack. And
// the pipeline depth the launcher picks from a device's shared memory per block (SM90, SM120).
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kvpatch/mla_naive_gpu.h"
#include "mla_decode_config.h"

namespace {

using namespace kvpatch::mla;

constexpr int kRegisterFile = 65536;
constexpr int kMaxWarpsPerSm = 48;
constexpr int kMaxBlocksPerSm = 32;
constexpr int kSmemPerSm = 100 * 1024;  // SM120 shared memory per SM available to blocks

struct KernelUsage {
  std::string name;  // mangled
  int registers = -1;
  int static_smem = 0;
  int stack = -1, spill_stores = -1, spill_loads = -1;
};

struct LaunchConfig {
  int threads = 0;
  size_t dynamic_smem = 0;
  bool runs_on_sm120 = true;
};

std::vector<KernelUsage> parse_ptxas_log(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path << ": build the sm120 ptxas report target first");
  const std::regex entry(R"(Compiling entry function '([^']+)' for 'sm_120a')");
  const std::regex props(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::regex used(R"(Used (\d+) registers)");
  const std::regex smem(R"((\d+) bytes smem)");
  std::vector<KernelUsage> kernels;
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      kernels.push_back({m[1].str()});
    } else if (!kernels.empty() && std::regex_search(line, m, props)) {
      kernels.back().stack = std::stoi(m[1]);
      kernels.back().spill_stores = std::stoi(m[2]);
      kernels.back().spill_loads = std::stoi(m[3]);
    } else if (!kernels.empty() && std::regex_search(line, m, used)) {
      kernels.back().registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) kernels.back().static_smem = std::stoi(m[1]);
    }
  }
  return kernels;
}

// The launch configuration each kernel is started with, from the same constants the launchers use.
bool launch_config(const std::string& name, LaunchConfig& config) {
  std::smatch m;
  // mla_decode_kernel<KvDtype, stages, m-tiles>: the launcher runs on SM120 narrow blocks (one
  // m-tile) at the stage count that SM120's shared memory per block holds; an instance with more
  // stages or wide blocks is for SM90 and never launched there (its configuration is still named,
  // so that a new instance cannot slip past the test).
  const std::regex decode(R"(mla_decode_kernelILNS0_7KvDtypeE(\d)ELi(\d+)ELi(\d)E)");
  if (std::regex_search(name, m, decode)) {
    const auto dtype = static_cast<KvDtype>(std::stoi(m[1]));
    const int stages = std::stoi(m[2]), m_tiles = std::stoi(m[3]);
    config = {tiling::kBlockThreads, tiling::smem_layout(dtype, stages, m_tiles).total,
              m_tiles == 1 && stages == tiling::stages_for(dtype, tiling::kSmemLimitSm120)};
    return true;
  }
  if (name.find("mla_merge_kernel") != std::string::npos) return config = {tiling::kMergeThreads, 0}, true;
  if (name.find("mla_schedule_kernel") != std::string::npos) return config = {tiling::kScheduleThreads, 0}, true;
  if (name.find("naive_decode_kernel") != std::string::npos) return config = {kNaiveDecodeThreads, 0}, true;
  if (name.find("cast_fp8_to_bf16") != std::string::npos) return config = {tiling::kCastThreads, 0}, true;
  return false;
}

std::vector<std::string> log_paths() {
  std::vector<std::string> paths;
  std::stringstream list(KVPATCH_PTXAS_LOGS);
  for (std::string path; std::getline(list, path, '|');)
    if (!path.empty()) paths.push_back(path);
  return paths;
}

}  // namespace

TEST_CASE("every sm_120a kernel fits SM120's shared memory, registers and warps, without spills") {
  int kernels_seen = 0, decode_instances = 0, sm120_decode_instances = 0;
  for (const std::string& path : log_paths()) {
    for (const KernelUsage& k : parse_ptxas_log(path)) {
      CAPTURE(k.name);
      ++kernels_seen;
      LaunchConfig config;
      REQUIRE_MESSAGE(launch_config(k.name, config),
                      "kernel has no launch configuration in sm120_resource_test.cpp: add it there");
      const bool decode = k.name.find("mla_decode_kernel") != std::string::npos;
      decode_instances += decode;
      sm120_decode_instances += decode && config.runs_on_sm120;
      REQUIRE(k.registers > 0);
      CHECK(k.stack == 0);
      CHECK(k.spill_stores == 0);
      CHECK(k.spill_loads == 0);

      const size_t smem_per_block = k.static_smem + config.dynamic_smem;
      if (!config.runs_on_sm120) {
        // An SM90-only pipeline depth: the launcher must never pick it on SM120.
        CHECK(smem_per_block > static_cast<size_t>(tiling::kSmemLimitSm120));
        continue;
      }
      CHECK(smem_per_block <= static_cast<size_t>(tiling::kSmemLimitSm120));

      const int warps_per_block = (config.threads + 31) / 32;
      const int regs_per_warp = (k.registers * 32 + 255) / 256 * 256;  // allocated per warp in units of 256
      const int blocks_by_regs = kRegisterFile / (regs_per_warp * warps_per_block);
      const int blocks_by_warps = kMaxWarpsPerSm / warps_per_block;
      const int blocks_by_smem = smem_per_block ? static_cast<int>(kSmemPerSm / smem_per_block) : kMaxBlocksPerSm;
      const int resident = std::min({blocks_by_regs, blocks_by_warps, blocks_by_smem, kMaxBlocksPerSm});
      MESSAGE(k.name << ": " << k.registers << " regs, " << smem_per_block << " B smem, " << config.threads
                     << " threads, " << resident << " block(s)/SM");
      CHECK(resident >= 1);
      CHECK(resident * warps_per_block <= kMaxWarpsPerSm);
    }
  }
  CHECK(decode_instances == 6);        // FP8, BF16 x (SM90 depth, SM120 depth, SM90 wide blocks)
  CHECK(sm120_decode_instances == 2);  // FP8, BF16 at SM120's depth
  CHECK(kernels_seen >= 6);
}

TEST_CASE("the launcher picks the deepest pipeline each device's shared memory per block holds") {
  constexpr size_t kSm90OptIn = size_t{227} * 1024;  // cudaDevAttrMaxSharedMemoryPerBlockOptin on H100 / H200
  constexpr size_t kSm120OptIn = tiling::kSmemLimitSm120;
  CHECK(tiling::stages_for(KvDtype::kFp8E4M3, kSm90OptIn) == 4);
  CHECK(tiling::stages_for(KvDtype::kBf16, kSm90OptIn) == 2);
  CHECK(tiling::stages_for(KvDtype::kFp8E4M3, kSm120OptIn) == 2);
  CHECK(tiling::stages_for(KvDtype::kBf16, kSm120OptIn) == 1);
  // Wide blocks (32 head rows) fit SM90's shared memory per block only.
  CHECK(tiling::wide_blocks_fit(kSm90OptIn));
  CHECK_FALSE(tiling::wide_blocks_fit(kSm120OptIn));
  for (const KvDtype dtype : {KvDtype::kFp8E4M3, KvDtype::kBf16}) {
    CAPTURE(static_cast<int>(dtype));
    CHECK(tiling::smem_layout(dtype, tiling::stages_for(dtype, kSm90OptIn)).total <= kSm90OptIn);
    CHECK(tiling::smem_layout(dtype, tiling::stages_for(dtype, kSm120OptIn)).total <= kSm120OptIn);
    // Regions in order, none overlapping the next, mbarriers 8-byte aligned.
    for (const std::pair<int, int> depth : {std::pair{tiling::min_stages(dtype), 1}, std::pair{tiling::max_stages(dtype), 1},
                                            std::pair{tiling::max_stages(dtype, 2), 2}}) {
      // Named copies, not a structured binding: CAPTURE's lambda cannot take a binding before clang 16.
      const int stages = depth.first;
      const int m_tiles = depth.second;
      CAPTURE(stages);
      CAPTURE(m_tiles);
      const tiling::SmemLayout l = tiling::smem_layout(dtype, stages, m_tiles);
      if (m_tiles == 2) CHECK(l.total <= kSm90OptIn);
      CHECK(l.kv_offset < l.score_offset);
      CHECK(l.score_offset < l.prob_offset);
      CHECK(l.prob_offset < l.row_stat_offset);
      CHECK(l.row_stat_offset < l.query_offset);
      CHECK(l.query_offset <= l.page_offset);
      CHECK(l.page_offset < l.barrier_offset);
      CHECK(l.barrier_offset < l.total);
      CHECK(l.barrier_offset % 8 == 0);
    }
  }
}
