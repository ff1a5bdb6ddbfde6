#include "run_report.h"

namespace kvverify {

bool RunReport::passed() const {
  if (!fatal.empty()) return false;
  if (self_test) {
    if (controls.empty()) return false;
    for (const SelfTestControl& control : controls) {
      if (!control.as_expected()) return false;
    }
    return true;
  }
  if (from) {
    if (from->plan_sites == 0 || !from->requests.unverifiable.empty() || !from->requests.unbuildable.empty() ||
        !from->requests.patch_gaps.empty() || !from->patcher_errors.empty()) {
      return false;
    }
    for (const DtypeRequest& pair : from->requests.pairs) {
      if (!pair.supported) return false;
    }
  }
  if (shapes.empty()) return false;
  for (const ShapeResult& shape : shapes) {
    if (shape.status != ShapeStatus::kPass) return false;
  }
  return true;
}

}  // namespace kvverify
