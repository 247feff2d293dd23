//===- Checkpoint.cpp - saving and loading a session's state ---------------===//
//
// Checkpoint.h describes the file. Writing streams each state from the
// backend into the pending file (no second copy of the model in memory);
// reading takes the whole file, checks everything, and only then writes
// the states.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Checkpoint.h"

#include "common/FileIO.h"
#include "runtime/format/ModuleHash.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace mixprec::runtime {
namespace {

constexpr char kMagic[8] = {'M', 'I', 'X', 'P', 'C', 'K', 'P', 'T'};

/// The pending file and the checksum (XXH64) of what went into it.
struct HashedWriter {
  common::PendingFile file;
  Xxh64Stream hash;
  uint64_t written = 0;

  void bytes(const void *data, size_t size) {
    hash.update(data, size);
    written += size;
    file.write(data, size);
  }
  template <typename T> void scalar(T value) { bytes(&value, sizeof(T)); }
};

/// Bounds-checked reads over the file's bytes; `fail` holds the first
/// overrun, after which every read gives zeros.
struct Reader {
  const uint8_t *data;
  size_t size, at = 0;
  bool failed = false;

  const uint8_t *take(uint64_t n) {
    if (failed || n > size - at) {
      failed = true;
      return nullptr;
    }
    const uint8_t *p = data + at;
    at += n;
    return p;
  }
  template <typename T> T scalar() {
    T value{};
    if (const uint8_t *p = take(sizeof(T)))
      std::memcpy(&value, p, sizeof(T));
    return value;
  }
};

/// One state as the file holds it.
struct SavedState {
  std::string name;
  uint32_t dtype = 0;
  std::vector<int64_t> shape;
  const uint8_t *bytes = nullptr;
  uint64_t size = 0;
};

/// Whether the test hook asks the writer to stop mid-file.
bool stallRequested() {
  const char *hook = std::getenv("MIXPREC_TEST_CHECKPOINT_STALL");
  return hook && std::strcmp(hook, "1") == 0;
}

} // namespace

uint64_t checkpointFingerprint(const std::vector<CheckpointState> &states) {
  uint64_t hash = kFnv1a64Offset;
  for (const CheckpointState &state : states) {
    hash = fnv1a64(state.name.c_str(), state.name.size() + 1, hash);
    const uint32_t head[2] = {static_cast<uint32_t>(state.dtype),
                              static_cast<uint32_t>(state.shape.size())};
    hash = fnv1a64(head, sizeof(head), hash);
    if (!state.shape.empty())
      hash = fnv1a64(state.shape.data(), state.shape.size() * sizeof(int64_t), hash);
  }
  return hash;
}

/// The module's states, without data.
static std::vector<CheckpointState> statesOf(const LoadedModule &module) {
  std::vector<CheckpointState> states;
  for (const StateDesc &state : module.states()) {
    const TensorDesc &t = module.tensors()[state.tensor];
    states.push_back({state.name, t.dtype, t.shape, nullptr, t.bytes});
  }
  return states;
}

uint64_t checkpointFingerprint(const LoadedModule &module) {
  return checkpointFingerprint(statesOf(module));
}

Status saveCheckpoint(const LoadedModule &module, Backend &backend, const std::string &path,
                      const void *userBlob, size_t userBytes) {
  // Every state read first: a backend that cannot read one fails before
  // the file is started.
  std::vector<CheckpointState> states = statesOf(module);
  for (size_t i = 0; i < states.size(); ++i)
    if (Status s = backend.readTensor(module.states()[i].tensor, &states[i].data); !s.ok())
      return s.withContext("checkpoint '" + path + "': reading state '" + states[i].name +
                           "': ");
  return writeCheckpoint(path, states, userBlob, userBytes);
}

Status writeCheckpoint(const std::string &path, const std::vector<CheckpointState> &states,
                       const void *userBlob, size_t userBytes) {
  HashedWriter w;
  std::string error;
  if (!w.file.open(path, error))
    return Status(MIXPREC_IO_ERROR, "checkpoint " + error);
  uint64_t total = sizeof(kMagic) + 16 + 16;
  for (const CheckpointState &state : states)
    total += 20 + state.name.size() + 8 * state.shape.size() + state.bytes;
  total += userBytes;
  const bool stall = stallRequested();
  w.bytes(kMagic, sizeof(kMagic));
  w.scalar<uint32_t>(kCheckpointVersion);
  w.scalar<uint32_t>(static_cast<uint32_t>(states.size()));
  w.scalar<uint64_t>(checkpointFingerprint(states));
  for (const CheckpointState &state : states) {
    w.scalar<uint32_t>(static_cast<uint32_t>(state.name.size()));
    w.bytes(state.name.data(), state.name.size());
    w.scalar<uint32_t>(static_cast<uint32_t>(state.dtype));
    w.scalar<uint32_t>(static_cast<uint32_t>(state.shape.size()));
    for (int64_t d : state.shape)
      w.scalar<int64_t>(d);
    w.scalar<uint64_t>(state.bytes);
    if (state.bytes)
      w.bytes(state.data, state.bytes);
    if (stall && w.written >= total / 2)
      for (;;)
        pause(); // the test kills the process here
  }
  w.scalar<uint64_t>(userBytes);
  if (userBytes)
    w.bytes(userBlob, userBytes);
  w.scalar<uint64_t>(w.hash.digest());
  if (!w.file.commit(error))
    return Status(MIXPREC_IO_ERROR, "checkpoint " + error);
  return okStatus();
}

