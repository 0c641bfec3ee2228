#include "kevo/core/expr.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <utility>

namespace kevo {

// ---------------------------------------------------------------------------
// Value

double Value::as_double() const {
  if (kind == Kind::string) throw std::invalid_argument("expected a number, got string \"" + s + "\"");
  return kind == Kind::real ? d : static_cast<double>(i);
}

std::int64_t Value::as_int() const {
  switch (kind) {
    case Kind::integer:
    case Kind::boolean:
      return i;
    case Kind::real:
      // 2^63 is exactly representable; anything at or beyond it does not fit.
      if (!std::isfinite(d) || d != std::floor(d) || d >= 9223372036854775808.0 ||
          d < -9223372036854775808.0)
        throw std::invalid_argument("expected an integer, got " + to_string());
      return static_cast<std::int64_t>(d);
    case Kind::string:
      break;
  }
  throw std::invalid_argument("expected an integer, got string \"" + s + "\"");
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::integer:
    case Kind::boolean:
      return i != 0;
    case Kind::real:
      return d != 0.0;
    case Kind::string:
      return !s.empty();
  }
  return false;
}

std::string Value::to_string() const {
  switch (kind) {
    case Kind::integer:
      return std::to_string(i);
    case Kind::boolean:
      return i ? "true" : "false";
    case Kind::string:
      return s;
    case Kind::real: {
      if (std::isnan(d)) return "nan";
      if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
      // Shortest text that reads back to the same double.
      char buf[40];
      for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (std::strtod(buf, nullptr) == d) break;
      }
      std::string text = buf;
      // Keep it recognisably real ("2.0", not "2"): in a #define, "2" would
      // turn float arithmetic into integer arithmetic.
      if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
      return text;
    }
  }
  return {};
}

bool Value::operator==(const Value& o) const {
  if (kind == Kind::string || o.kind == Kind::string)
    return kind == o.kind && s == o.s;
  if (kind != Kind::real && o.kind != Kind::real) return i == o.i;
  return as_double() == o.as_double();
}

