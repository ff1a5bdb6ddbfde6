// Receiver typing (is this the MLA wrapper?) and dtype roles (is this the KV-cache dtype?).
#include <doctest/doctest.h>

#include "kvpatch/dtype_roles.h"
#include "kvpatch/module_facts.h"
#include "kvpatch/wrapper_types.h"
#include "test_support.h"

using namespace kvpatch;

namespace {
const char* kModule = R"PY(
from dataclasses import dataclass
from flashinfer import BatchMLAPagedAttentionWrapper as W0
from flashinfer import BatchMLAPagedAttentionWrapper, BatchPrefillWithRaggedKVCacheWrapper
from flashinfer import BatchPrefillWithPagedKVCacheWrapper, NewMLAWrapper
import flashinfer as fi
import flashinfer.mla
from torch.cuda import CUDAGraph


class GraphWrapper(W0):
    pass


class DeeperWrapper(GraphWrapper):
    pass


class FromNew(fi.NewMLAWrapper):
    pass


@dataclass
class DecodeMetadata:
    decode_wrapper: BatchMLAPagedAttentionWrapper


class Backend:
    def __init__(self, model_runner):
        self.decode_wrapper = BatchMLAPagedAttentionWrapper(ws)
        self.ragged = BatchPrefillWithRaggedKVCacheWrapper(ws)
        self.graph = {}
        self.steps = []
        self.data_type = model_runner.dtype
        self.kv_cache_dtype = model_runner.kv_cache_dtype

    def capture(self, bs):
        w = BatchMLAPagedAttentionWrapper(ws)
        self.graph[bs] = w
        self.steps.append(BatchMLAPagedAttentionWrapper(ws))

    def uses(self, bs, given: Optional[BatchMLAPagedAttentionWrapper], other: BatchPrefillWithRaggedKVCacheWrapper, plain):
        a = self.decode_wrapper
        b = self.graph[bs]
        for c in self.steps:
            pass
        d = self.forward_metadata.decode_wrapper
        e = given or self.decode_wrapper
        f = self.ragged
        g = plain
        h = [self.decode_wrapper, BatchMLAPagedAttentionWrapper(ws)][0]
        return a, b, c, d, e, f, g, h, other

    def renamed(self, ann: W0, sub: GraphWrapper):
        a = W0(ws)
        b = GraphWrapper(ws)
        c = DeeperWrapper(ws)
        d = fi.BatchMLAPagedAttentionWrapper(ws)
        e = flashinfer.mla.BatchMLAPagedAttentionWrapper(ws)
        f = NewMLAWrapper(ws)
        g = fi.Unseen(ws)
        h = FromNew(ws)
        i = BatchPrefillWithPagedKVCacheWrapper(ws)
        j = CUDAGraph()
        return a, b, c, d, e, f, g, h, i, j, ann, sub

    def classes(self, sub: GraphWrapper, plain):
        return (W0, fi.BatchMLAPagedAttentionWrapper, GraphWrapper, type(self.decode_wrapper), self.ragged.__class__,
                type(plain), BatchPrefillWithRaggedKVCacheWrapper, plain, sub)

    def dtypes(self, model_runner, fp8_native):
        kv = self.kv_cache_dtype
        chosen = self.kv_cache_dtype if fp8_native else self.data_type
        via = getattr(model_runner, "kv_cache_dtype", model_runner.dtype)
        both = kv if fp8_native else chosen
        mixed = kv
        mixed = self.data_type
        return kv, chosen, via, both, mixed, self.data_type, torch.float8_e4m3fn, q.dtype
)PY";

// What a function's last `return` returns.
TSNode last_returned(const FunctionFacts& f) {
  TSNode ret{};
  syntax::walk(f.body, [&](TSNode n) {
    if (syntax::is(n, "return_statement")) ret = n;
    return true;
  });
  return ts_node_named_child(ret, 0);
}

struct Module {
  std::shared_ptr<const ParsedFile> file = test::parse(kModule);
  ModuleFacts facts{*file};
  WrapperTypes types{facts, "BatchMLAPagedAttentionWrapper", "flashinfer",
                     {"BatchPrefillWithRaggedKVCacheWrapper", "BatchPrefillWithPagedKVCacheWrapper"}};
  DtypeRoleNames names{{"kv_data_type", "kv_cache_dtype"}, {"dtype", "data_type", "q_data_type"}};
  DtypeClassifier dtypes{facts, names};

  // The i-th element of the tuple returned by the named method.
  TSNode returned(const std::string& method, std::size_t i) const {
    const FunctionFacts* f = facts.method("Backend", method);
    REQUIRE(f != nullptr);
    return syntax::statements(last_returned(*f)).at(i);
  }
  const FunctionFacts* scope(const std::string& method) const { return facts.method("Backend", method); }
};
}  // namespace

