//===- Checkpoint.h - a session's state saved to and loaded from a file -*- C++ -*-===//
//
// A checkpoint holds every state tensor of a session by name, with its dtype
// and shape, and an opaque blob the application adds (a trainer's step, RNG
// state, data order). It is written atomically (common/FileIO.h: a
// temporary beside the file, synced, renamed), so a crash mid-write leaves
// the previous checkpoint in place. All integers are little-endian:
//
//   "MIXPCKPT"                8 bytes
//   format version            u32 (kCheckpointVersion)
//   state count               u32
//   fingerprint               u64: FNV-1a 64 of the module's state names,
//                             dtypes and shapes (checkpointFingerprint)
//   per state, in the module's order:
//     name length, name       u32, bytes
//     dtype, rank             u32 (schema::DType), u32
//     dims                    i64 x rank
//     byte size, bytes        u64, the tensor's bytes in its dtype
//   user blob size, blob      u64, bytes
//   checksum                  u64: XXH64 (seed 0) of every byte before it
//                             (version 1: FNV-1a 64; still read)
//
// Loading checks the whole file (magic, version, checksum, that its states
// are the session's by name, dtype and shape) before writing any state, so
// a refused checkpoint leaves the session as it was.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CHECKPOINT_H
#define MIXPREC_RUNTIME_CHECKPOINT_H

#include "runtime/src/Backend.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mixprec::runtime {

/// The checkpoint format version this runtime writes and the newest it
/// reads; newer files are refused (UNSUPPORTED_VERSION). Version 2
/// (2026-12-06) changed only the checksum (FNV-1a 64 -> XXH64); version 1
/// files load as before.
constexpr uint32_t kCheckpointVersion = 2;

/// What identifies a module's state layout: FNV-1a 64 of each state's name,
/// dtype and shape, in order. Two modules share checkpoints exactly when
/// their fingerprints agree (the same model recompiled, for another
/// architecture say, keeps its checkpoints).
uint64_t checkpointFingerprint(const LoadedModule &module);

/// One state as a checkpoint holds it; `data` holds `bytes` (not owned).
struct CheckpointState {
  std::string name;
  schema::DType dtype = schema::DType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  uint64_t bytes = 0;
};

/// The fingerprint of states with these names, dtypes and shapes, in order
/// (a module's is that of its states).
uint64_t checkpointFingerprint(const std::vector<CheckpointState> &states);

/// Writes `states` (checked by the caller) and the user blob to `path`,
/// atomically, with their fingerprint: a session of a module with exactly
/// these states loads it (an application that keeps some state itself,
/// sharded across ranks say, writes the whole).
Status writeCheckpoint(const std::string &path, const std::vector<CheckpointState> &states,
                       const void *userBlob, size_t userBytes);

/// Reads and checks `path` as loadCheckpoint does, then calls `visit` for
/// each state in order (its data valid during the call); the first error
/// `visit` returns ends the reading and is returned.
Status readCheckpointStates(const std::string &path,
                            const std::function<Status(const CheckpointState &)> &visit);

/// Writes the backend's state and `userBytes` of `userBlob` to `path`.
/// Test hook: with MIXPREC_TEST_CHECKPOINT_STALL=1 in the environment the
/// writer stops for good after the first half of the file is in the
/// temporary (a test kills it there).
Status saveCheckpoint(const LoadedModule &module, Backend &backend, const std::string &path,
                      const void *userBlob, size_t userBytes);

/// Reads `path`, checks it against the module, then writes every state to
/// the backend and the user blob to `userBlob` (`capacity` bytes; its size
/// to `*userBytes`).
Status loadCheckpoint(const LoadedModule &module, Backend &backend, const std::string &path,
                      void *userBlob, size_t capacity, size_t *userBytes);

/// Reads and checks `path` as loadCheckpoint does (no module: the states
/// are not compared) and copies its user blob out.
Status readCheckpointUserBlob(const std::string &path, void *userBlob, size_t capacity,
                              size_t *userBytes);

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_CHECKPOINT_H
