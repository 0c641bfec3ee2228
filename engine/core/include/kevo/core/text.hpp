// Text that came from a candidate or a language model (compiler logs,
// output tails, messages, replies, sources) is untrusted bytes. Before it
// enters JSON, the HDF5 lineage or a terminal it goes through
// sanitize_utf8, the one strict UTF-8 check of kevo (docs/verdicts.md, "Text
// from candidates"):
//
//  * every byte of an invalid sequence becomes U+FFFD: overlong forms
//    (C0 80, E0 80 80, F0 80 80 80), UTF-16 surrogates (ED A0 80 .. ED BF BF),
//    code points above U+10FFFF (F4 90 80 80 and up, F5..FF), truncated
//    sequences, stray continuation bytes;
//  * NUL becomes U+2400 (HDF5 strings end at NUL; C strings too);
//  * unless the rules keep them, the other C0 controls and DEL become their
//    Control Pictures (ESC -> U+241B, CR -> U+240D, DEL -> U+2421) and the C1
//    controls (U+0080..U+009F) and the bidirectional controls (U+202A..
//    U+202E, U+2066..U+2069, U+200E, U+200F, U+061C: "Trojan Source"
//    reordering of a shown line) U+FFFD; '\n' and '\t' always stay;
//  * with a line limit, a longer line is cut at a character boundary and
//    ends with "… [N bytes cut]".
//
// nlohmann::json's dump() throws type_error 316 on invalid UTF-8; a text that
// passed sanitize_utf8 never makes it throw. dump_json is the backstop for
// documents that may hold such text anyway (nlohmann's replacing handler).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace kevo {

struct TextRules {
  bool keep_controls = false;    // keep C0 controls (but NUL) and DEL, and C1 controls
  std::size_t max_line = 0;      // bytes per line (0 = no limit)
};
// For storage (lineage texts, sources, LLM records): valid UTF-8 without
// NUL; a source's form feeds and carriage returns stay as they are.
inline constexpr TextRules kStoredText{true, 0};
// For texts people and prompts read (verdict messages, logs, output tails,
// operator notes): no control bytes but '\n' and '\t'.
inline constexpr TextRules kShownText{false, 0};
// For a terminal: as kShownText, and no line longer than 4096 bytes.
inline constexpr TextRules kTerminalText{false, 4096};

// The text with every invalid sequence and every byte the rules do not allow
// replaced (see above). Never throws; valid text is returned as it is.
std::string sanitize_utf8(std::string_view text, const TextRules& rules = kShownText);
// Whether sanitize_utf8(text, rules) == text.
bool is_clean_utf8(std::string_view text, const TextRules& rules = kShownText);
// The length of the valid UTF-8 sequence starting at text[at] (1..4), or 0
// when none starts there (any of the invalid forms above).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);
// The longest prefix of at most `bytes` bytes that does not cut a character.
std::string_view utf8_prefix(std::string_view text, std::size_t bytes);
// j.dump(indent) with invalid UTF-8 replaced instead of thrown on.
std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace kevo
