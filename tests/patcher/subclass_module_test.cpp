// A subclass of the wrapper defined in one module and built in another (a fork's traced or timed wrapper). Each file
// is analysed on its own, so before project_classes.h the backend that imports the subclass read its instances as
// another class: its plan() calls were no sites, the module was not even selected (it never names the wrapper), and
// check exited 0 with all three plans unthreaded. Over a run that holds the subclass's module, they are the wrapper's.
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

const std::string kWrapper = "BatchMLAPagedAttentionWrapper";
const std::string kImport = "from flashinfer import BatchMLAPagedAttentionWrapper, BatchPrefillWithRaggedKVCacheWrapper\n";

const std::string kTraced =
    "from flashinfer import BatchMLAPagedAttentionWrapper\n\n\n"
    "class TracedMLAWrapper(BatchMLAPagedAttentionWrapper):\n"
    "    \"\"\"Counts run() calls for a profiler.\"\"\"\n\n"
    "    calls = 0\n\n"
    "    def run(self, *args, **kwargs):\n"
    "        TracedMLAWrapper.calls += 1\n"
    "        return super().run(*args, **kwargs)\n";

// The generation-B fixture in package pkg, its wrapper replaced by `spelled` (every use) bound by `imports` (one
// line, in place of the fixture's flashinfer import: the findings' lines are the fixture's plus one), beside the
// modules given.
struct SubclassBackend {
  TempDir scratch{"kvpatch-subclass-module"};
  fs::path package = scratch.path() / "pkg";
  fs::path backend = package / "flashinfer_mla_backend.py";

  SubclassBackend(const std::string& imports, const std::string& spelled,
                  const std::vector<std::pair<std::string, std::string>>& modules = {{"traced.py", kTraced}}) {
    std::string source = fixture_source("gen-b-unpatched");
    const std::size_t at = source.find(kImport);
    REQUIRE(at != std::string::npos);
    source.replace(at, kImport.size(), "from flashinfer import BatchPrefillWithRaggedKVCacheWrapper\n" + imports);
    for (std::size_t w = source.find(kWrapper); w != std::string::npos; w = source.find(kWrapper, w + spelled.size())) {
      source.replace(w, kWrapper.size(), spelled);
    }
    REQUIRE(!contains(source, kWrapper));
    fs::create_directories(package);
    write_bytes(package / "__init__.py", "");
    write_bytes(backend, source);
    for (const auto& [name, text] : modules) write_bytes(package / name, text);
  }

  ProcessResult kvpatch(const std::vector<std::string>& args) const { return run_kvpatch(args, scratch.path()); }
};

// TaggedMLAWrapper, whose own def of `method` takes a tag first, in tagged.py; DeeperMLAWrapper, a subclass of it, in
// deeper.py. The two class names a backend may be built on.
const std::vector<std::string> kTaggedClasses = {"TaggedMLAWrapper", "DeeperMLAWrapper"};
std::vector<std::pair<std::string, std::string>> tagged_modules(const std::string& method) {
  return {{"tagged.py", "from flashinfer import BatchMLAPagedAttentionWrapper\n\n\n"
                        "class TaggedMLAWrapper(BatchMLAPagedAttentionWrapper):\n"
                        "    def " + method + "(self, tag, *args, **kwargs):\n"
                        "        return super()." + method + "(*args, **kwargs)\n"},
          {"deeper.py", "from .tagged import TaggedMLAWrapper\n\n\nclass DeeperMLAWrapper(TaggedMLAWrapper):\n    pass\n"}};
}
std::string tagged_import(const std::string& name) {
  return "from ." + std::string(name == "TaggedMLAWrapper" ? "tagged" : "deeper") + " import " + name + "\n";
}

// What check reports for the unpatched fixture, one line below its own findings.
void check_unpatched(const ProcessResult& r) {
  CAPTURE(r.out);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.out, "3 plan sites: 0 threaded, 3 missing, 0 gated, 0 unknown, 0 ignored; 2 casts: 2 redundant, "
                        "0 required"));
  CHECK(contains(r.out, "flashinfer_mla_backend.py:211:13: missing: FlashInferMLAIndicesUpdaterPrefill.call_begin_forward: "
                        "wrapper_paged.plan binds q_data_type=self.q_data_type, kv_data_type=self.data_type"));
  CHECK(contains(r.out, "flashinfer_mla_backend.py:180:9: missing: FlashInferMLAIndicesUpdaterPrefill.__init__: no KV "
                        "dtype field"));
}

