#include <sstream>

#include "kvpatch/report.h"

namespace kvpatch {

Summary summarize(const Run& run) {
  Summary s;
  for (const FileReport& f : run.files) {
    ++s.files;
    for (const PlanSite& p : f.plan_sites) {
      ++s.plan_sites;
      switch (p.status) {
        case SiteStatus::Threaded: ++s.threaded; break;
        case SiteStatus::Missing: ++s.missing; break;
        case SiteStatus::Gated: ++s.gated; break;
        case SiteStatus::Unknown: ++s.unknown; break;
        case SiteStatus::Ignored: ++s.ignored; break;
      }
      if (!p.unbuildable.empty()) ++s.unbuildable;
    }
    for (const CastFinding& c : f.casts) {
      ++s.casts;
      ++(c.redundant ? s.redundant : s.required);
    }
    for (const FieldFinding& field : f.fields) {
      ++s.fields;
      if (!field.present && !field.ignored) ++s.fields_missing;
    }
    for (const RunInputFinding& r : f.run_inputs) {
      ++(r.ignored ? s.run_inputs_ignored
                   : r.status == RunInputStatus::Converted ? s.run_inputs_converted : s.run_inputs_unknown);
    }
    for (const RunScaleFinding& r : f.run_scales) {
      ++s.run_scales;
      if (r.ignored) ++s.run_scales_ignored;
      else if (!r.present) ++s.run_scales_missing;
    }
    s.edits += static_cast<int>(f.edits.size());
    if (run.ignore_problems_fail) s.ignore_problems_failing += static_cast<int>(f.ignore_problems.size());
  }
  return s;
}

int finding_count(const Summary& s) {
  return s.missing + s.unknown + s.unbuildable + s.redundant + s.fields_missing + s.run_inputs_converted +
         s.run_inputs_unknown + s.run_scales_missing + s.ignore_problems_failing;
}

bool has_findings(const Summary& s) { return finding_count(s) > 0; }

std::string summary_line(const Summary& s) {
  std::ostringstream out;
  out << s.plan_sites << " plan sites: " << s.threaded << " threaded, " << s.missing << " missing, " << s.gated
      << " gated, " << s.unknown << " unknown, " << s.ignored << " ignored";
  if (s.unbuildable > 0) out << " (" << s.unbuildable << " unbuildable with this FlashInfer)";
  out << "; " << s.casts << " casts: " << s.redundant
      << " redundant, " << s.required << " required; ";
  if (s.run_inputs_converted + s.run_inputs_unknown > 0) {
    out << s.run_inputs_converted + s.run_inputs_unknown << " run() inputs unsafe: " << s.run_inputs_converted
        << " converted, " << s.run_inputs_unknown << " unknown; ";
  }
  if (s.run_inputs_ignored > 0) out << s.run_inputs_ignored << " run() inputs ignored; ";
  if (s.run_scales > 0) {
    out << s.run_scales << " FP8 run() calls: " << s.run_scales - s.run_scales_missing - s.run_scales_ignored
        << " with scales, " << s.run_scales_missing << " without";
    if (s.run_scales_ignored > 0) out << ", " << s.run_scales_ignored << " ignored";
    out << "; ";
  }
  if (s.ignore_problems_failing > 0) {
    out << s.ignore_problems_failing
        << (s.ignore_problems_failing == 1 ? " ignore comment suppresses nothing; " : " ignore comments suppress nothing; ");
  }
  out << s.edits << " edits";
  return out.str();
}

std::string text_line(const ReportItem& item) {
  return item.file + ":" + std::to_string(item.line) + ":" + std::to_string(item.column) + ": " + item.status + ": " +
         item.message + " [" + item.rule + "]";
}

std::string text_report(const Run& run, Extent extent) {
  std::ostringstream out;
  for (const ReportItem& item : report_items(run)) {
    if (item.finding || extent == Extent::Everything) out << text_line(item) << "\n";
  }
  if (extent == Extent::Everything) out << summary_line(summarize(run)) << "\n";
  return out.str();
}

}  // namespace kvpatch
