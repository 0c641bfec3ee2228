// The texts of a verdict that backends build alike: sanitised and capped
// captures, and the feedback an operator's next prompt shows
// (docs/verdicts.md#feedback).
#pragma once

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace kevo {

// Well-formed UTF-8 without control bytes but newline and tab
// (sanitize_utf8 with kShownText), so that it always serialises as JSON.
std::string clean_text(std::string_view in);
// The first / last `cap` bytes of `s`, cleaned, with a note of what was cut.
std::string head(const std::string& s, std::size_t cap);
std::string tail(const std::string& s, std::size_t cap);
// At most `lines` lines and `cap` bytes of `s`, "[...]" when cut.
std::string first_lines(const std::string& s, std::size_t lines, std::size_t cap);
std::string replace_all(std::string s, const std::string& from, const std::string& to);
// A number as people read it in feedback: `precision` significant digits.
std::string short_number(double v, int precision = 3);

// Where hidden shapes stand to a failure, by their labels ("" = none).
struct HiddenRun {
  std::string at;      // the hidden shape where the candidate failed (a mismatch's, a failed_shape)
  std::string after;   // the first hidden shape that ran before the failure
};

// The feedback of a finished verdict of `task`: times and speedup of a
// correct one (and its profile), the compiler's first lines, the mismatch
// with the tolerances, the last output of a failure. After a failure at a
// hidden shape, or after one had run, the feedback says only the status and
// that it was a hidden shape, with nothing the candidate wrote, threw or
// computed (its output, an exception's text, an exit code, the mismatch's
// index and values could each carry the hidden sizes into the next
// prompt). But a `forbidden` verdict after (not at) a hidden shape keeps its
// message, kevo's own finding (the library or operation it found), and
// drops only the candidate's output.
std::string verdict_feedback(const Verdict& v, const Task& task, const HiddenRun& hidden = {});

}  // namespace kevo
