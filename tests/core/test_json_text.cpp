// kevo/core/json_text.hpp: its writers produce nlohmann's compact dump byte
// for byte, and its readers call a text canonical exactly when parsing and
// dumping it again gives the same text, on random documents and on random
// edits of them.
#include "kevo/core/json_text.hpp"

#include "kevo/core/rng.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
namespace jt = kevo::json_text;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Pieces of strings: plain ASCII of several lengths (the eight-byte steps),
// every kind of escape, UTF-8 of 2, 3 and 4 bytes, DEL, and invalid bytes.
const std::vector<std::string>& string_pieces() {
  static const std::vector<std::string> p = {
      "a", "key", "0123456789abcdef", "a longer run of plain text that crosses several words", " ", "\"", "\\", "/",
      "\b", "\f", "\n", "\r", "\t", std::string(1, '\0'), "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac",
      "\xf0\x9f\x98\x80", "\xc2\x80", "\xff", "\xc3", "\xed\xa0\x80", "\xe0\x80\x80", "{", "}", "[", "]", ":", ","};
  return p;
}

std::string random_string(kevo::Rng& rng, bool valid_only) {
  std::string s;
  for (auto n = rng.below(6); n > 0; --n) {
    const auto& p = string_pieces();
    std::string piece = p[rng.below(p.size())];
    // Invalid UTF-8 only where asked for.
    if (valid_only && (piece == "\xff" || piece == "\xc3" || piece == "\xed\xa0\x80" || piece == "\xe0\x80\x80"))
      continue;
    s += piece;
  }
  return s;
}

json random_value(kevo::Rng& rng, int depth) {
  switch (rng.below(depth > 3 ? 6 : 8)) {
    case 0: return nullptr;
    case 1: return rng.below(2) == 0;
    case 2: return static_cast<std::int64_t>(rng.below(2000)) - 1000;
    case 3: return rng.below(1ULL << 62) * (rng.below(2) ? 1ULL : 3ULL);
    case 4: {
      const double picks[] = {0.0, -0.0, 1.0, 0.5, 1e-5, 123456.789, 1e300, 3.0e15, 1e16, -2.5e-7, 0.1, 1.0 / 3.0};
      return rng.below(2) ? picks[rng.below(12)] : (rng.uniform() - 0.5) * std::pow(10.0, static_cast<double>(rng.below(40)) - 20);
    }
    case 5: return random_string(rng, true);
    case 6: {
      json a = json::array();
      for (auto n = rng.below(4); n > 0; --n) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (auto n = rng.below(5); n > 0; --n) o[random_string(rng, true)] = random_value(rng, depth + 1);
      return o;
    }
  }
}

// What the readers must say: canonical exactly when parse + dump is the identity.
bool really_canonical(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  return !j.is_discarded() && dump(j) == text;
}

TEST(JsonText, AppendStringWritesWhatDumpWrites) {
  kevo::Rng rng(11);
  for (int k = 0; k < 20000; ++k) {
    const std::string s = random_string(rng, false);
    std::string out = "x";
    jt::append_string(out, s);
    EXPECT_EQ(out, "x" + dump(json(s))) << json(s).dump(-1, ' ', true, json::error_handler_t::replace);
  }
  std::string empty;
  jt::append_string(empty, "");
  EXPECT_EQ(empty, "\"\"");
  // Long texts, many escapes in a row (the writer makes more room as it goes).
  for (int k = 0; k < 300; ++k) {
    std::string s;
    for (auto n = rng.below(2000); n > 0; --n) s += random_string(rng, k % 3 != 0);
    if (k % 5 == 0) s += std::string(rng.below(3000), static_cast<char>(rng.below(32)));
    std::string out = "x";
    jt::append_string(out, s);
    ASSERT_EQ(out, "x" + dump(json(s)));
  }
}