// What check reports when both run() calls may run an override that does not bind: nothing can be fixed, so check exits
// 1 with that summary and each message, and apply exits 1 leaving the backend as it was.
void check_runs_unbound(const SubclassBackend& pkg, const std::vector<std::string>& messages) {
  const std::string before = read_bytes(pkg.backend);
  const ProcessResult r = pkg.kvpatch({"check", "--isolated", "pkg"});
  CAPTURE(r.out);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.out, "3 plan sites: 0 threaded, 3 missing, 0 gated, 0 unknown, 0 ignored; 2 casts: 0 redundant, "
                        "2 required; 2 run() inputs unsafe: 0 converted, 2 unknown; 0 edits"));
  for (const std::string& m : messages) CHECK(contains(r.out, m));
  CHECK(pkg.kvpatch({"apply", "--isolated", "pkg"}).exit_code == 1);
  CHECK(read_bytes(pkg.backend) == before);
}
}  // namespace

TEST_SUITE("subclass_module") {
  TEST_CASE("a subclass imported from a module beside the backend is the wrapper: check fails, apply fixes it") {
    SubclassBackend pkg("from .traced import TracedMLAWrapper\n", "TracedMLAWrapper");
    check_unpatched(pkg.kvpatch({"check", "--isolated", "pkg"}));
    // Named alone, the backend's directory is read for the classes too.
    check_unpatched(pkg.kvpatch({"check", "--isolated", "pkg/flashinfer_mla_backend.py"}));
    const ProcessResult applied = pkg.kvpatch({"apply", "--isolated", "pkg"});
    CAPTURE(applied.out);
    CHECK(applied.exit_code == 0);
    const std::string patched = read_bytes(pkg.backend);
    CHECK(contains(patched, "self.kv_data_type = getattr(model_runner, \"kv_cache_dtype\", model_runner.dtype)"));
    const ProcessResult after = pkg.kvpatch({"check", "--isolated", "pkg"});
    CAPTURE(after.out);
    CHECK(after.exit_code == 0);
    CHECK(contains(after.out, "3 plan sites: 3 threaded, 0 missing"));
    CHECK(read_bytes(pkg.package / "traced.py") == kTraced);
  }

  TEST_CASE("imported by its absolute name, read on its module, or from its package") {
    check_unpatched(SubclassBackend("from pkg.traced import TracedMLAWrapper\n", "TracedMLAWrapper")
                        .kvpatch({"check", "--isolated", "pkg"}));
    check_unpatched(SubclassBackend("from . import traced\n", "traced.TracedMLAWrapper").kvpatch({"check", "--isolated", "pkg"}));
    check_unpatched(SubclassBackend("import pkg.traced\n", "pkg.traced.TracedMLAWrapper").kvpatch({"check", "--isolated", "pkg"}));
    // Re-exported by the package's __init__.py.
    check_unpatched(SubclassBackend("from pkg import TracedMLAWrapper\n", "TracedMLAWrapper",
                                    {{"traced.py", kTraced}, {"__init__.py", "from .traced import TracedMLAWrapper\n"}})
                        .kvpatch({"check", "--isolated", "pkg"}));
  }

  TEST_CASE("a subclass of the subclass, in a third module") {
    const std::string timed = "from .traced import TracedMLAWrapper as Traced\n\n\nclass TimedMLAWrapper(Traced):\n    pass\n";
    check_unpatched(SubclassBackend("from .timed import TimedMLAWrapper\n", "TimedMLAWrapper",
                                    {{"traced.py", kTraced}, {"timed.py", timed}})
                        .kvpatch({"check", "--isolated", "pkg"}));
  }

  TEST_CASE("a subclass whose own plan() takes other parameters: its instances' calls are bound to nothing") {
    // Bound as the wrapper's, `w.plan(tag, ...)` would put the query's dtype on kv_data_type, and the fix replace it.
    for (const std::string& name : kTaggedClasses) {
      CAPTURE(name);
      const SubclassBackend pkg(tagged_import(name), name, tagged_modules("plan"));
      const std::string before = read_bytes(pkg.backend);
      const ProcessResult r = pkg.kvpatch({"check", "--isolated", "pkg"});
      CAPTURE(r.out);
      CHECK(r.exit_code == 1);
      CHECK(contains(r.out, "4 plan sites: 0 threaded, 0 missing, 0 gated, 4 unknown"));  // with the override's super()
      CHECK(contains(r.out, "flashinfer_mla_backend.py:211:13: unknown: FlashInferMLAIndicesUpdaterPrefill.call_begin_forward: "
                            "wrapper_paged.plan; wrapper_paged may be a "));
      CHECK(contains(r.out, ", whose own plan(self, tag, *args, **kwargs) (tagged.py:5) neither takes the wrapper's "
                            "parameters in their order nor only hands them on"));
      // apply adds the updaters' KV fields (their sites are unknown, not another class's) and passes them nowhere.
      CHECK(contains(r.out, "2 casts: 0 redundant, 2 required; 2 edits"));
      const ProcessResult applied = pkg.kvpatch({"apply", "--isolated", "pkg"});
      CHECK(applied.exit_code == 1);
      const std::string after = read_bytes(pkg.backend);
      CHECK(after != before);
      std::size_t uses = 0;
      for (std::size_t at = after.find("self.kv_data_type"); at != std::string::npos; at = after.find("self.kv_data_type", at + 1)) ++uses;
      CHECK(uses == 2);
    }
  }

  TEST_CASE("a subclass whose own run() takes other parameters: its calls' KV inputs cannot be told, so nothing changes") {
    // Bound as the wrapper's, `w.run(tag, ...)` would read the KV inputs from the wrong arguments; its casts stay, and
    // the plans they guard stay unthreaded.
    for (const std::string& name : kTaggedClasses) {
      CAPTURE(name);
      check_runs_unbound(SubclassBackend(tagged_import(name), name, tagged_modules("run")),
                         {"flashinfer_mla_backend.py:107:13: run-input-unknown: ",
                          "the arguments of decode_wrapper.run at 107:13 may not be the wrapper's: decode_wrapper may "
                          "be a ",
                          ", whose own run(self, tag, *args, **kwargs) (tagged.py:5) neither takes the wrapper's "
                          "parameters in their order nor only hands them on"});
    }
  }

  TEST_CASE("a subclass whose own run() converts the KV cache it is given: its calls are unknown, so nothing changes") {
    // Its parameters are the wrapper's, but the cast moved into it: threaded plans would get BF16 KV data from it.
    const std::string casting = "from flashinfer import BatchMLAPagedAttentionWrapper\n\n\n"
                                "class CastingMLAWrapper(BatchMLAPagedAttentionWrapper):\n"
                                "    def run(self, q_nope, q_pe, ckv_cache, kpe_cache, **kwargs):\n"
                                "        ckv_cache = ckv_cache.to(q_nope.dtype)\n"
                                "        return super().run(q_nope, q_pe, ckv_cache, kpe_cache, **kwargs)\n";
    check_runs_unbound(SubclassBackend("from .casting import CastingMLAWrapper\n", "CastingMLAWrapper",
                                       {{"casting.py", casting}}),
                       {", whose own run(self, q_nope, q_pe, ckv_cache, kpe_cache, **kwargs) (casting.py:5) does "
                        "more with ckv_cache than hand it on to the wrapper's run(): ckv_cache = "
                        "ckv_cache.to(q_nope.dtype) at line 6"});
  }

  TEST_CASE("a name another module binds to the wrapper or to another class: its plan() calls are unknown sites") {
    // A compatibility module whose fallback is another class: what the backend builds may be either, so its plans
    // can be neither passed nor fixed. Before 2026-12-07 the name was not exported: no site, check exit 0.
    const std::string compat = "try:\n    from flashinfer import BatchMLAPagedAttentionWrapper\n\n"
                               "    MLAWrapper = BatchMLAPagedAttentionWrapper\nexcept ImportError:\n"
                               "    from .fallback import FallbackMLAWrapper\n\n    MLAWrapper = FallbackMLAWrapper\n";
    // Not a structured binding: clang 14 cannot capture one (CAPTURE).
    for (const std::pair<std::string, std::string>& use : std::vector<std::pair<std::string, std::string>>{
             {"from .compat import MLAWrapper\n", "MLAWrapper"}, {"from . import compat\n", "compat.MLAWrapper"}}) {
      const std::string& spelled = use.second;
      CAPTURE(spelled);
      const SubclassBackend pkg(use.first, spelled, {{"compat.py", compat}});
      const std::string before = read_bytes(pkg.backend);
      const ProcessResult r = pkg.kvpatch({"check", "--isolated", "pkg"});
      CAPTURE(r.out);
      CHECK(r.exit_code == 1);
      CHECK(contains(r.out, "3 plan sites: 0 threaded, 0 missing, 0 gated, 3 unknown, 0 ignored; 2 casts: 0 redundant, "
                            "2 required"));
      CHECK(contains(r.out, "flashinfer_mla_backend.py:211:13: unknown: FlashInferMLAIndicesUpdaterPrefill.call_begin_forward: "
                            "wrapper_paged.plan binds"));
      // apply adds the two KV dtype fields (a hand fix needs them), leaves plans and casts as they are, and exits 1 for
      // what is left.
      CHECK(pkg.kvpatch({"apply", "--isolated", "pkg"}).exit_code == 1);
      std::string after = read_bytes(pkg.backend);
      const std::string field = "        self.kv_data_type = getattr(model_runner, \"kv_cache_dtype\", model_runner.dtype)\n";
      for (int n = 0; n < 2; ++n) {
        const std::size_t at = after.find(field);
        REQUIRE(at != std::string::npos);
        after.erase(at, field.size());
      }
      CHECK(after == before);
    }
  }

  TEST_CASE("a class of the same name from a module where it is no wrapper stays another class") {
    const std::string other = "class TracedMLAWrapper:\n    def plan(self, *args):\n        pass\n";
    const SubclassBackend pkg("from .other import TracedMLAWrapper\n", "TracedMLAWrapper",
                              {{"traced.py", kTraced}, {"other.py", other}});
    const ProcessResult r = pkg.kvpatch({"check", "--isolated", "pkg"});
    CAPTURE(r.out);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "0 plan sites"));
  }
}
