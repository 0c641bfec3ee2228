// A task's search space: named parameters, each with a list of values, and
// restriction expressions over them (Kernel Tuner style). A point is one
// value index per parameter. A candidate made from a point gets a parameter
// block at the top of its source:
//
//   // kevo:params begin
//   #define TILE_M 32
//   #define LOOP_ORDER_ikj 1      (string values: NAME_value defined as 1,
//   #define LOOP_ORDER "ikj"       and NAME as a string literal)
//   // kevo:params end
//
// and the rest of the source (the template body) refers to the macros.
//
// A Python source (a torch task's candidate) has the same block as
// module-level constants, where the seed put it (kept in place, so that a
// module docstring or `from __future__` stays first):
//
//   # kevo:params begin
//   BLOCK = 1024
//   ORDER = "ikj"
//   # kevo:params end
#pragma once

#include "kevo/core/expr.hpp"
#include "kevo/core/hash.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kevo {

class Rng;

struct Param {
  std::string name;
  std::vector<Value> values;   // integers, reals or strings; at least one
};

using Point = std::vector<std::uint32_t>;  // value index per parameter, in Param order

class SearchSpace {
 public:
  SearchSpace() = default;
  SearchSpace(std::vector<Param> params, std::vector<Expr> restrictions,
              SourceSyntax syntax = SourceSyntax::c_like);

  const std::vector<Param>& params() const { return params_; }
  const std::vector<Expr>& restrictions() const { return restrictions_; }
  bool empty() const { return params_.empty(); }
  // How the params block of this space's sources is written.
  SourceSyntax syntax() const { return syntax_; }

  // Number of points before restrictions (saturates at UINT64_MAX).
  std::uint64_t cardinality() const;
  bool valid(const Point& p) const;          // in range and all restrictions hold
  Value value(const Point& p, std::size_t param) const { return params_[param].values[p[param]]; }
  Env env(const Point& p) const;             // parameter name -> value

  // Every valid point, in lexicographic index order (for exhaustive search);
  // stops after `limit` valid points (callers compare the size with it).
  // Restrictions that cannot be evaluated throw std::invalid_argument.
  std::vector<Point> enumerate(std::uint64_t limit = 10'000'000) const;
  // A uniformly random valid point (rejection sampling, then enumeration
  // fallback); nullopt when no point is valid. Throws Failure when the space
  // is too large to enumerate (> 1e7 points) and no valid point turned up in
  // a million draws.
  std::optional<Point> random_point(Rng& rng) const;
  // The point whose values match `assignment` (name -> value text); nullopt if
  // any name or value is unknown.
  std::optional<Point> find(const std::vector<std::pair<std::string, std::string>>& assignment) const;

  // {"TILE_M": 32, "ORDER": "ikj"} as a compact JSON object text.
  std::string to_json(const Point& p) const;
  std::string key(const Point& p) const;     // "TILE_M=32,ORDER=ikj"

  // The params block for a point, in the space's syntax.
  std::string render_block(const Point& p) const;

 private:
  std::vector<Param> params_;
  std::vector<Expr> restrictions_;
  SourceSyntax syntax_ = SourceSyntax::c_like;
};

// The marker lines of a params block in `syntax`: "// kevo:params begin" or
// "# kevo:params begin", and "... end".
std::string_view params_begin_marker(SourceSyntax syntax);
std::string_view params_end_marker(SourceSyntax syntax);

// Splits a candidate source into (params block, body). When the source has no
// block, the block is empty and the body is the whole source.
struct SplitSource {
  std::string block;
  std::string body;
};
SplitSource split_params_block(std::string_view source, SourceSyntax syntax = SourceSyntax::c_like);
// Where the params block is in `source`: [begin, end) spans its lines, the
// end marker's line end included; begin == end == npos when it has none.
std::pair<std::size_t, std::size_t> params_block_span(std::string_view source,
                                                      SourceSyntax syntax = SourceSyntax::c_like);
// The source with a fresh block for `p`: C-like, the body with the block at
// the top; Python, the block replaced where it is (when the source has none,
// put after its last `from __future__` import, else at the top).
std::string apply_point(const SearchSpace& space, const Point& p, std::string_view source);

// The assignments of a source's params block, in order, with string literals
// unquoted: "#define NAME value" lines (C-like) or "NAME = value" lines
// (Python; a trailing "# comment" ignored). Implemented in params_block.cpp.
std::vector<std::pair<std::string, std::string>> block_assignment(std::string_view source,
                                                                  SourceSyntax syntax = SourceSyntax::c_like);
// The point a source's params block names; nullopt when the source has no
// block or the block names a value outside the space.
std::optional<Point> point_from_source(const SearchSpace& space, std::string_view source);

}  // namespace kevo
