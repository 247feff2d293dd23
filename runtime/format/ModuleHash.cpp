//===- ModuleHash.cpp - Hashes of modules and side files ------------------===//
#include "runtime/format/ModuleHash.h"

#include "runtime/schema/module_generated.h"

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
} // namespace

uint64_t xxh64(const void *data, size_t size, uint64_t seed) {
  const auto *p = static_cast<const uint8_t *>(data);
  const uint8_t *const end = p + size;
  uint64_t h;
  if (size >= 32) {
    uint64_t v1 = seed + kXxhP1 + kXxhP2, v2 = seed + kXxhP2, v3 = seed, v4 = seed - kXxhP1;
    for (; end - p >= 32; p += 32) {
      v1 = xxhRound(v1, load64(p));
      v2 = xxhRound(v2, load64(p + 8));
      v3 = xxhRound(v3, load64(p + 16));
      v4 = xxhRound(v4, load64(p + 24));
    }
    h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
    h = xxhMerge(h, v1);
    h = xxhMerge(h, v2);
    h = xxhMerge(h, v3);
    h = xxhMerge(h, v4);
  } else {
    h = seed + kXxhP5;
  }
  h += static_cast<uint64_t>(size);
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
