#include "kevo/core/expr.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace kevo {
namespace {

Value ev(const std::string& text, const std::map<std::string, Value>& vars = {}) {
  return Expr::parse(text).eval(env_from_map(vars));
}
std::int64_t evi(const std::string& text, const std::map<std::string, Value>& vars = {}) {
  const Value v = ev(text, vars);
  EXPECT_EQ(v.kind, Value::Kind::integer) << text;
  return v.i;
}
bool evb(const std::string& text, const std::map<std::string, Value>& vars = {}) { return ev(text, vars).truthy(); }

std::string parse_error(const std::string& text) {
  try {
    Expr::parse(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Expr, Precedence) {
  EXPECT_EQ(evi("1 + 2 * 3"), 7);
  EXPECT_EQ(evi("(1 + 2) * 3"), 9);
  EXPECT_EQ(evi("2 ** 3 ** 2"), 512);  // right associative
  EXPECT_EQ(evi("-2 ** 2"), -4);       // ** binds tighter than unary minus
  EXPECT_DOUBLE_EQ(ev("2 ** -1").as_double(), 0.5);
  EXPECT_EQ(evi("10 - 4 - 3"), 3);     // left associative
  EXPECT_EQ(evi("2 * 3 % 4"), 2);
  EXPECT_TRUE(evb("not 1 == 2"));      // not binds looser than ==
  EXPECT_TRUE(evb("1 < 2 and 3 < 4 or 0"));
  EXPECT_FALSE(evb("0 and 1 or 0"));
  EXPECT_TRUE(evb("1 or 0 and 0"));    // and before or
  EXPECT_EQ(evi("1 if 0 else 2 if 1 else 3"), 2);
  EXPECT_EQ(evi("3 + 1 if 1 > 2 else 7 * 2"), 14);
  EXPECT_TRUE(evb("!0 && 1 || 0"));
}

TEST(Expr, ComparisonChains) {
  EXPECT_TRUE(evb("1 < 2 <= 2 < 3"));
  EXPECT_FALSE(evb("1 < 3 < 2"));
  EXPECT_FALSE(evb("3 > 2 > 1 > 1"));
  EXPECT_TRUE(evb("2 == 2.0 != 3"));
}

TEST(Expr, FloorDivisionAndModuloFollowPython) {
  EXPECT_EQ(evi("7 // 2"), 3);
  EXPECT_EQ(evi("-7 // 2"), -4);
  EXPECT_EQ(evi("7 // -2"), -4);
  EXPECT_EQ(evi("-7 // -2"), 3);
  EXPECT_EQ(evi("-7 % 3"), 2);
  EXPECT_EQ(evi("7 % -3"), -2);
  EXPECT_EQ(evi("-6 % 3"), 0);
  EXPECT_DOUBLE_EQ(ev("-7.5 // 2").as_double(), -4.0);
  EXPECT_DOUBLE_EQ(ev("-7.5 % 2").as_double(), 0.5);
  EXPECT_THROW(ev("1 // 0"), std::invalid_argument);
  EXPECT_THROW(ev("1 % 0"), std::invalid_argument);
}

TEST(Expr, IntegerAndRealArithmetic) {
  EXPECT_EQ(ev("7 / 2").kind, Value::Kind::real);
  EXPECT_DOUBLE_EQ(ev("7 / 2").as_double(), 3.5);
  EXPECT_EQ(ev("4 / 2").kind, Value::Kind::real);
  EXPECT_EQ(ev("2 * 3").kind, Value::Kind::integer);
  EXPECT_EQ(ev("2 * 3.0").kind, Value::Kind::real);
  EXPECT_DOUBLE_EQ(ev("1e-5").as_double(), 1e-5);
  EXPECT_DOUBLE_EQ(ev(".5 + 0.25").as_double(), 0.75);
  EXPECT_THROW(ev("9223372036854775807 + 1"), std::invalid_argument);  // overflow is an error, not a wrap
  EXPECT_THROW(ev("2 ** 64"), std::invalid_argument);
  EXPECT_EQ(evi("2 ** 62"), std::int64_t{1} << 62);
}

TEST(Expr, NamesAndFunctions) {
  const std::map<std::string, Value> vars = {{"M", Value::integer(129)}, {"TILE", Value::integer(32)}};
  EXPECT_EQ(evi("(M + TILE - 1) // TILE", vars), 5);
  EXPECT_EQ(evi("min(M, TILE, 64)", vars), 32);
  EXPECT_EQ(evi("max(1, 2, 3)"), 3);
  EXPECT_EQ(evi("abs(-5)"), 5);
  EXPECT_EQ(evi("ceil(M / TILE)", vars), 5);
  EXPECT_EQ(evi("floor(-0.5)"), -1);
  EXPECT_DOUBLE_EQ(ev("log2(TILE)", vars).as_double(), 5.0);
  EXPECT_TRUE(evb("True and true and not False and not false"));
  const Expr e = Expr::parse("M * N + min(M, K) + M");
  EXPECT_EQ(e.names(), (std::vector<std::string>{"M", "N", "K"}));
  EXPECT_EQ(e.text(), "M * N + min(M, K) + M");
}

TEST(Expr, UnknownNameIsNamed) {
  try {
    ev("M * X", {{"M", Value::integer(1)}});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name 'X'"), std::string::npos) << e.what();
  }
}

TEST(Expr, Strings) {
  const std::map<std::string, Value> vars = {{"ORDER", Value::string("ikj")}};
  EXPECT_TRUE(evb("ORDER == \"ikj\"", vars));
  EXPECT_TRUE(evb("ORDER != 'ijk'", vars));
  EXPECT_FALSE(evb("ORDER == 1", vars));
  EXPECT_THROW(ev("ORDER < 'z'", vars), std::invalid_argument);
  EXPECT_THROW(ev("ORDER + 1", vars), std::invalid_argument);
  EXPECT_EQ(ev("'a\\'b'").s, "a'b");
}

TEST(Expr, ParseErrorsNameTheColumn) {
  EXPECT_EQ(parse_error("1 +"), "column 4: unexpected end of expression");
  EXPECT_EQ(parse_error("1 + )"), "column 5: unexpected ')'");
  EXPECT_NE(parse_error("M * $").find("column 5"), std::string::npos) << parse_error("M * $");
  EXPECT_NE(parse_error("(1 + 2").find("column 7"), std::string::npos) << parse_error("(1 + 2");
  EXPECT_NE(parse_error("a = 1").find("column 3"), std::string::npos);
  EXPECT_NE(parse_error("1 if 2").find("column 7"), std::string::npos);
  EXPECT_NE(parse_error("foo(1)").find("unknown function 'foo'"), std::string::npos);
  EXPECT_NE(parse_error("abs(1, 2)").find("column 1"), std::string::npos);
  EXPECT_NE(parse_error("'abc").find("unterminated"), std::string::npos);
  EXPECT_NE(parse_error("").find("empty"), std::string::npos);
  EXPECT_NE(parse_error("1 2").find("column 3"), std::string::npos);
  EXPECT_NE(parse_error("12abc").find("column 3"), std::string::npos);
}

TEST(Value, TextAndEquality) {
  EXPECT_EQ(Value::integer(32).to_string(), "32");
  EXPECT_EQ(Value::real(0.5).to_string(), "0.5");
  EXPECT_EQ(Value::real(2.0).to_string(), "2.0");   // stays a real in a #define
  EXPECT_EQ(Value::real(0.1).to_string(), "0.1");
  EXPECT_EQ(Value::real(1e-5).to_string(), "1e-05");
  EXPECT_EQ(Value::boolean(true).to_string(), "true");
  EXPECT_EQ(Value::string("ikj").to_string(), "ikj");
  EXPECT_EQ(Value::integer(2), Value::real(2.0));
  EXPECT_FALSE(Value::integer(2) == Value::string("2"));
  EXPECT_EQ(Value::real(3.0).as_int(), 3);
  EXPECT_THROW(Value::real(3.5).as_int(), std::invalid_argument);
  EXPECT_THROW(Value::string("x").as_double(), std::invalid_argument);
}

}  // namespace
}  // namespace kevo
