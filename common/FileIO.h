//===- FileIO.h - reading inputs and writing outputs safely -----*- C++ -*-===//
//
// The file rules every mixprec command follows (no LLVM; the compiler, the
// tools and the .npy reader all use this):
//
// - Inputs are read only from regular files. A folder, a device such as
//   /dev/zero, or a FIFO is refused before it is opened for reading, so it
//   can neither be read forever nor block.
// - Outputs are written atomically: into a temporary file in the same
//   folder, checked after it is flushed and closed, then renamed into place.
//   A failed write leaves the old file intact. An existing output that is
//   not a regular file (/dev/null, /dev/full, a FIFO) is written in place,
//   every write checked, and never replaced.
// - Errors say why in words: "the folder 'D' does not exist", "it is a
//   folder", "disk full", "permission denied".
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMMON_FILEIO_H
#define MIXPREC_COMMON_FILEIO_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace mixprec::common {

/// Opens `path` for reading if it is a regular file (checked without
/// blocking on a FIFO) and sets `size`; returns the descriptor, or -1 with
/// `error` = "PATH: REASON".
int openRegularFile(const std::string &path, uint64_t &size, std::string &error);

/// Reads the whole regular file `path` into `out`, refusing files larger
/// than `maxBytes`.
bool readRegularFile(const std::string &path, std::string &out, std::string &error,
                     uint64_t maxBytes = UINT64_MAX);

/// "" if `path` names a regular file that can be opened for reading; else
/// the reason in words ("not a regular file (character device)", ...).
std::string whyNotReadable(const std::string &path);

/// True when `a` and `b` both exist and are the same file (same device and
/// inode, after following symbolic links): two spellings of one path, a
/// hard link or a symbolic link all compare equal.
bool sameFile(const std::string &a, const std::string &b);

/// The reason, in words, why writing `path` failed with `err` (an errno).
std::string writeFailureReason(const std::string &path, int err);

/// An output file being written: a temporary file beside `path` until
/// commit() renames it into place. Destroying it uncommitted removes the
/// temporary and leaves `path` as it was.
class PendingFile {
public:
  PendingFile() = default;
  PendingFile(const PendingFile &) = delete;
  PendingFile &operator=(const PendingFile &) = delete;
  ~PendingFile() { discard(); }

  /// Starts writing `path`. Fails, naming the path and the reason, when
  /// the folder is missing, `path` is a folder, or it cannot be created.
  bool open(const std::string &path, std::string &error);
  /// Appends bytes; the first failure is kept and reported by commit().
  bool write(const void *data, size_t size);
  /// Flushes, syncs and closes the temporary, then renames it to `path`.
  bool commit(std::string &error);
  /// Drops the temporary, if any.
  void discard();

private:
  std::string path_, temp_;
  int fd_ = -1;
  int firstErrno_ = 0;
  bool inPlace_ = false; ///< `path` is a device or FIFO: written directly
};

/// Writes `size` bytes to `path` with the rules above.
bool writeFileAtomically(const std::string &path, const void *data, size_t size,
                         std::string &error);

} // namespace mixprec::common

#endif // MIXPREC_COMMON_FILEIO_H
