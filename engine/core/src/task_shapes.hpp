// Shape checks shared by the manifest reader (task.cpp) and the shape drawer
// (draw_shapes.cpp). Internal to kevo_core.
#pragma once

#include "kevo/core/task.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kevo::detail {

// "M=512,K=128,N=256": every dimension of the task, in Task::dims order.
std::string shape_label(const Task& task, const std::map<std::string, std::int64_t>& dims);

// Why `shape` is not a shape of the task: an extent that is not an integer
// >= 1, a buffer whose size in bytes overflows 64 bits, a scalar that is
// not a number of its type. `pointer` is the argument's key
// (/args/2/shape/1), `expected` what it should give, `detail` what it gave.
struct ShapeProblem {
  enum class Kind { extent, size, value };   // an extent < 1 or not an integer; 64-bit overflow; a scalar
  Kind kind = Kind::extent;
  std::string pointer, expected, detail;
};
std::optional<ShapeProblem> shape_problem(const Task& task, const Shape& shape);

// Why `shape` breaks task.draw's caps (max_elements, max_bytes), in words.
std::optional<std::string> cap_problem(const Task& task, const Shape& shape);

// The load-time checks of a parsed draw space (docs/tasks.md#drawn-shapes):
// every tie is an integer >= 0 and every extent >= 1 at every corner of the
// ranges, and every shape with each free dimension in [min, min + 7] is a
// valid shape within the caps (so a draw never runs out of shapes).
// Throws InputError naming `file` and `pointer` (/shapes/draw...).
void check_draw_space(const Task& task, const std::string& file, const std::string& pointer);

}  // namespace kevo::detail
