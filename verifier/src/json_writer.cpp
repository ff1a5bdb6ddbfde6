// Indented JSON text for kvverify's --format json report.
#include <cmath>
#include <cstdio>
#include <string>

#include "json.h"

namespace kvverify {
namespace {

void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void write_number(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char buffer[32];
  if (d == std::floor(d) && std::fabs(d) < 9.0e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", d);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.9g", d);
  }
  out += buffer;
}

void write_value(std::string& out, const JsonValue& value, int indent) {
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  const std::string close_pad(static_cast<size_t>(indent), ' ');
  switch (value.kind()) {
    case JsonValue::Kind::kNull: out += "null"; break;
    case JsonValue::Kind::kBool: out += value.as_bool() ? "true" : "false"; break;
    case JsonValue::Kind::kNumber: write_number(out, value.as_number()); break;
    case JsonValue::Kind::kString: write_string(out, value.as_string()); break;
    case JsonValue::Kind::kArray: {
      if (value.as_array().empty()) {
        out += "[]";
        break;
      }
      out += "[\n";
      bool first = true;
      for (const JsonValue& item : value.as_array()) {
        if (!first) out += ",\n";
        first = false;
        out += pad;
        write_value(out, item, indent + 2);
      }
      out += "\n" + close_pad + "]";
      break;
    }
    case JsonValue::Kind::kObject: {
      if (value.as_object().empty()) {
        out += "{}";
        break;
      }
      out += "{\n";
      bool first = true;
      for (const auto& [key, item] : value.as_object()) {
        if (!first) out += ",\n";
        first = false;
        out += pad;
        write_string(out, key);
        out += ": ";
        write_value(out, item, indent + 2);
      }
      out += "\n" + close_pad + "}";
      break;
    }
  }
}

}  // namespace

std::string to_json_text(const JsonValue& value) {
  std::string out;
  write_value(out, value, 0);
  out += '\n';
  return out;
}

}  // namespace kvverify