TEST_SUITE("wrapper_and_dtype") {
  TEST_CASE("module facts: classes, methods, nested defs, annotated fields") {
    Module m;
    REQUIRE(m.facts.find_class("Backend") != nullptr);
    CHECK(m.facts.find_class("Backend")->methods.size() == 6);
    CHECK(m.facts.find_class("DecodeMetadata")->field_annotations.at("decode_wrapper") == "BatchMLAPagedAttentionWrapper");
    CHECK(m.facts.field_annotation_anywhere("decode_wrapper") == "BatchMLAPagedAttentionWrapper");
    CHECK(self_name(*m.scope("uses")) == "self");
    CHECK(m.facts.local_assignments(*m.scope("dtypes"), "mixed").size() == 2);
  }

  TEST_CASE("receivers known to be the MLA wrapper") {
    Module m;
    const FunctionFacts* uses = m.scope("uses");
    CHECK(m.types.of(m.returned("uses", 0), uses) == TypeVerdict::Wrapper);  // self attribute from the constructor
    CHECK(m.types.of(m.returned("uses", 1), uses) == TypeVerdict::Wrapper);  // dict of wrappers
    CHECK(m.types.of(m.returned("uses", 2), uses) == TypeVerdict::Wrapper);  // loop over a list of wrappers
    CHECK(m.types.of(m.returned("uses", 3), uses) == TypeVerdict::Wrapper);  // metadata field typed as it
    CHECK(m.types.of(m.returned("uses", 4), uses) == TypeVerdict::Wrapper);  // Optional[...] parameter or attribute
    CHECK(m.types.of(m.returned("uses", 7), uses) == TypeVerdict::Wrapper);  // element of a list literal
  }

  TEST_CASE("classes a method may be called through, `C.plan(w, ...)`: the wrapper class, or the class of an instance") {
    Module m;
    const FunctionFacts* classes = m.scope("classes");
    // The tuple is parenthesized: its elements are the tuple's.
    auto element = [&](std::size_t i) { return syntax::statements(syntax::unparenthesized(last_returned(*classes))).at(i); };
    CHECK(m.types.class_verdict(element(0), classes) == TypeVerdict::Wrapper);  // imported under another name
    CHECK(m.types.class_verdict(element(1), classes) == TypeVerdict::Wrapper);  // read on the package
    CHECK(m.types.class_verdict(element(2), classes) == TypeVerdict::Wrapper);  // a module subclass
    CHECK(m.types.class_verdict(element(3), classes) == TypeVerdict::Wrapper);  // type() of a wrapper
    CHECK(m.types.class_verdict(element(4), classes) == TypeVerdict::Other);    // __class__ of another wrapper kind
    CHECK(m.types.class_verdict(element(5), classes) == TypeVerdict::Unknown);  // type() of an untyped parameter
    CHECK_FALSE(m.types.class_verdict(element(6), classes).has_value());        // another class of the package
    CHECK_FALSE(m.types.class_verdict(element(7), classes).has_value());        // not a class expression
    CHECK_FALSE(m.types.class_verdict(element(8), classes).has_value());        // an instance, not its class
    CHECK(m.types.is_wrapper_class("DeeperWrapper"));
    CHECK_FALSE(m.types.is_wrapper_class("Backend"));
  }

  TEST_CASE("receivers of another type, or of no known type") {
    Module m;
    const FunctionFacts* uses = m.scope("uses");
    CHECK(m.types.of(m.returned("uses", 5), uses) == TypeVerdict::Other);
    CHECK(m.types.of(m.returned("uses", 8), uses) == TypeVerdict::Other);
    CHECK(m.types.of(m.returned("uses", 6), uses) == TypeVerdict::Unknown);
  }

  TEST_CASE("the wrapper imported under another name, through its package, or subclassed in the module") {
    Module m;
    const FunctionFacts* renamed = m.scope("renamed");
    CHECK(m.types.of(m.returned("renamed", 0), renamed) == TypeVerdict::Wrapper);   // `as W0`
    CHECK(m.types.of(m.returned("renamed", 1), renamed) == TypeVerdict::Wrapper);   // subclass of W0
    CHECK(m.types.of(m.returned("renamed", 2), renamed) == TypeVerdict::Wrapper);   // subclass of the subclass
    CHECK(m.types.of(m.returned("renamed", 3), renamed) == TypeVerdict::Wrapper);   // fi.<class>
    CHECK(m.types.of(m.returned("renamed", 4), renamed) == TypeVerdict::Wrapper);   // flashinfer.mla.<class>
    CHECK(m.types.of(m.returned("renamed", 10), renamed) == TypeVerdict::Wrapper);  // annotated with the alias
    CHECK(m.types.of(m.returned("renamed", 11), renamed) == TypeVerdict::Wrapper);  // annotated with the subclass
  }

  TEST_CASE("a flashinfer class the rule does not know is of unknown type, never another one") {
    Module m;
    const FunctionFacts* renamed = m.scope("renamed");
    CHECK(m.types.of(m.returned("renamed", 5), renamed) == TypeVerdict::Unknown);  // imported from flashinfer
    CHECK(m.types.of(m.returned("renamed", 6), renamed) == TypeVerdict::Unknown);  // fi.<unseen>
    CHECK(m.types.of(m.returned("renamed", 7), renamed) == TypeVerdict::Unknown);  // module subclass of one
    CHECK(m.types.of(m.returned("renamed", 8), renamed) == TypeVerdict::Other);    // known other flashinfer class
    CHECK(m.types.of(m.returned("renamed", 9), renamed) == TypeVerdict::Other);    // another package's class
  }

  TEST_CASE("the attribute a receiver is read from names its wrapper") {
    Module m;
    const FunctionFacts* uses = m.scope("uses");
    CHECK(m.types.source_attribute(m.returned("uses", 3), uses) == "decode_wrapper");
    CHECK(m.types.source_attribute(m.returned("uses", 1), uses) == "graph");
    CHECK(m.types.source_attribute(m.returned("uses", 6), uses).empty());
  }

  TEST_CASE("a helper's parameter is read from the attribute every call of the helper passes") {
    const auto file = test::parse(R"PY(
class Runner:
    def decode(self, md):
        self.run_with(md.decode_wrapper)
        self.run_either(md.decode_wrapper)

    def prefill(self, md):
        wrapper = md.prefill_wrapper
        self.run_either(wrapper=wrapper)

    def run_with(self, wrapper):
        return wrapper

    def run_either(self, wrapper):
        return wrapper

    def uncalled(self, wrapper):
        return wrapper
)PY");
    const ModuleFacts facts(*file);
    const WrapperTypes types{facts, "BatchMLAPagedAttentionWrapper", "flashinfer", {}};
    auto source = [&](const std::string& method) {
      const FunctionFacts* f = facts.method("Runner", method);
      REQUIRE(f != nullptr);
      return types.source_attribute(last_returned(*f), f);
    };
    CHECK(source("run_with") == "decode_wrapper");
    CHECK(source("run_either").empty());  // its calls pass two wrappers
    CHECK(source("uncalled").empty());    // no call says which
  }

  TEST_CASE("a call of a helper of the module holds the dtype the helper returns") {
    const auto file = test::parse(R"PY(
class Updater:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype
        self.kv_data_type = model_runner.kv_cache_dtype

    def kv(self):
        return self.kv_data_type

    def model(self):
        return self.data_type

    def either(self, c):
        if c:
            return self.kv_data_type
        return self.data_type

    def maybe(self, c):
        if c:
            return self.kv_data_type

    def uses(self, c):
        return self.kv(), self.model(), self.either(c), self.maybe(c), self.unseen(), module_kv(self)


def module_kv(updater):
    return updater.kv_data_type
)PY");
    const ModuleFacts facts(*file);
    // A named object: the classifier keeps a reference to it.
    const DtypeRoleNames names{{"kv_data_type", "kv_cache_dtype"}, {"dtype", "data_type"}};
    const DtypeClassifier dtypes(facts, names);
    const FunctionFacts* uses = facts.method("Updater", "uses");
    REQUIRE(uses != nullptr);
    const std::vector<TSNode> values = syntax::statements(last_returned(*uses));
    REQUIRE(values.size() == 6);
    auto classify = [&](std::size_t i) { return dtypes.classify(values[i], uses); };
    CHECK(classify(0).role == DtypeRole::KvCache);
    CHECK(classify(1).role == DtypeRole::Model);
    CHECK(classify(2).role == DtypeRole::Unknown);  // returns either
    CHECK(classify(3).role == DtypeRole::Unknown);
    CHECK(classify(3).reason == "maybe() may end without a return kvpatch can follow");
    CHECK(classify(4).role == DtypeRole::Unknown);  // no such def in the module
    CHECK(classify(5).role == DtypeRole::KvCache);  // a module function, read by its own parameter's name
  }

  TEST_CASE("a parameter is typed by the calls that reach its method, a base's call of a subclass's override too") {
    const auto file = test::parse(R"PY(
from flashinfer import BatchMLAPagedAttentionWrapper


class Base:
    def __init__(self):
        self.decode_wrapper = BatchMLAPagedAttentionWrapper(ws)

    def drive(self):
        self.use(self.decode_wrapper)

    def use(self, w):
        return w


class Sub(Base):
    def use(self, w):
        return w


class Other:
    def use(self, w):
        return w
)PY");
    const ModuleFacts facts(*file);
    const WrapperTypes types{facts, "BatchMLAPagedAttentionWrapper", "flashinfer", {}};
    auto type = [&](const std::string& cls) {
      const FunctionFacts* f = facts.method(cls, "use");
      REQUIRE(f != nullptr);
      return types.of(last_returned(*f), f);
    };
    CHECK(type("Base") == TypeVerdict::Wrapper);
    CHECK(type("Sub") == TypeVerdict::Wrapper);     // Base.drive()'s call runs it for Sub's instances
    CHECK(type("Other") == TypeVerdict::Unknown);  // no call reaches it
  }

  TEST_CASE("dtype roles through locals, attributes, getattr and gates") {
    Module m;
    const FunctionFacts* scope = m.scope("dtypes");
    auto role = [&](std::size_t i) { return m.dtypes.classify(m.returned("dtypes", i), scope); };
    CHECK(role(0).role == DtypeRole::KvCache);
    const DtypeArgument gated = role(1);
    CHECK(gated.role == DtypeRole::Gated);
    CHECK(gated.condition == "fp8_native");
    CHECK(gated.expr == "chosen");
    CHECK(role(2).role == DtypeRole::KvCache);
    CHECK(role(3).role == DtypeRole::Gated);
    CHECK(role(4).role == DtypeRole::Model);  // assigned both dtypes in turn: the later one is what is read
    CHECK(role(5).role == DtypeRole::Model);
    CHECK(role(6).role == DtypeRole::Unknown);  // a literal dtype is never guessed
    CHECK(role(7).role == DtypeRole::Model);
    CHECK(m.dtypes.classify_text("model_runner.kv_cache_dtype").role == DtypeRole::KvCache);
    CHECK(m.dtypes.classify_text("None").role == DtypeRole::Unknown);
  }

  TEST_CASE("a KV-named field is the KV-cache dtype under upstream's gate on the cache's dtype, a gate under any other") {
    const char* source = R"PY(
import torch


class Updater:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype
        self.kv_data_type = model_runner.kv_cache_dtype if torch.cuda.get_device_capability()[0] == 9 else self.data_type
        if model_runner.kv_cache_dtype != torch.float8_e4m3fn:
            self.kv_upstream = model_runner.dtype
        else:
            self.kv_upstream = model_runner.kv_cache_dtype
        self.plan_kv = model_runner.kv_cache_dtype if model_runner.fp8_native else model_runner.dtype
        self.late_kv = model_runner.kv_cache_dtype

    def refresh(self, model_runner):
        self.late_kv = model_runner.kv_cache_dtype if model_runner.fp8_native else model_runner.dtype

    def plan(self):
        return self.kv_data_type, self.kv_upstream, self.plan_kv, self.late_kv
)PY";
    const auto file = test::parse(source);
    const ModuleFacts facts(*file);
    // kv_upstream is read as named for the KV cache here, so that the rule's names decide its role.
    const DtypeRoleNames names{{"kv_data_type", "kv_cache_dtype", "kv_upstream"}, {"dtype", "data_type"}};
    const DtypeClassifier dtypes(facts, names);
    const FunctionFacts* plan = facts.method("Updater", "plan");
    REQUIRE(plan != nullptr);
    const std::vector<TSNode> read = syntax::statements(last_returned(*plan));
    REQUIRE(read.size() == 4);

    const DtypeArgument gpu = dtypes.classify(read[0], plan);
    CHECK(gpu.role == DtypeRole::Gated);  // FP8 bytes would reach a BF16 plan on any other GPU without the cast
    CHECK(gpu.condition == "torch.cuda.get_device_capability()[0] == 9");
    CHECK_FALSE(gpu.gate_tests_cache_dtype);
    CHECK(gpu.gate_attribute == "kv_data_type");

    CHECK(dtypes.classify(read[1], plan).role == DtypeRole::KvCache);  // the cast guard repeats the gate

    const DtypeArgument flag = dtypes.classify(read[2], plan);
    CHECK(flag.role == DtypeRole::Gated);
    CHECK(flag.gate_attribute == "plan_kv");  // set in __init__ only: every other method reads the same gate

    const DtypeArgument late = dtypes.classify(read[3], plan);
    CHECK(late.role == DtypeRole::Gated);
    CHECK(late.gate_attribute.empty());  // also set in refresh(): what it holds depends on the call order
  }
}

