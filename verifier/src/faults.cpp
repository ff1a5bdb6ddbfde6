#include "faults.h"

namespace kvverify {

const FaultInfo& fault_info(Fault fault) {
  static const std::vector<FaultInfo> infos = {
      {Fault::kNone, "clean", "no fault"},
      {Fault::kFp8AsBf16, "fp8-as-bf16", "FP8 bytes reinterpreted as BF16 (KV planned as BF16, cache stored as FP8)"},
      {Fault::kWrongScale, "wrong-scale", "wrong scale: ckv_scale/kpe_scale not applied"},
      {Fault::kLastPageDropped, "last-page-dropped", "last page dropped: KV length off by one page"},
      {Fault::kRopeIgnored, "rope-ignored", "rope part ignored: q_pe . kpe left out of the scores"},
      {Fault::kNanIntroduced, "nan-introduced", "NaN introduced: one attended FP8 KV byte is an E4M3 NaN code"},
  };
  for (const FaultInfo& info : infos) {
    if (info.fault == fault) return info;
  }
  return infos.front();
}

}  // namespace kvverify
