#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "kvpatch/dtype_roles.h"
#include "kvpatch/edit_operations.h"
#include "kvpatch/field_holders.h"
#include "kvpatch/imported_names.h"
#include "kvpatch/local_reads.h"
#include "kvpatch/method_references.h"
#include "kvpatch/wrapper_overrides.h"
#include "kvpatch/rule_engine.h"

namespace kvpatch {
using syntax::field;
using syntax::is;

namespace {

// A module function installed as the wrapper's method, `X.<method> = partial(f, X)`: after that, a call
// `X.<method>(...)` calls f with X first, so its arguments bind to f's parameters after the bound ones.
struct MethodStandIn {
  const FunctionFacts* function = nullptr;
  Signature unbound;  // f's parameters that the call fills
};

struct Aliases {
  std::map<std::string, const FunctionFacts*> by_name;  // called as functions, receiver first
  std::vector<MethodStandIn> stand_ins;                 // installed with partial(); called as the method
};

// Whether a callee is functools.partial: by its usual names, or imported under another
// (`from functools import partial as bind`, `import functools as ft` then `ft.partial`).
bool names_partial(TSNode callee, const ModuleFacts& facts, const ImportedNames& imports) {
  const std::string text = facts.text(callee);
  return text == "partial" || text == "functools.partial" || imports.qualified(callee) == "functools.partial";
}

// Module functions that stand in for the wrapper method: same KV/Q parameters at the same positions
// after a leading receiver parameter, or installed with `X.<method> = partial(f, X)`.
Aliases find_aliases(const PlanSiteRule& rule, const ModuleFacts& facts, const ImportedNames& imports) {
  Aliases aliases;
  if (rule.aliases_by_signature && !rule.alias_same_position.empty()) {
    for (const FunctionFacts& f : facts.functions()) {
      if (!f.class_name.empty() || f.outer >= 0) continue;
      const bool matches = std::all_of(rule.alias_same_position.begin(), rule.alias_same_position.end(),
                                       [&](const std::string& name) {
                                         const auto at = static_cast<std::size_t>(rule.signature.index_of(name)) + 1;
                                         return at < f.signature.parameters.size() &&
                                                f.signature.parameters[at].name == name;
                                       });
      if (matches) aliases.by_name[f.name] = &f;
    }
  }
  if (rule.aliases_by_partial) {
    for (const Assignment& a : facts.assignments()) {
      if (a.kind != AssignmentKind::Plain || syntax::is_null(a.value) || !is(a.value, "call")) continue;
      const std::string suffix = "." + rule.method;
      if (a.target.size() <= suffix.size() || a.target.compare(a.target.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
      if (!names_partial(field(a.value, "function"), facts, imports)) continue;
      const std::vector<TSNode> args = syntax::statements(field(a.value, "arguments"));
      if (args.empty() || !is(args[0], "identifier")) continue;
      const FunctionFacts* f = facts.module_function(facts.text(args[0]));
      if (f == nullptr) continue;
      aliases.by_name[f->name] = f;
      // Only positional arguments after f: keywords would move which parameters the call can fill.
      const bool positional = std::all_of(args.begin() + 1, args.end(), [](TSNode n) {
        return !is(n, "keyword_argument") && !is(n, "list_splat") && !is(n, "dictionary_splat");
      });
      const std::size_t bound = args.size() - 1;
      if (!positional || bound > f->signature.positional_count()) continue;
      MethodStandIn stand_in{f, f->signature};
      stand_in.unbound.parameters.erase(stand_in.unbound.parameters.begin(),
                                        stand_in.unbound.parameters.begin() + static_cast<std::ptrdiff_t>(bound));
      if (std::none_of(aliases.stand_ins.begin(), aliases.stand_ins.end(),
                       [&](const MethodStandIn& s) { return s.function == f; })) {
        aliases.stand_ins.push_back(std::move(stand_in));
      }
    }
  }
  return aliases;
}

// `X.<method> = partial(f, X, ...)`: f handed to partial() to be installed as the method, which the
// aliases above follow.
bool installed_as_method(TSNode function_name, const std::string& method, const ModuleFacts& facts,
                         const ImportedNames& imports) {
  TSNode list = syntax::parent(function_name);
  TSNode call = syntax::parent(list);
  if (!is(list, "argument_list") || !is(call, "call")) return false;
  if (!names_partial(field(call, "function"), facts, imports)) return false;
  const std::vector<TSNode> args = syntax::statements(list);
  if (args.empty() || !syntax::same(args[0], function_name)) return false;
  // `X.<method> = (partial(f, X))` installs it as well.
  TSNode value = call;
  TSNode assignment = syntax::parent(call);
  while (is(assignment, "parenthesized_expression")) {
    value = assignment;
    assignment = syntax::parent(assignment);
  }
  if (!is(assignment, "assignment") || !syntax::same(field(assignment, "right"), value)) return false;
  TSNode target = syntax::unparenthesized_target(field(assignment, "left"));
  return is(target, "attribute") && facts.text(field(target, "attribute")) == method;
}

// The classes whose instances run a method of class_name: that class and the module's classes inheriting it.
std::vector<std::string> classes_running(const ModuleFacts& facts, const std::string& class_name) {
  std::vector<std::string> out;
  if (const ClassFacts* cls = facts.find_class(class_name)) {
    for (const ClassFacts* c : facts.instance_classes(*cls)) out.push_back(c->name);
  }
  return out;
}

// The site of a read of the method (receiver given) or of a plan alias (receiver "") as a value: unknown,
// unless a kvpatch: ignore comment vouches for it.
PlanSite escaped_site(const PlanSiteRule& rule, const ModuleFacts& facts, const MethodValue& value,
                      const std::string& receiver, const std::string& callee) {
  PlanSite site;
  site.rule = rule.id;
  site.call = value.node;
  site.receiver = receiver;
  site.callee = callee;
  const SourcePosition at = facts.file().source.position(ts_node_start_byte(value.node));
  site.line = at.line;
  site.column = at.column;
  if (const FunctionFacts* method = holding_method(facts, facts.function_at(value.node)); method != nullptr) {
    site.class_name = method->class_name;
    site.method = method->name;
    site.run_by = classes_running(facts, site.class_name);
  }
  if (auto reason = suppression(facts.file().source, value.node, rule.id)) {
    site.status = SiteStatus::Ignored;
    site.reason = reason->empty() ? "suppressed by a kvpatch: ignore comment" : *reason;
    return site;
  }
  site.status = SiteStatus::Unknown;
  // site_message() names the method first: "<receiver>.plan; the method is passed to partial(), ...".
  site.reason = std::string(receiver.empty() ? "the plan alias" : "the method") + " is " + value.context +
                ", so the calls made through it cannot be bound; pass " + rule.kv_parameter +
                " to them by hand, then mark this line # kvpatch: ignore[" + rule.id + "] <reason>";
  return site;
}

HeadDimArgument head_dim(const Binding& binding, const std::string& parameter) {
  HeadDimArgument out;
  if (parameter.empty()) return out;
  const BoundValue* v = binding.find(parameter);
  if (v == nullptr) return out;
  out.expr = one_line(v->text);
  char* end = nullptr;
  const long long value = std::strtoll(out.expr.c_str(), &end, 10);
  if (!out.expr.empty() && end != nullptr && *end == '\0') out.value = value;
  return out;
}

TSNode argument_node(TSNode argument_list, const CallArgument& argument) {
  return ts_node_named_descendant_for_byte_range(argument_list, static_cast<uint32_t>(argument.value_begin),
                                                 static_cast<uint32_t>(argument.value_end));
}

DtypeArgument bound_dtype(const DtypeClassifier& classifier, const Binding& binding, const std::string& parameter,
                          const std::vector<CallArgument>& arguments, TSNode argument_list, const FunctionFacts* scope) {
  const BoundValue* v = binding.find(parameter);
  if (v == nullptr) {
    DtypeArgument none;
    none.reason = parameter + " is not bound";
    return none;
  }
  if (v->from_default()) return classifier.classify_text(v->text);
  return classifier.classify(argument_node(argument_list, arguments[static_cast<std::size_t>(v->argument)]), scope);
}

}  // namespace

std::vector<PlanSite> find_plan_sites(const PlanSiteRule& rule, const ModuleFacts& facts) {
  const WrapperTypes types(facts, rule);
  const DtypeClassifier classifier(facts, rule.roles);
  const ImportedNames imports(facts);
  const Aliases aliases = find_aliases(rule, facts, imports);
  const SourceFile& source = facts.file().source;
  std::vector<PlanSite> sites;
  // `p = wrapper.plan` then `p(...)`: each call of p is a call of plan on that receiver. Other reads of
  // the method as a value are sites of their own, below.
  const std::vector<MethodValue> values = method_values(rule.method, facts);
  const std::vector<RebindingOverride> rebinding = rebinding_overrides(plan_method(rule), rule.wrapper_class, types, facts);

  for (TSNode call : facts.calls()) {
    TSNode callee = field(call, "function");
    const FunctionFacts* scope = facts.function_at(call);
    TSNode argument_list = field(call, "arguments");
    if (!is(argument_list, "argument_list")) continue;  // `f(x for x in y)`
    std::vector<CallArgument> arguments = call_arguments(source.text(), argument_list);
    // A call that unpacks *x or **x cannot be bound statically, and may fill any number of parameters.
    const bool unpacks = std::any_of(arguments.begin(), arguments.end(), [](const CallArgument& a) {
      return a.kind == ArgumentKind::UnpackedSequence || a.kind == ArgumentKind::UnpackedMapping;
    });

    PlanSite site;
    const Signature* signature = nullptr;
    bool receiver_unknown = false;
    std::string unbindable;  // why the call cannot be bound, whatever its receiver
    bool other_signature = false;  // it may run an override whose parameters are not the wrapper's: bind nothing
    if (std::optional<MethodCall> method_call = wrapper_method_call(call, rule.method, values, types, scope, facts)) {
      // `super().plan(...)` in a wrapper subclass's own plan(): the wrapper's plan, or a base's override of it.
      if (method_call->verdict == TypeVerdict::Unknown &&
          super_in_override(method_call->receiver, scope, rule.method, types, facts)) {
        method_call->verdict = TypeVerdict::Wrapper;
      }
      const TypeVerdict verdict = method_call->verdict;
      if (verdict == TypeVerdict::Other || verdict == TypeVerdict::Nothing) continue;
      site.callee = rule.wrapper_class + "." + rule.method;
      signature = &rule.signature;
      if (method_call->through_class) {
        // `W.plan(w, ...)`: the class's own method, w its instance, the other arguments bound after it. Never a
        // stand-in installed on the instance with partial(), which the class bypasses.
        site.called_as = one_line(facts.text(callee));
        if (syntax::is_null(method_call->receiver)) {
          unbindable = "the method is called through its class, and the call does not pass the instance first by "
                        "position, so its arguments cannot be bound; pass the instance first";
        } else {
          arguments.erase(arguments.begin());
        }
      }
      if (verdict == TypeVerdict::Unknown && unbindable.empty()) {
        // With *args / **kwargs the arity is unknown too: the call may fill every parameter.
        const int count = static_cast<int>(arguments.size());
        const int most = rule.unknown_receiver_arity.empty()
                             ? 0
                             : *std::max_element(rule.unknown_receiver_arity.begin(), rule.unknown_receiver_arity.end());
        const bool plan_arity = std::find(rule.unknown_receiver_arity.begin(), rule.unknown_receiver_arity.end(),
                                          count) != rule.unknown_receiver_arity.end();
        if (!plan_arity && !(unpacks && count <= most)) continue;
        receiver_unknown = true;
      }
      if (!syntax::is_null(method_call->receiver)) site.receiver = one_line(facts.text(method_call->receiver));
      if (const RebindingOverride* o =
              override_run(*method_call, callee, rule.method, rebinding, rule.wrapper_class, types, scope, facts)) {
        other_signature = true;
        unbindable = override_reason(site.receiver, rule.method, *o) + ", so kvpatch cannot tell what a call of it " +
                     "plans; pass " + rule.kv_parameter + " where that override calls the wrapper's " + rule.method +
                     "(), then mark this call # kvpatch: ignore[" + rule.id + "] <reason>";
      } else if (forwards_to_base(call, arguments, rule.method, scope, types, facts)) {
        // Not counted as good: callers in modules outside the run are not seen.
        unbindable = "forwards the arguments of " + scope->class_name + "." + rule.method +
                     "() unchanged, so each call of that override plans what it passes: kvpatch reports those calls "
                     "as plan sites in this module and in the modules it reads with it that import " +
                     scope->class_name + ", but cannot see callers elsewhere; once every caller passes " +
                     rule.kv_parameter + ", mark this line # kvpatch: ignore[" + rule.id + "] <reason>";
      }
    } else if (is(callee, "identifier") && aliases.by_name.count(facts.text(callee)) != 0) {
      const FunctionFacts* alias = aliases.by_name.at(facts.text(callee));
      if (scope != nullptr && syntax::same(scope->node, alias->node)) continue;  // recursion inside the alias
      site.callee = alias->name;
      signature = &alias->signature;
    } else {
      continue;
    }

    site.rule = rule.id;
    site.call = call;
    site.argument_list = argument_list;
    const SourcePosition at = source.position(ts_node_start_byte(call));
    site.line = at.line;
    site.column = at.column;
    const FunctionFacts* method = holding_method(facts, scope);
    if (method != nullptr) {
      site.class_name = method->class_name;
      site.method = method->name;
      site.run_by = classes_running(facts, site.class_name);
    }

    Binding binding = bind_arguments(*signature, arguments);
    if (!binding.complete && !unpacks && !site.receiver.empty() && site.called_as.empty() && !aliases.stand_ins.empty()) {
      // The method may be a function installed with partial() (SGLang 0.5.1 calls
      // `wrapper.plan(qo_indptr_cpu=..., ...)`, keywords only fast_mla_decode_plan has). Bind to the
      // stand-in whose parameters the call fits; with none, the site stays unknown.
      std::vector<std::pair<const MethodStandIn*, Binding>> fits;
      for (const MethodStandIn& s : aliases.stand_ins) {
        Binding b = bind_arguments(s.unbound, arguments);
        if (b.complete) fits.emplace_back(&s, std::move(b));
      }
      // Several may fit (SGLang main installs fast_mla_decode_plan and fast_mla_prefill_plan, with equal
      // parameters): that is still one answer when all bind the same arguments to the dtype parameters.
      auto dtype_arguments = [&](const Binding& b) {
        std::vector<std::string> out;
        for (const std::string& p : {rule.q_parameter, rule.kv_parameter}) {
          const BoundValue* v = b.find(p);
          out.push_back(v == nullptr ? "" : v->from_default() ? "=" + v->text : std::to_string(v->argument));
        }
        return out;
      };
      const bool agree = !fits.empty() && std::all_of(fits.begin(), fits.end(), [&](const auto& fit) {
        return dtype_arguments(fit.second) == dtype_arguments(fits.front().second);
      });
      if (agree) {
        signature = &fits.front().first->unbound;
        binding = fits.front().second;
        for (const auto& fit : fits) site.bound_to += (site.bound_to.empty() ? "" : " or ") + fit.first->function->name;
      } else {
        std::string names;
        for (const MethodStandIn& s : aliases.stand_ins) names += (names.empty() ? "" : ", ") + s.function->name;
        binding.failure += fits.empty() ? "; nor does it fit " + names + ", installed as ." + rule.method + " with partial()"
                                        : "; it fits several functions installed as ." + rule.method +
                                              " with partial() (" + names + ") that take its dtypes from different arguments";
      }
    }
    if (binding.complete && !other_signature) {
      site.q_dtype = bound_dtype(classifier, binding, rule.q_parameter, arguments, argument_list, scope);
      site.kv_dtype = bound_dtype(classifier, binding, rule.kv_parameter, arguments, argument_list, scope);
      site.head_dim_ckv = head_dim(binding, rule.head_dim_ckv_parameter);
      site.head_dim_kpe = head_dim(binding, rule.head_dim_kpe_parameter);
      if (const BoundValue* kv = binding.find(rule.kv_parameter); kv != nullptr && !kv->from_default()) {
        site.kv_argument = arguments[static_cast<std::size_t>(kv->argument)];
      }
    }

    if (auto reason = suppression(source, call, rule.id)) {
      site.status = SiteStatus::Ignored;
      site.reason = reason->empty() ? "suppressed by a kvpatch: ignore comment" : *reason;
    } else if (!unbindable.empty()) {
      site.status = SiteStatus::Unknown;
      site.reason = unbindable;
    } else if (receiver_unknown) {
      site.status = SiteStatus::Unknown;
      site.reason = "receiver " + site.receiver + " is not known to be a " + rule.wrapper_class + " but calls ." +
                    rule.method + (binding.complete ? " with " + std::to_string(arguments.size()) + " arguments"
                                                    : " and " + binding.failure) +
                    "; annotate it or suppress with # kvpatch: ignore[" + rule.id + "] <reason>";
    } else if (!binding.complete) {
      site.status = SiteStatus::Unknown;
      site.reason = binding.failure;
    } else if (signature->index_of(rule.kv_parameter) < 0) {
      site.status = SiteStatus::Unknown;
      site.reason = site.callee + " has no parameter " + rule.kv_parameter;
    } else {
      switch (site.kv_dtype.role) {
        case DtypeRole::KvCache: site.status = SiteStatus::Threaded; break;
        case DtypeRole::Model: site.status = SiteStatus::Missing; break;
        case DtypeRole::Gated:
          site.status = SiteStatus::Gated;
          site.condition = site.kv_dtype.condition;
          break;
        case DtypeRole::Unknown:
          site.status = SiteStatus::Unknown;
          site.reason = site.kv_dtype.reason;
          break;
      }
    }
    sites.push_back(std::move(site));
  }
  // The method, or a plan alias, read as a value: the calls made through it cannot be found.
  for (const MethodValue& v : values) {
    if (v.alias.empty() && read_on_wrapper(v, types, facts.function_at(v.node))) {
      sites.push_back(escaped_site(rule, facts, v, one_line(facts.text(v.receiver)), rule.wrapper_class + "." + rule.method));
    }
  }
  for (const auto& [name, function] : aliases.by_name) {
    for (const MethodValue& v : function_values(name, facts)) {
      if (!installed_as_method(v.node, rule.method, facts, imports)) sites.push_back(escaped_site(rule, facts, v, "", name));
    }
  }
  // In source order, as the calls were visited: a value read lands among the calls around it.
  std::stable_sort(sites.begin(), sites.end(), [](const PlanSite& a, const PlanSite& b) {
    return ts_node_start_byte(a.call) < ts_node_start_byte(b.call);
  });
  return sites;
}

namespace {

// Why a missing site gets no fix from the field findings of the classes that must carry its field (holders), or
// "" when every one of them has the same field, present or added.
std::string field_not_in_reach(const PlanSiteRule& rule, const ModuleFacts& facts, const std::string& anchor,
                               const PlanSite& site, const std::vector<std::string>& holders,
                               const std::vector<const FieldFinding*>& findings) {
  if (site.class_name.empty()) return "the call is outside a class, so no KV dtype field is in reach; pass the KV dtype by hand";
  const ClassFacts* cls = facts.find_class(site.class_name);
  if (holders.empty() && cls != nullptr && !anchor.empty() &&
      (facts.lineage(*cls).size() > 1 || facts.instance_classes(*cls).size() > 1)) {
    // Classes that inherit from each other: the anchor is there, but no __init__ that runs sets it.
    return "no __init__ that runs for instances of " + site.class_name +
           " (or of the module's classes inheriting its methods) assigns " + anchor +
           ": an __init__ that does not call its base's keeps that one from running; so there is no place for the KV "
           "dtype field; thread it by hand";
  }
  if (holders.empty() && cls != nullptr) {
    for (const ClassFacts* instance : facts.instance_classes(*cls)) {
      if (facts.lineage_complete(*instance)) continue;
      const std::vector<const ClassFacts*>& up = facts.lineage(*instance);
      if (std::any_of(up.begin(), up.end(), [&](const ClassFacts* c) { return facts.method(*c, "__init__") != nullptr; })) {
        continue;
      }
      // The __init__ that runs, if any, is a base's the module imports: the field has no place in this file.
      return "instances of " + instance->name + " run the __init__ of a base class this module does not show, so " +
             "there is no place here for the KV dtype field; thread it by hand";
    }
  }
  const bool own = holders.size() == 1 && holders.front() == site.class_name;
  if (holders.empty() || (findings.empty() && own)) {
    return "class " + site.class_name + " is not in the scope of rule " + rule.field_rule +
           " and has no KV dtype field; thread it by hand or add the class to the rule's scope";
  }
  for (const std::string& holder : holders) {
    const auto found = std::find_if(findings.begin(), findings.end(),
                                    [&](const FieldFinding* f) { return f->class_name == holder; });
    if (found == findings.end()) {
      return "class " + holder + ", whose __init__ sets up instances that run " + site.class_name + "." + site.method +
             ", is not in the scope of rule " + rule.field_rule + "; thread it by hand or add the class to the rule's scope";
    }
    const FieldFinding& f = **found;
    if (f.field_text.empty()) {
      return f.ignored ? "rule " + rule.field_rule + " is suppressed for " + f.class_name + " (" + f.reason +
                             "), so no KV dtype field is added; pass the KV dtype by hand"
                       : f.reason;
    }
    if (f.field_text != findings.front()->field_text) {
      return "the classes whose instances run " + site.class_name + "." + site.method +
             " keep the KV dtype in different fields (" + findings.front()->class_name + ": " +
             findings.front()->field_text + ", " + f.class_name + ": " + f.field_text + "); pass it by hand";
    }
  }
  return "";
}

}  // namespace

void plan_site_fixes(const PlanSiteRule& rule, const std::string& field_anchor, const ModuleFacts& facts,
                     const std::vector<FieldFinding>& fields, std::vector<PlanSite>& sites) {
  for (PlanSite& site : sites) {
    if (site.rule != rule.id || site.status != SiteStatus::Missing) continue;
    // The field is read through the instance, so every class whose __init__ sets up an instance that can run
    // this method must carry it: the site's own class, or the bases and subclasses in the module that do.
    const std::vector<std::string> holders =
        field_anchor.empty() || site.class_name.empty() ? std::vector<std::string>{site.class_name}
                                                        : field_holders(facts, site.class_name, field_anchor);
    std::vector<const FieldFinding*> findings;
    for (const FieldFinding& f : fields) {
      if (f.rule == rule.field_rule && std::find(holders.begin(), holders.end(), f.class_name) != holders.end()) {
        findings.push_back(&f);
      }
    }
    site.reason = field_not_in_reach(rule, facts, field_anchor, site, holders, findings);
    if (!site.reason.empty()) continue;
    const FieldFinding* field_finding = findings.front();
    // In a class whose other sites gate the KV dtype on the platform, a fixed site follows the same gate:
    // planning the KV dtype unconditionally would disagree with the casts the gate keeps. A gate held in an
    // attribute set only in __init__ is read through that attribute from any other method with an instance. A gate
    // written out that reads locals can be copied only into the function it is written in, and only when those
    // locals are that function's parameters, never reassigned (so they hold the same values at both sites).
    const FunctionFacts* site_function = facts.function_at(site.call);
    // The field is read through the method's own instance parameter, whatever it is named; a static or class
    // method, or one without parameters, has none.
    const FunctionFacts* method = holding_method(facts, site_function);
    const std::string self = method != nullptr ? self_name(*method) : "";
    auto via_attribute = [&](const PlanSite& other) {
      return !other.kv_dtype.gate_attribute.empty() && !self.empty() && method->name != "__init__";
    };
    auto reusable = [&](const PlanSite& other) {
      const DtypeArgument& kv = other.kv_dtype;
      return via_attribute(other) || kv.gate_portable ||
             (kv.gate_reads_parameters && site_function != nullptr && syntax::same(site_function->node, kv.gate_function));
    };
    const PlanSite* gated = nullptr;
    for (const PlanSite& other : sites) {
      if (other.rule == rule.id && other.class_name == site.class_name && other.status == SiteStatus::Gated &&
          (gated == nullptr || (!reusable(*gated) && reusable(other)))) {
        gated = &other;
      }
    }
    if (gated != nullptr && !reusable(*gated)) {
      site.reason = "the other plan sites of " + site.class_name + " are gated on " + gated->condition +
                    ", which reads locals of their method; pass the same gate here by hand";
      continue;
    }
    site.fix_gated = gated != nullptr;
    site.fix_condition = gated != nullptr ? gated->condition : "";
    if (gated != nullptr) {
      site.fix_text = via_attribute(*gated) ? self + "." + gated->kv_dtype.gate_attribute : gated->kv_dtype.gate_expr;
    } else {
      site.fix_text = field_finding->field_text;
      if (self.empty() || site.fix_text.find('.') == std::string::npos) {
        site.reason = (method != nullptr ? "the call's method " + method->name + " takes no instance"
                                         : std::string("the call is in the class body, outside any method")) +
                      ", so the KV dtype field " + site.fix_text + " is out of its reach; pass the KV dtype by hand";
        site.fix_text.clear();
        continue;
      }
      site.fix_text = through_instance(self, site.fix_text);
    }
    if (site.kv_argument) {
      // `kv_dtype = self.data_type` read by this argument alone: replacing the argument would leave it unread. Not in
      // an __init__, where the statement may come before the field the fix reads is set.
      TSNode value = ts_node_named_descendant_for_byte_range(site.argument_list,
                                                             static_cast<uint32_t>(site.kv_argument->value_begin),
                                                             static_cast<uint32_t>(site.kv_argument->value_end));
      const bool plain = site.kv_argument->kind == ArgumentKind::Positional ||
                         site.kv_argument->kind == ArgumentKind::Keyword;
      const std::optional<SoleLocal> local =
          plain && site_function != nullptr && site_function->name != "__init__" ? sole_local(facts, value) : std::nullopt;
      if (local) {
        site.fix = Edit{ts_node_start_byte(local->value), ts_node_end_byte(local->value), site.fix_text, rule.id};
        const SourcePosition at = facts.file().source.position(ts_node_start_byte(local->statement));
        site.fix_through_local = site.kv_argument->text + " = " + site.fix_text + " at " + std::to_string(at.line) + ":" +
                                 std::to_string(at.column);
      } else {
        site.fix = replace_argument_value(*site.kv_argument, site.fix_text, rule.id);
      }
    } else if (rule.operation_when_defaulted == "add-keyword-argument") {
      site.fix = add_keyword_argument(facts.file().source, site.argument_list, rule.kv_parameter, site.fix_text, rule.id);
    } else {
      site.reason = rule.kv_parameter + " is left to its default and the rule adds no keyword for it";
    }
  }
}

std::vector<std::size_t> sites_planning(const Fp8Consumer& consumer, const std::string& receiver_source,
                                        const std::vector<PlanSite>& sites) {
  const WrapperChannel* channel = nullptr;
  for (const WrapperChannel& c : consumer.planned_by) {
    if (c.receiver_source == receiver_source) channel = &c;
  }
  // A site in a base class's method plans the wrappers of the classes inheriting it: their instances run it.
  auto in_classes = [](const WrapperChannel& c, const PlanSite& s) {
    return std::any_of(c.classes.begin(), c.classes.end(), [&](const std::string& g) {
      return glob_match(g, s.class_name) ||
             std::any_of(s.run_by.begin(), s.run_by.end(), [&](const std::string& name) { return glob_match(g, name); });
    });
  };
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const PlanSite& s = sites[i];
    if (s.rule != consumer.sites_rule) continue;
    // An unmapped wrapper may be planned by every site; a site in no mapped class may plan any wrapper.
    const bool planning = channel == nullptr || in_classes(*channel, s) ||
                          std::none_of(consumer.planned_by.begin(), consumer.planned_by.end(),
                                       [&](const WrapperChannel& c) { return in_classes(c, s); });
    if (planning) out.push_back(i);
  }
  return out;
}

}  // namespace kvpatch
