//===- Npy.cpp - NumPy .npy reader/writer ---------------------------------===//
//
// Format reference: numpy/lib/format.py. The header is a Python dict literal
// with exactly the keys 'descr', 'fortran_order' and 'shape'; it is parsed
// here with a small bounded recursive-descent parser over Python literals.
//
//===----------------------------------------------------------------------===//

#include "common/Npy.h"

#include "common/Escape.h"
#include "common/FileIO.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <limits>

namespace mixprec::support {

namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kAlign = 64;
// Bounds the header buffer for hostile files. numpy refuses headers over
// 10000 bytes unless told otherwise; legitimate ones only exceed that for
// arrays of very high rank, so 10 MB is far beyond any real file.
constexpr size_t kMaxHeaderLen = 10000000;

//===----------------------------------------------------------------------===//
// Python literal subset: str, int, True/False/None, tuple, list.
//===----------------------------------------------------------------------===//

struct PyValue {
  enum Kind { Str, Int, Bool, None, Tuple, List } kind = None;
  std::string str;
  int64_t i = 0;
  bool b = false;
  std::vector<PyValue> items;
};

class LiteralParser {
public:
  LiteralParser(const char *p, size_t n) : cur(p), end(p + n) {}

  bool parseDict(std::vector<std::pair<std::string, PyValue>> &entries) {
    skipSpace();
    if (!consume('{'))
      return fail("header does not start with '{'");
    for (;;) {
      skipSpace();
      if (consume('}'))
        break;
      PyValue key;
      if (!parseValue(key, 0))
        return false;
      if (key.kind != PyValue::Str)
        return fail("header dict key is not a string");
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key " + common::quotedName(key.str));
      PyValue value;
      if (!parseValue(value, 0))
        return false;
      entries.emplace_back(key.str, std::move(value));
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return fail("expected ',' or '}' in header dict");
    }
    skipSpace();
    if (cur != end)
      return fail("unexpected characters after the header dict");
    return true;
  }

  const std::string &error() const { return err; }

private:
  // Tuples nest only one level in valid headers; the bound keeps hostile
  // input from exhausting the stack.
  static constexpr int kMaxDepth = 16;

  const char *cur;
  const char *end;
  std::string err;

  bool fail(const std::string &msg) {
    if (err.empty())
      err = msg;
    return false;
  }
  void skipSpace() {
    while (cur != end &&
           (*cur == ' ' || *cur == '\t' || *cur == '\n' || *cur == '\r'))
      ++cur;
  }
  bool consume(char c) {
    if (cur != end && *cur == c) {
      ++cur;
      return true;
    }
    return false;
  }
  bool consumeWord(const char *w) {
    size_t n = std::strlen(w);
    if (static_cast<size_t>(end - cur) < n || std::memcmp(cur, w, n) != 0)
      return false;
    const char *after = cur + n;
    if (after != end &&
        (std::isalnum(static_cast<unsigned char>(*after)) || *after == '_'))
      return false;
    cur = after;
    return true;
  }

  bool parseValue(PyValue &v, int depth) {
    if (depth > kMaxDepth)
      return fail("header nests too deeply");
    skipSpace();
    if (cur == end)
      return fail("header ends unexpectedly");
    const char c = *cur;
    if (c == '\'' || c == '"')
      return parseString(v);
    if (c == '(' || c == '[')
      return parseSequence(v, depth);
    if (c == '-' || c == '+' || (c >= '0' && c <= '9'))
      return parseInt(v);
    if (consumeWord("True")) {
      v.kind = PyValue::Bool;
      v.b = true;
      return true;
    }
    if (consumeWord("False")) {
      v.kind = PyValue::Bool;
      v.b = false;
      return true;
    }
    if (consumeWord("None")) {
      v.kind = PyValue::None;
      return true;
    }
    return fail("unexpected character " + common::quotedName(std::string(1, c)) + " in header");
  }