Env env_from_map(const std::map<std::string, Value>& vars) {
  return [vars](const std::string& name) -> std::optional<Value> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// ---------------------------------------------------------------------------
// Syntax tree

struct Expr::Node {
  enum class Op {
    literal, name, call, neg, pos, not_, add, sub, mul, div, floordiv, mod, pow,
    compare, and_, or_, cond
  };
  enum class Cmp { eq, ne, lt, le, gt, ge };
  Op op = Op::literal;
  Value literal;                                  // literal
  std::string name;                               // name, call (function name)
  std::vector<std::shared_ptr<const Node>> kids;  // operands; compare: n+1 operands
  std::vector<Cmp> cmps;                          // compare: n operators
};

namespace {

using Node = Expr::Node;
using NodePtr = std::shared_ptr<const Node>;
using Op = Node::Op;
using Cmp = Node::Cmp;

enum class Tok { end, number, string, name, op, lparen, rparen, comma };

struct Token {
  Tok kind = Tok::end;
  std::string text;  // op text, name, string contents
  Value number;
  std::size_t column = 1;  // 1-based
};

[[noreturn]] void syntax_error(std::size_t column, const std::string& what) {
  throw std::invalid_argument("column " + std::to_string(column) + ": " + what);
}

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

std::vector<Token> tokenize(const std::string& text) {
  std::vector<Token> out;
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    Token t;
    t.column = i + 1;
    if (digit(c) || (c == '.' && i + 1 < n && digit(text[i + 1]))) {
      std::size_t j = i;
      bool real = false;
      while (j < n && digit(text[j])) ++j;
      if (j < n && text[j] == '.') {
        real = true;
        ++j;
        while (j < n && digit(text[j])) ++j;
      }
      if (j < n && (text[j] == 'e' || text[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < n && (text[k] == '+' || text[k] == '-')) ++k;
        if (k < n && digit(text[k])) {
          real = true;
          j = k;
          while (j < n && digit(text[j])) ++j;
        } else {
          syntax_error(j + 1, "malformed exponent in number");
        }
      }
      if (j < n && name_char(text[j])) syntax_error(j + 1, "unexpected character '" + std::string(1, text[j]) + "' in number");
      const std::string lit = text.substr(i, j - i);
      t.kind = Tok::number;
      t.text = lit;
      if (real) {
        t.number = Value::real(std::strtod(lit.c_str(), nullptr));
      } else {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(lit.c_str(), &end, 10);
        if (errno == ERANGE) syntax_error(t.column, "integer " + lit + " is too large");
        t.number = Value::integer(v);
      }
      out.push_back(std::move(t));
      i = j;
      continue;
    }
    if (name_start(c)) {
      std::size_t j = i;
      while (j < n && name_char(text[j])) ++j;
      t.kind = Tok::name;
      t.text = text.substr(i, j - i);
      out.push_back(std::move(t));
      i = j;
      continue;
    }
    if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      std::string s;
      while (j < n && text[j] != c) {
        if (text[j] == '\\' && j + 1 < n) ++j;
        s += text[j++];
      }
      if (j >= n) syntax_error(t.column, "unterminated string");
      t.kind = Tok::string;
      t.text = std::move(s);
      out.push_back(std::move(t));
      i = j + 1;
      continue;
    }
    if (c == '(') { t.kind = Tok::lparen; t.text = "("; out.push_back(t); ++i; continue; }
    if (c == ')') { t.kind = Tok::rparen; t.text = ")"; out.push_back(t); ++i; continue; }
    if (c == ',') { t.kind = Tok::comma; t.text = ","; out.push_back(t); ++i; continue; }
    static const char* const two[] = {"**", "//", "==", "!=", "<=", ">=", "&&", "||"};
    bool matched = false;
    if (i + 1 < n) {
      for (const char* op : two) {
        if (text[i] == op[0] && text[i + 1] == op[1]) {
          t.kind = Tok::op;
          t.text = op;
          out.push_back(t);
          i += 2;
          matched = true;
          break;
        }
      }
    }
    if (matched) continue;
    if (std::string("+-*/%<>!").find(c) != std::string::npos) {
      t.kind = Tok::op;
      t.text = std::string(1, c);
      out.push_back(t);
      ++i;
      continue;
    }
    if (c == '=') syntax_error(t.column, "unexpected '=' (use '==' to compare)");
    syntax_error(t.column, "unexpected character '" + std::string(1, c) + "'");
  }
  Token end;
  end.kind = Tok::end;
  end.column = n + 1;
  out.push_back(end);
  return out;
}

struct FunctionInfo {
  const char* name;
  int min_args, max_args;  // max -1: unlimited
};
constexpr FunctionInfo kFunctions[] = {
    {"min", 1, -1}, {"max", 1, -1}, {"abs", 1, 1}, {"ceil", 1, 1}, {"floor", 1, 1}, {"log2", 1, 1},
};

const FunctionInfo* find_function(const std::string& name) {
  for (const auto& f : kFunctions)
    if (name == f.name) return &f;
  return nullptr;
}

bool is_keyword(const std::string& s) {
  return s == "and" || s == "or" || s == "not" || s == "if" || s == "else" || s == "True" ||
         s == "False" || s == "true" || s == "false";
}

class Parser {
 public:
  explicit Parser(const std::string& text) : toks_(tokenize(text)) {}

  NodePtr parse() {
    if (peek().kind == Tok::end) syntax_error(peek().column, "empty expression");
    NodePtr e = conditional();
    if (peek().kind != Tok::end) syntax_error(peek().column, "unexpected " + describe(peek()));
    return e;
  }

 private:
  std::vector<Token> toks_;
  std::size_t pos_ = 0;

  const Token& peek() const { return toks_[pos_]; }
  Token take() { return toks_[pos_++]; }
  bool at_op(const char* op) const { return peek().kind == Tok::op && peek().text == op; }
  bool at_word(const char* w) const { return peek().kind == Tok::name && peek().text == w; }

  // "end of expression" or the token quoted: 'x'.
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::end: return "end of expression";
      case Tok::string: return "'\"" + t.text + "\"'";
      default: return "'" + t.text + "'";
    }
  }

  static NodePtr make(Op op, std::vector<NodePtr> kids) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->kids = std::move(kids);
    return n;
  }

  NodePtr conditional() {
    NodePtr then = disjunction();
    if (!at_word("if")) return then;
    take();
    NodePtr cond = disjunction();
    if (!at_word("else")) syntax_error(peek().column, "expected 'else', got " + describe(peek()));
    take();
    NodePtr otherwise = conditional();
    return make(Op::cond, {cond, then, otherwise});
  }

  NodePtr disjunction() {
    NodePtr left = conjunction();
    while (at_word("or") || at_op("||")) {
      take();
      left = make(Op::or_, {left, conjunction()});
    }
    return left;
  }

  NodePtr conjunction() {
    NodePtr left = negation();
    while (at_word("and") || at_op("&&")) {
      take();
      left = make(Op::and_, {left, negation()});
    }
    return left;
  }

  NodePtr negation() {
    if (at_word("not") || at_op("!")) {
      take();
      return make(Op::not_, {negation()});
    }
    return comparison();
  }

  std::optional<Cmp> comparison_op() const {
    if (peek().kind != Tok::op) return std::nullopt;
    const std::string& t = peek().text;
    if (t == "==") return Cmp::eq;
    if (t == "!=") return Cmp::ne;
    if (t == "<") return Cmp::lt;
    if (t == "<=") return Cmp::le;
    if (t == ">") return Cmp::gt;
    if (t == ">=") return Cmp::ge;
    return std::nullopt;
  }

  NodePtr comparison() {
    NodePtr first = additive();
    auto cmp = comparison_op();
    if (!cmp) return first;
    auto n = std::make_shared<Node>();
    n->op = Op::compare;
    n->kids.push_back(first);
    while (cmp) {
      take();
      n->cmps.push_back(*cmp);
      n->kids.push_back(additive());
      cmp = comparison_op();
    }
    return n;
  }

  NodePtr additive() {
    NodePtr left = term();
    while (at_op("+") || at_op("-")) {
      const Op op = take().text == "+" ? Op::add : Op::sub;
      left = make(op, {left, term()});
    }
    return left;
  }

  NodePtr term() {
    NodePtr left = unary();
    for (;;) {
      Op op;
      if (at_op("*")) op = Op::mul;
      else if (at_op("/")) op = Op::div;
      else if (at_op("//")) op = Op::floordiv;
      else if (at_op("%")) op = Op::mod;
      else return left;
      take();
      left = make(op, {left, unary()});
    }
  }

  NodePtr unary() {
    if (at_op("-")) {
      take();
      return make(Op::neg, {unary()});
    }
    if (at_op("+")) {
      take();
      return make(Op::pos, {unary()});
    }
    return power();
  }

  NodePtr power() {
    NodePtr base = atom();
    if (at_op("**")) {
      take();
      // Right associative, and binds tighter than a unary minus on its left
      // but looser than one on its right: -2**2 == -4, 2**-1 == 0.5.
      return make(Op::pow, {base, unary()});
    }
    return base;
  }

  NodePtr atom() {
    const Token t = take();
    switch (t.kind) {
      case Tok::number: {
        auto n = std::make_shared<Node>();
        n->literal = t.number;
        return n;
      }
      case Tok::string: {
        auto n = std::make_shared<Node>();
        n->literal = Value::string(t.text);
        return n;
      }
      case Tok::lparen: {
        NodePtr e = conditional();
        if (peek().kind != Tok::rparen) syntax_error(peek().column, "expected ')', got " + describe(peek()));
        take();
        return e;
      }
      case Tok::name: {
        if (t.text == "True" || t.text == "true" || t.text == "False" || t.text == "false") {
          auto n = std::make_shared<Node>();
          n->literal = Value::boolean(t.text == "True" || t.text == "true");
          return n;
        }
        if (is_keyword(t.text)) syntax_error(t.column, "unexpected '" + t.text + "'");
        if (peek().kind == Tok::lparen) return call(t);
        auto n = std::make_shared<Node>();
        n->op = Op::name;
        n->name = t.text;
        return n;
      }
      default:
        syntax_error(t.column, "unexpected " + describe(t));
    }
  }

  NodePtr call(const Token& name) {
    const FunctionInfo* f = find_function(name.text);
    if (!f) syntax_error(name.column, "unknown function '" + name.text + "' (known: min, max, abs, ceil, floor, log2)");
    take();  // (
    auto n = std::make_shared<Node>();
    n->op = Op::call;
    n->name = name.text;
    if (peek().kind != Tok::rparen) {
      for (;;) {
        n->kids.push_back(conditional());
        if (peek().kind == Tok::comma) {
          take();
          continue;
        }
        break;
      }
    }
    if (peek().kind != Tok::rparen) syntax_error(peek().column, "expected ',' or ')', got " + describe(peek()));
    take();
    const int count = static_cast<int>(n->kids.size());
    if (count < f->min_args || (f->max_args >= 0 && count > f->max_args))
      syntax_error(name.column, name.text + "() takes " +
                                    (f->max_args < 0 ? "at least " + std::to_string(f->min_args)
                                                     : std::to_string(f->min_args)) +
                                    " argument(s), got " + std::to_string(count));
    return n;
  }
};

