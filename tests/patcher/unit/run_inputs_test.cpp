// run() inputs: KV data traced back to its source; conversions and unknown origins keep the plan sites unthreaded.
#include <doctest/doctest.h>

#include <algorithm>

#include "kvpatch/report.h"
#include "kvpatch/rule_engine.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
// A generation B backend whose forward_decode body is BODY (it ends in `return decode_wrapper.run(...)`).
const char* kBackend = R"PY(import torch
from flashinfer import BatchMLAPagedAttentionWrapper


class DecodeMetadata:
    decode_wrapper: BatchMLAPagedAttentionWrapper


class Backend:
    def forward_decode(self, q, layer, forward_batch, k_in):
        decode_wrapper = self.forward_metadata.decode_wrapper
BODY

class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = DTYPE

    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, qo, kv, idx, lens):
        wrapper.plan(qo, kv, idx, lens, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)
)PY";

// A FlashInfer that builds the FP8 KV plan (0.6.14 and later; against older ones no site is threaded at all),
// so a threaded run() also gets the FP8 scales edit (the cast rule file's test cases cover those).
const FlashInferVersion kFlashInfer{"0.7.2", "the unit test"};

FileReport analyse(const std::string& body, const std::string& dtype = "model_runner.dtype") {
  std::string code = kBackend;
  code.replace(code.find("BODY"), 4, body);
  code.replace(code.find("DTYPE"), 5, dtype);
  static const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
  return analyze_file(rules, test::parse(code), kFlashInfer);
}

std::vector<std::string> statuses(const FileReport& r) {
  std::vector<std::string> out;
  for (const RunInputFinding& f : r.run_inputs) out.push_back(std::string(run_input_status_name(f.status)) + " " + f.expr);
  return out;
}

// No plan site is fixed and no field is added: the report's edits are casts only (or none).
void check_nothing_threaded(const FileReport& r) {
  for (const PlanSite& s : r.plan_sites) {
    CHECK(s.status == SiteStatus::Missing);
    CHECK_FALSE(s.fix.has_value());
    CHECK(s.reason.find("decode_wrapper.run") != std::string::npos);
  }
  for (const FieldFinding& f : r.fields) CHECK_FALSE(f.fix.has_value());
  CHECK(r.edits.empty());
}

// Every run() input of the backend with this body is unknown and nothing is threaded: the first finding, as
// "expr: why" (a name passed as both ckv and kpe is found at each argument).
std::string first_unknown(const std::string& body) {
  const FileReport r = analyse(body);
  REQUIRE(!r.run_inputs.empty());
  for (const RunInputFinding& f : r.run_inputs) CHECK(f.status == RunInputStatus::Unknown);
  check_nothing_threaded(r);
  return r.run_inputs[0].expr + ": " + r.run_inputs[0].why;
}
}  // namespace

