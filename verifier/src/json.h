// A small JSON value with a reader and a writer: kvverify reads `kvpatch check --format json`
// reports and writes its own report, with the C++ standard library alone (the GPU machine has
// no JSON package).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvverify {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<JsonValue>;
  using Object = std::vector<std::pair<std::string, JsonValue>>;  // keeps the writer's order

  JsonValue() = default;
  JsonValue(std::nullptr_t) {}
  JsonValue(bool b) : kind_(Kind::kBool), bool_(b) {}
  JsonValue(double d) : kind_(Kind::kNumber), number_(d) {}
  JsonValue(int i) : JsonValue(static_cast<double>(i)) {}
  JsonValue(int64_t i) : JsonValue(static_cast<double>(i)) {}
  JsonValue(uint64_t i) : JsonValue(static_cast<double>(i)) {}
  JsonValue(const char* s) : kind_(Kind::kString), string_(s) {}
  JsonValue(std::string s) : kind_(Kind::kString), string_(std::move(s)) {}
  JsonValue(Array a) : kind_(Kind::kArray), array_(std::move(a)) {}
  JsonValue(Object o) : kind_(Kind::kObject), object_(std::move(o)) {}

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool as_bool() const { return bool_; }
  double as_number() const { return number_; }
  const std::string& as_string() const { return string_; }
  const Array& as_array() const { return array_; }
  Array& as_array() { return array_; }
  const Object& as_object() const { return object_; }

  // Member lookup; nullptr when this is not an object or has no such key.
  const JsonValue* find(std::string_view key) const;
  // Appends a member (objects built by the writer side).
  JsonValue& set(std::string key, JsonValue value);
  void push_back(JsonValue value) { array_.push_back(std::move(value)); }

  // 1-based position of the value in the text it was read from (0 when built in code).
  int line = 0;
  int column = 0;

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  Array array_;
  Object object_;
};

struct JsonSyntaxError : std::runtime_error {
  JsonSyntaxError(int line_, int column_, const std::string& what)
      : std::runtime_error(what), line(line_), column(column_) {}
  int line;
  int column;
};

// Parses one JSON document (RFC 8259); throws JsonSyntaxError naming line and column.
JsonValue parse_json(std::string_view text);

// Writes `value` with two-space indentation; non-finite numbers become null (JSON has none).
std::string to_json_text(const JsonValue& value);

}  // namespace kvverify
