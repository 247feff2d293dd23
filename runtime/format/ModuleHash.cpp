//===- ModuleHash.cpp - Hashes of modules and side files ------------------===//
#include "runtime/format/ModuleHash.h"

#include "runtime/schema/module_generated.h"

#include <algorithm>
#include <cstring>

namespace mixprec::runtime {

uint64_t fnv1a64(const void *data, size_t size, uint64_t hash) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= kFnv1a64Prime;
  }
  return hash;
}

namespace {
constexpr uint64_t kXxhP1 = 0x9e3779b185ebca87ull;
constexpr uint64_t kXxhP2 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kXxhP3 = 0x165667b19e3779f9ull;
constexpr uint64_t kXxhP4 = 0x85ebca77c2b2ae63ull;
constexpr uint64_t kXxhP5 = 0x27d4eb2f165667c5ull;

inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
// Little-endian loads (FlatBuffers' byte order, and every host mixprec
// runs on), through memcpy for any alignment.
inline uint64_t load64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline uint32_t load32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline uint64_t xxhRound(uint64_t acc, uint64_t lane) {
  return rotl64(acc + lane * kXxhP2, 31) * kXxhP1;
}
inline uint64_t xxhMerge(uint64_t h, uint64_t acc) {
  return (h ^ xxhRound(0, acc)) * kXxhP1 + kXxhP4;
}

/// The four lanes' start.
inline void xxhInit(uint64_t v[4], uint64_t seed) {
  v[0] = seed + kXxhP1 + kXxhP2;
  v[1] = seed + kXxhP2;
  v[2] = seed;
  v[3] = seed - kXxhP1;
}
/// Runs every whole 32-byte stripe from p on; returns where the rest starts.
inline const uint8_t *xxhStripes(uint64_t v[4], const uint8_t *p, const uint8_t *end) {
  uint64_t v1 = v[0], v2 = v[1], v3 = v[2], v4 = v[3];
  for (; end - p >= 32; p += 32) {
    v1 = xxhRound(v1, load64(p));
    v2 = xxhRound(v2, load64(p + 8));
    v3 = xxhRound(v3, load64(p + 16));
    v4 = xxhRound(v4, load64(p + 24));
  }
  v[0] = v1, v[1] = v2, v[2] = v3, v[3] = v4;
  return p;
}
/// The digest of `total` bytes: the lanes (used when total >= 32), then the
/// bytes after the last whole stripe, [p, end).
uint64_t xxhFinish(const uint64_t v[4], uint64_t seed, uint64_t total, const uint8_t *p,
                   const uint8_t *end) {
  uint64_t h;
  if (total >= 32) {
    h = rotl64(v[0], 1) + rotl64(v[1], 7) + rotl64(v[2], 12) + rotl64(v[3], 18);
    for (int i = 0; i < 4; ++i)
      h = xxhMerge(h, v[i]);
  } else {
    h = seed + kXxhP5;
  }
  h += total;
  for (; end - p >= 8; p += 8)
    h = rotl64(h ^ xxhRound(0, load64(p)), 27) * kXxhP1 + kXxhP4;
  if (end - p >= 4) {
    h = rotl64(h ^ (uint64_t(load32(p)) * kXxhP1), 23) * kXxhP2 + kXxhP3;
    p += 4;
  }
  for (; p < end; ++p)
    h = rotl64(h ^ (uint64_t(*p) * kXxhP5), 11) * kXxhP1;
  h ^= h >> 33;
  h *= kXxhP2;
  h ^= h >> 29;
  h *= kXxhP3;
  h ^= h >> 32;
  return h;
}
} // namespace

uint64_t xxh64(const void *data, size_t size, uint64_t seed) {
  const auto *p = static_cast<const uint8_t *>(data);
  const uint8_t *const end = p + size;
  uint64_t v[4];
  xxhInit(v, seed);
  p = xxhStripes(v, p, end);
  return xxhFinish(v, seed, size, p, end);
}

Xxh64Stream::Xxh64Stream(uint64_t seed) : seed_(seed) { xxhInit(lanes_, seed); }

void Xxh64Stream::update(const void *data, size_t size) {
  if (size == 0)
    return;
  const auto *p = static_cast<const uint8_t *>(data);
  const uint8_t *const end = p + size;
  total_ += size;
  if (pending_) { // fill the partial stripe first
    const size_t take = std::min(size, sizeof(stripe_) - pending_);
    std::memcpy(stripe_ + pending_, p, take);
    pending_ += take;
    p += take;
    if (pending_ < sizeof(stripe_))
      return;
    xxhStripes(lanes_, stripe_, stripe_ + sizeof(stripe_));
    pending_ = 0;
  }
  p = xxhStripes(lanes_, p, end);
  pending_ = static_cast<size_t>(end - p);
  if (pending_)
    std::memcpy(stripe_, p, pending_);
}

uint64_t Xxh64Stream::digest() const {
  return xxhFinish(lanes_, seed_, total_, stripe_, stripe_ + pending_);
}

uint64_t moduleContentHash(const uint8_t *data, size_t size, size_t fieldOffset) {
  static const uint8_t kZeros[8] = {};
  uint64_t hash = fnv1a64(data, fieldOffset);
  hash = fnv1a64(kZeros, sizeof(kZeros), hash);
  return fnv1a64(data + fieldOffset + 8, size - fieldOffset - 8, hash);
}

bool findContentHashField(const uint8_t *data, size_t size, size_t *fieldOffset) {
  const auto *table = reinterpret_cast<const flatbuffers::Table *>(schema::GetModule(data));
  const uint8_t *field = table->GetAddressOf(schema::Module::VT_CONTENT_HASH);
  if (!field)
    return false;
  // The verifier checked that the field lies inside the buffer.
  size_t offset = static_cast<size_t>(field - data);
  if (offset > size || size - offset < 8)
    return false;
  *fieldOffset = offset;
  return true;
}

bool sealModule(uint8_t *data, size_t size) {
  flatbuffers::Verifier verifier(data, size);
  if (!schema::VerifyModuleBuffer(verifier))
    return false;
  size_t offset = 0;
  if (!findContentHashField(data, size, &offset))
    return false;
  uint64_t hash = moduleContentHash(data, size, offset);
  // FlatBuffers scalars are little-endian, as is every host mixprec runs on.
  std::memcpy(data + offset, &hash, sizeof(hash));
  return true;
}

} // namespace mixprec::runtime
