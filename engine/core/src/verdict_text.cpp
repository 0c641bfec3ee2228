#include "kevo/core/verdict_text.hpp"

#include "kevo/core/text.hpp"

#include <algorithm>
#include <sstream>

namespace kevo {

std::string clean_text(std::string_view in) { return sanitize_utf8(in, kShownText); }

std::string head(const std::string& s, std::size_t cap) {
  if (s.size() <= cap) return clean_text(s);
  return clean_text(std::string_view(s).substr(0, cap)) + "\n[... " + std::to_string(s.size() - cap) +
         " more bytes not kept]";
}

std::string tail(const std::string& s, std::size_t cap) {
  if (s.size() <= cap) return clean_text(s);
  return "[... " + std::to_string(s.size() - cap) + " earlier bytes not kept]\n" +
         clean_text(std::string_view(s).substr(s.size() - cap));
}

std::string first_lines(const std::string& s, std::size_t lines, std::size_t cap) {
  std::size_t pos = 0, n = 0;
  while (pos < s.size() && n < lines) {
    std::size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) {
      pos = s.size();
      break;
    }
    pos = nl + 1;
    ++n;
  }
  std::string out = s.substr(0, std::min(pos, cap));
  if (out.size() < s.size()) out += "[...]\n";
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string short_number(double v, int precision) {
  std::ostringstream o;
  o.precision(precision);
  o << v;
  return o.str();
}

std::string verdict_feedback(const Verdict& v, const Task& task, const HiddenRun& hidden) {
  if (v.status == Status::forbidden && hidden.at.empty() && !hidden.after.empty()) {
    // (forbidden_echo.cpp, forbidden_after_hidden.py printed the hidden
    // sizes and then did what is forbidden.)
    Verdict shown = v;
    shown.output_tail.clear();
    return verdict_feedback(shown, task, {});
  }
  const std::string& hidden_label = hidden.at.empty() ? hidden.after : hidden.at;
  // A compile error too: the native backends' come from the compile stage,
  // before any shape (no hidden label), but an evaluator that compiles per
  // shape (NKI) reports one at a shape, with the candidate's own text in it.
  if (!hidden_label.empty() && v.status != Status::correct) {
    // A candidate sees its own arguments: whatever it controls in the
    // verdict of a hidden shape (its output, an exception's text, an exit
    // code or signal, an allocation's size, the values and the index of a
    // mismatch) could spell the sizes out, and the feedback is the next
    // prompt. The lineage keeps the whole verdict.
    // The same once a hidden shape has run: the candidate's process lived
    // through it and could fail later on purpose (hidden_label is then the
    // first hidden shape's).
    std::string o = v.status == Status::wrong_answer ? "Wrong answer" : "Failed (" + std::string(to_string(v.status)) + ")";
    o += " on a hidden test shape, or after one had run. What the candidate printed, threw or computed is not shown "
         "(it could carry the hidden sizes). Make the kernel correct for every size the signature allows: remainders of the block "
         "and vector widths, sizes smaller than one block, sizes of 1, and sizes that are not powers of two.";
    return o;
  }
  std::ostringstream o;
  switch (v.status) {
    case Status::correct:
      o << "Correct.";
      if (v.cand_median_ns > 0)
        o << " Median time " << short_number(v.cand_median_ns / 1e3) << " us vs reference "
          << short_number(v.ref_median_ns / 1e3) << " us: speedup " << short_number(v.speedup) << "x (IQR "
          << short_number(v.cand_iqr_ns / 1e3) << " us, " << v.repeats << " repeats).";
      if (!v.profile.empty()) o << "\nProfile:\n" << v.profile;
      break;
    case Status::compile_error:
      o << "Compilation failed: " << v.message << "\n" << first_lines(v.compile_log, 40, 4000);
      break;
    case Status::wrong_answer:
      o << "Wrong answer: " << v.message << ". Max abs error " << short_number(v.max_abs_error)
        << ", relative L2 error " << short_number(v.rel_l2_error) << " (tolerance atol " << task.tolerance.atol
        << ", rtol " << task.tolerance.rtol << ", rel_l2 " << task.tolerance.rel_l2 << ").";
      break;
    default: {
      o << "Failed (" << to_string(v.status) << "): " << v.message << ".";
      if (v.status == Status::compile_error || v.stage == Stage::compile) o << "\n" << first_lines(v.compile_log, 40, 4000);
      if (!v.output_tail.empty()) {
        const std::string t = v.output_tail.size() > 1000 ? v.output_tail.substr(v.output_tail.size() - 1000) : v.output_tail;
        o << "\nLast output:\n" << t;
      }
    }
  }
  return o.str();
}

}  // namespace kevo
