#pragma once
// What the rules report for one file: plan sites, fields, casts, and the edits that fix them.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvpatch/edit_set.h"
#include "kvpatch/flashinfer_version.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/signature.h"

namespace kvpatch {

enum class DtypeRole { KvCache, Model, Gated, Unknown };
const char* role_name(DtypeRole role);  // "kv_cache", "model", "gated", "unknown"

enum class SiteStatus { Threaded, Missing, Gated, Unknown, Ignored };
const char* status_name(SiteStatus status);
struct PlanSite;
// "unbuildable" for a site whose FlashInfer cannot build its plan for an FP8 cache, else status_name.
const char* site_label(const PlanSite& site);

struct DtypeArgument {
  std::string expr;  // one-line source text; "" when unbound
  DtypeRole role = DtypeRole::Unknown;
  std::string condition;  // for Gated: the condition choosing between the dtypes
  std::string gate_expr;  // for Gated: the whole `kv if cond else model` expression
  bool gate_portable = false;  // for Gated: gate_expr reads no local, so other methods of the class can reuse it
  // For Gated: the function the gate expression is written in, and whether the only locals it reads are
  // that function's parameters, never reassigned there, so another site of the same function can reuse it.
  TSNode gate_function{};
  bool gate_reads_parameters = false;
  // For Gated: the gate is upstream's `kv if kv == D else model` (cache_dtype_gate.h), a test of the cache's own dtype.
  bool gate_tests_cache_dtype = false;
  // For Gated: the attribute `self.<gate_attribute>` that holds the gate, set only in `__init__`, so any other method
  // of the class reads the same gate through it.
  std::string gate_attribute;
  std::string reason;     // for Unknown: why
  // For a parameter read through the calls of its function (DtypeClassifier::from_callers): that function's name.
  std::string passed_by;
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
  // The classes whose instances run the site's method: its class and the module's classes inheriting it.
  std::vector<std::string> run_by;
  std::string method;
  std::string receiver;  // "" for an alias called as a function
  std::string callee;
  // For the method called through its class (`W.plan(w, ...)`): the callee as written; receiver is then the
  // instance passed first ("" when none is).
  std::string called_as;
  std::string bound_to;  // a method call bound to the parameters of this function, installed with partial()
  DtypeArgument q_dtype;
  DtypeArgument kv_dtype;
  HeadDimArgument head_dim_ckv;
  HeadDimArgument head_dim_kpe;
  SiteStatus status = SiteStatus::Unknown;
  std::string condition;  // gated
  std::string reason;     // unknown, ignored; for missing without a fix, why there is none
  // Threaded or gated with a model-dtype query, against a FlashInfer known to be too old to build that plan
  // for an FP8 cache: why plan() would fail, and the remedy ("" otherwise). It is a finding of its own.
  std::string unbuildable;
  std::optional<Edit> fix;
  std::string fix_text;   // the replacement kv dtype expression, when fixed
  bool fix_gated = false; // the fix mirrors the gate of the class's other sites (fix_text is that gate)
  // When the kv argument is a local that only it reads, given its value by one statement (`kv_dtype =
  // self.data_type`): the fix changes that value instead, so no unread assignment is left; the statement's position.
  std::string fix_through_local;
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
  bool ignored = false;    // `# kvpatch: ignore[RULE-ID]` on the anchor line: no field is added (reason says why)
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
  TSNode call{};     // the `.to(...)` call
  bool redundant = false;
  std::string consumer;  // for required: who needs it; for redundant: the consumers that accept the KV dtype
  // Required without a consumer that needs it: consumer says why the cast stays instead (an ignore comment, no
  // consumer found, or a fix that cannot be built).
  bool stays_unjudged = false;
  // Non-empty when the plan names the KV-cache dtype only for caches of this dtype: the cast converts the
  // other caches (to the model dtype the plan then names), now under a guard or, after its fix, under one.
  std::string guard_dtype;
  std::vector<Edit> fix;
  // The statements the fix removes whole: the cast's own (`k = k.to(...)`), and the assignments of a local dtype
  // (`dtype = q.dtype`) that nothing reads once the cast is gone. Empty when the fix only unwraps the call or
  // guards it.
  std::vector<TSNode> removed_statements;
  bool unwraps_call = false;  // the fix also takes `.to(...)` off the chain (the cast's statement stays)
  std::vector<std::string> unread_dtype_locals;  // those dtype assignments, as "dtype = q.dtype at 12:9"
  // `dtype = q.dtype` statements that this cast and other casts read, and nothing else: they can go only with every
  // one of those casts, which only the engine knows once all casts are checked (engine.cpp, remove_together). Then
  // one of the casts takes them into removed_statements and names the others in dtype_local_readers ("13:14").
  std::vector<TSNode> shared_dtype_statements;
  std::vector<TSNode> shared_dtype_casts;        // the other casts' calls
  std::vector<std::string> dtype_local_readers;  // when taken: those casts, as "13:14"
  // A required cast one of whose consumers' wrappers has no plan site in this file: that consumer
  // ("decode_wrapper.run at 34:13"); "" otherwise. The wrapper may be planned in another file (cross_file.h).
  std::string unplanned_consumer;
  std::string unplanned_sites_rule;  // the plan-site rule that wrapper's sites would be found by
  // After the edits the cast is gone or converts only what the plan expects: run() gets the planned dtype.
  bool agrees_with_plan() const { return redundant || !guard_dtype.empty(); }
};

// A KV input of a wrapper's run() that does not reach it in the dtype the wrapper is (to be) planned for:
// a conversion the cast rules do not remove (`converted`), or a value kvpatch cannot trace to a KV source.
enum class RunInputStatus { Converted, Unknown };
const char* run_input_status_name(RunInputStatus status);  // "run-input-converted", "run-input-unknown"

struct RunInputFinding {
  std::string rule;  // the cast rule that names the consumer
  int line = 0;      // of the conversion, or of the value that cannot be traced
  int column = 0;
  std::string class_name;
  std::string method;
  RunInputStatus status = RunInputStatus::Unknown;
  std::string expr;      // one-line source text of the conversion or value
  std::string why;       // what the conversion does, or why the origin is unknown
  std::string consumer;  // `decode_wrapper.run at 34:13 (ckv_cache, kpe_cache)`
  TSNode consumer_call{};  // the run() call, or the read of the method when it is handed on (below)
  // The consumer method itself is handed on as a value (`partial(w.run)`): no call of it can be found.
  bool consumer_handed_on = false;
  // The call may run a wrapper subclass's own def of the method whose parameters are not the wrapper's: which of its
  // arguments are KV data cannot be told (expr is the called method).
  bool consumer_rebinds = false;
  // Made by link_files(): the consumer's wrapper has no plan site in this file, while these files (display
  // paths) have sites that may plan it.
  std::vector<std::string> planned_in;
  std::vector<SourcePosition> wrapper_sites;  // the plan sites that may plan the consumer's wrapper
  std::string effect;    // what kvpatch does about it (filled in by the engine)
  // `# kvpatch: ignore[<rule>] reason` on the line of the consumer's call or of the argument: reported, counted
  // apart, and it keeps no plan site unthreaded.
  bool ignored = false;
  std::string ignore_reason;
};
// "ignored" for an ignored finding, else run_input_status_name.
const char* run_input_label(const RunInputFinding& finding);

// A run() on a wrapper that is (or after the fix will be) planned for the KV-cache dtype and handed the KV
// data as stored: with FlashInfer 0.6.14 or later an FP8 cache needs ckv_scale and kpe_scale there.
struct RunScaleFinding {
  std::string rule;
  int line = 0;  // of the run() call
  int column = 0;
  std::string class_name;
  std::string method;
  std::string call;        // `decode_wrapper.run`
  bool present = false;    // the call passes a scale keyword, or a **mapping that may hold them
  bool ignored = false;    // `# kvpatch: ignore[<rule>] reason` on the call's first line
  std::string ignore_reason;
  std::string how;         // with present: what the call passes
  std::string flashinfer;  // which FlashInfer the finding assumes, and from where
  std::string fix_text;    // the argument the fix adds
  std::string reason;      // missing without a fix: why, and what to do
  std::optional<Edit> fix;
};

// A `# kvpatch: ignore[...]` comment, or one id in it, that suppresses nothing (ignore_comments.h).
struct IgnoreProblem {
  int line = 0;
  int column = 0;       // of the id, or of the comment when it names none kvpatch can read
  std::string rule;     // the id as written; "" for a comment that is not read as an ignore
  std::string problem;  // unknown-rule, unused or malformed
  std::string message;  // what is wrong and the remedy
};

struct ParsedFile;

struct FileReport {
  std::shared_ptr<const ParsedFile> file;
  // What the file was analysed against, so that it can be analysed again holding sites back (cross_file.h).
  std::optional<FlashInferVersion> flashinfer;
  std::string flashinfer_unpinned;
  std::vector<PlanSite> plan_sites;
  std::vector<FieldFinding> fields;
  std::vector<CastFinding> casts;
  std::vector<RunInputFinding> run_inputs;
  std::vector<RunScaleFinding> run_scales;
  std::vector<IgnoreProblem> ignore_problems;  // filled once every rule has run (judge_ignore_comments())
  EditSet edits;
  // The module-level definitions among `edits` that other edits call (the sm90 form's cached platform test), with
  // the name each defines: part of the fix of every finding whose own edits call it (finding_edits.h).
  std::vector<std::pair<std::string, Edit>> helper_edits;
};

struct FileError {
  std::string file;
  int line = 0;
  int column = 0;
  std::string message;
  std::string remedy;
};

}  // namespace kvpatch
