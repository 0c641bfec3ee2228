// sanitize_utf8 (kevo/core/text.hpp): every invalid form, NUL and control
// bytes, line limits; and that what it returns never makes nlohmann's
// dump() throw, which the invalid forms do.
#include "kevo/core/text.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace {

using kevo::is_clean_utf8;
using kevo::kShownText;
using kevo::kStoredText;
using kevo::kTerminalText;
using kevo::sanitize_utf8;

const std::string R = "\xEF\xBF\xBD";   // U+FFFD

std::string bytes(std::initializer_list<unsigned> b) {
  std::string s;
  for (unsigned x : b) s += static_cast<char>(x);
  return s;
}

struct Bad {
  const char* what;
  std::string in;
  std::string out;   // sanitized, any rules
};

// Each invalid form, between ASCII, and what it becomes: one U+FFFD per byte.
std::vector<Bad> invalid_forms() {
  return {
      {"overlong NUL (C0 80)", "a" + bytes({0xC0, 0x80}) + "b", "a" + R + R + "b"},
      {"overlong slash (C0 AF)", bytes({0xC0, 0xAF}), R + R},
      {"overlong 3-byte (E0 80 80)", bytes({0xE0, 0x80, 0x80}), R + R + R},
      {"overlong 4-byte (F0 80 80 80)", bytes({0xF0, 0x80, 0x80, 0x80}), R + R + R + R},
      {"high surrogate (ED A0 80)", bytes({0xED, 0xA0, 0x80}), R + R + R},
      {"low surrogate (ED BF BF)", bytes({0xED, 0xBF, 0xBF}), R + R + R},
      {"above U+10FFFF (F4 90 80 80)", bytes({0xF4, 0x90, 0x80, 0x80}), R + R + R + R},
      {"lead F5", bytes({0xF5, 0x80, 0x80, 0x80}), R + R + R + R},
      {"byte FF", "x" + bytes({0xFF}), "x" + R},
      {"truncated at the end (E2 82)", "x" + bytes({0xE2, 0x82}), "x" + R + R},
      {"truncated inside (F0 9F 98 then ASCII)", bytes({0xF0, 0x9F, 0x98}) + "ok", R + R + R + "ok"},
      {"stray continuation (80)", "a" + bytes({0x80}) + "b", "a" + R + "b"},
      {"stray continuations (BF BF)", bytes({0xBF, 0xBF}), R + R},
  };
}

TEST(SanitizeUtf8, EveryInvalidFormBecomesOneReplacementPerByte) {
  for (const auto& b : invalid_forms()) {
    for (const auto& rules : {kStoredText, kShownText, kTerminalText}) {
      EXPECT_EQ(sanitize_utf8(b.in, rules), b.out) << b.what;
      EXPECT_FALSE(is_clean_utf8(b.in, rules)) << b.what;
      EXPECT_TRUE(is_clean_utf8(b.out, rules)) << b.what;
    }
  }
}

TEST(SanitizeUtf8, NlohmannDumpThrowsOnTheRawFormsAndNeverOnTheSanitizedOnes) {
  for (const auto& b : invalid_forms()) {
    EXPECT_THROW(nlohmann::json(b.in).dump(), nlohmann::json::type_error) << b.what;
    const std::string dumped = nlohmann::json(sanitize_utf8(b.in)).dump();
    EXPECT_EQ(nlohmann::json::parse(dumped).get<std::string>(), b.out) << b.what;
    // The backstop replaces instead of throwing.
    EXPECT_NO_THROW(kevo::dump_json(nlohmann::json{{"t", b.in}}, 2)) << b.what;
  }
}

TEST(SanitizeUtf8, ValidTextIsReturnedAsItIs) {
  const std::string valid = "plain ASCII, tab\tnewline\n é € 😀 " + bytes({0xF4, 0x8F, 0xBF, 0xBF}) + " " + R +
                            " " + bytes({0xED, 0x9F, 0xBF}) + " " + bytes({0xEE, 0x80, 0x80});
  for (const auto& rules : {kStoredText, kShownText, kTerminalText}) {
    EXPECT_TRUE(is_clean_utf8(valid, rules));
    EXPECT_EQ(sanitize_utf8(valid, rules), valid);
  }
  EXPECT_EQ(sanitize_utf8(""), "");
}

TEST(SanitizeUtf8, NulBecomesItsPictureUnderEveryRule) {
  const std::string in("a\0b", 3);
  for (const auto& rules : {kStoredText, kShownText, kTerminalText})
    EXPECT_EQ(sanitize_utf8(in, rules), "a\xE2\x90\x80" "b");
}

TEST(SanitizeUtf8, ControlBytesBecomePicturesUnlessKept) {
  const std::string in = "\x1b[2Jred\r\x07\x7f|" + bytes({0xC2, 0x85}) + bytes({0xC2, 0x9B}) + "|\n\t";
  // ESC -> U+241B, CR -> U+240D, BEL -> U+2407, DEL -> U+2421; C1 (NEL, CSI) -> U+FFFD.
  EXPECT_EQ(sanitize_utf8(in, kShownText),
            "\xE2\x90\x9B[2Jred\xE2\x90\x8D\xE2\x90\x87\xE2\x90\xA1|" + R + R + "|\n\t");
  EXPECT_FALSE(is_clean_utf8(in, kShownText));
  // Stored texts keep them (a source's form feed or CRLF stays as written).
  EXPECT_EQ(sanitize_utf8(in, kStoredText), in);
  EXPECT_TRUE(is_clean_utf8("\f\r\n\x1b", kStoredText));
}

