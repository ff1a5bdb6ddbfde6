// The small JSON reader and writer.
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "src/json.h"

using kvverify::JsonSyntaxError;
using kvverify::JsonValue;
using kvverify::parse_json;

TEST_SUITE("json") {
  TEST_CASE("reads every kind of value with positions") {
    const JsonValue v = parse_json(R"({"a": [1, -2.5e1, true, false, null], "b": {"c": "x\ty\u00e9\ud83d\ude00"}})");
    REQUIRE(v.is_object());
    const JsonValue& a = *v.find("a");
    REQUIRE(a.as_array().size() == 5);
    CHECK(a.as_array()[0].as_number() == 1);
    CHECK(a.as_array()[1].as_number() == -25);
    CHECK(a.as_array()[2].as_bool());
    CHECK_FALSE(a.as_array()[3].as_bool());
    CHECK(a.as_array()[4].is_null());
    CHECK(v.find("b")->find("c")->as_string() == "x\ty\xC3\xA9\xF0\x9F\x98\x80");
    CHECK(a.line == 1);
    CHECK(a.column == 7);
    CHECK(v.find("missing") == nullptr);
  }

  TEST_CASE("syntax errors give line and column") {
    const std::pair<const char*, const char*> cases[] = {
        {"{\n  \"a\": 1,\n  \"b\" 2\n}", "expected ':'"},
        {"[1, 2", "expected ',' or ']'"},
        {"{\"a\": tru}", "invalid literal"},
        {"\"abc", "unterminated string"},
        {"01", "unexpected text after"},
        {"1.", "digits expected after '.'"},
        {"\"\\ud800\"", "unpaired surrogate"},
        {"{} {}", "unexpected text after"},
        {"", "unexpected end of input"},
    };
    for (const auto& c : cases) {
      // References, not a structured binding: CAPTURE's lambda cannot take a binding before clang 16 (clang-tidy).
      const char* text = c.first;
      const char* message = c.second;
      CAPTURE(text);
      try {
        parse_json(text);
        FAIL("no error");
      } catch (const JsonSyntaxError& error) {
        CHECK(std::string(error.what()).find(message) != std::string::npos);
        CHECK(error.line >= 1);
      }
    }
    try {
      parse_json("{\n  \"a\": 1,\n  \"b\" 2\n}");
    } catch (const JsonSyntaxError& error) {
      CHECK(error.line == 3);
      CHECK(error.column == 7);
    }
  }

  TEST_CASE("refuses nesting deep enough to exhaust the stack") {
    CHECK_THROWS_AS(parse_json(std::string(100000, '[')), JsonSyntaxError);
  }

  TEST_CASE("writer round-trips through the reader; non-finite numbers become null") {
    JsonValue v;
    v.set("name", "quote\" back\\ nl\n");
    v.set("count", 3);
    v.set("ratio", 0.125);
    v.set("inf", std::numeric_limits<double>::infinity());
    JsonValue list(JsonValue::Array{});
    list.push_back(true);
    list.push_back(JsonValue());
    v.set("list", list);
    const JsonValue back = parse_json(kvverify::to_json_text(v));
    CHECK(back.find("name")->as_string() == "quote\" back\\ nl\n");
    CHECK(back.find("count")->as_number() == 3);
    CHECK(back.find("ratio")->as_number() == 0.125);
    CHECK(back.find("inf")->is_null());
    CHECK(back.find("list")->as_array().size() == 2);
  }
}