TEST(JsonText, AppendNumberWritesWhatDumpWrites) {
  for (double v : {0.0, -0.0, 1.0, 0.1, 1e-5, 1e21, 123.456, -7.25, 1e300, 5e-324,
                   std::numeric_limits<double>::infinity(), std::nan("")}) {
    std::string out;
    jt::append_number(out, v);
    EXPECT_EQ(out, dump(json(v))) << v;
  }
  for (std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min(),
                         std::numeric_limits<std::int64_t>::max()}) {
    std::string out;
    jt::append_number(out, v);
    EXPECT_EQ(out, dump(json(v)));
  }
  std::string out;
  jt::append_number(out, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(out, dump(json(std::numeric_limits<std::uint64_t>::max())));
}

TEST(JsonText, DumpsAreCanonicalAndSplitIntoTheirElementsDumps) {
  kevo::Rng rng(12);
  std::vector<std::string_view> elements;
  std::vector<jt::Member> members;
  for (int k = 0; k < 5000; ++k) {
    json a = json::array();
    for (auto n = rng.below(4); n > 0; --n) a.push_back(random_value(rng, 1));
    const std::string text = dump(a);
    ASSERT_TRUE(jt::canonical(text)) << text;
    ASSERT_TRUE(jt::canonical_array(text, elements)) << text;
    ASSERT_EQ(elements.size(), a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(elements[i], dump(a[i]));
      if (!a[i].is_object()) continue;
      const std::string object = dump(a[i]);
      bool escaped_key = false;
      for (const auto& [key, v] : a[i].items()) escaped_key = escaped_key || dump(json(key)) != "\"" + key + "\"";
      ASSERT_EQ(jt::canonical_object(object, members), !escaped_key) << object;
      if (escaped_key) continue;
      ASSERT_EQ(members.size(), a[i].size());
      std::size_t m = 0;
      for (const auto& [key, v] : a[i].items()) {
        EXPECT_EQ(members[m].key, key);
        EXPECT_EQ(members[m].value, dump(v));
        ++m;
      }
    }
  }
}

TEST(JsonText, ArraysOfObjectsSplitIntoMembersInOnePass) {
  kevo::Rng rng(14);
  std::vector<std::vector<jt::Member>> objects;
  int split = 0;
  for (int k = 0; k < 5000; ++k) {
    json a = json::array();
    for (auto n = rng.below(3); n > 0; --n) {
      if (rng.below(8) == 0) {
        a.push_back(random_value(rng, 1));
        continue;
      }
      json o = json::object();
      for (auto m = rng.below(5); m > 0; --m)
        o[rng.below(4) ? std::string(1, static_cast<char>('a' + rng.below(26))) : random_string(rng, true)] =
            random_value(rng, 2);
      a.push_back(o);
    }
    const std::string text = dump(a);
    bool want = true;
    for (const auto& e : a) {
      if (!e.is_object()) want = false;
      else
        for (const auto& [key, v] : e.items()) want = want && dump(json(key)) == "\"" + key + "\"";
    }
    ASSERT_EQ(jt::canonical_objects(text, objects), want) << text;
    if (!want) continue;
    ++split;
    ASSERT_EQ(objects.size(), a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(objects[i].size(), a[i].size());
      std::size_t m = 0;
      for (const auto& [key, v] : a[i].items()) {
        EXPECT_EQ(objects[i][m].key, key);
        EXPECT_EQ(objects[i][m].value, dump(v));
        // And each value read back is the value.
        EXPECT_EQ(jt::value_of(objects[i][m].value), v);
        ++m;
      }
    }
  }
  EXPECT_GT(split, 500);
  EXPECT_FALSE(jt::canonical_objects("[{\"a\":1} ]", objects));
  EXPECT_FALSE(jt::canonical_objects("[{\"a\":1},2]", objects));
  EXPECT_TRUE(jt::canonical_objects("[]", objects));
  EXPECT_TRUE(objects.empty());
}

