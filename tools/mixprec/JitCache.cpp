//===- JitCache.cpp - modules `mixprec run` compiled, kept on disk --------===//
#include "tools/mixprec/JitCache.h"

#include "compiler/Train/Trainer.h"

#include "codegen/Cuda/KernelCache.h"
#include "common/FileIO.h"
#include "mixprec/runtime.h"
#include "runtime/format/ModuleHash.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace mixprec::tools {
namespace {

/// "SIZE MTIME_NS PATH" of a file as it is now; "" when it cannot be read.
std::string fileStamp(const std::string &path) {
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(path, status))
    return "";
  return std::to_string(status.getSize()) + " " +
         std::to_string(status.getLastModificationTime().time_since_epoch().count()) + " " + path;
}

/// The key file's text: the key, a separator line, then one stamp per file.
constexpr const char *kFilesHeader = "--- files ---\n";

} // namespace

bool fileFingerprint(const std::string &path, std::string &out, std::string &error) {
  // XXH64, not the FNV-1a fingerprint training checkpoints record: every
  // run reads the whole model through it, and FNV-1a's byte chain took
  // 0.65 s for 500 MB.
  return compiler::fileFingerprint(path, out, error, /*xxh64=*/true);
}

bool jitCacheEntry(const std::string &keyText, JitCacheEntry &entry, std::string &why) {
  entry.keyText = keyText;
  std::string root = codegen::defaultCacheDirectory();
  if (root.empty()) {
    why = ""; // no cache folder is configured: quietly off
    return false;
  }
  llvm::SmallString<256> dir(root);
  llvm::sys::path::append(dir, "modules");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    why = "cannot create the cache folder " + std::string(dir) + ": " + ec.message();
    return false;
  }
  // create_directories accepts an existing file of that name.
  if (!llvm::sys::fs::is_directory(dir)) {
    why = "the cache folder " + std::string(dir) + " is not a folder";
    return false;
  }
  std::string name = llvm::utohexstr(runtime::fnv1a64(keyText.data(), keyText.size()),
                                     /*LowerCase=*/true, /*Width=*/16);
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name + ".mpk");
  entry.modulePath = std::string(path);
  llvm::sys::path::replace_extension(path, ".key");
  entry.keyPath = std::string(path);
  return true;
}

std::string valueStamp(const std::vector<int64_t> &values) {
  return llvm::utohexstr(runtime::fnv1a64(values.data(), values.size() * sizeof(int64_t)),
                         /*LowerCase=*/true) +
         ":" + std::to_string(values.size());
}

bool jitCacheValid(const JitCacheEntry &entry, const ValueStamps &values, std::string &why,
                   mixprec_module_t *loaded) {
  *loaded = nullptr;
  std::string text, error;
  if (entry.modulePath.empty() || !llvm::sys::fs::exists(entry.keyPath) ||
      !common::readRegularFile(entry.keyPath, text, error))
    return false; // not there (or not complete): a plain miss
  llvm::StringRef rest(text);
  if (!rest.consume_front(entry.keyText) || !rest.consume_front(kFilesHeader))
    return false; // another key with the same hash: a plain miss
  llvm::SmallVector<llvm::StringRef> stamps;
  rest.split(stamps, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef stamp : stamps) {
    if (stamp.consume_front("value ")) {
      auto [name, print] = stamp.rsplit(' ');
      auto it = values.find(name.str());
      if (it == values.end() || it->second != print)
        return false; // specialised to other values: a plain miss, replaced
      continue;
    }
    std::string file = stamp.split(' ').second.split(' ').second.str();
    if (fileStamp(file) != stamp) {
      why = "the model's file " + file + " changed";
      return false;
    }
  }
  mixprec_module_t module = nullptr;
  if (mixprec_status_t status = mixprec_module_load_file(entry.modulePath.c_str(), nullptr,
                                                          &module)) {
    why = std::string("the runtime refuses the cached module: ") + mixprec_status_message(status);
    mixprec_status_free(status);
    return false;
  }
  *loaded = module;
  return true;
}

bool jitCacheCommit(const JitCacheEntry &entry, const std::vector<std::string> &externalFiles,
                    const ValueStamps &used, std::string &error) {
  std::string text = entry.keyText + kFilesHeader;
  for (const std::string &file : externalFiles) {
    std::string stamp = fileStamp(file);
    if (stamp.empty()) {
      error = "cannot read " + file;
      return false;
    }
    text += stamp + "\n";
  }
  for (const auto &[name, print] : used)
    text += "value " + name + " " + print + "\n";
  return common::writeFileAtomically(entry.keyPath, text.data(), text.size(), error);
}

} // namespace mixprec::tools