  bool parseString(PyValue &v) {
    const char quote = *cur++;
    v.kind = PyValue::Str;
    while (cur != end && *cur != quote) {
      if (*cur == '\\') {
        if (++cur == end)
          break;
      }
      v.str.push_back(*cur++);
    }
    if (cur == end)
      return fail("unterminated string in header");
    ++cur;
    return true;
  }

  bool parseInt(PyValue &v) {
    bool neg = false;
    if (*cur == '-' || *cur == '+')
      neg = *cur++ == '-';
    if (cur == end || *cur < '0' || *cur > '9')
      return fail("malformed integer in header");
    int64_t value = 0;
    while (cur != end && *cur >= '0' && *cur <= '9') {
      const int digit = *cur++ - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return fail("integer in header is too large");
      value = value * 10 + digit;
    }
    // Python 2 era files spell longs as "3L".
    if (cur != end && (*cur == 'L' || *cur == 'l'))
      ++cur;
    v.kind = PyValue::Int;
    v.i = neg ? -value : value;
    return true;
  }

  bool parseSequence(PyValue &v, int depth) {
    const char open = *cur++;
    const char close = open == '(' ? ')' : ']';
    bool sawComma = false;
    std::vector<PyValue> items;
    for (;;) {
      skipSpace();
      if (consume(close))
        break;
      PyValue item;
      if (!parseValue(item, depth + 1))
        return false;
      items.push_back(std::move(item));
      skipSpace();
      if (consume(',')) {
        sawComma = true;
        continue;
      }
      if (consume(close))
        break;
      return fail(std::string("expected ',' or '") + close + "' in header");
    }
    // Python: "(3)" is the int 3, "(3,)" and "()" are tuples.
    if (open == '(' && items.size() == 1 && !sawComma) {
      v = std::move(items[0]);
      return true;
    }
    v.kind = open == '(' ? PyValue::Tuple : PyValue::List;
    v.items = std::move(items);
    return true;
  }
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

bool dtypeFromDescr(const std::string &descr, NpyDType &t) {
  static const struct {
    const char *descr;
    NpyDType type;
  } kTable[] = {
      {"<f4", NpyDType::F32}, {"<f8", NpyDType::F64},  {"<f2", NpyDType::F16},
      {"<i8", NpyDType::I64}, {"<i4", NpyDType::I32},  {"|i1", NpyDType::I8},
      {"|u1", NpyDType::U8},  {"|b1", NpyDType::Bool},
  };
  for (const auto &e : kTable)
    if (descr == e.descr) {
      t = e.type;
      return true;
    }
  return false;
}

/// Byte count for shape x itemSize, or false on negative dims / overflow.
/// The overflow check ignores zero dims: a zero-size array with an absurd
/// other dim would still overflow stride computations downstream.
bool byteCount(const std::vector<int64_t> &shape, size_t itemSize,
               uint64_t &bytes) {
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  uint64_t nonzero = itemSize;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(nonzero, static_cast<uint64_t>(d), &nonzero) ||
        nonzero > kMax)
      return false;
  }
  bytes = empty ? 0 : nonzero;
  return true;
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13); // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign; // +-0
  } else {
    // Subnormal half: renormalize into a normal float.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits =
        sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename T> T loadLE(const uint8_t *p) {
  // The supported hosts are little-endian, like the format.
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

size_t npyDTypeSize(NpyDType t) {
  switch (t) {
  case NpyDType::F64:
  case NpyDType::I64:
    return 8;
  case NpyDType::F32:
  case NpyDType::I32:
    return 4;
  case NpyDType::F16:
    return 2;
  case NpyDType::I8:
  case NpyDType::U8:
  case NpyDType::Bool:
    return 1;
  }
  return 0;
}

const char *npyDTypeDescr(NpyDType t) {
  switch (t) {
  case NpyDType::F32:
    return "<f4";
  case NpyDType::F64:
    return "<f8";
  case NpyDType::F16:
    return "<f2";
  case NpyDType::I64:
    return "<i8";
  case NpyDType::I32:
    return "<i4";
  case NpyDType::I8:
    return "|i1";
  case NpyDType::U8:
    return "|u1";
  case NpyDType::Bool:
    return "|b1";
  }
  return "?";
}

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

struct NpyHeader {
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape;
  size_t dataOffset = 0;
  uint64_t dataBytes = 0;
};

enum class HeaderResult { Ok, Error, NeedMore };

/// Parses and validates everything up to the payload. `bytes` holds the first
/// `avail` bytes of an image of `totalSize` bytes; when the header extends
/// past `avail` (but fits in totalSize) it returns NeedMore with the required
/// prefix length in *needed, so a file reader can fetch the header first and
/// the payload straight into its final buffer.
HeaderResult parseHeader(const uint8_t *bytes, size_t avail, uint64_t totalSize,
                         const std::string &name, NpyHeader &hdr,
                         std::string &error, size_t *needed) {
  auto fail = [&](const std::string &msg) {
    error = name + ": " + msg;
    return HeaderResult::Error;
  };
  // True when the caller must supply more bytes before parsing on; a file
  // shorter than `n` only needs to be supplied whole.
  auto require = [&](size_t n) {
    *needed = static_cast<size_t>(std::min<uint64_t>(n, totalSize));
    return avail < *needed;
  };
  const size_t magicLen = sizeof(kMagic);
  if (require(magicLen))
    return HeaderResult::NeedMore;
  if (avail < magicLen) {
    if (avail == 0 || std::memcmp(bytes, kMagic, avail) != 0)
      return fail("not a .npy file (bad magic)");
    return fail("truncated header (file is " + std::to_string(avail) +
                " bytes)");
  }
  if (std::memcmp(bytes, kMagic, magicLen) != 0)
    return fail("not a .npy file (bad magic)");
  if (require(magicLen + 2))
    return HeaderResult::NeedMore;
  if (avail < magicLen + 2)
    return fail("truncated header (no format version)");
  const unsigned major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    return fail("unsupported .npy format version " + std::to_string(major) +
                "." + std::to_string(minor));
  const size_t lenBytes = major == 1 ? 2 : 4;
  const size_t prefix = magicLen + 2 + lenBytes;
  if (require(prefix))
    return HeaderResult::NeedMore;
  if (avail < prefix)
    return fail("truncated header (no header length)");
  const size_t headerLen =
      major == 1 ? loadLE<uint16_t>(bytes + 8) : loadLE<uint32_t>(bytes + 8);
  if (headerLen > totalSize - prefix)
    return fail("truncated header (header length " + std::to_string(headerLen) +
                " but only " + std::to_string(totalSize - prefix) +
                " bytes follow)");
  if (headerLen > kMaxHeaderLen)
    return fail("header length " + std::to_string(headerLen) +
                " is implausibly large");
  if (require(prefix + headerLen))
    return HeaderResult::NeedMore;

  std::vector<std::pair<std::string, PyValue>> entries;
  LiteralParser parser(reinterpret_cast<const char *>(bytes + prefix),
                       headerLen);
  if (!parser.parseDict(entries))
    return fail("unparsable header: " + parser.error());

  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &[key, value] : entries) {
    const PyValue **slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran
                           : key == "shape"         ? &shape
                                                    : nullptr;
    if (!slot)
      return fail("unparsable header: unexpected key " + common::quotedName(key));
    if (*slot)
      return fail("unparsable header: duplicate key " + common::quotedName(key));
    *slot = &value;
  }
  if (!descr || !fortran || !shape)
    return fail(std::string("unparsable header: missing key '") +
                (!descr     ? "descr"
                 : !fortran ? "fortran_order"
                            : "shape") +
                "'");

  if (descr->kind != PyValue::Str)
    return fail(descr->kind == PyValue::List
                    ? "unsupported dtype (structured dtypes are not supported)"
                    : "unparsable header: 'descr' is not a string");
  if (!dtypeFromDescr(descr->str, hdr.dtype)) {
    if (!descr->str.empty() && descr->str[0] == '>')
      return fail("unsupported dtype " + common::quotedName(descr->str) +
                  " (big-endian data is not supported)");
    return fail("unsupported dtype " + common::quotedName(descr->str) +
                " (supported: <f4 <f8 <f2 <i8 <i4 |i1 |u1 |b1)");
  }
  if (fortran->kind != PyValue::Bool)
    return fail("unparsable header: 'fortran_order' is not True/False");
  if (fortran->b)
    return fail("fortran_order=True is not supported (only C-order arrays)");
  if (shape->kind != PyValue::Tuple)
    return fail("unparsable header: 'shape' is not a tuple");
  hdr.shape.clear();
  for (const PyValue &d : shape->items) {
    if (d.kind != PyValue::Int)
      return fail("unparsable header: 'shape' has a non-integer entry");
    if (d.i < 0)
      return fail("negative dimension " + std::to_string(d.i) + " in shape");
    hdr.shape.push_back(d.i);
  }
  if (!byteCount(hdr.shape, npyDTypeSize(hdr.dtype), hdr.dataBytes))
    return fail("shape " + shapeString(hdr.shape) +
                " is too large (its size in bytes overflows)");

  hdr.dataOffset = prefix + headerLen;
  const uint64_t have = totalSize - hdr.dataOffset;
  if (have != hdr.dataBytes)
    return fail(
        std::string(have < hdr.dataBytes ? "data too short" : "trailing data") +
        ": shape " + shapeString(hdr.shape) + " of " + descr->str + " needs " +
        std::to_string(hdr.dataBytes) + " bytes, file has " +
        std::to_string(have));
  return HeaderResult::Ok;
}

} // namespace

