// The human-readable report: one line per shape, then reasons, savings and a summary.
#include <cstdarg>
#include <cstdio>
#include <string>

#include "run_report.h"

namespace kvverify {
namespace {

std::string printf_string(const char* pattern, ...) {
  char buffer[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(buffer, sizeof buffer, pattern, args);
  va_end(args);
  return buffer;
}

std::string megabytes(int64_t bytes) { return printf_string("%.1f MB", static_cast<double>(bytes) / 1e6); }

std::string cast_column(const ShapeResult& shape) {
  if (!shape.vs_cast_path) return "-";
  const CastParity& cast = *shape.vs_cast_path;
  if (cast.bits.identical()) return "bit-identical";
  if (cast.bit_exact_required) return printf_string("%lld differ", static_cast<long long>(cast.bits.differing) + cast.bits.lse_differing);
  return cast.pass ? "within tol" : "beyond tol";
}

std::string shape_line(const ShapeResult& shape, const std::string& label) {
  if (!shape.vs_reference) {
    return printf_string("%-44s %-7s %s\n", label.c_str(), status_name(shape.status).c_str(), shape.reason.c_str());
  }
  const ParityMetrics& m = *shape.vs_reference;
  return printf_string("%-44s %-4s %9.3g %9.3g %8.2g %9.6f %8.4f%% %-14s %s\n", label.c_str(),
                       shape.reference_kind.starts_with("naive GPU") ? "gpu" : "cpu", m.max_abs_err, m.max_rel_err,
                       m.max_bound_ratio, m.cosine, 100 * m.beyond_share, cast_column(shape).c_str(),
                       status_name(shape.status).c_str());
}

// "2 missing kv_data_type (...), 1 ignored (...)": how many sites went unverified, by cause.
std::string not_verified_why(const ReportRequests& requests) {
  size_t missing = 0, left_by_apply = 0, unknown = 0;
  for (const UnverifiableSite& site : requests.unverifiable) {
    (site.status != SiteStatus::kMissing ? unknown : site.apply_leaves ? left_by_apply : missing) += 1;
  }
  std::string why;
  auto add = [&why](size_t count, const std::string& cause) {
    if (count == 0) return;
    why += (why.empty() ? "" : ", ") + std::to_string(count) + " " + cause;
  };
  add(missing, "missing kv_data_type (the report predates `kvpatch apply`: FAIL)");
  add(left_by_apply, "missing kv_data_type that `kvpatch apply` leaves, for the reason kvpatch gives (FAIL)");
  add(unknown, "with a dtype kvpatch could not determine (FAIL)");
  add(requests.ignored.size(), "ignored by a `# kvpatch: ignore` comment (not a failure)");
  return why;
}

std::string table_header() {
  return printf_string("%-44s %-4s %9s %9s %8s %9s %9s %-14s %s\n", "shape", "ref", "max_abs", "max_rel", "err/tol",
                       "cosine", "beyond", "vs cast path", "result");
}

void append_tolerance(std::string& out, const Tolerance& t) {
  out += printf_string(
      "tolerance: |out - ref| <= 2^-8 |ref| + (2^-6 + L x 2^-24) x a, a = sum p|v| / sum p (BF16 output rounding;\n"
      "           BF16 probabilities and split partials; FP32 accumulation over L tokens); |lse - ref| <= 2^-10 +\n"
      "           L x 2^-23 (log2 units); cosine >= %.4f; vs cast path: bit for bit at unit scales, else twice the\n"
      "           output tolerance. verifier/README.md derives each term.\n",
      t.min_cosine);
}

}  // namespace

std::string render_text(const RunReport& report) {
  std::string out;
  out += "kvverify: " + report.device + "\n";
  if (!report.gpu) out += "kvverify: --cpu: the GPU kernel was NOT launched; reference_decode stands in for it\n";
  out += printf_string("model: %s, %d heads, %d layers, sm_scale %.6g (%s)\n", report.model.name.c_str(),
                       report.model.heads, report.model.layers, report.model.sm_scale, report.model.source.c_str());
  append_tolerance(out, report.tolerance);

  if (report.from) {
    const FromReport& from = *report.from;
    out += "\nfrom " + from.path + ": " + std::to_string(from.plan_sites) + " plan sites (role model = " +
           dtype_name(from.model_dtype) + ", role kv_cache = " + dtype_name(from.kv_cache_dtype) + ")\n";
    for (const std::string& error : from.patcher_errors) {
      out += "  UNREAD " + error +
             ". kvpatch could not read this file, so any plan site in it went unverified; re-run `kvpatch check "
             "--format json` after the fix\n";
    }
    if (from.plan_sites == 0) out += "  no plan sites: nothing to verify\n";
    for (const DtypeRequest& pair : from.requests.pairs) {
      out += printf_string("  q %s x kv %s, head dims %d/%d: %s (%zu site%s, first %s)\n", dtype_name(pair.q_dtype).c_str(),
                           dtype_name(pair.kv_dtype).c_str(), pair.head_dim_ckv, pair.head_dim_kpe,
                           pair.supported ? "verified below" : ("UNSUPPORTED: " + pair.reason).c_str(), pair.sites.size(),
                           pair.sites.size() == 1 ? "" : "s", pair.sites.front().c_str());
    }
    for (const UnverifiableSite& site : from.requests.unverifiable) {
      out += "  UNVERIFIABLE " + site.site + ": " + site.reason + "\n";
    }
    for (const UnverifiableSite& site : from.requests.ignored) {
      out += "  ignored (not verified) " + site.site + ": " + site.reason + "\n";
    }
    for (const UnverifiableSite& site : from.requests.unbuildable) {
      out += "  UNBUILDABLE " + site.site + ": " + site.reason + "\n";
    }
    for (const PatchGap& finding : from.requests.patch_gaps) {
      out += "  PATCH GAP " + finding.site + ": " + finding.reason + "\n";
    }
    if (const std::string why = not_verified_why(from.requests); !why.empty()) {
      out += printf_string("  not verified: %zu of %zu plan sites: %s\n",
                           from.requests.unverifiable.size() + from.requests.ignored.size(), from.plan_sites, why.c_str());
    }
  }

  if (report.self_test) {
    out += "\nself-test: each fault must FAIL, each clean control must PASS";
    if (!report.controls.empty()) out += " (shape " + report.controls.front().result.shape.label() + ")";
    out += "\n" + table_header();
    for (const SelfTestControl& control : report.controls) {
      out += shape_line(control.result, fault_info(control.result.fault).id + (control.result.shape.unit_scales() ? "" : " (scaled)"));
    }
    out += "\n";
    for (const SelfTestControl& control : report.controls) {
      const FaultInfo& info = fault_info(control.result.fault);
      out += printf_string("  %-18s %s: %s%s\n", info.id.c_str(), status_name(control.result.status).c_str(),
                           control.expect_pass ? "clean control" : info.description.c_str(),
                           control.result.reason.empty() ? "" : (" -- " + control.result.reason).c_str());
      if (!control.as_expected()) {
        out += printf_string("  %-18s NOT AS EXPECTED: this control should %s\n", "", control.expect_pass ? "PASS" : "FAIL");
      }
    }
  } else if (!report.shapes.empty()) {
    out += "\n" + table_header();
    for (const ShapeResult& shape : report.shapes) out += shape_line(shape, shape.shape.label());
    bool reasons = false;
    for (const ShapeResult& shape : report.shapes) {
      if (shape.status == ShapeStatus::kPass) continue;
      if (!reasons) out += "\n";
      reasons = true;
      out += "  " + shape.shape.label() + " (seed " + std::to_string(shape.shape.seed) + "): " +
             status_name(shape.status) + ": " + shape.reason + "\n";
    }
  }

  if (report.savings_bytes) {
    const CastBytes& b = *report.savings_bytes;
    out += printf_string(
        "\npatch savings (%s, pool %lld tokens, %d layers): the removed cast read %s (FP8) and wrote %s (BF16) per\n"
        "layer, %s moved per layer, %s per decode step\n",
        report.model.name.c_str(), static_cast<long long>(b.pool_tokens), b.layers, megabytes(b.read_per_layer).c_str(),
        megabytes(b.written_per_layer).c_str(), megabytes(b.moved_per_layer()).c_str(),
        printf_string("%.2f GB", static_cast<double>(b.moved_per_step()) / 1e9).c_str());
    for (const CastPathTiming& t : report.timings) {
      if (!t.error.empty()) {
        out += printf_string("  tp%d h%d b%d L%d: not timed: %s\n", t.tp, t.heads, t.batch, t.context_len, t.error.c_str());
        continue;
      }
      out += printf_string(
          "  tp%d h%d b%d L%d: cast path %.3f ms/layer (cast %.3f) vs direct FP8 %.3f ms/layer: %.1fx; per step %.2f vs %.2f ms\n",
          t.tp, t.heads, t.batch, t.context_len, t.cast_path_ms, t.cast_ms, t.direct_ms, t.speedup(),
          t.cast_path_ms * b.layers, t.direct_ms * b.layers);
    }
  }

  if (!report.fatal.empty()) out += "\nkvverify: stopped early: " + report.fatal + "\n";
  int counts[4] = {0, 0, 0, 0};
  if (report.self_test) {
    int as_expected = 0;
    for (const SelfTestControl& control : report.controls) as_expected += control.as_expected() ? 1 : 0;
    out += printf_string("\nsummary: %d of %zu controls as expected: %s (%.1f s)\n", as_expected, report.controls.size(),
                         report.passed() ? "PASS" : "FAIL", report.seconds);
  } else {
    for (const ShapeResult& shape : report.shapes) ++counts[static_cast<int>(shape.status)];
    std::string unverified;
    if (report.from) {
      size_t unsupported = 0;
      for (const DtypeRequest& pair : report.from->requests.pairs) unsupported += pair.supported ? 0 : 1;
      const size_t unverifiable = report.from->requests.unverifiable.size(), ignored = report.from->requests.ignored.size();
      unverified = printf_string("; %zu unsupported dtype pair%s, %zu unverifiable site%s, %zu ignored site%s", unsupported,
                                 unsupported == 1 ? "" : "s", unverifiable, unverifiable == 1 ? "" : "s", ignored,
                                 ignored == 1 ? "" : "s");
      // Only when there are some: reports without them keep the line they always had.
      if (const size_t unbuildable = report.from->requests.unbuildable.size(); unbuildable > 0) {
        unverified += printf_string(", %zu unbuildable site%s", unbuildable, unbuildable == 1 ? "" : "s");
      }
      if (const size_t unread = report.from->patcher_errors.size(); unread > 0) {
        unverified += printf_string(", %zu file%s kvpatch could not read", unread, unread == 1 ? "" : "s");
      }
      if (const size_t patch_gaps = report.from->requests.patch_gaps.size(); patch_gaps > 0) {
        unverified += printf_string(", %zu patch gap%s", patch_gaps, patch_gaps == 1 ? "" : "s");
      }
    }
    out += printf_string("\nsummary: %zu shapes: %d passed, %d failed, %d skipped, %d errors%s: %s (%.1f s)\n",
                         report.shapes.size(), counts[0], counts[1], counts[2], counts[3], unverified.c_str(),
                         report.passed() ? "PASS" : "FAIL", report.seconds);
  }
  return out;
}

}  // namespace kvverify