// ---------------------------------------------------------------------------
// Evaluation

[[noreturn]] void eval_error(const std::string& what) { throw std::invalid_argument(what); }

bool integral(const Value& v) { return v.kind == Value::Kind::integer || v.kind == Value::Kind::boolean; }

const char* op_symbol(Op op) {
  switch (op) {
    case Op::add: return "+";
    case Op::sub: return "-";
    case Op::mul: return "*";
    case Op::div: return "/";
    case Op::floordiv: return "//";
    case Op::mod: return "%";
    case Op::pow: return "**";
    default: return "?";
  }
}

void need_numbers(Op op, const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number())
    eval_error(std::string("operator '") + op_symbol(op) + "' needs numbers, got " +
               (a.is_number() ? a.to_string() : "\"" + a.s + "\"") + " and " +
               (b.is_number() ? b.to_string() : "\"" + b.s + "\""));
}

[[noreturn]] void overflow(Op op) {
  eval_error(std::string("integer overflow in '") + op_symbol(op) + "'");
}

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::int64_t checked_mul(std::int64_t a, std::int64_t b, Op op) {
  if (a == 0 || b == 0) return 0;
  if ((a == -1 && b == kMin) || (b == -1 && a == kMin)) overflow(op);
  if (a > 0 ? (b > 0 ? a > kMax / b : b < kMin / a) : (b > 0 ? a < kMin / b : a < kMax / b))
    overflow(op);
  return a * b;
}

