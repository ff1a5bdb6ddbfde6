// A wrapper subclass's own run() with the wrapper's parameters (wrapper_overrides.h, altered_input): it binds as the
// wrapper's only when it hands each KV input on as itself, in its own place, to the wrapper's run().
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "kvpatch/module_calls.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/rule_engine.h"
#include "kvpatch/wrapper_overrides.h"

using namespace kvpatch;

namespace {
const Fp8Consumer& mla_run() {
  static const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
  for (const CastRule& cast : rules.cast_rules) {
    for (const Fp8Consumer& consumer : cast.fp8_consumers) {
      if (consumer.method == "run" && consumer.sites_rule == "flashinfer-mla-plan-kv-dtype") return consumer;
    }
  }
  FAIL("no run() consumer of the MLA plan-site rule in rules/");
  throw;
}

// What altered_input says of `def run(self, q_nope, q_pe, ckv_cache, kpe_cache, **kwargs)` with this body, in a
// subclass of the wrapper.
std::string altered(const std::string& body) {
  const std::string code = "from flashinfer import BatchMLAPagedAttentionWrapper\n\n\n"
                           "class W(BatchMLAPagedAttentionWrapper):\n"
                           "    def run(self, q_nope, q_pe, ckv_cache, kpe_cache, **kwargs):\n" +
                           body;
  const auto file = std::make_shared<const ParsedFile>(parse_source_file(SourceFile("m.py", "m.py", code)));
  const ModuleFacts facts(*file);
  const ClassFacts* cls = facts.find_class("W");
  REQUIRE(cls != nullptr);
  const FunctionFacts* def = method_found(facts, *cls, "run");
  REQUIRE(def != nullptr);
  return altered_input(*def, consumer_method(mla_run()), facts);
}
}  // namespace

TEST_SUITE("wrapper_overrides") {
  TEST_CASE("handed on as itself, in its own place: nothing altered") {
    CHECK(altered("        return super().run(q_nope, q_pe, ckv_cache, kpe_cache, **kwargs)\n").empty());
    CHECK(altered("        return super().run(q_nope, q_pe, kpe_cache=kpe_cache, ckv_cache=ckv_cache, **kwargs)\n").empty());
    CHECK(altered("        return super(W, self).run(q_nope, q_pe, ckv_cache, kpe_cache)\n").empty());
    CHECK(altered("        return BatchMLAPagedAttentionWrapper.run(self, q_nope, q_pe, ckv_cache, kpe_cache)\n").empty());
    // Twice (a retry) is still as itself each time.
    CHECK(altered("        try:\n            return super().run(q_nope, q_pe, ckv_cache, kpe_cache)\n"
                  "        except RuntimeError:\n            return super().run(q_nope, q_pe, ckv_cache, kpe_cache)\n")
              .empty());
  }

  TEST_CASE("converted, moved, read or bound again: altered, naming the statement and its line") {
    CHECK(altered("        return super().run(q_nope, q_pe, ckv_cache.to(q_nope.dtype), kpe_cache, **kwargs)\n") ==
          "does more with ckv_cache than hand it on to the wrapper's run(): return super().run(q_nope, q_pe, "
          "ckv_cache.to(q_nope.dtype), kpe_cache, **kwargs) at line 6");
    CHECK(altered("        kpe_cache = kpe_cache.float()\n        return super().run(q_nope, q_pe, ckv_cache, kpe_cache)\n") ==
          "does more with kpe_cache than hand it on to the wrapper's run(): kpe_cache = kpe_cache.float() at line 6");
    // Swapped places, a keyword of the other, after a splat, on another object, through a class that is no base.
    for (const char* body : {"        return super().run(q_nope, q_pe, kpe_cache, ckv_cache)\n",
                             "        return super().run(q_nope, q_pe, kpe_cache=ckv_cache, ckv_cache=kpe_cache)\n",
                             "        return super().run(q_nope, *extra, ckv_cache, kpe_cache)\n",
                             "        return self.inner.run(q_nope, q_pe, ckv_cache, kpe_cache)\n",
                             "        return Other.run(self, q_nope, q_pe, ckv_cache, kpe_cache)\n",
                             "        log(ckv_cache.shape)\n        return super().run(q_nope, q_pe, ckv_cache, kpe_cache)\n"}) {
      CAPTURE(body);
      CHECK_FALSE(altered(body).empty());
    }
  }

  TEST_CASE("the wrapper's plan() hands on no KV input: its overrides are judged by their parameters alone") {
    static const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    REQUIRE_FALSE(rules.plan_site_rules.empty());
    CHECK(plan_method(rules.plan_site_rules.front()).handed_on.empty());
    CHECK(consumer_method(mla_run()).handed_on == std::vector<std::string>{"ckv_cache", "kpe_cache", "kv_cache"});
  }
}
