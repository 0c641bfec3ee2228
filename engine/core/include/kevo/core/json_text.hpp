// Compact JSON text written and read without a DOM, byte for byte as
// nlohmann::json has it: what `j.dump(-1, ' ', false,
// error_handler_t::replace)` writes (kevo's one spelling of JSON records: no
// blanks, object keys sorted, non-ASCII characters as they are).
//
// Why: every LLM candidate carries records of several kilobytes (the prompt
// and the reply, docs/lineage.md), and building them as a DOM, dumping,
// parsing and dumping them again per candidate was most of kevo's own time
// per LLM candidate (issue 19). The writers here produce the same bytes as a
// DOM's dump; the readers accept only text that is its own dump (canonical)
// and say so, so that a caller falls back to nlohmann::json for anything else
// and gets the same result either way.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::json_text {

// Appends `s` as a JSON string, quotes included: '"', '\\' and the C0
// controls escaped (\b \f \n \r \t, the others \u00xx), everything else as
// it is; invalid UTF-8 as nlohmann's replacing handler writes it.
void append_string(std::string& out, std::string_view s);
// Appends a number: integers in decimal, a double as nlohmann writes it
// (shortest round trip, "1.0" for integral values, "null" when not finite).
void append_number(std::string& out, double v);
void append_number(std::string& out, std::int64_t v);
void append_number(std::string& out, std::uint64_t v);
inline void append_number(std::string& out, int v) { append_number(out, static_cast<std::int64_t>(v)); }
inline void append_bool(std::string& out, bool v) { out += v ? "true" : "false"; }

// Whether `text` is a JSON value that is its own compact dump: it parses,
// and json::parse(text).dump(-1, ' ', false, replace) == text. False for
// anything else (blanks between tokens, unsorted or repeated keys, escapes
// dump would not write, numbers it would write otherwise, invalid JSON):
// then parse it. Its values are then canonical too.
bool canonical(std::string_view text);

// The elements of a canonical JSON array, each the text of its own dump;
// false (elements unspecified) when `text` is not a canonical array.
bool canonical_array(std::string_view text, std::vector<std::string_view>& elements);

struct Member {
  std::string_view key;     // as written between the quotes
  std::string_view value;   // the value's text
};
// The members of a canonical JSON object, in order; false when `text` is
// not a canonical object or a key holds an escape.
bool canonical_object(std::string_view text, std::vector<Member>& members);

// A forward reader of any JSON text (blanks, any escapes, any key order) for
// callers that want a few values out of a document without its DOM (an LLM
// server's reply). It accepts only what nlohmann::json's parser accepts and
// decodes strings as it does; on anything else, and on input it does not
// handle (nesting deeper than 256), it fails, and the caller parses the text
// with nlohmann::json instead. Once failed, every call returns false.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool failed() const { return failed_; }
  // The next value's first character after blanks ('{', '[', '"', 't', 'f',
  // 'n', '-' or a digit; '\0' at the end or after a failure).
  char peek();
  // Objects: enter(), then member(key) until it returns false (at the '}',
  // consumed, or on failure), reading or skipping each member's value.
  bool enter_object();
  bool member(std::string& key);
  // Arrays: enter_array(), then element() until it returns false (at the
  // ']', consumed, or on failure), reading or skipping each element.
  bool enter_array();
  bool element();
  bool string(std::string& out);   // a string value, decoded
  bool integer(std::int64_t& out); // an integer value (no fraction or exponent) that fits with 18 digits
  bool skip();                     // any value, checked
  // Only blanks are left: the document is complete.
  bool finish();

 private:
  bool fail() { return failed_ = true, false; }
  void blanks();
  bool separator(char close);
  bool skip_value();
  bool number(bool* integral);
  bool literal(std::string_view word);
  bool string_content(std::string* out);
  std::string_view text_;
  std::size_t at_ = 0;
  bool failed_ = false;
  std::vector<bool> first_;   // per open container: no member or element read yet
};

// The members of each element of a canonical JSON array whose elements are
// all objects with keys that hold no escape, one pass over the text; false
// (`objects` unspecified) otherwise.
bool canonical_objects(std::string_view text, std::vector<std::vector<Member>>& objects);

// The value of a canonical JSON text as nlohmann::json, without its parser
// for scalars that need no unescaping (true, false, null, numbers, strings
// without escapes); the parser for the rest.
nlohmann::json value_of(std::string_view canonical_value);

// The bytes at the start of `s` that a JSON string holds as they are and that
// need no UTF-8 check: ASCII from 0x20 on (DEL included) but '"' and '\\'.
// Eight bytes a step.
std::size_t plain_ascii_prefix(std::string_view s);

}  // namespace kevo::json_text
