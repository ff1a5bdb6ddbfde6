// Every rule file's own test cases (code that must match, must not match, and the expected fix).
#include <doctest/doctest.h>

#include <set>

#include "kvpatch/analyze.h"
#include "kvpatch/rule_set.h"

using namespace kvpatch;

TEST_SUITE("rule_cases") {
  TEST_CASE("each rule in rules/ carries test cases, with and without findings") {
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    std::set<std::string> ids;
    for (const auto& r : rules.plan_site_rules) ids.insert(r.id);
    for (const auto& r : rules.field_rules) ids.insert(r.id);
    for (const auto& r : rules.cast_rules) ids.insert(r.id);
    for (const std::string& id : ids) {
      bool matching = false;
      bool not_matching = false;
      for (const RuleTestCase& t : rules.tests) {
        if (t.rule != id) continue;
        (t.expect.empty() ? not_matching : matching) = true;
      }
      CHECK_MESSAGE(matching, "rule " << id << " has no test case with findings");
      CHECK_MESSAGE(not_matching, "rule " << id << " has no test case without findings");
    }
  }

  TEST_CASE("every rule test case passes") {
    const RuleSet rules = load_rule_set(KVPATCH_DEFAULT_RULES_DIR);
    REQUIRE(!rules.tests.empty());
    for (const RuleTestCase& t : rules.tests) {
      CAPTURE(t.name);
      const std::vector<std::string> failures = run_rule_test(rules, t);
      for (const std::string& f : failures) FAIL_CHECK(f);
    }
  }
}
