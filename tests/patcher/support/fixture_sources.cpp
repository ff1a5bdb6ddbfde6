#include "fixture_sources.h"

#include <filesystem>

#include "files.h"

namespace kvpatch_test {

std::string fixture_source(const std::string& fixture) {
  return read_fixture_file(fixture, "flashinfer_mla_backend.py");
}

std::string read_fixture_file(const std::string& fixture, const std::string& name) {
  return read_bytes(std::filesystem::path(required_env("KVPATCH_FIXTURES_DIR")) / fixture / name);
}

}  // namespace kvpatch_test