// Bidirectional controls reorder how a line shows: a candidate's printed
// "status: wrong_answer" with U+202E before a reversed "tcerroc" reads as
// "correct" on a terminal (red team 22). Shown texts replace them; stored
// ones (sources) keep them as written.
TEST(SanitizeUtf8, BidiControlsAreReplacedInShownText) {
  const std::vector<std::vector<unsigned char>> bidi = {
      {0xE2, 0x80, 0xAA}, {0xE2, 0x80, 0xAE}, {0xE2, 0x81, 0xA6}, {0xE2, 0x81, 0xA9},
      {0xE2, 0x80, 0x8E}, {0xE2, 0x80, 0x8F}, {0xD8, 0x9C}};
  for (const auto& b : bidi) {
    const std::string in = "status: " + std::string(b.begin(), b.end()) + "tcerroc";
    EXPECT_EQ(sanitize_utf8(in, kShownText), "status: " + R + "tcerroc");
    EXPECT_EQ(sanitize_utf8(in, kTerminalText), "status: " + R + "tcerroc");
    EXPECT_FALSE(is_clean_utf8(in, kShownText));
    EXPECT_EQ(sanitize_utf8(in, kStoredText), in);
  }
  // Their neighbours stay: U+2029 (E2 80 A9), U+202F (E2 80 AF), U+2065 (E2 81 A5),
  // U+206A (E2 81 AA), U+200D (E2 80 8D), U+061B (D8 9B).
  const std::string kept = bytes({0xE2, 0x80, 0xA9}) + bytes({0xE2, 0x80, 0xAF}) + bytes({0xE2, 0x81, 0xA5}) +
                           bytes({0xE2, 0x81, 0xAA}) + bytes({0xE2, 0x80, 0x8D}) + bytes({0xD8, 0x9B});
  EXPECT_EQ(sanitize_utf8(kept, kShownText), kept);
}

TEST(SanitizeUtf8, LongLinesAreCutAtACharacterBoundaryUnderALimit) {
  const kevo::TextRules rules{false, 10};
  EXPECT_EQ(sanitize_utf8("0123456789", rules), "0123456789");
  EXPECT_TRUE(is_clean_utf8("0123456789\n0123456789", rules));
  EXPECT_FALSE(is_clean_utf8("0123456789A", rules));
  EXPECT_EQ(sanitize_utf8("0123456789ABCDE\nshort", rules), "0123456789\xE2\x80\xA6 [5 bytes cut]\nshort");
  // 'é' (2 bytes) at bytes 9-10 would cross the limit: cut before it.
  EXPECT_EQ(sanitize_utf8("012345678éz", rules), "012345678\xE2\x80\xA6 [3 bytes cut]");
  // A replaced byte counts with its replacement's size (3 bytes).
  EXPECT_EQ(sanitize_utf8("01234567\x01", rules), "01234567\xE2\x80\xA6 [1 bytes cut]");
  // One megabyte on one line, as a candidate may print: bounded on a terminal.
  const std::string huge(1 << 20, 'x');
  EXPECT_LT(sanitize_utf8(huge, kTerminalText).size(), kTerminalText.max_line + 64);
  EXPECT_EQ(sanitize_utf8(huge, kShownText), huge);
}

// Without a line limit the check skips sixteen plain bytes at a time; a
// limit longer than the text takes the byte-by-byte path and must agree, on
// long random texts of every kind of byte.
TEST(SanitizeUtf8, FastPathAgreesWithTheByteByByteCheck) {
  const std::vector<std::string> pieces = {"plain text ", "0123456789abcdefghij", "\n", "\t", "\r", std::string(1, '\0'),
                                           "\x1b", "\x7f", "\xc2\x85", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                           "\xff", "\xc3", "\xed\xa0\x80", "\"", "\\", "~"};
  std::uint64_t state = 1;
  auto below = [&](std::size_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((state >> 33) % n);
  };
  for (int k = 0; k < 5000; ++k) {
    std::string s;
    for (std::size_t n = below(40); n > 0; --n) s += pieces[below(pieces.size())];
    for (const bool keep : {false, true}) {
      const kevo::TextRules fast{keep, 0}, slow{keep, std::size_t{1} << 30};
      EXPECT_EQ(is_clean_utf8(s, fast), is_clean_utf8(s, slow));
      EXPECT_EQ(sanitize_utf8(s, fast), sanitize_utf8(s, slow));
    }
  }
}

TEST(SanitizeUtf8, SequenceLengthAndPrefix) {
  EXPECT_EQ(kevo::utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(kevo::utf8_sequence_length("é", 0), 2u);
  EXPECT_EQ(kevo::utf8_sequence_length("€", 0), 3u);
  EXPECT_EQ(kevo::utf8_sequence_length("😀", 0), 4u);
  EXPECT_EQ(kevo::utf8_sequence_length(bytes({0xC0, 0x80}), 0), 0u);
  EXPECT_EQ(kevo::utf8_sequence_length("a", 1), 0u);
  EXPECT_EQ(kevo::utf8_prefix("aé", 2), "a");
  EXPECT_EQ(kevo::utf8_prefix("aé", 3), "aé");
}

}  // namespace
