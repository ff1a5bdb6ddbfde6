// Recursive-descent JSON reader with line/column tracking for error messages.
#include <cmath>
#include <cstdlib>
#include <string>

#include "json.h"

namespace kvverify {

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind_ != Kind::kObject) return nullptr;
  for (const auto& [name, value] : object_) {
    if (name == key) return &value;
  }
  return nullptr;
}

JsonValue& JsonValue::set(std::string key, JsonValue value) {
  kind_ = Kind::kObject;
  object_.emplace_back(std::move(key), std::move(value));
  return object_.back().second;
}

namespace {

constexpr int kMaxDepth = 200;  // deeper documents are refused instead of exhausting the stack

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  JsonValue document() {
    skip_space();
    JsonValue value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw JsonSyntaxError(line_, column_, what); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  char next() {
    const char c = text_[pos_++];
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    return c;
  }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) next();
  }

  void expect_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("invalid literal (expected '" + std::string(word) + "')");
    for (size_t i = 0; i < word.size(); ++i) next();
  }

  JsonValue parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    const int line = line_, column = column_;
    JsonValue value;
    switch (peek()) {
      case '{': value = parse_object(depth); break;
      case '[': value = parse_array(depth); break;
      case '"': value = JsonValue(parse_string()); break;
      case 't': expect_word("true"); value = JsonValue(true); break;
      case 'f': expect_word("false"); value = JsonValue(false); break;
      case 'n': expect_word("null"); break;
      case '\0':
        if (at_end()) fail("unexpected end of input");
        [[fallthrough]];
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          value = JsonValue(parse_number());
        } else {
          fail(std::string("unexpected character '") + peek() + "'");
        }
    }
    value.line = line;
    value.column = column;
    return value;
  }

  JsonValue parse_object(int depth) {
    next();  // '{'
    JsonValue object(JsonValue::Object{});
    skip_space();
    if (peek() == '}') {
      next();
      return object;
    }
    while (true) {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      skip_space();
      if (peek() != ':') fail("expected ':' after key \"" + key + "\"");
      next();
      skip_space();
      object.set(std::move(key), parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        next();
        continue;
      }
      if (peek() == '}') {
        next();
        return object;
      }
      fail("expected ',' or '}' in object");
    }
  }

  JsonValue parse_array(int depth) {
    next();  // '['
    JsonValue array(JsonValue::Array{});
    skip_space();
    if (peek() == ']') {
      next();
      return array;
    }
    while (true) {
      skip_space();
      array.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        next();
        continue;
      }
      if (peek() == ']') {
        next();
        return array;
      }
      fail("expected ',' or ']' in array");
    }
  }

  unsigned parse_hex4() {
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      if (at_end()) fail("unexpected end of input in \\u escape");
      const char c = next();
      code <<= 4;
      if (c >= '0' && c <= '9') code |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') code |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') code |= static_cast<unsigned>(c - 'A' + 10);
      else fail("invalid hex digit in \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string parse_string() {
    next();  // opening quote
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      const char c = next();
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("unterminated escape");
      switch (next()) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = parse_hex4();
          if (code >= 0xD800 && code < 0xDC00) {  // high surrogate: a low one must follow
            if (text_.substr(pos_, 2) != "\\u") fail("unpaired surrogate in \\u escape");
            next();
            next();
            const unsigned low = parse_hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("invalid low surrogate in \\u escape");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            fail("unpaired surrogate in \\u escape");
          }
          append_utf8(out, code);
          break;
        }
        default: fail("invalid escape in string");
      }
    }
  }

  double parse_number() {
    const size_t start = pos_;
    if (peek() == '-') next();
    if (peek() == '0') {
      next();
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') next();
    } else {
      fail("invalid number");
    }
    if (peek() == '.') {
      next();
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number: digits expected after '.'");
      while (peek() >= '0' && peek() <= '9') next();
    }
    if (peek() == 'e' || peek() == 'E') {
      next();
      if (peek() == '+' || peek() == '-') next();
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number: digits expected in exponent");
      while (peek() >= '0' && peek() <= '9') next();
    }
    const std::string digits(text_.substr(start, pos_ - start));
    const double value = std::strtod(digits.c_str(), nullptr);
    if (!std::isfinite(value)) fail("number out of range");
    return value;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

JsonValue parse_json(std::string_view text) { return Reader(text).document(); }

}  // namespace kvverify
