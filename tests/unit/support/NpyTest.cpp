#include "common/Npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace mixprec::support;

namespace {

// Builds a .npy image from a literal header (padded and newline-terminated
// like numpy does unless `raw`) and a payload.
std::vector<uint8_t> npyImage(const std::string &header,
                              const std::vector<uint8_t> &payload,
                              unsigned major = 1, bool raw = false) {
  std::string h = header;
  const size_t prefix = major == 1 ? 10 : 12;
  if (!raw) {
    while ((prefix + h.size() + 1) % 64 != 0)
      h += ' ';
    h += '\n';
  }
  std::vector<uint8_t> b = {
      0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const uint32_t len = static_cast<uint32_t>(h.size());
  b.push_back(len & 0xff);
  b.push_back((len >> 8) & 0xff);
  if (major != 1) {
    b.push_back((len >> 16) & 0xff);
    b.push_back((len >> 24) & 0xff);
  }
  b.insert(b.end(), h.begin(), h.end());
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

std::string dictFor(const std::string &descr, const std::string &shape,
                    const std::string &fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran +
         ", 'shape': " + shape + ", }";
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>(i * 37 + 11);
  return v;
}

struct DTypeCase {
  const char *descr;
  NpyDType type;
  size_t size;
};
const DTypeCase kDTypes[] = {
    {"<f4", NpyDType::F32, 4}, {"<f8", NpyDType::F64, 8},
    {"<f2", NpyDType::F16, 2}, {"<i8", NpyDType::I64, 8},
    {"<i4", NpyDType::I32, 4}, {"|i1", NpyDType::I8, 1},
    {"|u1", NpyDType::U8, 1},  {"|b1", NpyDType::Bool, 1},
};

// Parses and expects failure; returns the error for further checks.
std::string parseError(const std::vector<uint8_t> &bytes,
                       const std::string &name = "bad.npy") {
  NpyArray a;
  std::string err;
  EXPECT_FALSE(parseNpy(bytes.data(), bytes.size(), name, a, err));
  EXPECT_EQ(err.rfind(name + ": ", 0), 0u) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  return err;
}

bool contains(const std::string &s, const std::string &frag) {
  return s.find(frag) != std::string::npos;
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "mixprec_npy_" + name;
}

TEST(Npy, ParsesEveryDTypeFromHandWrittenHeader) {
  for (const auto &d : kDTypes) {
    auto payload = pattern(2 * 3 * d.size);
    auto bytes = npyImage(dictFor(d.descr, "(2, 3)"), payload);
    NpyArray a;
    std::string err;
    ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), "x.npy", a, err)) << err;
    EXPECT_EQ(a.dtype, d.type);
    EXPECT_EQ(npyDTypeSize(a.dtype), d.size);
    EXPECT_STREQ(npyDTypeDescr(a.dtype), d.descr);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a.data, payload);
  }
}

TEST(Npy, HeaderVariantsNumpyCanProduce) {
  struct Case {
    std::string header;
    std::vector<int64_t> shape;
    unsigned major;
  };
  const std::vector<Case> cases = {
      {dictFor("<f4", "()"), {}, 1},
      {dictFor("<f4", "(4,)"), {4}, 1},
      {dictFor("<f4", "(0, 3)"), {0, 3}, 1},
      {dictFor("<f4", "(2, 3)"), {2, 3}, 2},
      {dictFor("<f4", "(2, 3)"), {2, 3}, 3},
      // Key order, quoting and spacing are free; py2 files write longs.
      {"{\"shape\":(2L,3L),\"descr\":\"<f4\",\"fortran_order\":False}",
       {2, 3},
       1},
      {"{'fortran_order': False, 'shape': (1, 1, 2), 'descr': '<f4'}",
       {1, 1, 2},
       1},
  };
  for (const auto &c : cases) {
    int64_t n = 1;
    for (int64_t d : c.shape)
      n *= d;
    auto payload = pattern(static_cast<size_t>(n) * 4);
    auto bytes = npyImage(c.header, payload, c.major);
    NpyArray a;
    std::string err;
    ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), "v.npy", a, err))
        << c.header << ": " << err;
    EXPECT_EQ(a.shape, c.shape) << c.header;
    EXPECT_EQ(a.data, payload);
  }
}

TEST(Npy, SerializeProducesAlignedParsableImage) {
  for (const auto &d : kDTypes)
    for (const std::vector<int64_t> &shape :
         {std::vector<int64_t>{}, {0}, {7}, {2, 0, 3}, {3, 4, 5}}) {
      NpyArray a;
      a.dtype = d.type;
      a.shape = shape;
      a.data = pattern(static_cast<size_t>(a.numElements()) * d.size);
      std::vector<uint8_t> bytes;
      std::string err;
      ASSERT_TRUE(serializeNpy(a, bytes, err)) << err;
      const size_t headerLen = bytes[8] | (bytes[9] << 8);
      EXPECT_EQ(bytes[6], 1);
      EXPECT_EQ((10 + headerLen) % 64, 0u);
      EXPECT_EQ(bytes[10 + headerLen - 1], '\n');
      NpyArray b;
      ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), "s.npy", b, err)) << err;
      EXPECT_EQ(b.dtype, a.dtype);
      EXPECT_EQ(b.shape, a.shape);
      EXPECT_EQ(b.data, a.data);
    }
}

