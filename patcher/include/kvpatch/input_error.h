#pragma once
// An error in the input (a path, a source file, a rule file): names the file, the line and what to do.
#include <stdexcept>
#include <string>

namespace kvpatch {

class InputError : public std::runtime_error {
public:
  InputError(std::string file, int line, const std::string& message, std::string remedy, int column = 0)
      : std::runtime_error(message), file_(std::move(file)), line_(line), column_(column), remedy_(std::move(remedy)) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }  // 1-based; 0 when the error concerns the file as a whole
  int column() const { return column_; }  // 1-based byte column; 0 when not known
  const std::string& remedy() const { return remedy_; }

  // "<file>:<line>: <message>; <remedy>" (the line is left out when it is 0).
  std::string formatted() const {
    std::string where = line_ > 0 ? file_ + ":" + std::to_string(line_) : file_;
    return where + ": " + what() + (remedy_.empty() ? "" : "; " + remedy_);
  }

private:
  std::string file_;
  int line_;
  int column_;
  std::string remedy_;
};

}  // namespace kvpatch
