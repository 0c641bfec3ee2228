// Drawn correctness shapes (docs/tasks.md#drawn-shapes): the load-time checks
// of a draw space and draw_shapes(), which the judge calls per judgement.
#include "kevo/core/task.hpp"

#include "task_shapes.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/rng.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace kevo {
namespace {

// The stream of draw_shapes within a judgement's seed ("drawshap").
constexpr std::uint64_t kDrawStream = 0x6472617773686170ULL;
// The small shape has every ranged dimension in [min, min + kSmallSpan - 1].
constexpr std::int64_t kSmallSpan = 8;
// A shape outside the caps is redrawn up to kAttempts times per level; each
// level narrows the sizes (docs/tasks.md#drawn-shapes).
constexpr int kAttempts = 8;
constexpr int kLevels = 8;
// The small shapes a load checks one by one, at most.
constexpr std::int64_t kSmallChecks = 4096;

// A tie that is not an integer >= 0 at some sizes.
struct TieError {
  std::string dim, what;
};

std::int64_t small_max(const DrawSpace::Range& r) { return std::min(r.max, r.min + kSmallSpan - 1); }

// The task's shape with ranged dimension k at sizes[k] and the ties
// evaluated over them. Throws TieError.
Shape make_shape(const Task& task, const std::vector<std::int64_t>& sizes, const std::string& prefix) {
  Shape s;
  for (std::size_t k = 0; k < task.draw.free.size(); ++k) s.dims[task.draw.free[k].dim] = sizes[k];
  const Env env = s.env();   // over the ranged dimensions only: ties do not chain
  for (const DrawSpace::Tie& tie : task.draw.tied) {
    std::int64_t v = 0;
    try {
      v = tie.value.eval(env).as_int();
    } catch (const std::invalid_argument& e) {
      throw TieError{tie.dim, "an integer ('" + tie.value.text() + "': " + e.what() + ")"};
    }
    if (v < 0) throw TieError{tie.dim, "an integer >= 0 ('" + tie.value.text() + "' is " + std::to_string(v) + ")"};
    s.dims[tie.dim] = v;
  }
  s.label = prefix + detail::shape_label(task, s.dims);
  return s;
}

bool drawable(const Task& task, const Shape& s) {
  return !detail::shape_problem(task, s) && !detail::cap_problem(task, s);
}

// The value of [lo, hi] congruent to r mod 4 nearest to v from below, else
// from above; v itself when [lo, hi] holds no such value.
std::int64_t with_residue(std::int64_t v, std::int64_t r, std::int64_t lo, std::int64_t hi) {
  const std::int64_t down = v - (((v - r) % 4) + 4) % 4;
  if (down >= lo) return down;
  if (down + 4 <= hi) return down + 4;
  return v;
}

int bit_length(std::int64_t v) { return static_cast<int>(std::bit_width(static_cast<std::uint64_t>(v))); }

// Uniform over the bit lengths [b0, b1], then uniform over the values of
// [lo, hi] with that bit length: log-uniform sizes without floating point
// (the same draws on every libm). [b0, b1] lies within
// [bit_length(lo), bit_length(hi)].
std::int64_t log_uniform(Rng& rng, std::int64_t lo, std::int64_t hi, int b0, int b1) {
  const int b = b0 + static_cast<int>(rng.below(static_cast<std::uint64_t>(b1 - b0 + 1)));
  const std::int64_t first = b == 0 ? 0 : std::int64_t{1} << (b - 1);
  const std::int64_t last = (std::int64_t{1} << b) - 1;
  return rng.range(std::max(lo, first), std::min(hi, last));
}

template <class T>
void shuffle(std::vector<T>& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// What one drawn shape aims for, per ranged dimension.
struct Aim {
  std::vector<std::int64_t> residue;   // mod 4
  std::vector<std::size_t> stratum;    // shapes 1..: which slice of the bit lengths
};

// The aims of the `count` shapes: per dimension a random permutation of the
// residues over shapes 0..3 and of the strata over shapes 1..count-1.
std::vector<Aim> plan(const DrawSpace& d, Rng& rng) {
  std::vector<Aim> aims(d.count);
  for (std::size_t k = 0; k < d.free.size(); ++k) {
    std::vector<std::int64_t> residues = {0, 1, 2, 3};
    shuffle(residues, rng);
    std::vector<std::size_t> strata(d.count - 1);
    std::iota(strata.begin(), strata.end(), std::size_t{0});
    shuffle(strata, rng);
    for (std::size_t i = 0; i < d.count; ++i) {
      aims[i].residue.push_back(i < 4 ? residues[i] : static_cast<std::int64_t>(rng.below(4)));
      aims[i].stratum.push_back(i == 0 ? 0 : strata[i - 1]);
    }
  }
  return aims;
}

// A size for ranged dimension r of a shape other than the small one, at
// redraw level `level`: level 0 draws from the aim's slice of the bit
// lengths above the small sizes, level 1 from all of them, each further
// level from the lower half of the previous one's, level kLevels from the
// small sizes.
std::int64_t draw_size(Rng& rng, const DrawSpace::Range& r, std::int64_t residue, std::size_t stratum,
                       std::size_t strata, int level) {
  if (level >= kLevels) return with_residue(rng.range(r.min, small_max(r)), residue, r.min, small_max(r));
  const std::int64_t lo = r.max >= r.min + kSmallSpan ? r.min + kSmallSpan : r.min;
  const int b0 = bit_length(lo), b1 = bit_length(r.max);
  const int bits = b1 - b0 + 1;
  int first = b0, last = b1;
  if (level == 0) {
    first = b0 + static_cast<int>(stratum * static_cast<std::size_t>(bits) / strata);
    last = std::max(first, b0 + static_cast<int>((stratum + 1) * static_cast<std::size_t>(bits) / strata) - 1);
  } else {
    last = b0 + ((b1 - b0) >> (level - 1));
  }
  // Within [lo, max] where it holds the residue, so that these shapes stay
  // past the small sizes.
  const std::int64_t v = log_uniform(rng, lo, r.max, first, last);
  const std::int64_t above = with_residue(v, residue, lo, r.max);
  return above % 4 == residue ? above : with_residue(v, residue, r.min, r.max);
}

// Shape i (> 0): redrawn until it is a valid shape within the caps; the
// ranged minimum of every dimension (checked at load) when nothing else is.
Shape draw_general(const Task& task, const Aim& aim, Rng& rng) {
  const DrawSpace& d = task.draw;
  std::vector<std::int64_t> sizes(d.free.size());
  for (int attempt = 0; attempt < (kLevels + 1) * kAttempts; ++attempt) {
    for (std::size_t k = 0; k < d.free.size(); ++k)
      sizes[k] = draw_size(rng, d.free[k], aim.residue[k], aim.stratum[k], d.count - 1, attempt / kAttempts);
    try {
      Shape s = make_shape(task, sizes, "drawn ");
      if (drawable(task, s)) return s;
    } catch (const TieError&) {
      // outside the space: redraw
    }
  }
  for (std::size_t k = 0; k < d.free.size(); ++k) sizes[k] = d.free[k].min;
  return make_shape(task, sizes, "drawn ");
}

// Shape 0: every ranged dimension in [min, min + 7] (all such shapes are
// checked at load).
Shape draw_small(const Task& task, const Aim& aim, Rng& rng) {
  const DrawSpace& d = task.draw;
  std::vector<std::int64_t> sizes(d.free.size());
  for (std::size_t k = 0; k < d.free.size(); ++k) {
    const DrawSpace::Range& r = d.free[k];
    sizes[k] = with_residue(rng.range(r.min, small_max(r)), aim.residue[k], r.min, small_max(r));
  }
  Shape s = make_shape(task, sizes, "drawn ");
  if (drawable(task, s)) return s;
  // Only where the load could not check every small shape (kSmallChecks).
  for (std::size_t k = 0; k < d.free.size(); ++k) sizes[k] = d.free[k].min;
  return make_shape(task, sizes, "drawn ");
}

// Calls fn(sizes) for every combination of the per-dimension values.
void for_each_combination(const std::vector<std::vector<std::int64_t>>& values,
                          const std::function<void(const std::vector<std::int64_t>&)>& fn) {
  std::vector<std::size_t> at(values.size(), 0);
  std::vector<std::int64_t> sizes(values.size());
  for (;;) {
    for (std::size_t k = 0; k < values.size(); ++k) sizes[k] = values[k][at[k]];
    fn(sizes);
    std::size_t k = 0;
    while (k < values.size() && ++at[k] == values[k].size()) at[k++] = 0;
    if (k == values.size()) return;
  }
}

std::string sizes_text(const Task& task, const std::vector<std::int64_t>& sizes) {
  std::string out;
  for (std::size_t k = 0; k < sizes.size(); ++k)
    out += (k ? "," : "") + task.draw.free[k].dim + "=" + std::to_string(sizes[k]);
  return out;
}

// The shape at `sizes`, or an InputError at the failing tie.
Shape checked_shape(const Task& task, const std::vector<std::int64_t>& sizes, const std::string& file,
                    const std::string& pointer, const std::string& where) {
  try {
    return make_shape(task, sizes, "drawn ");
  } catch (const TieError& e) {
    throw InputError(file, pointer + "/dims/" + e.dim,
                     e.what + " at every drawn size (at " + where + " " + sizes_text(task, sizes) + ")");
  }
}

// Every corner of the ranges: ties and extents.
void check_corners(const Task& task, const std::string& file, const std::string& pointer) {
  std::vector<std::vector<std::int64_t>> corners;
  for (const auto& r : task.draw.free) corners.push_back(r.min == r.max ? std::vector{r.min} : std::vector{r.min, r.max});
  for_each_combination(corners, [&](const std::vector<std::int64_t>& sizes) {
    const Shape s = checked_shape(task, sizes, file, pointer, "the corner");
    const auto p = detail::shape_problem(task, s);
    if (p && p->kind == detail::ShapeProblem::Kind::extent)
      throw InputError(file, p->pointer, p->expected + " at every drawn size (at the corner " + s.label + ": " + p->detail + ")");
  });
}

// Every small shape, or kSmallChecks of them and the corners of the small box.
void check_small_shapes(const Task& task, const std::string& file, const std::string& pointer) {
  std::vector<std::vector<std::int64_t>> values, corners;
  std::int64_t points = 1;
  for (const auto& r : task.draw.free) {
    std::vector<std::int64_t> v;
    for (std::int64_t x = r.min; x <= small_max(r); ++x) v.push_back(x);
    points = std::min(points * static_cast<std::int64_t>(v.size()), kSmallChecks + 1);
    corners.push_back(v.size() == 1 ? v : std::vector{v.front(), v.back()});
    values.push_back(std::move(v));
  }
  auto check = [&](const std::vector<std::int64_t>& sizes) {
    const Shape s = checked_shape(task, sizes, file, pointer, "the small shape");
    if (const auto p = detail::shape_problem(task, s))
      throw InputError(file, p->pointer,
                       p->expected + " at every drawn size (at the small shape " + s.label +
                           (p->detail.empty() ? "" : ": " + p->detail) + ")");
    if (const auto c = detail::cap_problem(task, s))
      throw InputError(file, pointer,
                       "caps that every small shape (each ranged dimension in [min, min + 7]) fits, so that no "
                       "draw runs dry (at " + s.label + " " + *c + ")");
  };
  for_each_combination(points <= kSmallChecks ? values : corners, check);
}

}  // namespace

namespace detail {

std::optional<std::string> cap_problem(const Task& task, const Shape& shape) {
  const DrawSpace& d = task.draw;
  std::int64_t total = 0;
  for (const Arg& a : task.args) {
    if (!a.is_buffer()) continue;
    const std::int64_t n = task.elements(a, shape);   // fits: shape_problem checked the sizes
    if (d.max_elements > 0 && n > d.max_elements)
      return "buffer '" + a.name + "' has " + std::to_string(n) + " elements, over max_elements " +
             std::to_string(d.max_elements);
    const std::int64_t bytes = n * static_cast<std::int64_t>(dtype_size(a.dtype));
    total = total > std::numeric_limits<std::int64_t>::max() - bytes ? std::numeric_limits<std::int64_t>::max()
                                                                      : total + bytes;
  }
  if (total > d.max_bytes)
    return "the buffers take " + std::to_string(total) + " bytes, over max_bytes " + std::to_string(d.max_bytes);
  return std::nullopt;
}

void check_draw_space(const Task& task, const std::string& file, const std::string& pointer) {
  check_corners(task, file, pointer);
  check_small_shapes(task, file, pointer);
}

}  // namespace detail

std::vector<Shape> draw_shapes(const Task& task, std::uint64_t seed) {
  const DrawSpace& d = task.draw;
  if (d.empty()) return {};
  Rng rng = Rng::derive(seed, kDrawStream);
  const std::vector<Aim> aims = plan(d, rng);
  std::vector<Shape> out;
  out.push_back(draw_small(task, aims[0], rng));
  for (std::size_t i = 1; i < d.count; ++i) out.push_back(draw_general(task, aims[i], rng));
  return out;
}

}  // namespace kevo