TEST(Npy, SerializeSwitchesToVersion2ForHugeHeaders) {
  NpyArray a;
  a.dtype = NpyDType::U8;
  a.shape.assign(30000, 1); // "1, " x 30000 > 65535 header bytes
  a.data = {42};
  std::vector<uint8_t> bytes;
  std::string err;
  ASSERT_TRUE(serializeNpy(a, bytes, err)) << err;
  EXPECT_EQ(bytes[6], 2);
  NpyArray b;
  ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), "big.npy", b, err)) << err;
  EXPECT_EQ(b.shape.size(), 30000u);
  EXPECT_EQ(b.data, a.data);
}

TEST(Npy, FileRoundTrip) {
  for (const auto &d : kDTypes) {
    NpyArray a;
    a.dtype = d.type;
    a.shape = {3, 2};
    a.data = pattern(6 * d.size);
    const std::string path = tempPath(std::string(d.descr + 1) + ".npy");
    std::string err;
    ASSERT_TRUE(writeNpy(path, a, err)) << err;
    NpyArray b;
    ASSERT_TRUE(readNpy(path, b, err)) << err;
    EXPECT_EQ(b.dtype, a.dtype);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
    std::remove(path.c_str());
  }
}

TEST(Npy, SerializeRejectsInconsistentData) {
  NpyArray a;
  a.dtype = NpyDType::F32;
  a.shape = {2, 2};
  a.data.resize(15);
  std::vector<uint8_t> bytes;
  std::string err;
  EXPECT_FALSE(serializeNpy(a, bytes, err));
  EXPECT_TRUE(contains(err, "needs 16")) << err;
  const std::string path = tempPath("inconsistent.npy");
  EXPECT_FALSE(writeNpy(path, a, err));
  EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << err;
}

TEST(Npy, MissingFileAndUnwritablePath) {
  NpyArray a;
  std::string err;
  const std::string path = tempPath("does/not/exist.npy");
  EXPECT_FALSE(readNpy(path, a, err));
  EXPECT_EQ(err, path + ": cannot read: no such file");
  EXPECT_FALSE(
      writeNpy(path, npyFromFloat32({1}, std::vector<float>{1}.data()), err));
  EXPECT_TRUE(contains(err, path)) << err;
}

// readNpy reads header and payload separately; every on-disk failure mode
// must report exactly what parseNpy reports for the same bytes.
TEST(Npy, FileReaderAgreesWithParserOnBadFiles) {
  auto good = npyImage(dictFor("<f4", "(2, 3)"), pattern(24), 2);
  const std::string path = tempPath("prefix.npy");
  for (size_t len = 0; len <= good.size() + 2; ++len) {
    std::vector<uint8_t> bytes(good.begin(),
                               good.begin() + std::min(len, good.size()));
    bytes.resize(len, 0); // len > size: trailing bytes
    FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    if (!bytes.empty())
      std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    NpyArray fromFile, fromMemory;
    std::string fileErr, memErr;
    const bool fileOk = readNpy(path, fromFile, fileErr);
    const bool memOk =
        parseNpy(bytes.data(), bytes.size(), path, fromMemory, memErr);
    EXPECT_EQ(fileOk, memOk) << len;
    EXPECT_EQ(fileErr, memErr) << len;
    EXPECT_EQ(fileOk, len == good.size());
    if (fileOk) {
      EXPECT_EQ(fromFile.data, fromMemory.data);
    }
  }
  std::remove(path.c_str());
  NpyArray a;
  std::string err;
  EXPECT_FALSE(readNpy(::testing::TempDir(), a, err)); // a directory
  EXPECT_EQ(err.rfind(::testing::TempDir() + ": ", 0), 0u) << err;
}

