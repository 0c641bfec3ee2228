#include "kevo/core/json_text.hpp"

#include "kevo/core/text.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstring>
#include <system_error>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kevo::json_text {
namespace {

constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHigh = 0x8080808080808080ULL;

// Whether any of the eight bytes is below 0x20, '"', '\\' or 0x80 and up.
// (x - n) & ~x & high flags a byte below n (n <= 0x80) and never flags one
// when there is none; a byte equal to c is a zero byte of x ^ c.
bool any_special(std::uint64_t x) {
  const std::uint64_t control = (x - kOnes * 0x20) & ~x;
  const std::uint64_t q = x ^ (kOnes * 0x22);
  const std::uint64_t b = x ^ (kOnes * 0x5C);
  return (((control | ((q - kOnes) & ~q) | ((b - kOnes) & ~b)) & kHigh) | (x & kHigh)) != 0;
}

bool plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

// The short escapes dump writes; 0 for the C0 controls written \u00xx.
char short_escape(unsigned char c) {
  switch (c) {
    case '"': return '"';
    case '\\': return '\\';
    case '\b': return 'b';
    case '\f': return 'f';
    case '\n': return 'n';
    case '\r': return 'r';
    case '\t': return 't';
    default: return 0;
  }
}

int lower_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// A reader that accepts canonical text only (json_text.hpp): it never
// decides what a non-canonical text means, it only says "not canonical".
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}
  bool done() const { return at_ == text_.size(); }
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_one() { ++at_; }

  bool value(int depth) {
    switch (peek()) {
      case '{': return object(depth + 1, nullptr);
      case '[': return array(depth + 1, nullptr);
      case '"': return string(nullptr);
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }

  bool object(int depth, std::vector<Member>* members) {
    if (depth > kMaxDepth || peek() != '{') return false;
    ++at_;
    if (peek() == '}') return ++at_, true;
    std::string_view previous;
    std::string previous_text, key_text;   // keys with escapes, decoded
    for (bool first = true;; first = false) {
      const std::size_t key_at = at_ + 1;
      bool escaped = false;
      if (peek() != '"' || !string(&escaped)) return false;
      std::string_view key = text_.substr(key_at, at_ - 1 - key_at);
      if (escaped) {
        if (members) return false;   // members are named as written
        key_text = decode(key);
        key = key_text;
      }
      // The dump of a parsed object has its keys sorted (std::map), once each.
      if (!first && !(previous < key)) return false;
      if (escaped) {
        previous_text.swap(key_text);
        key = previous_text;
      }
      previous = key;
      if (peek() != ':') return false;
      ++at_;
      const std::size_t value_at = at_;
      if (!value(depth)) return false;
      if (members) members->push_back({key, text_.substr(value_at, at_ - value_at)});
      if (peek() == '}') return ++at_, true;
      if (peek() != ',') return false;
      ++at_;
    }
  }

  bool array(int depth, std::vector<std::string_view>* elements) {
    if (depth > kMaxDepth || peek() != '[') return false;
    ++at_;
    if (peek() == ']') return ++at_, true;
    while (true) {
      const std::size_t value_at = at_;
      if (!value(depth)) return false;
      if (elements) elements->push_back(text_.substr(value_at, at_ - value_at));
      if (peek() == ']') return ++at_, true;
      if (peek() != ',') return false;
      ++at_;
    }
  }

 private:
  static constexpr int kMaxDepth = 256;

  // The characters of a canonical string's content (escapes as string() accepts them).
  static std::string decode(std::string_view raw) {
    std::string out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\') {
        out += raw[i];
        continue;
      }
      const char e = raw[++i];
      switch (e) {
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u':
          out += static_cast<char>(lower_hex(raw[i + 3]) * 16 + lower_hex(raw[i + 4]));
          i += 4;
          break;
        default: out += e; break;   // '"' and '\\'
      }
    }
    return out;
  }

  bool literal(std::string_view word) {
    if (text_.compare(at_, word.size(), word) != 0) return false;
    at_ += word.size();
    return true;
  }

  bool string(bool* escaped) {
    ++at_;   // the opening quote
    while (true) {
      at_ += plain_ascii_prefix(text_.substr(at_));
      if (at_ >= text_.size()) return false;
      const auto c = static_cast<unsigned char>(text_[at_]);
      if (c == '"') return ++at_, true;
      if (c == '\\') {
        if (escaped) *escaped = true;
        if (at_ + 1 >= text_.size()) return false;
        const char e = text_[at_ + 1];
        if (e == '"' || e == '\\' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
          at_ += 2;
          continue;
        }
        // \u00xx, lower-case, for a C0 control without a short escape.
        if (e != 'u' || at_ + 6 > text_.size() || text_[at_ + 2] != '0' || text_[at_ + 3] != '0') return false;
        const int hi = lower_hex(text_[at_ + 4]), lo = lower_hex(text_[at_ + 5]);
        if (hi < 0 || hi > 1 || lo < 0 || short_escape(static_cast<unsigned char>(hi * 16 + lo)) != 0) return false;
        at_ += 6;
        continue;
      }
      if (c < 0x20) return false;   // a raw control: not JSON
      const std::size_t n = utf8_sequence_length(text_, at_);
      if (n == 0) return false;     // not UTF-8: the parser rejects it
      at_ += n;
    }
  }

  bool number() {
    const std::size_t start = at_;
    auto digits = [&] {
      const std::size_t from = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - from;
    };
    const bool negative = peek() == '-';
    if (negative) ++at_;
    if (peek() == '0') {
      ++at_;
    } else if (peek() < '1' || peek() > '9' || digits() == 0) {
      return false;
    }
    bool integer = true;
    if (peek() == '.') {
      ++at_;
      if (digits() == 0) return false;
      integer = false;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++at_;
      if (peek() == '+' || peek() == '-') ++at_;
      if (digits() == 0) return false;
      integer = false;
    }
    const std::string_view token = text_.substr(start, at_ - start);
    if (integer) {
      // Parsed as a 64-bit integer (unsigned unless negative) and written
      // back in decimal; -0 becomes 0, and one that does not fit is parsed as
      // a double.
      if (token == "-0") return false;
      const char* first = token.data();
      const char* last = first + token.size();
      if (negative) {
        std::int64_t n = 0;
        const auto r = std::from_chars(first, last, n);
        return r.ec == std::errc() && r.ptr == last;
      }
      std::uint64_t n = 0;
      const auto r = std::from_chars(first, last, n);
      return r.ec == std::errc() && r.ptr == last;
    }
    double v = 0.0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (ec != std::errc() || end != token.data() + token.size()) return false;
    return nlohmann::json(v).dump() == token;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

// ---- Cursor ----------------------------------------------------------------

namespace {

constexpr int kMaxCursorDepth = 256;

int any_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

void Cursor::blanks() {
  // The four blanks JSON allows between tokens.
  while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
    ++at_;
}

char Cursor::peek() {
  if (failed_) return '\0';
  blanks();
  return at_ < text_.size() ? text_[at_] : '\0';
}

bool Cursor::enter_object() {
  if (peek() != '{' || first_.size() >= kMaxCursorDepth) return fail();
  ++at_;
  first_.push_back(true);
  return true;
}

bool Cursor::enter_array() {
  if (peek() != '[' || first_.size() >= kMaxCursorDepth) return fail();
  ++at_;
  first_.push_back(true);
  return true;
}

// Before a member or element: the container's end (consumed: false) or,
// after the first, a comma.
bool Cursor::separator(char close) {
  if (failed_ || first_.empty()) return fail();
  const char c = peek();
  if (c == close) {
    ++at_;
    first_.pop_back();
    return false;
  }
  if (!first_.back()) {
    if (c != ',') return fail();
    ++at_;
  }
  first_.back() = false;
  return true;
}

bool Cursor::member(std::string& key) {
  if (!separator('}')) return false;
  key.clear();
  if (peek() != '"' || !string_content(&key)) return fail();
  if (peek() != ':') return fail();
  ++at_;
  return true;
}

bool Cursor::element() {
  if (!separator(']')) return false;
  // A value must follow the comma ("[1,]" is not JSON).
  const char c = peek();
  if (c == ']' || c == ',' || c == '\0') return fail();
  return true;
}

bool Cursor::string(std::string& out) {
  out.clear();
  if (peek() != '"') return fail();
  return string_content(&out);
}

bool Cursor::string_content(std::string* out) {
  ++at_;   // the opening quote
  while (true) {
    const std::size_t run = plain_ascii_prefix(text_.substr(at_));
    if (out) out->append(text_.data() + at_, run);
    at_ += run;
    if (at_ >= text_.size()) return fail();
    const auto c = static_cast<unsigned char>(text_[at_]);
    if (c == '"') return ++at_, true;
    if (c == '\\') {
      if (at_ + 1 >= text_.size()) return fail();
      const char e = text_[at_ + 1];
      at_ += 2;
      char plain_char = 0;
      switch (e) {
        case '"': plain_char = '"'; break;
        case '\\': plain_char = '\\'; break;
        case '/': plain_char = '/'; break;
        case 'b': plain_char = '\b'; break;
        case 'f': plain_char = '\f'; break;
        case 'n': plain_char = '\n'; break;
        case 'r': plain_char = '\r'; break;
        case 't': plain_char = '\t'; break;
        case 'u': break;
        default: return fail();
      }
      if (e != 'u') {
        if (out) *out += plain_char;
        continue;
      }
      auto code = [&](std::uint32_t& cp) {
        if (at_ + 4 > text_.size()) return false;
        cp = 0;
        for (int k = 0; k < 4; ++k) {
          const int h = any_hex(text_[at_ + static_cast<std::size_t>(k)]);
          if (h < 0) return false;
          cp = cp * 16 + static_cast<std::uint32_t>(h);
        }
        at_ += 4;
        return true;
      };
      std::uint32_t cp = 0;
      if (!code(cp)) return fail();
      if (cp >= 0xDC00 && cp <= 0xDFFF) return fail();   // a low surrogate alone
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        // A high surrogate: its low one must follow.
        std::uint32_t low = 0;
        if (text_.compare(at_, 2, "\\u") != 0) return fail();
        at_ += 2;
        if (!code(low) || low < 0xDC00 || low > 0xDFFF) return fail();
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
      if (out) append_utf8(*out, cp);
      continue;
    }
    if (c < 0x20) return fail();   // a raw control
    const std::size_t n = utf8_sequence_length(text_, at_);
    if (n == 0) return fail();
    if (out) out->append(text_.data() + at_, n);
    at_ += n;
  }
}

bool Cursor::number(bool* integral) {
  const std::size_t start = at_;
  auto digits = [&] {
    const std::size_t from = at_;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
    return at_ - from;
  };
  if (at_ < text_.size() && text_[at_] == '-') ++at_;
  if (at_ < text_.size() && text_[at_] == '0') {
    ++at_;
  } else if (at_ >= text_.size() || text_[at_] < '1' || text_[at_] > '9' || digits() == 0) {
    return fail();
  }
  bool whole = true;
  if (at_ < text_.size() && text_[at_] == '.') {
    ++at_;
    if (digits() == 0) return fail();
    whole = false;
  }
  if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
    ++at_;
    if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
    if (digits() == 0) return fail();
    whole = false;
  }
  if (integral) *integral = whole;
  return at_ > start;
}

bool Cursor::integer(std::int64_t& out) {
  if (peek() == '\0') return fail();
  const std::size_t start = at_;
  bool whole = false;
  if (!number(&whole) || !whole) return fail();
  const std::string_view token = text_.substr(start, at_ - start);
  if (token.size() - (token[0] == '-' ? 1 : 0) > 18) return fail();
  const auto r = std::from_chars(token.data(), token.data() + token.size(), out);
  if (r.ec != std::errc() || r.ptr != token.data() + token.size()) return fail();
  return true;
}

bool Cursor::literal(std::string_view word) {
  if (text_.compare(at_, word.size(), word) != 0) return fail();
  at_ += word.size();
  return true;
}

bool Cursor::skip_value() {
  switch (peek()) {
    case '{': {
      if (!enter_object()) return false;
      std::string key;
      while (member(key))
        if (!skip_value()) return false;
      return !failed_;
    }
    case '[':
      if (!enter_array()) return false;
      while (element())
        if (!skip_value()) return false;
      return !failed_;
    case '"': return string_content(nullptr);
    case 't': return literal("true");
    case 'f': return literal("false");
    case 'n': return literal("null");
    case '\0': return fail();
    default: return number(nullptr);
  }
}

bool Cursor::skip() { return skip_value(); }

bool Cursor::finish() {
  if (failed_ || !first_.empty()) return fail();
  blanks();
  return at_ == text_.size() || fail();
}

// ---- scanning ----------------------------------------------------------------

std::size_t plain_ascii_prefix(std::string_view s) {
  std::size_t i = 0;
#if defined(__SSE2__)
  // Sixteen bytes a step: a signed compare below 0x20 flags the C0
  // controls and every byte from 0x80 on.
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
  for (; i + 16 <= s.size(); i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                     _mm_cmplt_epi8(x, space));
    if (const int mask = _mm_movemask_epi8(hit)) return i + static_cast<std::size_t>(__builtin_ctz(mask));
  }
#endif
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    if (any_special(x)) break;
  }
  while (i < s.size() && plain(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

void append_string(std::string& out, std::string_view s) {
  // Written through a pointer into room made beforehand (a string's append
  // per run and per escape cost more than the scan): the text, its quotes
  // and a few escapes fit at once; more room is made when escapes need it.
  const std::size_t mark = out.size();
  out.resize(mark + s.size() + 2 + (s.size() >> 3) + 48);   // a text of code: a line end in every 40 bytes or so
  char* d = out.data() + mark;
  char* end = out.data() + out.size();
  const char* src = s.data();
  const std::size_t n = s.size();
  // Room for `k` more bytes (the closing quote always fits after them).
  auto room = [&](std::size_t k) {
    if (static_cast<std::size_t>(end - d) >= k + 1) return;
    const std::size_t at = static_cast<std::size_t>(d - out.data());
    out.resize(out.size() + k + 1 + (n >> 3) + 64);
    d = out.data() + at;
    end = out.data() + out.size();
  };
  *d++ = '"';
  std::size_t i = 0;
  while (true) {
    const std::size_t run = plain_ascii_prefix(std::string_view(src + i, n - i));
    room(run + 6);
    std::memcpy(d, src + i, run);
    d += run;
    i += run;
    if (i == n) break;
    const auto c = static_cast<unsigned char>(src[i]);
    if (c >= 0x80) {
      const std::size_t k = utf8_sequence_length(s, i);
      if (k == 0) {
        // Invalid UTF-8: the replacing handler's own spelling.
        out.resize(mark);
        out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return;
      }
      std::memcpy(d, src + i, k);   // k <= 4: the room above holds it
      d += k;
      i += k;
      continue;
    }
    if (const char e = short_escape(c)) {
      d[0] = '\\';
      d[1] = e;
      d += 2;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      std::memcpy(d, "\\u00", 4);
      d[4] = kHex[c >> 4];
      d[5] = kHex[c & 15];
      d += 6;
    }
    ++i;
  }
  *d++ = '"';
  out.resize(static_cast<std::size_t>(d - out.data()));
}

void append_number(std::string& out, double v) { out += nlohmann::json(v).dump(); }

void append_number(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_number(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

bool canonical(std::string_view text) {
  Reader r(text);
  return !text.empty() && r.value(0) && r.done();
}

bool canonical_array(std::string_view text, std::vector<std::string_view>& elements) {
  elements.clear();
  Reader r(text);
  return r.array(1, &elements) && r.done();
}

bool canonical_objects(std::string_view text, std::vector<std::vector<Member>>& objects) {
  objects.clear();
  Reader r(text);
  if (r.peek() != '[') return false;
  r.skip_one();
  if (r.peek() == ']') return r.skip_one(), r.done();
  while (true) {
    if (!r.object(2, &objects.emplace_back())) return false;
    if (r.peek() == ']') return r.skip_one(), r.done();
    if (r.peek() != ',') return false;
    r.skip_one();
  }
}

nlohmann::json value_of(std::string_view v) {
  if (v == "true") return true;
  if (v == "false") return false;
  if (v == "null") return nullptr;
  if (!v.empty() && v.front() == '"' && v.find('\\') == std::string_view::npos)
    return std::string(v.substr(1, v.size() - 2));
  const bool number = !v.empty() && (v.front() == '-' || (v.front() >= '0' && v.front() <= '9'));
  if (number && v.find_first_of(".eE") != std::string_view::npos) {
    // The double the parser's strtod would give (both round correctly).
    double d = 0.0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), d);
    if (r.ec == std::errc() && r.ptr == v.data() + v.size()) return d;
  } else if (number) {
    // Canonical integers fit: negative ones in int64, the others in uint64.
    if (v.front() == '-') {
      std::int64_t n = 0;
      const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
      if (r.ec == std::errc() && r.ptr == v.data() + v.size()) return n;
    } else {
      std::uint64_t n = 0;
      const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
      if (r.ec == std::errc() && r.ptr == v.data() + v.size()) return n;
    }
  }
  return nlohmann::json::parse(v);
}

bool canonical_object(std::string_view text, std::vector<Member>& members) {
  members.clear();
  Reader r(text);
  return r.object(1, &members) && r.done();
}

}  // namespace kevo::json_text
