//===- ModuleHash.cpp - FNV-1a hashes of modules and side files -----------===//
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