TEST(Npy, BadMagicAndTruncatedHeader) {
  EXPECT_TRUE(contains(parseError({}), "bad magic"));
  EXPECT_TRUE(
      contains(parseError({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}), "bad magic"));
  EXPECT_TRUE(contains(parseError({0x93, 'N', 'U'}), "truncated header"));
  EXPECT_TRUE(contains(parseError({0x93, 'N', 'U', 'M', 'P', 'Y'}),
                       "truncated header"));
  EXPECT_TRUE(contains(parseError({0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 5}),
                       "truncated header"));
  auto full = npyImage(dictFor("<f4", "(2,)"), pattern(8));
  std::vector<uint8_t> cut(full.begin(), full.begin() + 40);
  EXPECT_TRUE(contains(parseError(cut), "truncated header"));
  auto v2 = npyImage(dictFor("<f4", "(2,)"), pattern(8), 2);
  v2[10] = 0xff; // header length far beyond the file
  v2[11] = 0xff;
  EXPECT_TRUE(contains(parseError(v2), "truncated header"));
  auto v9 = full;
  v9[6] = 9;
  EXPECT_TRUE(contains(parseError(v9), "unsupported .npy format version 9.0"));
}

TEST(Npy, UnparsableHeaders) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not a dict", "unparsable header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
       "unparsable header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk",
       "unparsable header"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4', 'shape': (2,)}", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
       "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': "
       "(2,)}",
       "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
       "'fortran_order' is not True/False"},
      {dictFor("<f4", "[2]"), "'shape' is not a tuple"},
      {dictFor("<f4", "(2)"), "'shape' is not a tuple"},
      {dictFor("<f4", "(2, 'a')"), "non-integer"},
      {dictFor("<f4", "(2,, 3)"), "unparsable header"},
      {dictFor("<f4", "(99999999999999999999,)"), "too large"},
      {"{'descr': 5, 'fortran_order': False, 'shape': (2,)}",
       "'descr' is not a string"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}",
       "unparsable header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': " +
           std::string(5000, '(') + std::string(5000, ')') + "}",
       "nests too deeply"},
  };
  for (const auto &[header, fragment] : cases) {
    std::string err = parseError(npyImage(header, pattern(8)));
    EXPECT_TRUE(contains(err, fragment)) << header << " -> " << err;
  }
}

// A header key or dtype holding a newline (found by the npy fuzzer) is
// escaped: the error stays one line, as Npy.h promises.
TEST(Npy, NamesFromTheHeaderAreEscaped) {
  std::string err = parseError(npyImage(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'fortran\n_order': 1}",
      pattern(8)));
  EXPECT_TRUE(contains(err, "unexpected key 'fortran\\n_order'")) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  err = parseError(npyImage(dictFor("<f\n4", "(2,)"), pattern(8)));
  EXPECT_TRUE(contains(err, "unsupported dtype '<f\\n4'")) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

TEST(Npy, UnsupportedDTypesAndLayouts) {
  EXPECT_TRUE(contains(parseError(npyImage(dictFor(">f4", "(2,)"), pattern(8))),
                       "big-endian"));
  EXPECT_TRUE(contains(parseError(npyImage(dictFor(">i8", "(1,)"), pattern(8))),
                       "big-endian"));
  EXPECT_TRUE(contains(parseError(npyImage(dictFor("<c8", "(1,)"), pattern(8))),
                       "unsupported dtype '<c8'"));
  EXPECT_TRUE(contains(parseError(npyImage(dictFor("<u2", "(4,)"), pattern(8))),
                       "unsupported dtype"));
  EXPECT_TRUE(contains(
      parseError(npyImage("{'descr': [('a', '<f4')], 'fortran_order': False, "
                          "'shape': (2,)}",
                          pattern(8))),
      "structured"));
  EXPECT_TRUE(contains(
      parseError(npyImage(dictFor("<f4", "(2, 1)", "True"), pattern(8))),
      "fortran_order=True is not supported"));
}

TEST(Npy, DataSizeMismatchAndAbsurdShapes) {
  std::string err = parseError(npyImage(dictFor("<f4", "(2, 3)"), pattern(20)));
  EXPECT_TRUE(contains(err, "data too short")) << err;
  EXPECT_TRUE(contains(err, "needs 24 bytes, file has 20")) << err;
  err = parseError(npyImage(dictFor("<f4", "(2, 3)"), pattern(28)));
  EXPECT_TRUE(contains(err, "trailing data")) << err;
  err = parseError(npyImage(dictFor("<f4", "(4611686018427387904, 4)"), {}));
  EXPECT_TRUE(contains(err, "too large")) << err;
  err = parseError(
      npyImage(dictFor("|u1", "(4294967296, 4294967296)"), pattern(1)));
  EXPECT_TRUE(contains(err, "too large")) << err;
  // Element count fits but the byte count does not.
  err = parseError(npyImage(dictFor("<f8", "(2305843009213693952,)"), {}));
  EXPECT_TRUE(contains(err, "too large")) << err;
  // A zero dim does not excuse a later absurd one.
  err = parseError(npyImage(dictFor("<f4", "(0, 9223372036854775807, 2)"), {}));
  EXPECT_TRUE(contains(err, "too large")) << err;
  err = parseError(npyImage(dictFor("<f4", "(-1,)"), {}));
  EXPECT_TRUE(contains(err, "negative dimension")) << err;
}