Value arith(Op op, const Value& a, const Value& b) {
  need_numbers(op, a, b);
  if (op == Op::div) {
    const double y = b.as_double();
    if (y == 0.0) eval_error("division by zero");
    return Value::real(a.as_double() / y);
  }
  if (integral(a) && integral(b)) {
    const std::int64_t x = a.i, y = b.i;
    switch (op) {
      case Op::add:
        if ((y > 0 && x > kMax - y) || (y < 0 && x < kMin - y)) overflow(op);
        return Value::integer(x + y);
      case Op::sub:
        if ((y < 0 && x > kMax + y) || (y > 0 && x < kMin + y)) overflow(op);
        return Value::integer(x - y);
      case Op::mul:
        return Value::integer(checked_mul(x, y, op));
      case Op::floordiv: {
        if (y == 0) eval_error("integer division by zero");
        if (x == kMin && y == -1) overflow(op);
        std::int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // floor, as Python does
        return Value::integer(q);
      }
      case Op::mod: {
        if (y == 0) eval_error("integer modulo by zero");
        if (y == -1) return Value::integer(0);
        std::int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;  // sign of the divisor, as Python
        return Value::integer(r);
      }
      case Op::pow: {
        if (y < 0) {
          if (x == 0) eval_error("zero to a negative power");
          return Value::real(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
        std::int64_t result = 1, base = x, e = y;
        while (e > 0) {
          if (e & 1) result = checked_mul(result, base, op);
          e >>= 1;
          if (e > 0) base = checked_mul(base, base, op);
        }
        return Value::integer(result);
      }
      default:
        break;
    }
  }
  const double x = a.as_double(), y = b.as_double();
  switch (op) {
    case Op::add: return Value::real(x + y);
    case Op::sub: return Value::real(x - y);
    case Op::mul: return Value::real(x * y);
    case Op::floordiv:
      if (y == 0.0) eval_error("division by zero");
      return Value::real(std::floor(x / y));
    case Op::mod: {
      if (y == 0.0) eval_error("modulo by zero");
      double r = std::fmod(x, y);
      if (r != 0.0 && ((r < 0) != (y < 0))) r += y;
      return Value::real(r);
    }
    case Op::pow: {
      if (x == 0.0 && y < 0.0) eval_error("zero to a negative power");
      const double r = std::pow(x, y);
      if (std::isnan(r)) eval_error("power of a negative number to a fractional exponent");
      return Value::real(r);
    }
    default:
      break;
  }
  eval_error("bad arithmetic operator");
}

bool compare(Cmp cmp, const Value& a, const Value& b) {
  if (cmp == Cmp::eq) return a == b;
  if (cmp == Cmp::ne) return !(a == b);
  if (!a.is_number() || !b.is_number())
    eval_error("strings can only be compared with == and !=");
  int order;
  if (integral(a) && integral(b)) {
    order = a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  } else {
    const double x = a.as_double(), y = b.as_double();
    order = x < y ? -1 : (x > y ? 1 : 0);
    if (std::isnan(x) || std::isnan(y)) return false;
  }
  switch (cmp) {
    case Cmp::lt: return order < 0;
    case Cmp::le: return order <= 0;
    case Cmp::gt: return order > 0;
    case Cmp::ge: return order >= 0;
    default: return false;
  }
}

Value to_int_checked(double v, const char* fn) {
  if (!std::isfinite(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0)
    eval_error(std::string(fn) + "() result out of integer range");
  return Value::integer(static_cast<std::int64_t>(v));
}

Value call(const std::string& fn, const std::vector<Value>& args) {
  for (const auto& a : args)
    if (!a.is_number()) eval_error(fn + "() needs numbers, got \"" + a.s + "\"");
  if (fn == "min" || fn == "max") {
    const bool is_min = fn == "min";
    Value best = args[0];
    for (std::size_t k = 1; k < args.size(); ++k) {
      const bool better = is_min ? compare(Cmp::lt, args[k], best) : compare(Cmp::gt, args[k], best);
      if (better) best = args[k];
    }
    if (best.kind == Value::Kind::boolean) return Value::integer(best.i);
    return best;
  }
  const Value& x = args[0];
  if (fn == "abs") {
    if (integral(x)) {
      if (x.i == kMin) eval_error("integer overflow in abs()");
      return Value::integer(x.i < 0 ? -x.i : x.i);
    }
    return Value::real(std::fabs(x.d));
  }
  // ceil and floor give integers, as in Python 3.
  if (fn == "ceil") return integral(x) ? Value::integer(x.i) : to_int_checked(std::ceil(x.d), "ceil");
  if (fn == "floor") return integral(x) ? Value::integer(x.i) : to_int_checked(std::floor(x.d), "floor");
  if (fn == "log2") {
    const double v = x.as_double();
    if (v <= 0.0) eval_error("log2() of a non-positive number");
    return Value::real(std::log2(v));
  }
  eval_error("unknown function '" + fn + "'");
}

Value eval_node(const Node& n, const Env& env) {
  switch (n.op) {
    case Op::literal:
      return n.literal;
    case Op::name: {
      std::optional<Value> v = env ? env(n.name) : std::nullopt;
      if (!v) eval_error("unknown name '" + n.name + "'");
      return *v;
    }
    case Op::call: {
      std::vector<Value> args;
      args.reserve(n.kids.size());
      for (const auto& k : n.kids) args.push_back(eval_node(*k, env));
      return call(n.name, args);
    }
    case Op::neg: {
      const Value v = eval_node(*n.kids[0], env);
      if (!v.is_number()) eval_error("unary '-' needs a number, got \"" + v.s + "\"");
      if (integral(v)) {
        if (v.i == kMin) eval_error("integer overflow in unary '-'");
        return Value::integer(-v.i);
      }
      return Value::real(-v.d);
    }
    case Op::pos: {
      const Value v = eval_node(*n.kids[0], env);
      if (!v.is_number()) eval_error("unary '+' needs a number, got \"" + v.s + "\"");
      return v.kind == Value::Kind::boolean ? Value::integer(v.i) : v;
    }
    case Op::not_:
      return Value::boolean(!eval_node(*n.kids[0], env).truthy());
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
    case Op::floordiv:
    case Op::mod:
    case Op::pow:
      return arith(n.op, eval_node(*n.kids[0], env), eval_node(*n.kids[1], env));
    case Op::compare: {
      // a < b <= c means (a < b) and (b <= c), each operand evaluated once.
      Value left = eval_node(*n.kids[0], env);
      for (std::size_t k = 0; k < n.cmps.size(); ++k) {
        Value right = eval_node(*n.kids[k + 1], env);
        if (!compare(n.cmps[k], left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case Op::and_: {
      // Python semantics: the deciding operand, short-circuited.
      Value left = eval_node(*n.kids[0], env);
      if (!left.truthy()) return left;
      return eval_node(*n.kids[1], env);
    }
    case Op::or_: {
      Value left = eval_node(*n.kids[0], env);
      if (left.truthy()) return left;
      return eval_node(*n.kids[1], env);
    }
    case Op::cond:
      return eval_node(*n.kids[0], env).truthy() ? eval_node(*n.kids[1], env)
                                                  : eval_node(*n.kids[2], env);
  }
  eval_error("bad expression node");
}

void collect_names(const Node& n, std::vector<std::string>& out) {
  if (n.op == Op::name) {
    for (const auto& s : out)
      if (s == n.name) return;
    out.push_back(n.name);
    return;
  }
  for (const auto& k : n.kids) collect_names(*k, out);
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(text).parse();
  return e;
}

Value Expr::eval(const Env& env) const {
  if (!root_) throw std::invalid_argument("empty expression");
  return eval_node(*root_, env);
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  if (root_) collect_names(*root_, out);
  return out;
}

}  // namespace kevo