bool parseNpy(const uint8_t *bytes, size_t size,
              const std::string &nameForErrors, NpyArray &out,
              std::string &error) {
  NpyHeader hdr;
  size_t needed = 0;
  // The whole image is available, so NeedMore cannot happen.
  if (parseHeader(bytes, size, size, nameForErrors, hdr, error, &needed) !=
      HeaderResult::Ok)
    return false;
  out.dtype = hdr.dtype;
  out.shape = std::move(hdr.shape);
  out.data.assign(bytes + hdr.dataOffset, bytes + size);
  return true;
}

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  // Only regular files: /dev/zero would be read forever, a FIFO would block.
  uint64_t fileSize = 0;
  int fd = common::openRegularFile(path, fileSize, error);
  if (fd < 0)
    return false;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  struct Closer {
    FILE *f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  const uint64_t total = fileSize;

  // Read the header incrementally, then the payload directly into `out`, so
  // large weight files are never held twice in memory.
  std::vector<uint8_t> head;
  NpyHeader hdr;
  size_t needed = 0;
  HeaderResult r;
  while ((r = parseHeader(head.data(), head.size(), total, path, hdr, error,
                          &needed)) == HeaderResult::NeedMore) {
    const size_t have = head.size();
    head.resize(needed);
    if (std::fread(head.data() + have, 1, needed - have, f) != needed - have) {
      error =
          path + ": read error: " +
          (std::ferror(f) ? std::strerror(errno) : "unexpected end of file");
      return false;
    }
  }
  if (r != HeaderResult::Ok)
    return false;
  std::vector<uint8_t> data(static_cast<size_t>(hdr.dataBytes));
  if (hdr.dataBytes != 0 &&
      std::fread(data.data(), 1, data.size(), f) != data.size()) {
    error = path + ": read error: " +
            (std::ferror(f) ? std::strerror(errno) : "unexpected end of file");
    return false;
  }
  out.dtype = hdr.dtype;
  out.shape = std::move(hdr.shape);
  out.data = std::move(data);
  return true;
}