TEST(Npy, EveryTruncationAndByteFlipFailsCleanly) {
  auto good = npyImage(dictFor("<i4", "(3, 2)"), pattern(24));
  NpyArray a;
  std::string err;
  for (size_t len = 0; len < good.size(); ++len)
    EXPECT_FALSE(parseNpy(good.data(), len, "t.npy", a, err)) << len;
  // Random corruption must never crash or read out of bounds (run under
  // MIXPREC_ENABLE_ASAN to check the latter); it may or may not parse.
  std::mt19937 rng(5);
  for (int iter = 0; iter < 3000; ++iter) {
    auto bytes = good;
    const int flips = 1 + iter % 4;
    for (int f = 0; f < flips; ++f)
      bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    const size_t len = rng() % (bytes.size() + 1);
    std::vector<uint8_t> exact(bytes.begin(), bytes.begin() + len);
    if (parseNpy(exact.data(), exact.size(), "f.npy", a, err)) {
      EXPECT_EQ(a.data.size(),
                static_cast<size_t>(a.numElements()) * npyDTypeSize(a.dtype));
    } else {
      EXPECT_EQ(err.rfind("f.npy: ", 0), 0u);
    }
  }
}

TEST(Npy, ToFloat32ConvertsEveryDType) {
  auto make = [](NpyDType t, const void *src, size_t bytes, size_t n) {
    NpyArray a;
    a.dtype = t;
    a.shape = {static_cast<int64_t>(n)};
    a.data.resize(bytes);
    std::memcpy(a.data.data(), src, bytes);
    return a;
  };
  std::vector<float> out;
  std::string err;

  const uint16_t halves[] = {0x3c00, 0xc000, 0x7bff, 0x0001,
                             0x03ff, 0x7c00, 0x8000, 0x3555};
  ASSERT_TRUE(
      npyToFloat32(make(NpyDType::F16, halves, sizeof halves, 8), out, err));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], 65504.0f);
  EXPECT_EQ(out[3], std::ldexp(1.0f, -24));        // smallest subnormal
  EXPECT_EQ(out[4], 1023 * std::ldexp(1.0f, -24)); // largest subnormal
  EXPECT_EQ(out[5], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(out[6] == 0.0f && std::signbit(out[6]));
  EXPECT_EQ(out[7], 0.333251953125f);
  const uint16_t nanHalf = 0x7e00;
  ASSERT_TRUE(npyToFloat32(make(NpyDType::F16, &nanHalf, 2, 1), out, err));
  EXPECT_TRUE(std::isnan(out[0]));

  const double doubles[] = {0.1, -1e300, 3.5};
  ASSERT_TRUE(
      npyToFloat32(make(NpyDType::F64, doubles, sizeof doubles, 3), out, err));
  EXPECT_EQ(out[0], 0.1f);
  EXPECT_EQ(out[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[2], 3.5f);

  const int64_t i64[] = {-5, 1 << 20};
  ASSERT_TRUE(npyToFloat32(make(NpyDType::I64, i64, sizeof i64, 2), out, err));
  EXPECT_EQ(out, (std::vector<float>{-5.0f, 1048576.0f}));
  const int32_t i32[] = {-7, 9};
  ASSERT_TRUE(npyToFloat32(make(NpyDType::I32, i32, sizeof i32, 2), out, err));
  EXPECT_EQ(out, (std::vector<float>{-7.0f, 9.0f}));
  const int8_t i8[] = {-128, 127};
  ASSERT_TRUE(npyToFloat32(make(NpyDType::I8, i8, 2, 2), out, err));
  EXPECT_EQ(out, (std::vector<float>{-128.0f, 127.0f}));
  const uint8_t u8[] = {255, 0};
  ASSERT_TRUE(npyToFloat32(make(NpyDType::U8, u8, 2, 2), out, err));
  EXPECT_EQ(out, (std::vector<float>{255.0f, 0.0f}));
  const uint8_t b1[] = {1, 0};
  ASSERT_TRUE(npyToFloat32(make(NpyDType::Bool, b1, 2, 2), out, err));
  EXPECT_EQ(out, (std::vector<float>{1.0f, 0.0f}));

  NpyArray broken = make(NpyDType::F32, b1, 2, 1);
  EXPECT_FALSE(npyToFloat32(broken, out, err));
}

TEST(Npy, FromFloat32) {
  const float v[] = {1.5f, -2.0f, 0.25f, 8.0f};
  NpyArray a = npyFromFloat32({2, 2}, v);
  EXPECT_EQ(a.dtype, NpyDType::F32);
  EXPECT_EQ(a.numElements(), 4);
  std::vector<float> back;
  std::string err;
  ASSERT_TRUE(npyToFloat32(a, back, err));
  EXPECT_EQ(back, (std::vector<float>(v, v + 4)));
}

} // namespace