namespace {

/// A checkpoint file read whole and checked (magic, version, checksum,
/// layout); the states and the user blob point into `file`.
struct ParsedCheckpoint {
  std::string file;
  std::vector<SavedState> saved;
  uint64_t fingerprint = 0;
  const uint8_t *blob = nullptr;
  uint64_t blobSize = 0;
};

Status parseCheckpoint(const std::string &path, ParsedCheckpoint &out) {
  std::string &file = out.file;
  std::string error;
  if (!common::readRegularFile(path, file, error))
    return Status(MIXPREC_IO_ERROR, "checkpoint " + error);
  const std::string what = "checkpoint '" + path + "': ";
  auto corrupt = [&](const std::string &why) {
    return Status(MIXPREC_INVALID_ARGUMENT, what + why);
  };
  Reader r{reinterpret_cast<const uint8_t *>(file.data()), file.size()};
  const uint8_t *magic = r.take(sizeof(kMagic));
  if (!magic || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)
    return corrupt("not a mixprec checkpoint (it does not start with 'MIXPCKPT')");
  const uint32_t version = r.scalar<uint32_t>();
  if (r.failed)
    return corrupt("truncated: " + std::to_string(file.size()) + " bytes");
  if (version == 0 || version > kCheckpointVersion)
    return Status(MIXPREC_UNSUPPORTED_VERSION,
                  what + "format version " + std::to_string(version) +
                      (version ? " is newer than this runtime reads (version " +
                                     std::to_string(kCheckpointVersion) +
                                     "); upgrade libmixprec_runtime"
                               : " does not exist"));
  // The checksum covers everything; a file that fails it is not read on.
  if (file.size() < r.at + 8 + 8)
    return corrupt("truncated: " + std::to_string(file.size()) + " bytes");
  uint64_t stored = 0;
  std::memcpy(&stored, file.data() + file.size() - 8, 8);
  // Version 1 files carry FNV-1a 64, later ones XXH64 (several GB/s:
  // FNV-1a's byte chain took ~1.3 s a GB at each save and load).
  const uint64_t computed =
      version == 1 ? fnv1a64(file.data(), file.size() - 8) : xxh64(file.data(), file.size() - 8);
  if (computed != stored)
    return corrupt("checksum mismatch: the file is truncated or corrupted (" +
                   std::to_string(file.size()) + " bytes)");
  r.size = file.size() - 8;

  const uint32_t count = r.scalar<uint32_t>();
  out.fingerprint = r.scalar<uint64_t>();
  for (uint32_t i = 0; i < count && !r.failed; ++i) {
    SavedState s;
    const uint32_t nameLength = r.scalar<uint32_t>();
    if (const uint8_t *name = r.take(nameLength))
      s.name.assign(reinterpret_cast<const char *>(name), nameLength);
    s.dtype = r.scalar<uint32_t>();
    const uint32_t rank = r.scalar<uint32_t>();
    if (rank > kMaxRank)
      return corrupt("state '" + s.name + "' has rank " + std::to_string(rank));
    for (uint32_t d = 0; d < rank; ++d)
      s.shape.push_back(r.scalar<int64_t>());
    s.size = r.scalar<uint64_t>();
    s.bytes = r.take(s.size);
    out.saved.push_back(std::move(s));
  }
  out.blobSize = r.scalar<uint64_t>();
  out.blob = r.take(out.blobSize);
  if (r.failed || r.at != r.size)
    return corrupt("its contents do not match its layout (a checkpoint written wrong)");
  return okStatus();
}

/// Copies the user blob out (MIXPREC_SHAPE_MISMATCH when it does not fit).
Status copyUserBlob(const ParsedCheckpoint &c, const std::string &path, void *userBlob,
                    size_t capacity, size_t *userBytes) {
  if (c.blobSize > capacity || (c.blobSize && !userBlob))
    return Status(MIXPREC_SHAPE_MISMATCH,
                  "checkpoint '" + path + "': its user data is " + std::to_string(c.blobSize) +
                      " bytes, the buffer given holds " + std::to_string(userBlob ? capacity : 0));
  if (c.blobSize)
    std::memcpy(userBlob, c.blob, c.blobSize);
  if (userBytes)
    *userBytes = static_cast<size_t>(c.blobSize);
  return okStatus();
}

} // namespace