bool serializeNpy(const NpyArray &a, std::vector<uint8_t> &bytes,
                  std::string &error) {
  uint64_t need = 0;
  if (!byteCount(a.shape, npyDTypeSize(a.dtype), need)) {
    error = "invalid shape " + shapeString(a.shape);
    return false;
  }
  if (need != a.data.size()) {
    error = "data has " + std::to_string(a.data.size()) + " bytes but shape " +
            shapeString(a.shape) + " of " + npyDTypeDescr(a.dtype) + " needs " +
            std::to_string(need);
    return false;
  }
  std::string header =
      std::string("{'descr': '") + npyDTypeDescr(a.dtype) +
      "', 'fortran_order': False, 'shape': " + shapeString(a.shape) + ", }";
  // Pad with spaces and a final newline so the data starts aligned.
  auto padTo = [&](size_t prefix) {
    const size_t total = prefix + header.size() + 1;
    return header + std::string((kAlign - total % kAlign) % kAlign, ' ') + "\n";
  };
  std::string padded = padTo(sizeof(kMagic) + 2 + 2);
  unsigned major = 1;
  if (padded.size() > 0xffff) {
    major = 2;
    padded = padTo(sizeof(kMagic) + 2 + 4);
  }
  const size_t lenBytes = major == 1 ? 2 : 4;
  const size_t prefix = sizeof(kMagic) + 2 + lenBytes;
  bytes.assign(prefix + padded.size() + a.data.size(), 0);
  uint8_t *p = bytes.data();
  std::memcpy(p, kMagic, sizeof(kMagic));
  p[6] = static_cast<uint8_t>(major);
  p[7] = 0;
  const uint32_t len = static_cast<uint32_t>(padded.size());
  for (size_t i = 0; i < lenBytes; ++i)
    p[8 + i] = static_cast<uint8_t>((len >> (8 * i)) & 0xff);
  std::memcpy(p + prefix, padded.data(), padded.size());
  if (!a.data.empty())
    std::memcpy(p + prefix + padded.size(), a.data.data(), a.data.size());
  return true;
}

