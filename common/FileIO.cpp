//===- FileIO.cpp - reading inputs and writing outputs safely --------------===//
#include "common/FileIO.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace mixprec::common {
namespace {

/// The kind of a non-regular file, in words.
const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// The folder part of `path` ("." when it has none).
std::string folderOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// The reason, in words, why `path` cannot be opened for reading.
std::string readFailureReason(int err) {
  switch (err) {
  case ENOENT:
    return "no such file";
  case EACCES:
  case EPERM:
    return "permission denied";
  case ENOTDIR:
    return "a part of the path is not a folder";
  default:
    return std::strerror(err);
  }
}

/// Writes all of `data` to `fd`, retrying partial writes; returns 0 or errno.
int writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

/// Paths under /dev and /proc are written where they are, whatever they
/// resolve to (/dev/stdout may be a regular file the shell holds open).
bool isSpecialPath(const std::string &path) {
  return path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
}

} // namespace

int openRegularFile(const std::string &path, uint64_t &size, std::string &error) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before we can
  // tell that it is one.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot read: " + readFailureReason(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = path + ": cannot read: " + readFailureReason(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    error = path + ": cannot read: not a regular file (" + kindOf(st.st_mode) + ")";
    ::close(fd);
    return -1;
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  size = static_cast<uint64_t>(st.st_size);
  return fd;
}

bool readRegularFile(const std::string &path, std::string &out, std::string &error,
                     uint64_t maxBytes) {
  uint64_t size = 0;
  int fd = openRegularFile(path, size, error);
  if (fd < 0)
    return false;
  if (size > maxBytes) {
    error = path + ": cannot read: " + std::to_string(size) + " bytes, more than the " +
            std::to_string(maxBytes) + " allowed";
    ::close(fd);
    return false;
  }
  out.assign(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, &out[got], out.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = path + ": cannot read: " +
              (n < 0 ? readFailureReason(errno)
                     : "the file shrank while it was read (" + std::to_string(got) + " of " +
                           std::to_string(size) + " bytes)");
      ::close(fd);
      return false;
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return true;
}

std::string whyNotReadable(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return readFailureReason(errno);
  if (!S_ISREG(st.st_mode))
    return std::string("not a regular file (") + kindOf(st.st_mode) + ")";
  if (::access(path.c_str(), R_OK) != 0)
    return readFailureReason(errno);
  return "";
}

bool sameFile(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0)
    return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string writeFailureReason(const std::string &path, int err) {
  switch (err) {
  case ENOENT:
    return "the folder '" + folderOf(path) + "' does not exist";
  case EISDIR:
    return "it is a folder";
  case ENOSPC:
    return "disk full (" + std::string(std::strerror(err)) + ")";
  case EDQUOT:
    return "disk quota exceeded";
  case EACCES:
  case EPERM:
    return "permission denied";
  case EROFS:
    return "read-only file system";
  case ENOTDIR:
    return "a part of the path is not a folder";
  case ENAMETOOLONG:
    return "the name is too long";
  default:
    return std::strerror(err);
  }
}

bool PendingFile::open(const std::string &path, std::string &error) {
  discard();
  path_ = path;
  firstErrno_ = 0;
  auto failWith = [&](const std::string &reason) {
    error = (path.empty() ? std::string("''") : path) + ": cannot write: " + reason;
    return false;
  };
  if (path.empty())
    return failWith("no file name given");
  // A symbolic link is kept: its target is what gets replaced.
  std::string target = path;
  struct stat st;
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return failWith("it is a folder");
  if (exists && (!S_ISREG(st.st_mode) || isSpecialPath(path))) {
    inPlace_ = true;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (S_ISREG(st.st_mode) ? O_TRUNC : 0));
    if (fd_ < 0)
      return failWith(writeFailureReason(path, errno));
    return true;
  }
  inPlace_ = false;
  struct stat lst;
  if (exists && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    if (char *resolved = ::realpath(path.c_str(), nullptr)) {
      target = resolved;
      std::free(resolved);
    }
  }
  path_ = target;
  std::string folder = folderOf(target);
  size_t slash = target.find_last_of('/');
  std::string name = slash == std::string::npos ? target : target.substr(slash + 1);
  std::string pattern = (folder == "." && slash == std::string::npos ? "" : folder + "/") +
                        "." + name + ".tmp-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  fd_ = ::mkstemp(buf.data());
  if (fd_ < 0)
    return failWith(writeFailureReason(target, errno));
  temp_ = buf.data();
  mode_t mode;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd_, mode);
  return true;
}

bool PendingFile::write(const void *data, size_t size) {
  if (fd_ < 0 || firstErrno_)
    return false;
  firstErrno_ = writeAll(fd_, data, size);
  return firstErrno_ == 0;
}

bool PendingFile::commit(std::string &error) {
  if (fd_ < 0) {
    error = path_ + ": cannot write: the file was not opened";
    return false;
  }
  int err = firstErrno_;
  // fsync reports the errors a delayed write would otherwise hide; devices
  // and FIFOs answer EINVAL, which is not a failure.
  if (!err && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS)
    err = errno;
  if (::close(fd_) != 0 && !err)
    err = errno;
  fd_ = -1;
  if (!err && !inPlace_ && ::rename(temp_.c_str(), path_.c_str()) != 0)
    err = errno;
  if (err) {
    error = path_ + ": cannot write: " + writeFailureReason(path_, err);
    discard();
    return false;
  }
  temp_.clear();
  if (!inPlace_) {
    // The rename is durable once the folder's entry is on disk: a crash
    // right after commit must not bring the old file back.
    int folder = ::open(folderOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder >= 0) {
      ::fsync(folder);
      ::close(folder);
    }
  }
  return true;
}

void PendingFile::discard() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  if (!temp_.empty())
    ::unlink(temp_.c_str());
  temp_.clear();
}

bool writeFileAtomically(const std::string &path, const void *data, size_t size,
                         std::string &error) {
  PendingFile file;
  if (!file.open(path, error))
    return false;
  file.write(data, size);
  return file.commit(error);
}

} // namespace mixprec::common