TEST_SUITE("wrapper_and_dtype") {
  TEST_CASE("a parameter holds what every call of its function in the module passes, when every call is seen") {
    const char* source = R"PY(
from functools import partial


class Base:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype
        self.kv_data_type = model_runner.kv_cache_dtype

    def gated(self, fp8_native):
        kv = self.kv_data_type if fp8_native else self.data_type
        self.helper(kv, self.data_type)
        self.helper(other=self.data_type, chosen=kv)

    def helper(self, chosen, other, fallback=None):
        return chosen, other, fallback

    def named(self, kv_data_type):
        return kv_data_type

    def driver(self):
        self.hook(self.kv_data_type)

    def hook(self, d):
        return d


class Sub(Base):
    def run(self):
        self.named(self.data_type)
        self.escaping(self.kv_data_type)
        self.elsewhere(self.kv_data_type)
        partial(self.escaping, self.data_type)
        self.both(self.data_type)
        self.both(self.kv_data_type)

    def escaping(self, dtype):
        return dtype

    def elsewhere(self, dtype):
        return dtype

    def unseen(self, kv_data_type):
        return kv_data_type

    def both(self, d):
        return d

    def hook(self, d):
        return d

    def drive_sub(self):
        self.hook(self.data_type)


def module_helper(dtype):
    return dtype


def caller(updater, model_runner):
    module_helper(updater.kv_data_type)
    module_helper(model_runner.kv_cache_dtype)
    other.elsewhere(model_runner.dtype)
)PY";
    const auto file = test::parse(source);
    const ModuleFacts facts(*file);
    const DtypeRoleNames names{{"kv_data_type", "kv_cache_dtype"}, {"dtype", "data_type"}};
    const DtypeClassifier dtypes(facts, names);
    // The names a function returns, each as its function reads it.
    auto returned = [&](const FunctionFacts* f) {
      REQUIRE(f != nullptr);
      const TSNode value = last_returned(*f);
      std::vector<DtypeArgument> out;
      for (TSNode n : syntax::is(value, "expression_list") ? syntax::statements(value) : std::vector<TSNode>{value}) {
        out.push_back(dtypes.classify(n, f));
      }
      return out;
    };

    const std::vector<DtypeArgument> helper = returned(facts.method("Base", "helper"));
    REQUIRE(helper.size() == 3);
    CHECK(helper[0].role == DtypeRole::Gated);  // both calls pass the gated local, by position and by keyword
    CHECK(helper[0].condition == "fp8_native");
    CHECK(helper[0].passed_by == "helper");  // the report says where the dtype came from
    CHECK(helper[1].role == DtypeRole::Model);
    CHECK(helper[2].role == DtypeRole::Unknown);  // left to its default, None: the rule names no role for None here

    // Named for the KV cache, but its only caller passes the model dtype.
    CHECK(returned(facts.method("Base", "named"))[0].role == DtypeRole::Model);
    // Handed to partial(): not every call is seen, so the name decides.
    CHECK(returned(facts.method("Sub", "escaping"))[0].role == DtypeRole::Model);
    // `other.elsewhere(...)` may be a call of it on an instance made elsewhere: the name decides.
    CHECK(returned(facts.method("Sub", "elsewhere"))[0].role == DtypeRole::Model);
    // No call in the module: the name decides.
    CHECK(returned(facts.method("Sub", "unseen"))[0].role == DtypeRole::KvCache);
    // A module function: both of its calls pass the KV-cache dtype.
    CHECK(returned(facts.module_function("module_helper"))[0].role == DtypeRole::KvCache);
    // Its calls disagree: unknown, saying so.
    const DtypeArgument both = returned(facts.method("Sub", "both"))[0];
    CHECK(both.role == DtypeRole::Unknown);
    CHECK(both.reason == "the calls of both() pass d both the KV-cache dtype and the model dtype");
    // Base.driver()'s `self.hook(...)` runs Sub's override for Sub's instances: the override is passed both dtypes,
    // the base's own hook only the KV-cache one (Sub's own call never reaches it).
    CHECK(returned(facts.method("Base", "hook"))[0].role == DtypeRole::KvCache);
    const DtypeArgument overridden = returned(facts.method("Sub", "hook"))[0];
    CHECK(overridden.role == DtypeRole::Unknown);
    CHECK(overridden.reason == "the calls of hook() pass d both the KV-cache dtype and the model dtype");
  }
}