Status readCheckpointUserBlob(const std::string &path, void *userBlob, size_t capacity,
                              size_t *userBytes) {
  ParsedCheckpoint c;
  if (Status s = parseCheckpoint(path, c); !s.ok())
    return s;
  return copyUserBlob(c, path, userBlob, capacity, userBytes);
}

Status readCheckpointStates(const std::string &path,
                            const std::function<Status(const CheckpointState &)> &visit) {
  ParsedCheckpoint c;
  if (Status s = parseCheckpoint(path, c); !s.ok())
    return s;
  std::vector<CheckpointState> states;
  for (const SavedState &s : c.saved) {
    if (s.dtype > static_cast<uint32_t>(schema::DType::MAX))
      return Status(MIXPREC_INVALID_ARGUMENT, "checkpoint '" + path + "': state '" + s.name +
                                                  "' has an unknown dtype " +
                                                  std::to_string(s.dtype));
    const auto dtype = static_cast<schema::DType>(s.dtype);
    int64_t elements = 0;
    if (!shapeElements(s.shape, elements) || uint64_t(elements) * dtypeSize(dtype) != s.size)
      return Status(MIXPREC_INVALID_ARGUMENT,
                    "checkpoint '" + path + "': state '" + s.name + "' holds " +
                        std::to_string(s.size) + " bytes, not its shape's " + formatShape(s.shape));
    states.push_back({s.name, dtype, s.shape, s.bytes, s.size});
  }
  if (checkpointFingerprint(states) != c.fingerprint)
    return Status(MIXPREC_INVALID_ARGUMENT,
                  "checkpoint '" + path + "': its state fingerprint does not match its states");
  for (const CheckpointState &state : states)
    if (Status s = visit(state); !s.ok())
      return s;
  return okStatus();
}

Status loadCheckpoint(const LoadedModule &module, Backend &backend, const std::string &path,
                      void *userBlob, size_t capacity, size_t *userBytes) {
  ParsedCheckpoint c;
  if (Status s = parseCheckpoint(path, c); !s.ok())
    return s;
  const std::string what = "checkpoint '" + path + "': ";
  auto corrupt = [&](const std::string &why) {
    return Status(MIXPREC_INVALID_ARGUMENT, what + why);
  };
  const std::vector<SavedState> &saved = c.saved;
  const uint64_t fingerprint = c.fingerprint;

  // The module's states, by name, dtype and shape: no more, no fewer.
  const std::vector<StateDesc> &states = module.states();
  std::vector<const SavedState *> source(states.size(), nullptr);
  for (size_t i = 0; i < states.size(); ++i) {
    const TensorDesc &t = module.tensors()[states[i].tensor];
    for (const SavedState &s : saved)
      if (s.name == states[i].name)
        source[i] = &s;
    if (!source[i])
      return corrupt("it has no state '" + states[i].name +
                     "' (a checkpoint of another model)");
    const SavedState &s = *source[i];
    if (s.dtype != static_cast<uint32_t>(t.dtype) || s.shape != t.shape || s.size != t.bytes)
      return corrupt("state '" + s.name + "' is " +
                     (s.dtype <= static_cast<uint32_t>(schema::DType::MAX)
                          ? std::string(dtypeName(static_cast<schema::DType>(s.dtype)))
                          : "dtype " + std::to_string(s.dtype)) +
                     " " + formatShape(s.shape) + ", the module's is " + dtypeName(t.dtype) +
                     " " + formatShape(t.shape) + " (a checkpoint of another model)");
  }
  if (saved.size() != states.size())
    return corrupt("it has " + std::to_string(saved.size()) + " states, the module " +
                   std::to_string(states.size()) + " (a checkpoint of another model)");
  if (fingerprint != checkpointFingerprint(module))
    return corrupt("its state fingerprint differs from the module's (a checkpoint of another "
                   "model)");
  // The blob must fit before any state changes.
  if (c.blobSize > capacity || (c.blobSize && !userBlob))
    return copyUserBlob(c, path, userBlob, capacity, userBytes);

  for (size_t i = 0; i < states.size(); ++i)
    if (Status s = backend.setInput(states[i].tensor, source[i]->bytes, source[i]->size);
        !s.ok())
      return s.withContext(what + "writing state '" + states[i].name + "': ");
  return copyUserBlob(c, path, userBlob, capacity, userBytes);
}

} // namespace mixprec::runtime
