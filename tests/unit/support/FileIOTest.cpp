//===- FileIOTest.cpp - the file rules of common/FileIO.h -----------------===//
#include "common/FileIO.h"
#include "common/Npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mixprec::common;

namespace {

/// A fresh empty folder for one test, removed afterwards.
class TempDir {
public:
  TempDir() {
    char pattern[] = "/tmp/mixprec_fileio_XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string operator/(const std::string &name) const { return path_ + "/" + name; }
  const std::string &path() const { return path_; }
  /// The names in the folder, sorted, space-separated.
  std::string listing() const {
    std::string names;
    if (DIR *d = opendir(path_.c_str())) {
      std::vector<std::string> all;
      while (dirent *e = readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
          all.push_back(e->d_name);
      closedir(d);
      std::sort(all.begin(), all.end());
      for (const std::string &n : all)
        names += (names.empty() ? "" : " ") + n;
    }
    return names;
  }

private:
  std::string path_;
};

std::string contentsOf(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(FileIO, ReadsRegularFiles) {
  TempDir dir;
  put(dir / "a", "hello");
  std::string out, error;
  ASSERT_TRUE(readRegularFile(dir / "a", out, error)) << error;
  EXPECT_EQ(out, "hello");
  EXPECT_EQ(whyNotReadable(dir / "a"), "");
  EXPECT_FALSE(readRegularFile(dir / "a", out, error, 4));
  EXPECT_EQ(error, dir / "a" + ": cannot read: 5 bytes, more than the 4 allowed");
}

// /dev/zero used to be read until LLVM ran out of memory.
TEST(FileIO, RefusesDevicesFoldersAndMissingFiles) {
  TempDir dir;
  std::string out, error;
  EXPECT_FALSE(readRegularFile("/dev/zero", out, error));
  EXPECT_EQ(error, "/dev/zero: cannot read: not a regular file (a character device)");
  EXPECT_FALSE(readRegularFile(dir.path(), out, error));
  EXPECT_EQ(error, dir.path() + ": cannot read: not a regular file (a folder)");
  EXPECT_FALSE(readRegularFile(dir / "missing", out, error));
  EXPECT_EQ(error, dir / "missing" + ": cannot read: no such file");
  EXPECT_EQ(whyNotReadable("/dev/zero"), "not a regular file (a character device)");
}

// A FIFO used to block the reader forever; it is refused without waiting
// for a writer (the test would hang, not fail, before the fix: ctest's
// timeout catches that).
TEST(FileIO, RefusesFifoWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  std::string out, error;
  EXPECT_FALSE(readRegularFile(dir / "fifo", out, error));
  EXPECT_EQ(error, dir / "fifo" + ": cannot read: not a regular file (a FIFO)");
  mixprec::support::NpyArray array;
  EXPECT_FALSE(mixprec::support::readNpy(dir / "fifo", array, error));
  EXPECT_EQ(error, dir / "fifo" + ": cannot read: not a regular file (a FIFO)");
}

TEST(FileIO, WritesAtomicallyAndLeavesNoTemporary) {
  TempDir dir;
  std::string error;
  ASSERT_TRUE(writeFileAtomically(dir / "out", "one", 3, error)) << error;
  ASSERT_TRUE(writeFileAtomically(dir / "out", "second", 6, error)) << error;
  EXPECT_EQ(contentsOf(dir / "out"), "second");
  EXPECT_EQ(dir.listing(), "out");
}

// A write that fails half way (here: the file size limit, EFBIG) leaves
// the old file as it was and no temporary behind.
TEST(FileIO, FailedWriteKeepsTheOldFile) {
  TempDir dir;
  put(dir / "out", "old contents");
  std::string big(1 << 20, 'x');
  std::string error;
  struct rlimit old;
  getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &small);
  bool ok = writeFileAtomically(dir / "out", big.data(), big.size(), error);
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_FALSE(ok);
  EXPECT_EQ(error.rfind(dir / "out" + ": cannot write: ", 0), 0u) << error;
  EXPECT_EQ(contentsOf(dir / "out"), "old contents");
  EXPECT_EQ(dir.listing(), "out");
}

// "P: P: cannot write" gave neither the reason nor one path; each reason
// is now said in words.
TEST(FileIO, WriteErrorsSayWhy) {
  TempDir dir;
  std::string error;
  EXPECT_FALSE(writeFileAtomically(dir / "no/such/folder/out", "x", 1, error));
  EXPECT_EQ(error, dir / "no/such/folder/out" + ": cannot write: the folder '" +
                       dir / "no/such/folder" + "' does not exist");
  EXPECT_FALSE(writeFileAtomically(dir.path(), "x", 1, error));
  EXPECT_EQ(error, dir.path() + ": cannot write: it is a folder");
  EXPECT_FALSE(writeFileAtomically("/dev/full", "x", 1, error));
  EXPECT_EQ(error, "/dev/full: cannot write: disk full (No space left on device)");
  EXPECT_FALSE(writeFileAtomically("", "x", 1, error));
  EXPECT_EQ(error, "'': cannot write: no file name given");
}

// Devices are written in place, never replaced by a regular file.
TEST(FileIO, DevicesAreWrittenInPlace) {
  std::string error;
  EXPECT_TRUE(writeFileAtomically("/dev/null", "x", 1, error)) << error;
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A symbolic link stays a link; the file it points to gets the contents.
TEST(FileIO, SymlinkTargetIsReplaced) {
  TempDir dir;
  put(dir / "target", "old");
  ASSERT_EQ(symlink((dir / "target").c_str(), (dir / "link").c_str()), 0);
  std::string error;
  ASSERT_TRUE(writeFileAtomically(dir / "link", "new", 3, error)) << error;
  struct stat st;
  ASSERT_EQ(lstat((dir / "link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(contentsOf(dir / "target"), "new");
}

TEST(FileIO, SameFileComparesFilesNotStrings) {
  TempDir dir;
  put(dir / "a", "x");
  put(dir / "b", "x");
  ASSERT_EQ(link((dir / "a").c_str(), (dir / "hard").c_str()), 0);
  ASSERT_EQ(symlink((dir / "a").c_str(), (dir / "soft").c_str()), 0);
  EXPECT_TRUE(sameFile(dir / "a", dir.path() + "/./a"));
  EXPECT_TRUE(sameFile(dir / "a", dir / "hard"));
  EXPECT_TRUE(sameFile(dir / "a", dir / "soft"));
  EXPECT_FALSE(sameFile(dir / "a", dir / "b"));
  EXPECT_FALSE(sameFile(dir / "a", dir / "missing"));
}

// writeNpy goes through the same writer: a failure names the file once,
// with the reason.
TEST(FileIO, NpyWriteErrorNamesThePathOnce) {
  std::string error;
  float v = 1;
  EXPECT_FALSE(mixprec::support::writeNpy(
      "/dev/full", mixprec::support::npyFromFloat32({1}, &v), error));
  EXPECT_EQ(error, "/dev/full: cannot write: disk full (No space left on device)");
}

} // namespace
