#include "scratch_backend.h"

#include "files.h"
#include "fixture_sources.h"
#include "kvpatch_cli.h"

namespace kvpatch_test {

ScratchBackend::ScratchBackend(const std::string& tag, const std::string& fixture) : scratch_(tag) {
  write_bytes(scratch_.path() / "backend.py", fixture_source(fixture));
}

ProcessResult ScratchBackend::run(const std::vector<std::string>& args) const {
  return run_kvpatch(args, scratch_.path());
}

}  // namespace kvpatch_test
