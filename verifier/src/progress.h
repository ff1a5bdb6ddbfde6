// One-line progress on stderr while a long matrix runs, only when stderr is a terminal.
#pragma once

#include <string>

namespace kvverify {

class Progress {
 public:
  explicit Progress(size_t total);
  ~Progress();
  void step(size_t done, const std::string& what);

 private:
  size_t total_;
  bool enabled_;
};

}  // namespace kvverify
