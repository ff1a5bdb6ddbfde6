#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace kvverify {

Progress::Progress(size_t total) : total_(total), enabled_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");  // leave the terminal line clean
}

void Progress::step(size_t done, const std::string& what) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", done + 1, total_, what.c_str());
  std::fflush(stderr);
}

}  // namespace kvverify
