//===- KernelCache.h - NVRTC results kept on disk ---------------*- C++ -*-===//
//
// Compiling a model's kernels with NVRTC takes 60-90 ms each; compiling the
// same model again should take none. The cache keeps each compilation's PTX,
// CUBIN and log in one file per key, where the key is everything NVRTC's
// output depends on: the program's name and source, the NVRTC version and
// the full option list (architecture, include folder, extra flags).
//
// - Location: KernelCacheOptions::directory, else $MIXPREC_CACHE_DIR, else
//   $XDG_CACHE_HOME/mixprec, else $HOME/.cache/mixprec; entries go to its
//   `nvrtc/` folder as <16 hex digits>.bin.
// - Entries are written atomically (a temporary file renamed into place,
//   common/FileIO), so a concurrent compile of the same kernel, in this
//   process or another, sees the old entry, the new one or none, never half
//   of one.
// - Each entry holds its full key and ends with an FNV-1a 64 checksum of
//   everything before it. An entry that is truncated, changed or not an
//   entry at all is never used: it is reported in a warning, removed, and
//   the kernel is compiled and stored again. An entry of a different key
//   (a hash collision) or format version is a plain miss.
// - The cache never makes a compile fail: a folder that cannot be created,
//   or an entry that cannot be written, turns the cache off for this
//   KernelCache with one warning, and compiles go on without it.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_KERNELCACHE_H
#define MIXPREC_CODEGEN_CUDA_KERNELCACHE_H

#include "codegen/Cuda/NvrtcCompiler.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace mixprec::codegen {

/// The cache folder the environment gives: $MIXPREC_CACHE_DIR, else
/// $XDG_CACHE_HOME/mixprec, else $HOME/.cache/mixprec ("" when none is set).
std::string defaultCacheDirectory();

struct KernelCacheOptions {
  /// The cache's root folder; "" means defaultCacheDirectory().
  std::string directory;
  /// False: compile every time, touch no file.
  bool enabled = true;
  /// Receives each warning (one line, without a "warning:" prefix); null
  /// prints "mixprec: warning: ..." on stderr.
  std::function<void(const std::string &)> warn;
};

/// What identifies one compilation.
struct KernelCacheKey {
  std::string text;  ///< the full key: format, NVRTC version, options, name, source
  uint64_t hash = 0; ///< FNV-1a 64 of `text`: the entry's file name
};

KernelCacheKey kernelCacheKey(const std::string &name, const std::string &source,
                              const NvrtcOptions &options);

class KernelCache {
public:
  explicit KernelCache(KernelCacheOptions options = {});

  /// Whether entries are read and written (false once turned off).
  bool enabled() const { return enabled_.load(); }
  /// The folder holding the entries ("" when the cache is off).
  const std::string &entryDirectory() const { return entryDir_; }
  /// Where the entry of `key` lives.
  std::string entryPath(const KernelCacheKey &key) const;

  /// compileWithNvrtc through the cache: a valid entry for the same key is
  /// returned without compiling; otherwise NVRTC compiles and the result
  /// is stored. Compile errors are never cached.
  bool compile(const std::string &name, const std::string &source, const NvrtcOptions &options,
               NvrtcResult &result, std::string &error);

  /// Reads the entry of `key` into `result`; false on a miss. A damaged
  /// entry is reported, removed and counted as a miss.
  bool lookup(const KernelCacheKey &key, NvrtcResult &result);
  /// Writes the entry of `key` atomically; a failure turns the cache off
  /// with a warning.
  void store(const KernelCacheKey &key, const NvrtcResult &result);

  struct Stats {
    uint64_t hits = 0, misses = 0, damaged = 0, stores = 0;
  };
  Stats stats() const {
    return {hits_.load(), misses_.load(), damaged_.load(), stores_.load()};
  }

private:
  void warn(const std::string &message);
  void turnOff(const std::string &why);

  std::string entryDir_;
  std::function<void(const std::string &)> warn_;
  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> hits_{0}, misses_{0}, damaged_{0}, stores_{0};
};

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_CUDA_KERNELCACHE_H
