#pragma once
// What a module's imports bind: each local name to the dotted path it stands for.
#include <map>
#include <string>

#include "kvpatch/module_facts.h"

namespace kvpatch {

class ImportedNames {
public:
  explicit ImportedNames(const ModuleFacts& facts);

  // The dotted path a name or attribute chain stands for through the imports
  // (`fi.BatchMLAPagedAttentionWrapper` with `import flashinfer as fi` -> flashinfer.BatchMLAPagedAttentionWrapper;
  // relative ones keep their dots: `from . import traced` then `traced.W` -> .traced.W); "" when its first name is
  // not imported.
  std::string qualified(TSNode expr) const;
  const std::map<std::string, std::string>& paths() const { return paths_; }

private:
  const ModuleFacts& facts_;
  std::map<std::string, std::string> paths_;  // local name -> dotted path
};

// Whether a dotted path lies in a package: `flashinfer.mla.X` and `flashinfer.X` lie in flashinfer.
bool in_package(const std::string& path, const std::string& package);

}  // namespace kvpatch
