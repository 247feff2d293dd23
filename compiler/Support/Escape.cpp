//===- Escape.cpp - names and messages that stay one line ----------------===//
#include "compiler/Support/Escape.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"

namespace mixprec::compiler {

namespace {
/// Appends `value` as `digits` lowercase hex digits after `prefix`.
void appendHex(std::string &out, const char *prefix, uint32_t value, int digits) {
  out += prefix;
  for (int d = digits - 1; d >= 0; --d)
    out += llvm::hexdigit((value >> (4 * d)) & 15, /*LowerCase=*/true);
}

/// Appends `s`, with C-style escapes for what would break or garble a line:
/// control characters (\n, \t, \r, else \xHH), the Unicode controls and
/// line separators U+0080-U+009F, U+2028, U+2029 (\uHHHH) and bytes that
/// are not UTF-8 (\xHH). With `quotes`, backslashes and single quotes get
/// a backslash too.
void appendEscaped(std::string &out, llvm::StringRef s, bool quotes) {
  const auto *p = reinterpret_cast<const llvm::UTF8 *>(s.data());
  const llvm::UTF8 *end = p + s.size();
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
    unsigned length = llvm::getNumBytesForUTF8(ch);
    if (length > static_cast<size_t>(end - p) || !llvm::isLegalUTF8Sequence(p, p + length)) {
      appendHex(out, "\\x", ch, 2);
      ++p;
      continue;
    }
    const llvm::UTF8 *next = p;
    llvm::UTF32 codePoint = 0;
    llvm::convertUTF8Sequence(&next, p + length, &codePoint, llvm::strictConversion);
    if ((codePoint >= 0x80 && codePoint <= 0x9f) || codePoint == 0x2028 || codePoint == 0x2029)
      appendHex(out, "\\u", codePoint, 4);
    else
      out.append(reinterpret_cast<const char *>(p), length);
    p += length;
  }
}
} // namespace

std::string quotedName(llvm::StringRef s) {
  std::string out = "'";
  appendEscaped(out, s, /*quotes=*/true);
  return out + "'";
}

std::string escapeControls(llvm::StringRef s) {
  std::string out;
  appendEscaped(out, s, /*quotes=*/false);
  return out;
}

} // namespace mixprec::compiler
