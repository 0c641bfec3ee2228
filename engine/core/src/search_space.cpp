#include "kevo/core/search_space.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/json_text.hpp"
#include "kevo/core/rng.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace kevo {
namespace {

constexpr std::string_view kBegin = "// kevo:params begin";
constexpr std::string_view kEnd = "// kevo:params end";
constexpr std::string_view kPyBegin = "# kevo:params begin";
constexpr std::string_view kPyEnd = "# kevo:params end";

// An Env over a point that borrows the space: only for use inside one call.
Env borrowed_env(const std::vector<Param>& params, const Point& p) {
  return [&params, &p](const std::string& name) -> std::optional<Value> {
    for (std::size_t k = 0; k < params.size(); ++k)
      if (params[k].name == name) return params[k].values[p[k]];
    return std::nullopt;
  };
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string c_string_literal(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Does `text` (as written by a person or in a #define) denote value v?
bool matches(const Value& v, const std::string& raw) {
  std::string text(trim(raw));
  if (v.kind == Value::Kind::string) {
    if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front())
      text = text.substr(1, text.size() - 2);
    return text == v.s;
  }
  if (text == v.to_string()) return true;
  if (text.empty()) return false;
  // Numbers written differently ("0.50", "1e1", "32.0") still match.
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  return d == v.as_double();
}

}  // namespace

SearchSpace::SearchSpace(std::vector<Param> params, std::vector<Expr> restrictions, SourceSyntax syntax)
    : params_(std::move(params)), restrictions_(std::move(restrictions)), syntax_(syntax) {
  for (const auto& p : params_)
    if (p.values.empty()) throw std::invalid_argument("search space parameter '" + p.name + "' has no values");
}

std::uint64_t SearchSpace::cardinality() const {
  if (params_.empty()) return 0;
  std::uint64_t n = 1;
  for (const auto& p : params_) {
    const std::uint64_t k = p.values.size();
    if (n > std::numeric_limits<std::uint64_t>::max() / k) return std::numeric_limits<std::uint64_t>::max();
    n *= k;
  }
  return n;
}

bool SearchSpace::valid(const Point& p) const {
  if (p.size() != params_.size()) return false;
  for (std::size_t k = 0; k < p.size(); ++k)
    if (p[k] >= params_[k].values.size()) return false;
  const Env env = borrowed_env(params_, p);
  for (const auto& r : restrictions_) {
    try {
      if (!r.eval(env).truthy()) return false;
    } catch (const std::invalid_argument& e) {
      // A restriction that cannot be evaluated is a task bug, not a bad point.
      throw std::invalid_argument("restriction '" + r.text() + "' at " + key(p) + ": " + e.what());
    }
  }
  return true;
}

Env SearchSpace::env(const Point& p) const {
  std::map<std::string, Value> vars;
  for (std::size_t k = 0; k < params_.size() && k < p.size(); ++k) vars[params_[k].name] = value(p, k);
  return env_from_map(vars);
}

std::vector<Point> SearchSpace::enumerate(std::uint64_t limit) const {
  std::vector<Point> out;
  if (params_.empty() || limit == 0) return out;
  Point p(params_.size(), 0);
  for (;;) {
    if (valid(p)) {
      out.push_back(p);
      if (out.size() >= limit) return out;
    }
    // Odometer: the last parameter varies fastest (lexicographic order).
    std::size_t k = params_.size();
    while (k > 0) {
      --k;
      if (++p[k] < params_[k].values.size()) break;
      p[k] = 0;
      if (k == 0) return out;
    }
  }
}

std::optional<Point> SearchSpace::random_point(Rng& rng) const {
  if (params_.empty()) return std::nullopt;
  auto draw = [&] {
    Point p(params_.size());
    for (std::size_t k = 0; k < params_.size(); ++k)
      p[k] = static_cast<std::uint32_t>(rng.below(params_[k].values.size()));
    return p;
  };
  // Uniform over valid points: uniform over all points, keep the valid ones.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    Point p = draw();
    if (valid(p)) return p;
  }
  // Sparse space: list the valid points when that is affordable...
  constexpr std::uint64_t kEnumerable = 10'000'000;
  if (cardinality() <= kEnumerable) {
    const std::vector<Point> all = enumerate(kEnumerable);
    if (all.empty()) return std::nullopt;
    return all[rng.below(all.size())];
  }
  // ...else keep drawing for a while; giving up here is not proof that no
  // point is valid, so say so rather than return nullopt.
  for (int attempt = 0; attempt < 1'000'000; ++attempt) {
    Point p = draw();
    if (valid(p)) return p;
  }
  throw Failure("search space too large (" + std::to_string(cardinality()) +
                " points) and too sparse to sample: no valid point in 1001000 random draws");
}

std::optional<Point> SearchSpace::find(
    const std::vector<std::pair<std::string, std::string>>& assignment) const {
  if (params_.empty()) return std::nullopt;
  Point p(params_.size());
  std::vector<bool> seen(params_.size(), false);
  for (const auto& [name, text] : assignment) {
    std::size_t k = 0;
    while (k < params_.size() && params_[k].name != name) ++k;
    if (k == params_.size() || seen[k]) return std::nullopt;
    seen[k] = true;
    std::size_t v = 0;
    while (v < params_[k].values.size() && !matches(params_[k].values[v], text)) ++v;
    if (v == params_[k].values.size()) return std::nullopt;
    p[k] = static_cast<std::uint32_t>(v);
  }
  for (bool s : seen)
    if (!s) return std::nullopt;
  return p;
}

std::string SearchSpace::to_json(const Point& p) const {
  // Written as the dump below writes it (json_text.hpp), without the DOM:
  // names and string values in plain ASCII, each name once (a task's always
  // are). Anything else goes through the DOM.
  const std::size_t n = std::min(params_.size(), p.size());
  bool plain = true;
  for (std::size_t k = 0; k < n && plain; ++k) {
    const std::string& name = params_[k].name;
    const Value& v = params_[k].values[p[k]];
    plain = json_text::plain_ascii_prefix(name) == name.size() &&
            (v.kind != Value::Kind::string || json_text::plain_ascii_prefix(v.s) == v.s.size());
    for (std::size_t q = 0; q < k && plain; ++q) plain = params_[q].name != name;
  }
  if (plain) {
    std::string out;
    out.reserve(2 + 24 * n);
    out += '{';
    for (std::size_t k = 0; k < n; ++k) {
      const Value& v = params_[k].values[p[k]];
      if (k) out += ',';
      json_text::append_string(out, params_[k].name);
      out += ':';
      switch (v.kind) {
        case Value::Kind::integer: json_text::append_number(out, v.i); break;
        case Value::Kind::boolean: json_text::append_bool(out, v.i != 0); break;
        case Value::Kind::real: json_text::append_number(out, v.d); break;
        case Value::Kind::string: json_text::append_string(out, v.s); break;
      }
    }
    out += '}';
    return out;
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < params_.size() && k < p.size(); ++k) {
    const Value v = value(p, k);
    switch (v.kind) {
      case Value::Kind::integer: j[params_[k].name] = v.i; break;
      case Value::Kind::boolean: j[params_[k].name] = v.i != 0; break;
      case Value::Kind::real: j[params_[k].name] = v.d; break;
      case Value::Kind::string: j[params_[k].name] = v.s; break;
    }
  }
  return j.dump();
}

std::string SearchSpace::key(const Point& p) const {
  std::string out;
  for (std::size_t k = 0; k < params_.size() && k < p.size(); ++k) {
    if (k) out += ',';
    out += params_[k].name + "=" +
           (p[k] < params_[k].values.size() ? value(p, k).to_string() : std::string("?"));
  }
  return out;
}

std::string SearchSpace::render_block(const Point& p) const {
  std::string out = std::string(params_begin_marker(syntax_)) + "\n";
  for (std::size_t k = 0; k < params_.size() && k < p.size(); ++k) {
    const Value v = value(p, k);
    const std::string& name = params_[k].name;
    if (syntax_ == SourceSyntax::python) {
      // Values are integers, reals (written with a '.' or an exponent, so
      // they stay floats) or strings of letters, digits and '_'.
      out += name + " = " + (v.kind == Value::Kind::string ? c_string_literal(v.s) : v.to_string()) + "\n";
    } else if (v.kind == Value::Kind::string) {
      // NAME_value lets the body select code with #ifdef / #if defined().
      out += "#define " + name + "_" + v.s + " 1\n";
      out += "#define " + name + " " + c_string_literal(v.s) + "\n";
    } else if (v.kind == Value::Kind::boolean) {
      out += "#define " + name + " " + std::to_string(v.i) + "\n";
    } else {
      out += "#define " + name + " " + v.to_string() + "\n";
    }
  }
  out += std::string(params_end_marker(syntax_)) + "\n";
  return out;
}

std::string_view params_begin_marker(SourceSyntax syntax) {
  return syntax == SourceSyntax::python ? kPyBegin : kBegin;
}

std::string_view params_end_marker(SourceSyntax syntax) { return syntax == SourceSyntax::python ? kPyEnd : kEnd; }

std::pair<std::size_t, std::size_t> params_block_span(std::string_view source, SourceSyntax syntax) {
  const std::string_view begin_marker = params_begin_marker(syntax);
  const std::string_view end_marker = params_end_marker(syntax);
  // Find the marker lines (whole lines, surrounding blanks ignored).
  std::size_t begin_line = std::string_view::npos;
  std::size_t pos = 0;
  while (pos < source.size()) {
    std::size_t eol = source.find('\n', pos);
    const std::size_t next = eol == std::string_view::npos ? source.size() : eol + 1;
    const std::string_view line = trim(source.substr(pos, next - pos - (eol == std::string_view::npos ? 0 : 1)));
    if (begin_line == std::string_view::npos) {
      if (line == begin_marker) begin_line = pos;
    } else if (line == end_marker) {
      return {begin_line, next};
    }
    pos = next;
  }
  return {std::string_view::npos, std::string_view::npos};
}

SplitSource split_params_block(std::string_view source, SourceSyntax syntax) {
  const auto [begin_line, end_after] = params_block_span(source, syntax);
  SplitSource out;
  if (begin_line == std::string_view::npos) {
    out.body = std::string(source);
    return out;
  }
  out.block = std::string(source.substr(begin_line, end_after - begin_line));
  if (out.block.back() != '\n') out.block += '\n';
  out.body = std::string(source.substr(0, begin_line)) + std::string(source.substr(end_after));
  return out;
}

std::string apply_point(const SearchSpace& space, const Point& p, std::string_view source) {
  if (space.syntax() == SourceSyntax::python) {
    const auto [begin, end] = params_block_span(source, SourceSyntax::python);
    if (begin == std::string_view::npos) {
      // After the last `from __future__` import (which must come first in
      // a module), else at the top.
      std::size_t at = 0;
      for (std::size_t pos = 0; pos < source.size();) {
        const std::size_t eol = source.find('\n', pos);
        const std::size_t next = eol == std::string_view::npos ? source.size() : eol + 1;
        if (source.substr(pos, 16) == "from __future__ ") at = next;
        pos = next;
      }
      std::string out(source.substr(0, at));
      if (!out.empty() && out.back() != '\n') out += '\n';
      return out + space.render_block(p) + std::string(source.substr(at));
    }
    std::string out(source.substr(0, begin));
    out += space.render_block(p);
    out += source.substr(end);
    return out;
  }
  return space.render_block(p) + split_params_block(source).body;
}

}  // namespace kevo
