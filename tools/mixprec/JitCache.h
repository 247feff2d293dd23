//===- JitCache.h - modules `mixprec run` compiled, kept on disk -*- C++ -*-===//
//
// `mixprec run MODEL.onnx` compiles the model just in time for the shapes
// of its inputs; running it again with the same shapes should compile
// nothing. Each specialisation is kept as a module in the cache folder
// (codegen::defaultCacheDirectory(): $MIXPREC_CACHE_DIR, else
// $XDG_CACHE_HOME/mixprec, else ~/.cache/mixprec), under `modules/`:
//   <16 hex>.mpk, <16 hex>.mpk.weights  the module, as `compile` writes it
//   <16 hex>.key                        the full key, then the files the
//                                       model read besides itself (ONNX
//                                       external data) with size and mtime,
//                                       and the input values it was
//                                       specialised to, if any
// The key is everything the module depends on: mixprec's version, the
// model file's bytes (XXH64 and size), the precision options, the
// --shape values and the shapes of the --input arrays, and the CUDA
// architecture the module's code is for (or none). The .key file is
// written last, so an entry without one is incomplete and unused. An entry
// whose key text differs (a hash collision), whose external files changed,
// whose specialised input values differ from the run's (replaced: the
// last values win), or whose module the runtime's loader refuses (damaged, truncated) is
// compiled again and replaced; the cache never makes a run fail: when the
// folder cannot be created (or a file stands where it should be), or the
// module cannot be written there, the run compiles into a temporary folder,
// with one warning (quietly when no folder is configured at all).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TOOLS_MIXPREC_JITCACHE_H
#define MIXPREC_TOOLS_MIXPREC_JITCACHE_H

#include "mixprec/runtime.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mixprec::tools {

/// One specialisation's place in the cache.
struct JitCacheEntry {
  std::string keyText;    ///< the full key
  std::string modulePath; ///< <dir>/modules/<hash>.mpk ("" when the cache is off)
  std::string keyPath;    ///< <dir>/modules/<hash>.key
};

/// The entry of `keyText`; false when no cache folder is configured (`why`
/// empty) or it cannot be created (`why` says so).
bool jitCacheEntry(const std::string &keyText, JitCacheEntry &entry, std::string &why);

/// Input values a module was specialised to (an input the model needs at
/// compile time): name -> fingerprint of the values.
using ValueStamps = std::map<std::string, std::string>;

/// Whether the entry holds a usable module: its key file matches the key
/// text, the files it lists are unchanged, the input values it was
/// specialised to are those of `values` (the run's) and the runtime loads
/// the module. `why` says why not when the entry exists but cannot be used.
/// On success `*loaded` holds the loaded module (the caller releases it), so
/// a hit loads and checks the module and its weights once, not twice.
bool jitCacheValid(const JitCacheEntry &entry, const ValueStamps &values, std::string &why,
                   mixprec_module_t *loaded);

/// Records a module written at entry.modulePath as complete: writes the
/// key file listing `externalFiles` (with their size and mtime) and the
/// input values `used` of the module's specialisation.
bool jitCacheCommit(const JitCacheEntry &entry, const std::vector<std::string> &externalFiles,
                    const ValueStamps &used, std::string &error);

/// The fingerprint of an input's values (ValueStamps).
std::string valueStamp(const std::vector<int64_t> &values);

/// XXH64 and size of a file's bytes as "xxh64 HASH:SIZE"; false on a read
/// error.
bool fileFingerprint(const std::string &path, std::string &out, std::string &error);

} // namespace mixprec::tools

#endif // MIXPREC_TOOLS_MIXPREC_JITCACHE_H
