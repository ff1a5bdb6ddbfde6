#pragma once
// What the rules report for one file: plan sites, fields, casts, and the edits that fix them.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvpatch/edit_set.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/signature.h"

namespace kvpatch {

enum class DtypeRole { KvCache, Model, Gated, Unknown };
const char* role_name(DtypeRole role);  // "kv_cache", "model", "gated", "unknown"

enum class SiteStatus { Threaded, Missing, Gated, Unknown, Ignored };
const char* status_name(SiteStatus status);

struct DtypeArgument {
  std::string expr;  // one-line source text; "" when unbound
  DtypeRole role = DtypeRole::Unknown;
  std::string condition;  // for Gated: the condition choosing between the dtypes
  std::string gate_expr;  // for Gated: the whole `kv if cond else model` expression
  bool gate_portable = false;  // for Gated: gate_expr reads no local, so other methods of the class can reuse it
  std::string reason;     // for Unknown: why
};

struct HeadDimArgument {
  std::string expr;
  std::optional<long long> value;  // when the argument is an integer literal
};

struct PlanSite {
  std::string rule;
  TSNode call{};
  int line = 0;
  int column = 0;
  std::string class_name;
  std::string method;
  std::string receiver;  // "" for an alias called as a function
  std::string callee;
  DtypeArgument q_dtype;
  DtypeArgument kv_dtype;
  HeadDimArgument head_dim_ckv;
  HeadDimArgument head_dim_kpe;
  SiteStatus status = SiteStatus::Unknown;
  std::string condition;  // gated
  std::string reason;     // unknown, ignored; for missing without a fix, why there is none
  std::optional<Edit> fix;
  std::string fix_text;   // the replacement kv dtype expression, when fixed
  bool fix_gated = false; // the fix mirrors the gate of the class's other sites (fix_text is that gate)
  std::string fix_condition;
  // Binding data the fix needs.
  std::optional<CallArgument> kv_argument;  // absent when the default fills kv
  TSNode argument_list{};
  // After the edits: a missing site with a fix is threaded, or gated when its fix mirrors a gate.
  SiteStatus status_after_edits() const {
    if (status != SiteStatus::Missing || !fix) return status;
    return fix_gated ? SiteStatus::Gated : SiteStatus::Threaded;
  }
  const std::string& condition_after_edits() const { return fix_gated ? fix_condition : condition; }
  bool threaded_after_edits() const { return status_after_edits() == SiteStatus::Threaded; }
};

struct FieldFinding {
  std::string rule;
  int line = 0;
  int column = 0;
  std::string class_name;
  bool present = false;
  std::string field_text;  // the KV field plan sites of this class are fixed with ("" when none can be added)
  std::string reason;      // when missing and no edit is possible
  std::optional<Edit> fix;
};

struct CastFinding {
  std::string rule;
  int line = 0;
  int column = 0;
  std::string class_name;
  std::string method;
  std::string variable;
  std::string expr;  // source text of the cast, as written
  bool redundant = false;
  std::string consumer;  // for required: who needs it; for redundant: the consumers that accept the KV dtype
  std::vector<Edit> fix;
};

struct ParsedFile;

struct FileReport {
  std::shared_ptr<const ParsedFile> file;
  std::vector<PlanSite> plan_sites;
  std::vector<FieldFinding> fields;
  std::vector<CastFinding> casts;
  EditSet edits;
};

struct FileError {
  std::string file;
  int line = 0;
  int column = 0;
  std::string message;
  std::string remedy;
};

}  // namespace kvpatch
