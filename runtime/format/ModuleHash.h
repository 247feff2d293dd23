//===- ModuleHash.h - Hashes of modules and side files ----------*- C++ -*-===//
//
// The module format checks two things by hash: the side file
// (SideFile.xxh64, and SideFile.fnv1a64 for readers before it) and the
// module buffer itself (Module.content_hash, FNV-1a 64, which lets a loader
// tell a changed weight byte from a valid module).
// Writers (codegen's module writer, the test tools) use sealModule(); the
// loader uses the rest. No LLVM/MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_FORMAT_MODULEHASH_H
#define MIXPREC_RUNTIME_FORMAT_MODULEHASH_H

#include <cstddef>
#include <cstdint>

namespace mixprec::runtime {

constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnv1a64Prime = 0x100000001b3ull;

/// FNV-1a 64 of `size` bytes, continuing from `hash` (chunked hashing).
uint64_t fnv1a64(const void *data, size_t size, uint64_t hash = kFnv1a64Offset);

/// XXH64 (Yann Collet's xxHash, 64-bit, the reference algorithm's bits)
/// of `size` bytes with `seed`: four 8-byte lanes a 32-byte stripe, so a
/// core hashes several GB/s where FNV-1a's byte-at-a-time multiply chain
/// does ~0.8 (a side file of hundreds of MB is checked at every load).
uint64_t xxh64(const void *data, size_t size, uint64_t seed = 0);

/// XXH64 over bytes given in pieces: update() any number of times, then
/// digest() is xxh64() of their concatenation (checkpoints, written state by
/// state).
class Xxh64Stream {
public:
  explicit Xxh64Stream(uint64_t seed = 0);
  void update(const void *data, size_t size);
  uint64_t digest() const;

private:
  uint64_t seed_, lanes_[4];
  uint64_t total_ = 0;
  uint8_t stripe_[32]; ///< a partial stripe's bytes, `pending_` of them
  size_t pending_ = 0;
};

/// What a writer stores in Module.content_hash before sealing: any non-zero
/// value makes FlatBuffers keep the field (a 0 equals the default and would
/// be omitted, leaving nowhere to write the hash).
constexpr uint64_t kContentHashPlaceholder = ~0ull;

/// FNV-1a 64 of a module buffer with the 8 bytes at `fieldOffset` (the
/// content_hash field) read as zero.
uint64_t moduleContentHash(const uint8_t *data, size_t size, size_t fieldOffset);

/// Finds Module.content_hash in a buffer that passed the FlatBuffers
/// verifier: its byte offset, or false when the field is absent.
bool findContentHashField(const uint8_t *data, size_t size, size_t *fieldOffset);

/// Writer side: verifies a finished module buffer, then writes its content
/// hash into the placeholder. Returns false (buffer unchanged) if the buffer
/// does not verify or has no content_hash field.
bool sealModule(uint8_t *data, size_t size);

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_FORMAT_MODULEHASH_H
