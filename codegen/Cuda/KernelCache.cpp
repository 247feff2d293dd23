//===- KernelCache.cpp - NVRTC results kept on disk ------------------------===//
#include "codegen/Cuda/KernelCache.h"

#include "common/Escape.h"
#include "common/FileIO.h"
#include "runtime/format/ModuleHash.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace mixprec::codegen {
namespace {

// An entry: the header, then key, log, PTX and CUBIN bytes, then the FNV-1a
// 64 of everything before it. Integers are little-endian (x86-64, aarch64).
constexpr char kMagic[8] = {'M', 'P', 'K', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderSize = 8 + 4 + 4 + 4 * 8;
constexpr size_t kTrailerSize = 8;
/// Larger files are not entries (a kernel's CUBIN is kilobytes).
constexpr uint64_t kMaxEntryBytes = 1ull << 30;

void appendU64(std::string &out, uint64_t value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof(value));
}

uint64_t readU64(const std::string &in, size_t at) {
  uint64_t value = 0;
  std::memcpy(&value, in.data() + at, sizeof(value));
  return value;
}

/// Creates `path` and its missing parents; "" or the reason it failed.
std::string makeDirectories(const std::string &path) {
  for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    std::string prefix = path.substr(0, at);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return "cannot create folder " + common::quotedName(prefix) + ": " +
             common::writeFailureReason(prefix, errno);
    if (at == std::string::npos)
      break;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return common::quotedName(path) + " is not a folder";
  if (::access(path.c_str(), W_OK | X_OK) != 0)
    return "cannot write in folder " + common::quotedName(path) + ": " +
           common::writeFailureReason(path, errno);
  return "";
}

/// The entry bytes for `key` and `result`.
std::string encodeEntry(const KernelCacheKey &key, const NvrtcResult &result) {
  std::string entry(kMagic, sizeof(kMagic));
  uint32_t words[2] = {kFormatVersion, 0};
  entry.append(reinterpret_cast<const char *>(words), sizeof(words));
  appendU64(entry, key.text.size());
  appendU64(entry, result.log.size());
  appendU64(entry, result.ptx.size());
  appendU64(entry, result.cubin.size());
  entry += key.text;
  entry += result.log;
  entry += result.ptx;
  entry.append(result.cubin.begin(), result.cubin.end());
  appendU64(entry, runtime::fnv1a64(entry.data(), entry.size()));
  return entry;
}

enum class Decoded { Hit, Miss, Damaged };

/// Checks `entry` and, when it is a valid entry of `key`, fills `result`.
/// `reason` says what is wrong with a damaged one.
Decoded decodeEntry(const std::string &entry, const KernelCacheKey &key, NvrtcResult &result,
                    std::string &reason) {
  if (entry.size() < kHeaderSize + kTrailerSize) {
    reason = "truncated: " + std::to_string(entry.size()) + " bytes";
    return Decoded::Damaged;
  }
  if (std::memcmp(entry.data(), kMagic, sizeof(kMagic)) != 0) {
    reason = "not a kernel cache entry";
    return Decoded::Damaged;
  }
  const size_t bodySize = entry.size() - kTrailerSize;
  if (runtime::fnv1a64(entry.data(), bodySize) != readU64(entry, bodySize)) {
    reason = "checksum mismatch: truncated or changed";
    return Decoded::Damaged;
  }
  uint32_t version = 0;
  std::memcpy(&version, entry.data() + sizeof(kMagic), sizeof(version));
  if (version != kFormatVersion)
    return Decoded::Miss; // another mixprec's format: replaced, not used
  uint64_t lengths[4], total = 0;
  for (int i = 0; i < 4; ++i) {
    lengths[i] = readU64(entry, 16 + 8 * i);
    total += lengths[i] <= bodySize ? lengths[i] : bodySize + 1;
  }
  if (total != bodySize - kHeaderSize) {
    reason = "its lengths do not add up to its size";
    return Decoded::Damaged;
  }
  size_t at = kHeaderSize;
  auto take = [&](uint64_t length) {
    std::string part = entry.substr(at, length);
    at += length;
    return part;
  };
  if (take(lengths[0]) != key.text)
    return Decoded::Miss; // a hash collision: another kernel's entry
  result.log = take(lengths[1]);
  result.ptx = take(lengths[2]);
  std::string cubin = take(lengths[3]);
  result.cubin.assign(cubin.begin(), cubin.end());
  return Decoded::Hit;
}

} // namespace

