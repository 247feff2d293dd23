//===- EscapeTest.cpp - the one-line rule for names (common/Escape.h) -----===//
#include "common/Escape.h"

#include <gtest/gtest.h>

using mixprec::common::escapeControls;
using mixprec::common::quotedName;

TEST(Escape, ControlCharactersAndQuotes) {
  EXPECT_EQ(quotedName("a\nb\tc\rd"), "'a\\nb\\tc\\rd'");
  EXPECT_EQ(quotedName(std::string("x\0y", 3)), "'x\\x00y'");
  EXPECT_EQ(quotedName("\x1b[31m"), "'\\x1b[31m'");
  EXPECT_EQ(quotedName("it's a\\b"), "'it\\'s a\\\\b'");
  EXPECT_EQ(escapeControls("it's a\\b\n"), "it's a\\b\\n");
}

// Well-formed UTF-8 passes through; the C1 controls and the Unicode line
// separators (which break lines in some terminals and editors) are escaped.
TEST(Escape, Unicode) {
  EXPECT_EQ(quotedName("gewicht_\xc3\xa4"), "'gewicht_\xc3\xa4'");     // U+00E4
  EXPECT_EQ(quotedName("\xe2\x82\xac"), "'\xe2\x82\xac'");             // U+20AC
  EXPECT_EQ(quotedName("\xf0\x9f\x98\x80"), "'\xf0\x9f\x98\x80'");     // U+1F600
  EXPECT_EQ(quotedName("a\xc2\x85" "b"), "'a\\u0085b'");               // NEL
  EXPECT_EQ(quotedName("a\xe2\x80\xa8" "b"), "'a\\u2028b'");           // LINE SEPARATOR
  EXPECT_EQ(quotedName("a\xe2\x80\xa9" "b"), "'a\\u2029b'");           // PARAGRAPH SEPARATOR
}

// Bytes that are not UTF-8 are escaped one by one: stray continuation
// bytes, overlong forms, surrogates, code points above U+10FFFF, cut-off
// sequences.
TEST(Escape, MalformedUtf8) {
  EXPECT_EQ(quotedName("\x80"), "'\\x80'");
  EXPECT_EQ(quotedName("\xc0\xaf"), "'\\xc0\\xaf'");             // overlong '/'
  EXPECT_EQ(quotedName("\xe0\x80\xaf"), "'\\xe0\\x80\\xaf'");    // overlong
  EXPECT_EQ(quotedName("\xed\xa0\x80"), "'\\xed\\xa0\\x80'");    // surrogate D800
  EXPECT_EQ(quotedName("\xf4\x90\x80\x80"), "'\\xf4\\x90\\x80\\x80'"); // > U+10FFFF
  EXPECT_EQ(quotedName("\xe2\x82"), "'\\xe2\\x82'");             // cut off
  EXPECT_EQ(quotedName("\xff"), "'\\xff'");
}
