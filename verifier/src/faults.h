// Negative controls of --self-test: faults injected into the computation under test (the kernel
// launch on the GPU, reference_decode under --cpu) while the reference sees clean inputs.
#pragma once

#include <string>
#include <vector>

namespace kvverify {

enum class Fault {
  kNone,
  kFp8AsBf16,        // the FP8 cache's bytes read as BF16 (old FlashInfer's silent wrong output)
  kWrongScale,       // ckv_scale/kpe_scale not applied (run() without the scales)
  kLastPageDropped,  // every request loses its last page (off-by-one KV length)
  kRopeIgnored,      // q_pe . kpe left out of the scores
  kNanIntroduced,    // one attended KV byte set to an E4M3 NaN code
};

struct FaultInfo {
  Fault fault;
  std::string id;           // as printed and in JSON, e.g. "fp8-as-bf16"
  std::string description;  // the fault in words
};

const FaultInfo& fault_info(Fault fault);

// The E4M3 NaN code the kNanIntroduced fault writes into the first latent byte of request 0's first
// token.
inline constexpr unsigned char kFp8NanCode = 0x7F;

}  // namespace kvverify
