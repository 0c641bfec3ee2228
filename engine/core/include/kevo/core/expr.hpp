// A tiny expression language for restrictions (as Kernel Tuner writes them),
// shape dimensions, scalar arguments and FLOP/byte counts.
//
//   numbers      1  32  1e-5  0.5
//   names        M  TILE_M  block_size_x        (looked up in an Env)
//   strings      "ijk" 'ikj'                    (compare with == and != only)
//   arithmetic   + - * /  // (floor division)  % (modulo)  ** (power)  unary -
//   comparison   == != < <= > >=   (chains: a < b <= c)
//   logic        and or not   && || !
//   functions    min(a,b,...) max(a,b,...) abs(x) ceil(x) floor(x) log2(x)
//   conditional  x if cond else y   (Python style)
//   literals     True False true false
//
// Integer arithmetic stays integral (int64) while both operands are integral;
// '/' always gives a double, '//' floors. A parse error names the column.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kevo {

// A value: integer, real, boolean (stored as int64 0/1 with a flag) or string.
struct Value {
  enum class Kind { integer, real, boolean, string };
  Kind kind = Kind::integer;
  std::int64_t i = 0;
  double d = 0.0;
  std::string s;

  static Value integer(std::int64_t v) { return Value{Kind::integer, v, static_cast<double>(v), {}}; }
  // i mirrors d only where the conversion is defined (it is UB out of range).
  static Value real(double v) {
    return Value{Kind::real, (v > -9.2e18 && v < 9.2e18) ? static_cast<std::int64_t>(v) : 0, v, {}};
  }
  static Value boolean(bool v) { return Value{Kind::boolean, v ? 1 : 0, v ? 1.0 : 0.0, {}}; }
  static Value string(std::string v) { return Value{Kind::string, 0, 0.0, std::move(v)}; }

  bool is_number() const { return kind != Kind::string; }
  double as_double() const;        // throws std::invalid_argument for strings
  std::int64_t as_int() const;     // reals must be integral; throws otherwise
  bool truthy() const;
  std::string to_string() const;   // 32, 0.5, "ijk" (without quotes), true
  bool operator==(const Value& o) const;
};

using Env = std::function<std::optional<Value>(const std::string& name)>;
Env env_from_map(const std::map<std::string, Value>& vars);

class Expr {
 public:
  Expr() = default;
  // Throws std::invalid_argument("column N: ...") on a syntax error.
  static Expr parse(const std::string& text);

  // Throws std::invalid_argument naming the unknown variable or bad operation.
  Value eval(const Env& env) const;
  const std::string& text() const { return text_; }
  // Names the expression refers to (for validation against known names).
  std::vector<std::string> names() const;
  bool empty() const { return !root_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace kevo