std::string defaultCacheDirectory() {
  auto env = [](const char *name) {
    const char *value = std::getenv(name);
    return std::string(value ? value : "");
  };
  if (std::string dir = env("MIXPREC_CACHE_DIR"); !dir.empty())
    return dir;
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty())
    return dir + "/mixprec";
  if (std::string home = env("HOME"); !home.empty())
    return home + "/.cache/mixprec";
  return "";
}

KernelCacheKey kernelCacheKey(const std::string &name, const std::string &source,
                              const NvrtcOptions &options) {
  KernelCacheKey key;
  key.text = "mixprec kernel cache " + std::to_string(kFormatVersion) + "\nnvrtc " +
             nvrtcVersionString() + "\n";
  for (const std::string &arg : nvrtcArguments(options))
    key.text += "option " + std::to_string(arg.size()) + " " + arg + "\n";
  key.text += "name " + std::to_string(name.size()) + " " + name + "\nsource " +
              std::to_string(source.size()) + "\n" + source;
  key.hash = runtime::fnv1a64(key.text.data(), key.text.size());
  return key;
}

KernelCache::KernelCache(KernelCacheOptions options) : warn_(std::move(options.warn)) {
  if (!options.enabled)
    return;
  std::string root = options.directory.empty() ? defaultCacheDirectory() : options.directory;
  if (root.empty()) {
    warn("kernel cache off: no cache folder (set MIXPREC_CACHE_DIR, XDG_CACHE_HOME or HOME)");
    return;
  }
  std::string dir = root + "/nvrtc";
  if (std::string why = makeDirectories(dir); !why.empty()) {
    warn("kernel cache off: " + why + " (set MIXPREC_CACHE_DIR to a writable folder)");
    return;
  }
  entryDir_ = dir;
  enabled_ = true;
}

std::string KernelCache::entryPath(const KernelCacheKey &key) const {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx.bin", static_cast<unsigned long long>(key.hash));
  return entryDir_ + "/" + name;
}

void KernelCache::warn(const std::string &message) {
  if (warn_)
    warn_(message);
  else
    std::fprintf(stderr, "mixprec: warning: %s\n", message.c_str());
}

void KernelCache::turnOff(const std::string &why) {
  if (enabled_.exchange(false))
    warn("kernel cache off: " + why);
}

bool KernelCache::lookup(const KernelCacheKey &key, NvrtcResult &result) {
  if (!enabled())
    return false;
  const std::string path = entryPath(key);
  if (::access(path.c_str(), F_OK) != 0) {
    ++misses_;
    return false;
  }
  std::string entry, error, reason;
  if (!common::readRegularFile(path, entry, error, kMaxEntryBytes)) {
    // Gone since the check (another process removed it), or unreadable.
    if (::access(path.c_str(), F_OK) == 0)
      warn("kernel cache: " + common::escapeControls(error) + "; compiling again");
    ++misses_;
    return false;
  }
  switch (decodeEntry(entry, key, result, reason)) {
  case Decoded::Hit:
    ++hits_;
    return true;
  case Decoded::Damaged:
    warn("kernel cache: ignoring damaged entry " + common::quotedName(path) + " (" + reason +
         "); compiling again");
    ::unlink(path.c_str());
    ++damaged_;
    break;
  case Decoded::Miss:
    break;
  }
  ++misses_;
  return false;
}

void KernelCache::store(const KernelCacheKey &key, const NvrtcResult &result) {
  if (!enabled())
    return;
  std::string entry = encodeEntry(key, result), error;
  if (!common::writeFileAtomically(entryPath(key), entry.data(), entry.size(), error)) {
    turnOff(common::escapeControls(error));
    return;
  }
  ++stores_;
}

bool KernelCache::compile(const std::string &name, const std::string &source,
                          const NvrtcOptions &options, NvrtcResult &result, std::string &error) {
  if (!enabled())
    return compileWithNvrtc(name, source, options, result, error);
  KernelCacheKey key = kernelCacheKey(name, source, options);
  if (lookup(key, result))
    return true;
  if (!compileWithNvrtc(name, source, options, result, error))
    return false;
  store(key, result);
  return true;
}

} // namespace mixprec::codegen
