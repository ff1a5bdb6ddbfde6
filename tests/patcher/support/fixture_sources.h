// Read-only access to the bundled fixtures' files (fixtures/<name>/, found through KVPATCH_FIXTURES_DIR), for
// tests that copy a backend into a scratch directory or repository of their own.
#pragma once

#include <string>

namespace kvpatch_test {

// The backend source of fixtures/<fixture>/ (flashinfer_mla_backend.py).
std::string fixture_source(const std::string& fixture);
// Another file of fixtures/<fixture>/, e.g. its pyproject.toml (the FlashInfer pin).
std::string read_fixture_file(const std::string& fixture, const std::string& name);

}  // namespace kvpatch_test
