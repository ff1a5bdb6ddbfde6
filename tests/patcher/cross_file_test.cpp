// A wrapper planned in one module and run in another: kvpatch analyses each file on its own, so the run()'s
// cast is `required` in its file while the other file's plan sites are threaded. Over one run that sees
// both files, the cast becomes a run-input-unknown finding naming those sites, so check fails instead of
// passing a patch that hands an FP8 plan the BF16 cast (FlashInfer refuses it at the first decode step).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/fixture_sources.h"
#include "support/kvpatch_cli.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kvpatch_test;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The generation-B fixture cut in two: the backend (casts and run() calls) imports the updaters (every
// plan() call) from a module of their own.
struct SplitBackend {
  TempDir scratch{"kvpatch-cross-file"};
  fs::path package = scratch.path() / "pkg";
  fs::path backend = package / "flashinfer_mla_backend.py";
  fs::path updaters = package / "flashinfer_mla_updaters.py";

  SplitBackend() {
    const std::string source =
        fixture_source("gen-b-unpatched");
    const std::size_t cut = source.find("class FlashInferMLAIndicesUpdaterDecode:");
    const std::size_t imports_end = source.find("@dataclass");
    REQUIRE(cut != std::string::npos);
    REQUIRE(imports_end != std::string::npos);
    fs::create_directories(package);
    write_bytes(backend, source.substr(0, cut) +
                             "from pkg.flashinfer_mla_updaters import FlashInferMLAIndicesUpdaterDecode\n"
                             "from pkg.flashinfer_mla_updaters import FlashInferMLAIndicesUpdaterPrefill\n"
                             "from pkg.flashinfer_mla_updaters import fast_mla_decode_plan\n");
    write_bytes(updaters, source.substr(0, imports_end) + source.substr(cut));
  }

  ProcessResult kvpatch(const std::vector<std::string>& args) const { return run_kvpatch(args, scratch.path()); }

  // The updaters' plans threaded as apply threads them in a module with nothing beside it (a hand-made fix).
  void thread_plans_alone() const {
    TempDir lone{"kvpatch-cross-file-lone"};
    write_bytes(lone.path() / "updaters.py", read_bytes(updaters));
    REQUIRE(run_kvpatch({"apply", "--isolated", "updaters.py"}, lone.path()).exit_code == 0);
    write_bytes(updaters, read_bytes(lone.path() / "updaters.py"));
  }
};
}  // namespace