bool writeNpy(const std::string &path, const NpyArray &a, std::string &error) {
  std::vector<uint8_t> bytes;
  if (!serializeNpy(a, bytes, error)) {
    error = path + ": " + error;
    return false;
  }
  return common::writeFileAtomically(path, bytes.data(), bytes.size(), error);
}

bool npyToFloat32(const NpyArray &a, std::vector<float> &out,
                  std::string &error) {
  const int64_t n = a.numElements();
  const size_t item = npyDTypeSize(a.dtype);
  if (n < 0 || a.data.size() != static_cast<size_t>(n) * item) {
    error = "array data size does not match its shape";
    return false;
  }
  out.resize(static_cast<size_t>(n));
  const uint8_t *p = a.data.data();
  for (int64_t i = 0; i < n; ++i, p += item) {
    float v = 0.0f;
    switch (a.dtype) {
    case NpyDType::F32:
      v = loadLE<float>(p);
      break;
    case NpyDType::F64:
      v = static_cast<float>(loadLE<double>(p));
      break;
    case NpyDType::F16:
      v = halfToFloat(loadLE<uint16_t>(p));
      break;
    case NpyDType::I64:
      v = static_cast<float>(loadLE<int64_t>(p));
      break;
    case NpyDType::I32:
      v = static_cast<float>(loadLE<int32_t>(p));
      break;
    case NpyDType::I8:
      v = static_cast<float>(static_cast<int8_t>(*p));
      break;
    case NpyDType::U8:
      v = static_cast<float>(*p);
      break;
    case NpyDType::Bool:
      v = *p ? 1.0f : 0.0f;
      break;
    }
    out[static_cast<size_t>(i)] = v;
  }
  return true;
}

NpyArray npyFromFloat32(const std::vector<int64_t> &shape, const float *data) {
  NpyArray a;
  a.dtype = NpyDType::F32;
  a.shape = shape;
  const int64_t n = a.numElements();
  a.data.resize(static_cast<size_t>(n) * sizeof(float));
  if (n > 0)
    std::memcpy(a.data.data(), data, a.data.size());
  return a;
}

} // namespace mixprec::support