TEST_SUITE("run_inputs") {
  TEST_CASE("each spelling of a conversion the cast rule does not remove is reported; nothing is threaded") {
    const std::vector<std::pair<std::string, std::string>> spellings = {
        {"k = pool.to(q.device, q.dtype)", "pool.to(q.device, q.dtype)"},
        {"k = pool.to(dtype=torch.bfloat16)", "pool.to(dtype=torch.bfloat16)"},
        {"k = pool.to(q.dtype, copy=True)", "pool.to(q.dtype, copy=True)"},
        {"k = pool.to(torch.bfloat16)", "pool.to(torch.bfloat16)"},
        {"k = pool.bfloat16()", "pool.bfloat16()"},
        {"k = pool.type(q.dtype)", "pool.type(q.dtype)"},
        {"k = pool.float()", "pool.float()"},
        {"k = pool.view(torch.bfloat16)", "pool.view(torch.bfloat16)"},
        {"k = pool.view(dtype=q.dtype)", "pool.view(dtype=q.dtype)"},
        {"k = pool[:, :, :576].to(torch.bfloat16)", "pool[:, :, :576].to(torch.bfloat16)"},
    };
    for (const auto& spelling : spellings) {
      // References, not a structured binding: CAPTURE's lambda cannot take a binding before clang 16 (clang-tidy).
      const std::string& statement = spelling.first;
      const std::string& expr = spelling.second;
      CAPTURE(statement);
      const FileReport r = analyse("        pool = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)\n        " +
                                   statement + "\n        return decode_wrapper.run(q, q, k[:, :, :512], k[:, :, 512:])\n");
      REQUIRE(r.run_inputs.size() == 1);
      CHECK(r.run_inputs[0].status == RunInputStatus::Converted);
      CHECK(r.run_inputs[0].expr == expr);
      CHECK(r.run_inputs[0].consumer == "decode_wrapper.run at 14:16 (ckv_cache, kpe_cache)");
      CHECK(r.run_inputs[0].effect == "kvpatch leaves the wrapper's plan sites at 22:9 unthreaded");
      check_nothing_threaded(r);
      const Summary s = summarize(Run{{}, {}, {r}, {}, {}});
      CHECK(s.run_inputs_converted == 1);
      CHECK(has_findings(s));
    }
  }

  TEST_CASE("origins kvpatch cannot establish are reported unknown") {
    CHECK(first_unknown("        return decode_wrapper.run(q, q, k_in, k_in)\n") ==
          "k_in: k_in is a parameter of forward_decode(), which nothing in the module calls; kvpatch does not follow "
          "values into it");
    CHECK(first_unknown("        k = self.as_bf16(forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id))\n"
                  "        return decode_wrapper.run(q, q, k, k)\n") ==
          "self.as_bf16(forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)): "
          "self.as_bf16() is not known to keep the dtype of the KV data");
    CHECK(first_unknown("        k = dequant(forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id))\n"
                  "        return decode_wrapper.run(q, q, k, k)\n") ==
          "dequant(forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)): dequant() is a function kvpatch does not follow");
    CHECK(first_unknown("        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).view(self.layout)\n"
                  "        return decode_wrapper.run(q, q, k, k)\n") ==
          "forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).view(self.layout): "
          ".view(self.layout) may take a dtype, which reinterprets the KV bytes; kvpatch cannot tell");
    CHECK(first_unknown("        return decode_wrapper.run(q, q, KV_POOL, KV_POOL)\n") ==
          "KV_POOL: KV_POOL is not a local; kvpatch does not follow module-level values");
    CHECK(first_unknown("        return decode_wrapper.run(q, q, self.cached_kv, self.cached_kv)\n") ==
          "self.cached_kv: self.cached_kv is not a KV source rule flashinfer-mla-kv-cast knows");
    CHECK(first_unknown("        return decode_wrapper.run(q, q, *self.kv_parts)\n").find("cannot see which value") != std::string::npos);
    CHECK(first_unknown("        for k in self.pools:\n            pass\n        return decode_wrapper.run(q, q, k, k)\n")
              .find("which kvpatch does not follow") != std::string::npos);
  }

  TEST_CASE("a plan whose KV dtype kvpatch cannot tell is unknown, and the report says which value") {
    const FileReport r = analyse("        return decode_wrapper.run(q, q, k_in, k_in)\n", "model_runner.weird");
    REQUIRE(r.plan_sites.size() == 1);
    CHECK(r.plan_sites[0].status == SiteStatus::Unknown);
    CHECK_FALSE(r.plan_sites[0].fix.has_value());
    const std::string text = text_report(Run{{}, {}, {r}, {}, {}});
    CHECK(text.find("wrapper.plan binds q_data_type=self.data_type, kv_data_type=self.data_type (unknown dtype); "
                    "cannot tell which dtype model_runner.weird holds [flashinfer-mla-plan-kv-dtype]") != std::string::npos);
  }

  TEST_CASE("KV data passed into a helper method is traced back through every call of the helper the module shows") {
    const std::string helper = "\n    def _run(self, q, kv, scale=None):\n"
                               "        return self.forward_metadata.decode_wrapper.run(q, q, kv, kv)\n";
    const std::string call = "        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)\n"
                             "        return self._run(q, k)\n";
    const FileReport reached = analyse(call + helper);
    CHECK(statuses(reached).empty());
    REQUIRE(reached.plan_sites.size() == 1);
    CHECK(reached.plan_sites[0].fix.has_value());

    // Another call passes data from elsewhere: that value is the one reported.
    CHECK(first_unknown(call + "\n    def forward_extend(self, q):\n        return self._run(q, self.cached_kv)\n" + helper) ==
          "self.cached_kv: self.cached_kv is not a KV source rule flashinfer-mla-kv-cast knows");
    // A call leaves the parameter to its default.
    CHECK(first_unknown("        return self._run(q)\n"
                  "\n    def _run(self, q, kv=SHARED_KV):\n"
                  "        return self.forward_metadata.decode_wrapper.run(q, q, kv, kv)\n") ==
          "kv: the call of _run() at 12:16 leaves kv to its default SHARED_KV");
    // The helper is handed on as a value: its other calls cannot be seen.
    CHECK(first_unknown(call + "        self.later = functools.partial(self._run, q)\n" + helper) ==
          "kv: kv is a parameter of _run(), which the module may not show every call of; kvpatch does not follow "
          "values into it");
    // A call that unpacks cannot be bound.
    CHECK(first_unknown("        return self._run(q, *self.parts)\n" + helper) ==
          "kv: the call of _run() at 12:16 binds kv to nothing known (call unpacks *self.parts; its arguments cannot "
          "be bound statically)");
  }

  TEST_CASE("KV data a helper of the module returns is traced into the helper's return values") {
    const FileReport reached = analyse("        return decode_wrapper.run(q, q, self._kv(layer), self._kv(layer))\n"
                                       "\n    def _kv(self, layer):\n"
                                       "        return self.pool.get_key_buffer(layer.layer_id)\n");
    CHECK(statuses(reached).empty());
    REQUIRE(reached.plan_sites.size() == 1);
    CHECK(reached.plan_sites[0].fix.has_value());

    // A conversion inside the helper is reported where it is; so is what its parameter is passed.
    const FileReport converted = analyse("        k = self._as_bf16(self.pool.get_key_buffer(layer.layer_id))\n"
                                         "        return decode_wrapper.run(q, q, k, k)\n"
                                         "\n    def _as_bf16(self, pool):\n"
                                         "        return pool.to(torch.bfloat16)\n");
    CHECK(statuses(converted) == std::vector<std::string>{"run-input-converted pool.to(torch.bfloat16)"});
    check_nothing_threaded(converted);

    // A helper that may return None at its end, or is a generator, holds nothing kvpatch can follow.
    CHECK(first_unknown("        return decode_wrapper.run(q, q, self._kv(layer), self._kv(layer))\n"
                        "\n    def _kv(self, layer):\n"
                        "        if layer.cached:\n"
                        "            return self.pool.get_key_buffer(layer.layer_id)\n") ==
          "self._kv(layer): _kv() may end without a return kvpatch can follow (a generator, or code after its last "
          "return)");
  }

  TEST_CASE("views, slices, locals, branches, unpacking and keywords reach the KV source: the plan is threaded") {
    const FileReport r = analyse(
        "        pool = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)\n"
        "        if layer.flat:\n"
        "            pool = pool.view(-1, 1, 576).contiguous()\n"
        "        else:\n"
        "            pool = pool.reshape(pool.shape)\n"
        "        ckv, kpe = pool.split([512, 64], dim=-1)\n"
        "        kpe = kpe if layer.rope else kpe.squeeze(1).unsqueeze(1)\n"
        "        return decode_wrapper.run(q, q, kpe_cache=kpe, ckv_cache=ckv[:, :, :], **self.run_kwargs)\n");
    CHECK(statuses(r).empty());
    REQUIRE(r.plan_sites.size() == 1);
    CHECK(r.plan_sites[0].fix.has_value());
    CHECK(r.edits.size() == 2);  // the field and the plan site
  }

  TEST_CASE("a move to another device keeps the dtype: it is followed and the plan is threaded") {
    for (const std::string move : {"pool.to(\"cuda\")", "pool.to('cuda:1')", "pool.to(device)", "pool.to(q.device)",
                                   "pool.to(device=q.device)", "pool.to(torch.device(\"cuda:0\"))", "pool.cuda()",
                                   "pool.cuda(0)", "pool.to(q.device, non_blocking=True)", "pool.contiguous()",
                                   "pool.to(self.kv_device, copy=True)", "pool.cpu()", "pool.to(0).cuda(device=q.device)"}) {
      CAPTURE(move);
      const FileReport r = analyse("        pool = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)\n        k = " +
                                   move + "\n        return decode_wrapper.run(q, q, k[:, :, :512], k[:, :, 512:])\n");
      CHECK(statuses(r).empty());
      REQUIRE(r.plan_sites.size() == 1);
      CHECK(r.plan_sites[0].fix.has_value());
      CHECK(r.edits.size() == 3);  // the field, the plan site and run()'s FP8 scales
    }
  }

  TEST_CASE("a tensor argument, a dtype beside the device or a value that may not be a device is still reported") {
    const std::vector<std::pair<std::string, std::string>> reported = {
        {"pool.to(q)", "run-input-converted pool.to(q)"},  // dtype and device of q
        {"pool.to(q.device, q.dtype)", "run-input-converted pool.to(q.device, q.dtype)"},
        {"pool.to(device, dtype=q.dtype)", "run-input-converted pool.to(device, dtype=q.dtype)"},
        {"pool.to(device=q.device, dtype=torch.bfloat16)", "run-input-converted pool.to(device=q.device, dtype=torch.bfloat16)"},
        {"pool.to(where)", "run-input-converted pool.to(where)"},
        {"pool.to(\"bfloat16\")", "run-input-converted pool.to(\"bfloat16\")"},
        {"pool.to(b\"cuda\")", "run-input-converted pool.to(b\"cuda\")"},
        {"pool.to(*placement)", "run-input-converted pool.to(*placement)"},
        {"pool.to(q.device, q.device)", "run-input-converted pool.to(q.device, q.device)"},
        {"pool.cuda(where)", "run-input-unknown pool.cuda(where)"},
        {"pool.cpu(q.device)", "run-input-unknown pool.cpu(q.device)"},
    };
    for (const auto& report : reported) {
      const std::string& move = report.first;  // a reference: see the loop over spellings above
      const std::string& expected = report.second;
      CAPTURE(move);
      const FileReport r = analyse("        pool = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)\n        k = " +
                                   move + "\n        return decode_wrapper.run(q, q, k, k)\n");
      CHECK(statuses(r) == std::vector<std::string>{expected});
      check_nothing_threaded(r);
    }
  }

  TEST_CASE("a cast the rule removes is followed through; one it must keep is a conversion") {
    const FileReport removed = analyse(
        "        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)\n"
        "        return decode_wrapper.run(q, q, k[:, :, :512], k[:, :, 512:])\n");
    CHECK(statuses(removed).empty());
    CHECK(removed.edits.size() == 4);  // the field, the plan site, the cast and run()'s FP8 scales

    // The BF16 copy also feeds a checksum, so the cast stays, and run() would get it.
    const FileReport kept = analyse(
        "        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)\n"
        "        checksum(k)\n"
        "        return decode_wrapper.run(q, q, k[:, :, :512], k[:, :, 512:])\n");
    REQUIRE(kept.run_inputs.size() == 1);
    CHECK(kept.run_inputs[0].status == RunInputStatus::Converted);
    CHECK(kept.run_inputs[0].why == "the cast stays, since it is needed by checksum at 13:9");
    REQUIRE(kept.casts.size() == 1);
    CHECK_FALSE(kept.casts[0].redundant);
    check_nothing_threaded(kept);

    // A cast kept by an ignore comment is kept for run() too: its wrapper cannot be planned for the KV dtype.
    const FileReport ignored = analyse(
        "        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)  "
        "# kvpatch: ignore[flashinfer-mla-kv-cast] audit build\n"
        "        return decode_wrapper.run(q, q, k[:, :, :512], k[:, :, 512:])\n");
    REQUIRE(ignored.run_inputs.size() == 1);
    CHECK(ignored.run_inputs[0].why == "the cast stays, suppressed by kvpatch: ignore: audit build");
    check_nothing_threaded(ignored);
    // The cast's own line says it stays and why, not that a consumer needs it.
    const std::string text = text_report(Run{{}, {}, {ignored}, {}, {}});
    CHECK(text.find(".to(q.dtype) stays: suppressed by kvpatch: ignore: audit build [flashinfer-mla-kv-cast]\n") !=
          std::string::npos);
    CHECK(text.find("is needed by suppressed") == std::string::npos);
  }

  TEST_CASE("an ignore comment on the run() call vouches for its inputs: reported ignored, the plan is threaded") {
    const FileReport r = analyse("        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).float()\n"
                                 "        return decode_wrapper.run(q, q, k, k)  "
                                 "# kvpatch: ignore[flashinfer-mla-kv-run-input] this fork's FlashInfer takes FP32 KV\n");
    REQUIRE(r.run_inputs.size() == 1);
    const RunInputFinding& f = r.run_inputs[0];
    CHECK(f.ignored);
    CHECK(std::string(run_input_label(f)) == "ignored");
    CHECK(f.status == RunInputStatus::Converted);  // what it would have been
    CHECK(f.rule == "flashinfer-mla-kv-run-input");
    CHECK(f.ignore_reason == "this fork's FlashInfer takes FP32 KV");
    CHECK(f.effect == "suppressed by kvpatch: ignore: this fork's FlashInfer takes FP32 KV; it keeps no plan site of the wrapper unthreaded");
    REQUIRE(r.plan_sites.size() == 1);
    CHECK(r.plan_sites[0].fix.has_value());
    CHECK(r.edits.size() == 3);  // the field, the plan site and run()'s FP8 scales
    const Run run{{}, {}, {r}, {}, {}};
    const Summary s = summarize(run);
    CHECK(s.run_inputs_ignored == 1);
    CHECK(s.run_inputs_converted == 0);
    CHECK(has_findings(s));  // the plan site is still missing before apply
    const std::string text = text_report(run);
    CHECK(text.find("snippet.py:12:13: ignored: Backend.forward_decode: forward_batch.token_to_kv_pool.get_key_buffer("
                    "layer.layer_id).float() converts the KV data decode_wrapper.run at 13:16 (ckv_cache, kpe_cache) takes: ") !=
          std::string::npos);
    CHECK(text.find("[flashinfer-mla-kv-run-input]\n") != std::string::npos);
    CHECK(text.find("; 1 run() inputs ignored; 1 FP8 run() calls: 0 with scales, 1 without; 3 edits\n") != std::string::npos);
    CHECK(text.find("unsafe") == std::string::npos);
    const std::string json = json_report(run);
    CHECK(json.find("\"status\": \"ignored\"") != std::string::npos);
    CHECK(json.find("\"ignored_status\": \"run-input-converted\"") != std::string::npos);
    CHECK(json.find("\"reason\": \"this fork's FlashInfer takes FP32 KV\"") != std::string::npos);
    CHECK(json.find("\"run_inputs_ignored\": 1") != std::string::npos);
  }

  TEST_CASE("an ignore comment on one argument's line covers that argument only") {
    const FileReport r = analyse("        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).float()\n"
                                 "        return decode_wrapper.run(\n"
                                 "            q, q,\n"
                                 "            k[:, :, :512],  # kvpatch: ignore[flashinfer-mla-kv-run-input]\n"
                                 "            k[:, :, 512:],\n"
                                 "        )\n");
    // The same conversion, met by both arguments: ignored for ckv_cache, still unsafe for kpe_cache.
    REQUIRE(r.run_inputs.size() == 2);
    const auto ignored = std::find_if(r.run_inputs.begin(), r.run_inputs.end(), [](const RunInputFinding& f) { return f.ignored; });
    const auto unsafe = std::find_if(r.run_inputs.begin(), r.run_inputs.end(), [](const RunInputFinding& f) { return !f.ignored; });
    REQUIRE(ignored != r.run_inputs.end());
    REQUIRE(unsafe != r.run_inputs.end());
    CHECK(ignored->consumer == "decode_wrapper.run at 13:16 (ckv_cache)");
    CHECK(ignored->ignore_reason.empty());
    CHECK(ignored->effect == "suppressed by kvpatch: ignore; it keeps no plan site of the wrapper unthreaded");
    CHECK(unsafe->consumer == "decode_wrapper.run at 13:16 (kpe_cache)");
    CHECK(unsafe->status == RunInputStatus::Converted);
    check_nothing_threaded(r);
  }

  TEST_CASE("the cast rule's own id, or an ignore on another line, does not vouch for a run() input") {
    for (const std::string body :
         {"        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).float()\n"
          "        return decode_wrapper.run(q, q, k, k)  # kvpatch: ignore[flashinfer-mla-kv-cast] fp32\n",
          "        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).float()  "
          "# kvpatch: ignore[flashinfer-mla-kv-run-input] fp32\n"
          "        return decode_wrapper.run(q, q, k, k)\n"}) {
      CAPTURE(body);
      const FileReport r = analyse(body);
      REQUIRE(r.run_inputs.size() == 1);
      CHECK_FALSE(r.run_inputs[0].ignored);
      check_nothing_threaded(r);
    }
  }

  TEST_CASE("an assignment after run() does not reach it; one in an enclosing loop does") {
    const FileReport after = analyse(
        "        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)\n"
        "        o = decode_wrapper.run(q, q, k, k)\n"
        "        k = None\n"
        "        k = o.float()\n"
        "        return o\n");
    CHECK(statuses(after).empty());
    const FileReport looped = analyse(
        "        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)\n"
        "        for step in range(2):\n"
        "            o = decode_wrapper.run(q, q, k, k)\n"
        "            k = k.half()\n"
        "        return o\n");
    CHECK(statuses(looped) == std::vector<std::string>{"run-input-converted k.half()"});
  }

  TEST_CASE("plan sites already threaded: the conversion is reported, there is nothing to withhold") {
    const FileReport r = analyse(
        "        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).float()\n"
        "        return decode_wrapper.run(q, q, k, k)\n",
        "model_runner.kv_cache_dtype");
    REQUIRE(r.run_inputs.size() == 1);
    CHECK(r.run_inputs[0].effect ==
          "the plan sites at 21:9 already plan the KV-cache dtype, so run() is handed another dtype than planned");
    CHECK(r.plan_sites[0].status == SiteStatus::Threaded);
  }

  TEST_CASE("a cast kept for one wrapper's run() withholds the other wrapper's sites too") {
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    const FileReport r = analyze_file(rules, test::parse(R"PY(from flashinfer import BatchMLAPagedAttentionWrapper


class Backend:
    def __init__(self):
        self.decode_wrapper = BatchMLAPagedAttentionWrapper(ws)
        self.prefill_wrapper = BatchMLAPagedAttentionWrapper(ws)

    def forward_decode(self, q, layer, forward_batch):
        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)
        self.prefill_wrapper.run(q, q, k, self.rope_cache)
        return self.decode_wrapper.run(q, q, k, k)


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype

    def plan(self, wrapper: BatchMLAPagedAttentionWrapper):
        wrapper.plan(1, 2, 3, 4, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)


class FlashInferMLAIndicesUpdaterPrefill:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype

    def plan(self, wrapper: BatchMLAPagedAttentionWrapper):
        wrapper.plan(1, 2, 3, 4, 16, 512, 64, 1, True, 0.1, self.data_type, self.data_type)
)PY"));
    // Round one: the cast is redundant, but prefill's rope_cache is of unknown origin, so prefill stays; round
    // two: the cast now feeds a wrapper with a missing site, so it stays, and decode_wrapper.run would get
    // that BF16 copy: decode stays too.
    CHECK(statuses(r) == std::vector<std::string>{"run-input-converted forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)",
                                                  "run-input-unknown self.rope_cache"});
    REQUIRE(r.casts.size() == 1);
    CHECK_FALSE(r.casts[0].redundant);
    for (const PlanSite& s : r.plan_sites) CHECK_FALSE(s.fix.has_value());
    CHECK(r.edits.empty());
  }

  TEST_CASE("a run() on a receiver of unknown type counts when KV data reaches it") {
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    const FileReport r = analyze_file(rules, test::parse(R"PY(from flashinfer import BatchMLAPagedAttentionWrapper


class Backend:
    def forward_decode(self, q, layer, forward_batch):
        wrapper = self.forward_metadata.decode_wrapper
        self.profiler.run(q, q, self.marks, self.marks)
        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)
        return wrapper.run(q, q, k, k)


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype

    def plan(self, wrapper: BatchMLAPagedAttentionWrapper):
        wrapper.plan(1, 2, 3, 4, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type)
)PY"));
    // The cast stays (its consumer is not known to be the wrapper); if it is, threading would break it.
    REQUIRE(r.run_inputs.size() == 1);
    CHECK(r.run_inputs[0].status == RunInputStatus::Converted);
    CHECK(r.run_inputs[0].consumer ==
          "wrapper.run at 9:16 (ckv_cache, kpe_cache; its receiver is not known to be a BatchMLAPagedAttentionWrapper but may be)");
    REQUIRE(r.plan_sites.size() == 1);
    CHECK_FALSE(r.plan_sites[0].fix.has_value());
    CHECK(r.edits.empty());
  }

  TEST_CASE("a cast's value tested `is None` / `is not None` is no consumer; another comparison is, quoted") {
    const FileReport tested = analyse("        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)\n"
                                      "        if k is not None and None is not k:\n"
                                      "            return decode_wrapper.run(q, q, k, k)\n");
    REQUIRE(tested.casts.size() == 1);
    CHECK(tested.casts[0].redundant);
    CHECK(tested.casts[0].consumer == "decode_wrapper.run at 14:20");
    const FileReport compared = analyse("        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)\n"
                                        "        if (k == 0).any():\n"
                                        "            return decode_wrapper.run(q, q, k, k)\n");
    REQUIRE(compared.casts.size() == 1);
    CHECK_FALSE(compared.casts[0].redundant);
    CHECK(compared.casts[0].consumer.find("`k == 0` at 13:13") != std::string::npos);
  }

  TEST_CASE("the report: text lines, the summary clause, JSON") {
    const FileReport r = analyse("        k = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).bfloat16()\n"
                                 "        return decode_wrapper.run(q, q, k, k)\n");
    const Run run{{}, {}, {r}, {}, {}};
    const std::string text = text_report(run);
    CHECK(text.find("snippet.py:12:13: run-input-converted: Backend.forward_decode: "
                    "forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).bfloat16() converts the KV data "
                    "decode_wrapper.run at 13:16 (ckv_cache, kpe_cache) takes: ") != std::string::npos);
    CHECK(text.find("; 1 run() inputs unsafe: 1 converted, 0 unknown; 0 edits\n") != std::string::npos);
    const std::string json = json_report(run);
    CHECK(json.find("\"status\": \"run-input-converted\"") != std::string::npos);
    CHECK(json.find("\"run_inputs_converted\": 1") != std::string::npos);
    // Without unsafe inputs the summary line keeps its usual shape.
    CHECK(summary_line(Summary{}).find("run()") == std::string::npos);
  }
}