TEST_SUITE("cross_file") {
  TEST_CASE("run() calls whose wrapper is planned in another checked file keep their casts as findings") {
    SplitBackend split;
    const ProcessResult r = split.kvpatch({"check", "--isolated", "pkg"});
    CAPTURE(r.out);
    CHECK(r.exit_code == 1);
    // Both casts (decode and prefill) stay required and are each a run-input finding naming the updaters' sites.
    CHECK(count(r.out, ": run-input-unknown: ") == 2);
    CHECK(contains(r.out, "flashinfer_mla_backend.py:105:9: run-input-unknown: FlashInferMLAAttnBackend.forward_decode: "
                          "the KV data decode_wrapper.run at 106:13 takes"));
    CHECK(contains(r.out, "its wrapper has no plan site in this file, while flashinfer_mla_updaters.py:47:13, "
                          "flashinfer_mla_updaters.py:62:13, flashinfer_mla_updaters.py:118:13 would plan one "
                          "for the KV dtype if threaded"));
    CHECK(contains(r.out, "2 casts: 0 redundant, 2 required; 2 run() inputs unsafe: 0 converted, 2 unknown"));
    const ProcessResult json = split.kvpatch({"check", "--isolated", "--format", "json", "pkg"});
    CHECK(count(json.out, "\"planned_in\": [\n        \"flashinfer_mla_updaters.py\"\n      ]") == 2);
  }

  TEST_CASE("apply over both files threads nothing it cannot pair with its run(), and says where and why") {
    SplitBackend split;
    const std::string backend_before = read_bytes(split.backend);
    const std::string updaters_before = read_bytes(split.updaters);
    const ProcessResult applied = split.kvpatch({"apply", "--isolated", "pkg"});
    CAPTURE(applied.out);
    CHECK(applied.exit_code == 1);
    // Threading the updaters' plans would hand both run()s the BF16 casts on FP8 plans: no file is touched.
    CHECK(read_bytes(split.backend) == backend_before);
    CHECK(read_bytes(split.updaters) == updaters_before);
    const ProcessResult r = split.kvpatch({"check", "--isolated", "pkg"});
    CAPTURE(r.out);
    CHECK(r.exit_code == 1);
    CHECK(count(r.out, ": run-input-unknown: ") == 2);
    CHECK(contains(r.out, "3 plan sites: 0 threaded, 3 missing"));
    CHECK(contains(r.out, "would plan one for the KV dtype if threaded"));
    CHECK(contains(r.out, "flashinfer_mla_updaters.py:47:13: missing: FlashInferMLAIndicesUpdaterDecode.call_begin_forward: "
                          "wrapper.plan binds q_data_type=self.data_type, kv_data_type=self.data_type (the model dtype); "
                          "no fix: kvpatch leaves it unthreaded: the casts at flashinfer_mla_backend.py:87:9 (feeding "
                          "prefill_wrapper_paged.run at 91:13, ignore[flashinfer-mla-kv-run-input]) and "
                          "flashinfer_mla_backend.py:105:9 (feeding decode_wrapper.run at 106:13, "
                          "ignore[flashinfer-mla-kv-run-input]) feed run() calls"));
    // Each held site names both casts that hold it, so that one run lists all there is to settle.
    CHECK(count(r.out, "leaves it unthreaded: the casts at ") == 3);
    // Neither field is added for plans that stay as they are.
    CHECK(count(r.out, "so no field is added") == 2);
    CHECK(contains(r.out, "; 0 edits"));
  }

  TEST_CASE("plans another file threaded by hand are named as they are, and are not undone") {
    SplitBackend split;
    split.thread_plans_alone();
    const ProcessResult r = split.kvpatch({"check", "--isolated", "pkg"});
    CAPTURE(r.out);
    CHECK(r.exit_code == 1);
    CHECK(count(r.out, ": run-input-unknown: ") == 2);
    CHECK(contains(r.out, "3 plan sites: 3 threaded"));
    CHECK(contains(r.out, " plan one for the KV dtype; kvpatch reads each file on its own"));
    CHECK(!contains(r.out, "kvpatch leaves them unthreaded"));
  }

  TEST_CASE("the backend file alone has nothing planned elsewhere in its run, and a marked cast is vouched for") {
    SplitBackend split;
    const ProcessResult alone = split.kvpatch({"check", "--isolated", "pkg/flashinfer_mla_backend.py"});
    CHECK(alone.exit_code == 0);
    CHECK(!contains(alone.out, "run-input"));

    std::string text = read_bytes(split.backend);
    for (const char* line : {"k_buf = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(",
                             "k_buffer = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)"}) {
      const std::size_t at = text.find(line);
      REQUIRE(at != std::string::npos);
      const std::size_t end = text.find('\n', at);
      text.insert(end, "  # kvpatch: ignore[flashinfer-mla-kv-run-input] planned BF16 in the updaters' module");
    }
    write_bytes(split.backend, text);
    const ProcessResult marked = split.kvpatch({"check", "--isolated", "pkg"});
    CAPTURE(marked.out);
    CHECK(count(marked.out, ": ignored: ") == 2);
    CHECK(contains(marked.out, "2 run() inputs ignored"));
    // Vouched for, the casts hold nothing back: apply threads the updaters' plans.
    const ProcessResult applied = split.kvpatch({"apply", "--isolated", "pkg"});
    CAPTURE(applied.out);
    CHECK(applied.exit_code == 0);
    CHECK(count(read_bytes(split.updaters), "self.kv_data_type") == 5);  // two fields, three plans
  }

  TEST_CASE("a module named alone is linked with the other modules beside it") {
    SplitBackend split;
    const std::string updaters_before = read_bytes(split.updaters);
    // The first manual fix's miss, one level up: apply over the updaters alone used to thread all three plans.
    const ProcessResult applied =
        split.kvpatch({"apply", "--isolated", "pkg/flashinfer_mla_updaters.py"});
    CAPTURE(applied.out);
    CHECK(applied.exit_code == 1);
    CHECK(read_bytes(split.updaters) == updaters_before);
    const ProcessResult r = split.kvpatch({"check", "--isolated", "pkg/flashinfer_mla_updaters.py"});
    CAPTURE(r.out);
    CHECK(r.exit_code == 1);
    // The module beside it is reported for its two casts and their findings, nothing else of it.
    CHECK(count(r.out, "\npkg/flashinfer_mla_backend.py:") == 4);
    CHECK(count(r.out, ": run-input-unknown: ") == 2);
    CHECK(contains(r.out, "3 plan sites: 0 threaded, 3 missing"));
    // Named alone, the backend module meets plans that are not threaded: nothing to pair, as in the code today.
    const ProcessResult backend = split.kvpatch({"check", "--isolated", "pkg/flashinfer_mla_backend.py"});
    CHECK(backend.exit_code == 0);
    CHECK(!contains(backend.out, "run-input"));
    // Once the plans are threaded by hand, the backend module named alone is linked with them.
    split.thread_plans_alone();
    const ProcessResult linked = split.kvpatch({"check", "--isolated", "pkg/flashinfer_mla_backend.py"});
    CAPTURE(linked.out);
    CHECK(linked.exit_code == 1);
    CHECK(count(linked.out, ": run-input-unknown: ") == 2);
  }

  TEST_CASE("a module beside the named one that could link but does not parse stops the run; one that cannot link is passed by") {
    SplitBackend split;
    const std::string updaters_before = read_bytes(split.updaters);
    std::string text = read_bytes(split.backend);
    const std::size_t at = text.find("        reshaped_q = q.view(");
    REQUIRE(at != std::string::npos);
    text.insert(at + std::string("        reshaped_q = q.view(").size(), "(");
    write_bytes(split.backend, text);
    // Before 2026-12-02 the broken module was passed by, and apply threaded all three plans against its casts.
    const ProcessResult applied = split.kvpatch({"apply", "--isolated", "pkg/flashinfer_mla_updaters.py"});
    CHECK(applied.exit_code == 2);
    CHECK(read_bytes(split.updaters) == updaters_before);
    CHECK(contains(applied.err, "pkg/flashinfer_mla_backend.py:"));
    CHECK(contains(applied.err, "syntax error"));
    CHECK(contains(applied.err, "lies beside a named one"));
    CHECK(split.kvpatch({"diff", "--isolated", "pkg/flashinfer_mla_updaters.py"}).out.empty());
    // The control: a broken module that names no wrapper cannot link, and is none of this run's business.
    write_bytes(split.backend, "def broken(:\n");
    const ProcessResult unrelated = split.kvpatch({"apply", "--isolated", "pkg/flashinfer_mla_updaters.py"});
    CAPTURE(unrelated.err);
    CHECK(unrelated.exit_code == 0);
    CHECK(read_bytes(split.updaters) != updaters_before);
  }

  TEST_CASE("one cast vouched for still holds the plans back while the other is unvouched") {
    SplitBackend split;
    std::string text = read_bytes(split.backend);
    const std::string line = "k_buffer = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)";
    const std::size_t at = text.find(line);
    REQUIRE(at != std::string::npos);
    text.insert(text.find('\n', at), "  # kvpatch: ignore[flashinfer-mla-kv-run-input] decode planned BF16 elsewhere");
    write_bytes(split.backend, text);
    const std::string updaters_before = read_bytes(split.updaters);
    const ProcessResult applied = split.kvpatch({"apply", "--isolated", "pkg"});
    CAPTURE(applied.out);
    CHECK(applied.exit_code == 1);
    CHECK(read_bytes(split.updaters) == updaters_before);
  }
}
