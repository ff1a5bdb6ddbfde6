#pragma once
// Which FlashInfer a backend file will run with, read from what sits above it on disk. The answer decides
// whether run() must be handed FP8 scales: FlashInfer 0.6.14 and later refuse an FP8 KV run without
// ckv_scale / kpe_scale, and earlier releases have no such parameters at all.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace kvpatch {

struct FlashInferVersion {
  std::string version;   // "0.7.2"
  std::string evidence;  // where it was read: "flashinfer_python==0.7.2 in python/pyproject.toml"
};

// Walks up from the file's directory; in each directory, the first of: an installed
// `flashinfer_python-<v>.dist-info` (a site-packages install), a `pyproject.toml` that pins
// `flashinfer_python==<v>` or `flashinfer-python==<v>` (an SGLang checkout pins it in python/pyproject.toml),
// or an `sglang-*.dist-info/METADATA` that requires it (an installed SGLang). nullopt when none is found.
// When none is found and `unpinned` is given, it gets the nearest requirement passed over that names FlashInfer
// without pinning a release (an SGLang 0.4.3 checkout asks for `flashinfer_python>=0.2.1.post1`), with where it
// was read, e.g. "flashinfer_python>=0.2.1.post1 in python/pyproject.toml"; "" when there was none.
std::optional<FlashInferVersion> find_flashinfer_version(const std::filesystem::path& file,
                                                         std::string* unpinned = nullptr);

// find_flashinfer_version() for the files of one run, reading each directory once: a run that selects
// thousands of files in one directory listed it once per file (2,000 files: 47% of the run's time).
// Keep one for no longer than the directories stay as they are.
class FlashInferLookup {
public:
  std::optional<FlashInferVersion> find(const std::filesystem::path& file, std::string* unpinned = nullptr);

  // What one directory says: the release it holds, if any, and else a requirement there that pins none.
  struct Directory {
    std::optional<FlashInferVersion> found;
    std::string unpinned;
  };

private:
  std::map<std::filesystem::path, Directory> directories_;
};

// The release the `flashinfer_version` rule parameter names (--flashinfer-version); nullopt for "auto".
std::optional<FlashInferVersion> given_flashinfer_version(const std::map<std::string, std::string>& parameters,
                                                          const std::string& evidence);

// The FlashInfer a file is checked against: the `flashinfer_version` rule parameter (--flashinfer-version)
// when it names a release, else what find_flashinfer_version reads above the file ("auto", the default).
// given_by says where the parameter was given (RuleSet::parameter_origins), for the evidence.
// `lookup`, when given, is the run's (else the file's directories are read afresh).
std::optional<FlashInferVersion> flashinfer_target(const std::map<std::string, std::string>& parameters,
                                                   const std::filesystem::path& file,
                                                   const std::map<std::string, std::string>& given_by = {},
                                                   std::string* unpinned = nullptr,
                                                   FlashInferLookup* lookup = nullptr);

// Release-number order on the leading numeric components: "0.6.18.post1" >= "0.6.14", "0.6.13" < "0.6.14".
bool version_at_least(const std::string& version, const std::string& since);

}  // namespace kvpatch