TEST(JsonText, WhatIsNotItsOwnDumpIsNotCanonical) {
  for (const char* text :
       {"", " []", "[] ", "[1, 2]", "{\"b\":1,\"a\":2}", "{\"a\":1,\"a\":2}", "[\"\\/\"]", "[\"\\u0041\"]",
        "[\"\\u001F\"]", "[\"\\u000a\"]", "[\"\\ud83d\\ude00\"]", "[-0]", "[1.50]", "[1E5]", "[1e5]", "[01]", "[1.]",
        "[.5]", "[+1]", "[1e400]", "[123456789012345678901]", "[-9223372036854775809]", "[true,]", "[tru]", "[\"a\"]x", "[\"\x01\"]",
        "[\"\xff\"]", "[\"\xed\xa0\x80\"]", "{\"a\" :1}", "{\"a\":}", "[nul]", "[\"abc]"}) {
    std::vector<std::string_view> elements;
    EXPECT_FALSE(jt::canonical(text)) << text;
    EXPECT_FALSE(jt::canonical_array(text, elements)) << text;
    EXPECT_FALSE(really_canonical(text)) << text;
  }
  for (const char* text : {"[]", "{}", "[-1]", "[0.5]", "[1e-05]", "[\"\\u001f\"]", "[\"\\n\"]", "[\"\x7f\"]",
                           "[-0.0]", "[1.0]", "[18446744073709551615]", "[-9223372036854775808]", "{\"a\":1,\"b\":[{}]}", "[\"\\u0000\"]"}) {
    EXPECT_TRUE(jt::canonical(text)) << text;
    EXPECT_TRUE(really_canonical(text)) << text;
  }
  // An escaped key may be canonical, but canonical_object does not split it.
  std::vector<jt::Member> members;
  EXPECT_TRUE(jt::canonical("{\"a\\nb\":1}"));
  EXPECT_FALSE(jt::canonical_object("{\"a\\nb\":1}", members));
}

// The defining property, on random edits of dumps: a byte changed, inserted,
// removed, or two bytes swapped.
TEST(JsonText, CanonicalExactlyWhenParseThenDumpIsTheIdentity) {
  kevo::Rng rng(13);
  const std::string alphabet = " \t\n\"\\/:,[]{}-+.0123456789eEabfnrtu\x01\x7f\xc3\xa9\xff";
  int canonical = 0;
  for (int k = 0; k < 30000; ++k) {
    json a = json::array();
    for (auto n = rng.below(3); n > 0; --n) a.push_back(random_value(rng, 2));
    std::string text = dump(a);
    for (auto edits = rng.below(3); edits > 0; --edits) {
      const std::size_t at = rng.below(text.size() + 1);
      const char c = alphabet[rng.below(alphabet.size())];
      switch (rng.below(4)) {
        case 0: if (at < text.size()) text[at] = c; break;
        case 1: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        case 2: if (at < text.size()) text.erase(at, 1); break;
        default: if (at + 1 < text.size()) std::swap(text[at], text[at + 1]); break;
      }
    }
    const bool want = really_canonical(text);
    ASSERT_EQ(jt::canonical(text), want) << text;
    canonical += want;
  }
  // Some edits keep a text canonical (a digit for a digit, a letter in a string).
  EXPECT_GT(canonical, 3000);
}

TEST(JsonText, PlainAsciiPrefixStopsAtTheFirstByteThatNeedsAttention) {
  const std::string base = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (std::size_t at = 0; at < base.size(); ++at)
    for (const char c : {'"', '\\', '\n', '\0', '\x1f', '\x80', '\xff'}) {
      std::string s = base;
      s[at] = c;
      EXPECT_EQ(jt::plain_ascii_prefix(s), at) << at << " " << static_cast<int>(c);
    }
  EXPECT_EQ(jt::plain_ascii_prefix(base), base.size());
  EXPECT_EQ(jt::plain_ascii_prefix("\x7f~ "), 3u);
}

}  // namespace
