//===- Escape.cpp - names and messages that stay one line -----------------===//
#include "common/Escape.h"

#include <cstdint>

namespace mixprec::common {
namespace {

/// Appends `value` as `digits` lowercase hex digits after `prefix`.
void appendHex(std::string &out, const char *prefix, uint32_t value, int digits) {
  static const char hex[] = "0123456789abcdef";
  out += prefix;
  for (int d = digits - 1; d >= 0; --d)
    out += hex[(value >> (4 * d)) & 15];
}

/// The length of the well-formed UTF-8 sequence at `p` (Unicode's Table
/// 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t utf8Length(const unsigned char *p, size_t avail) {
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < avail && p[i] >= lo && p[i] <= hi;
  };
  unsigned char c = p[0];
  if (c >= 0xC2 && c <= 0xDF)
    return cont(1) ? 2 : 0;
  if (c == 0xE0)
    return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
    return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED)
    return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0)
    return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3)
    return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4)
    return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/// The code point of the well-formed `length`-byte sequence at `p`.
uint32_t decode(const unsigned char *p, size_t length) {
  uint32_t cp = length == 2 ? p[0] & 0x1F : length == 3 ? p[0] & 0x0F : p[0] & 0x07;
  for (size_t i = 1; i < length; ++i)
    cp = (cp << 6) | (p[i] & 0x3F);
  return cp;
}

/// Appends `s` with the escapes quotedName() documents; with `quotes`,
/// backslashes and single quotes get a backslash too.
void appendEscaped(std::string &out, std::string_view s, bool quotes) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  const unsigned char *end = p + s.size();
  while (p < end) {
    unsigned char ch = *p;
    if (ch < 0x80) {
      ++p;
      if (ch == '\n')
        out += "\\n";
      else if (ch == '\t')
        out += "\\t";
      else if (ch == '\r')
        out += "\\r";
      else if (ch < 0x20 || ch == 0x7f)
        appendHex(out, "\\x", ch, 2);
      else if (quotes && (ch == '\\' || ch == '\''))
        out += {'\\', static_cast<char>(ch)};
      else
        out += static_cast<char>(ch);
      continue;
    }
    size_t length = utf8Length(p, static_cast<size_t>(end - p));
    if (length == 0) {
      appendHex(out, "\\x", ch, 2);
      ++p;
      continue;
    }
    uint32_t cp = decode(p, length);
    if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
      appendHex(out, "\\u", cp, 4);
    else
      out.append(reinterpret_cast<const char *>(p), length);
    p += length;
  }
}

} // namespace

std::string quotedName(std::string_view s) {
  std::string out = "'";
  appendEscaped(out, s, /*quotes=*/true);
  return out + "'";
}

std::string escapeControls(std::string_view s) {
  std::string out;
  appendEscaped(out, s, /*quotes=*/false);
  return out;
}

} // namespace mixprec::common
