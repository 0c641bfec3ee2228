#include "kevo/core/search_space.hpp"

#include "kevo/core/rng.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace kevo {
namespace {

std::vector<Value> ints(std::initializer_list<std::int64_t> xs) {
  std::vector<Value> out;
  for (auto x : xs) out.push_back(Value::integer(x));
  return out;
}

SearchSpace tiles(std::vector<std::string> restrictions = {}) {
  std::vector<Expr> r;
  for (const auto& t : restrictions) r.push_back(Expr::parse(t));
  return SearchSpace({Param{"TILE_M", ints({8, 16, 32, 64})}, Param{"TILE_N", ints({8, 16, 32, 64})},
                      Param{"ORDER", {Value::string("ijk"), Value::string("ikj")}}},
                     std::move(r));
}

TEST(SearchSpace, EnumerateCountsAndOrder) {
  const SearchSpace all = tiles();
  EXPECT_EQ(all.cardinality(), 32u);
  const auto points = all.enumerate();
  ASSERT_EQ(points.size(), 32u);
  EXPECT_EQ(points.front(), (Point{0, 0, 0}));
  EXPECT_EQ(points[1], (Point{0, 0, 1}));   // last parameter varies fastest
  EXPECT_EQ(points.back(), (Point{3, 3, 1}));
  for (std::size_t k = 1; k < points.size(); ++k) EXPECT_LT(points[k - 1], points[k]);

  // TILE_M * TILE_N <= 256: (8,8) (8,16) (8,32) (16,8) (16,16) (32,8) -> 6 pairs x 2 orders.
  const SearchSpace small = tiles({"TILE_M * TILE_N <= 256"});
  EXPECT_EQ(small.enumerate().size(), 12u);
  const SearchSpace two = tiles({"TILE_M * TILE_N <= 256", "ORDER == 'ikj'", "TILE_M >= TILE_N"});
  const auto pts = two.enumerate();
  ASSERT_EQ(pts.size(), 4u);   // (8,8) (16,8) (16,16) (32,8)
  for (const auto& p : pts) EXPECT_TRUE(two.valid(p));
  EXPECT_EQ(two.enumerate(2).size(), 2u);
  EXPECT_TRUE(tiles({"TILE_M > 1000"}).enumerate().empty());
}

TEST(SearchSpace, ValidChecksRangeAndRestrictions) {
  const SearchSpace s = tiles({"TILE_M <= TILE_N"});
  EXPECT_TRUE(s.valid({0, 1, 0}));
  EXPECT_FALSE(s.valid({1, 0, 0}));
  EXPECT_FALSE(s.valid({0, 4, 0}));   // index out of range
  EXPECT_FALSE(s.valid({0, 0}));      // wrong size
  const SearchSpace bad = tiles({"TILE_M < ORDER"});
  EXPECT_THROW(bad.valid({0, 0, 0}), std::invalid_argument);
}

TEST(SearchSpace, RandomPointIsValidAndCoversTheSpace) {
  const SearchSpace s = tiles({"TILE_M * TILE_N <= 256"});
  Rng rng(7);
  std::set<Point> seen;
  for (int k = 0; k < 2000; ++k) {
    const auto p = s.random_point(rng);
    ASSERT_TRUE(p.has_value());
    EXPECT_TRUE(s.valid(*p));
    seen.insert(*p);
  }
  EXPECT_EQ(seen.size(), 12u);

  // One valid point among 20^4: rejection fails, the enumeration fallback finds it.
  std::vector<Param> params;
  for (const char* n : {"A", "B", "C", "D"}) {
    std::vector<Value> v;
    for (int i = 0; i < 20; ++i) v.push_back(Value::integer(i));
    params.push_back(Param{n, v});
  }
  const SearchSpace sparse(params, {Expr::parse("A == 3 and B == 5 and C == 7 and D == 11")});
  const auto p = sparse.random_point(rng);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (Point{3, 5, 7, 11}));
  EXPECT_FALSE(tiles({"TILE_M > 1000"}).random_point(rng).has_value());
}

TEST(SearchSpace, RenderAndSplitRoundTrip) {
  const SearchSpace s = tiles();
  const Point p{2, 0, 1};
  const std::string block = s.render_block(p);
  EXPECT_EQ(block,
            "// kevo:params begin\n"
            "#define TILE_M 32\n"
            "#define TILE_N 8\n"
            "#define ORDER_ikj 1\n"
            "#define ORDER \"ikj\"\n"
            "// kevo:params end\n");
  const std::string body = "#include <cstdint>\nextern \"C\" void f(float* x) { x[0] = TILE_M; }\n";
  const std::string source = apply_point(s, p, body);
  EXPECT_EQ(source, block + body);
  const SplitSource split = split_params_block(source);
  EXPECT_EQ(split.block, block);
  EXPECT_EQ(split.body, body);
  // Re-applying another point replaces the block instead of stacking one more.
  const std::string again = apply_point(s, {0, 0, 0}, source);
  EXPECT_EQ(split_params_block(again).body, body);
  EXPECT_EQ(split_params_block(again).block, s.render_block({0, 0, 0}));

  const SplitSource none = split_params_block(body);
  EXPECT_TRUE(none.block.empty());
  EXPECT_EQ(none.body, body);

  const SearchSpace reals({Param{"ALPHA", {Value::real(0.5), Value::real(2.0)}}}, {});
  EXPECT_NE(reals.render_block({1}).find("#define ALPHA 2.0\n"), std::string::npos);
}

TEST(SearchSpace, PointFromSourceReadsTheBlockBack) {
  const SearchSpace s = tiles();
  for (const Point& p : s.enumerate()) {
    const std::string source = apply_point(s, p, "extern \"C\" void f() {}\n");
    EXPECT_EQ(point_from_source(s, source), p);
  }
  EXPECT_FALSE(point_from_source(s, "extern \"C\" void f() {}\n").has_value());
  const std::string odd = "// kevo:params begin\n#define TILE_M 12\n#define TILE_N 8\n#define ORDER \"ijk\"\n"
                          "// kevo:params end\n";
  EXPECT_FALSE(point_from_source(s, odd).has_value());
  const auto defines = block_assignment(s.render_block({0, 0, 1}));
  ASSERT_EQ(defines.size(), 4u);
  EXPECT_EQ(defines[2], (std::pair<std::string, std::string>{"ORDER_ikj", "1"}));
  EXPECT_EQ(defines[3], (std::pair<std::string, std::string>{"ORDER", "ikj"}));
}

// A Python source's block (a torch task): module-level constants, strings
// quoted, reals kept floats; replaced where it stands, so a docstring and
// `from __future__` stay first.
TEST(SearchSpace, APythonBlockIsReplacedWhereItStandsAndReadBack) {
  const SearchSpace s({Param{"BLOCK", ints({64, 128})}, Param{"SHIFT", {Value::string("max"), Value::string("none")}},
                       Param{"ALPHA", {Value::real(1.0), Value::real(0.25)}}},
                      {}, SourceSyntax::python);
  EXPECT_EQ(s.render_block({1, 0, 0}),
            "# kevo:params begin\n"
            "BLOCK = 128\n"
            "SHIFT = \"max\"\n"
            "ALPHA = 1.0\n"
            "# kevo:params end\n");
  const std::string head = "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\n\n";
  const std::string tail = "\nimport torch\n\n\nclass ModelNew:\n    n = BLOCK // 4\n";
  const std::string source = head + s.render_block({0, 1, 1}) + tail;
  for (const Point& p : s.enumerate()) {
    const std::string child = apply_point(s, p, source);
    EXPECT_EQ(child, head + s.render_block(p) + tail);
    EXPECT_EQ(point_from_source(s, child), p);
    // Same body, another point: the body hash is shared, the full one is not.
    const auto a = source_hashes(child, SourceSyntax::python);
    const auto b = source_hashes(source, SourceSyntax::python);
    EXPECT_EQ(a.body, b.body);
    EXPECT_EQ(a.full == b.full, p == Point({0, 1, 1}));
  }
  // No block yet: one is put at the top, or after the __future__ imports.
  EXPECT_EQ(apply_point(s, {0, 0, 0}, tail), s.render_block({0, 0, 0}) + tail);
  EXPECT_EQ(apply_point(s, {0, 0, 0}, head + tail), head.substr(0, head.size() - 1) + s.render_block({0, 0, 0}) + "\n" + tail);
  // A C-like block is not a Python one, nor the other way round.
  EXPECT_FALSE(point_from_source(s, "// kevo:params begin\n#define BLOCK 64\n// kevo:params end\n").has_value());
  EXPECT_TRUE(split_params_block(source).block.empty());
  // Written by a person or a model: single quotes, spacing and a comment.
  const std::string by_hand = "# kevo:params begin\nBLOCK=128   # rows per program\n  SHIFT = 'none'\n"
                              "ALPHA = 0.250\n# kevo:params end\n";
  EXPECT_EQ(point_from_source(s, by_hand), (Point{1, 1, 1}));
  EXPECT_EQ(block_assignment(by_hand, SourceSyntax::python),
            (std::vector<std::pair<std::string, std::string>>{{"BLOCK", "128"}, {"SHIFT", "none"}, {"ALPHA", "0.250"}}));
  EXPECT_FALSE(point_from_source(s, "# kevo:params begin\nBLOCK = 96\nSHIFT = 'max'\nALPHA = 1.0\n# kevo:params end\n")
                   .has_value());
  // Without a block the keys are those of the whole source, as before.
  const auto plain = source_hashes(tail, SourceSyntax::python);
  EXPECT_EQ(plain.full, plain.body);
  EXPECT_EQ(plain.body, fnv1a64(normalise_python_source(tail)));
}

// to_json writes its text without a DOM where it can: the same bytes as the
// ordered DOM's dump, for every kind of value; names that repeat and text
// that is not plain ASCII go through the DOM.
TEST(SearchSpace, ToJsonIsTheOrderedDomsDump) {
  const SearchSpace s({Param{"I", {Value::integer(-3), Value::integer(0), Value::integer(1LL << 40)}},
                       Param{"R", {Value::real(0.5), Value::real(2.0), Value::real(1e-7), Value::real(1e300)}},
                       Param{"B", {Value::boolean(false), Value::boolean(true)}},
                       Param{"S", {Value::string("ijk"), Value::string("a \"q\" \\ b"), Value::string("\xc3\xa9t\xc3\xa9")}},
                       Param{"I", {Value::integer(7), Value::integer(8)}}},
                      {});
  const SearchSpace unique({s.params()[0], s.params()[1], s.params()[2], s.params()[3]}, {});
  auto dom = [](const SearchSpace& space, const Point& p) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < space.params().size(); ++k) {
      const Value& v = space.params()[k].values[p[k]];
      switch (v.kind) {
        case Value::Kind::integer: j[space.params()[k].name] = v.i; break;
        case Value::Kind::boolean: j[space.params()[k].name] = v.i != 0; break;
        case Value::Kind::real: j[space.params()[k].name] = v.d; break;
        case Value::Kind::string: j[space.params()[k].name] = v.s; break;
      }
    }
    return j.dump();
  };
  std::size_t points = 0;
  for (const Point& p : s.enumerate()) {
    EXPECT_EQ(s.to_json(p), dom(s, p));
    const Point q(p.begin(), p.begin() + 4);
    EXPECT_EQ(unique.to_json(q), dom(unique, q));
    ++points;
  }
  EXPECT_EQ(points, 3u * 4u * 2u * 3u * 2u);
}

TEST(SearchSpace, FindJsonAndKey) {
  const SearchSpace s = tiles();
  EXPECT_EQ(s.find({{"TILE_M", "32"}, {"TILE_N", "8"}, {"ORDER", "ikj"}}), (Point{2, 0, 1}));
  EXPECT_EQ(s.find({{"ORDER", "\"ikj\""}, {"TILE_N", "8"}, {"TILE_M", "32.0"}}), (Point{2, 0, 1}));
  EXPECT_FALSE(s.find({{"TILE_M", "33"}, {"TILE_N", "8"}, {"ORDER", "ikj"}}).has_value());
  EXPECT_FALSE(s.find({{"TILE_M", "32"}, {"ORDER", "ikj"}}).has_value());                       // missing
  EXPECT_FALSE(s.find({{"TILE_M", "32"}, {"TILE_N", "8"}, {"ORDER", "ikj"}, {"X", "1"}}).has_value());  // unknown
  EXPECT_EQ(s.to_json({2, 0, 1}), R"({"TILE_M":32,"TILE_N":8,"ORDER":"ikj"})");
  EXPECT_EQ(s.key({2, 0, 1}), "TILE_M=32,TILE_N=8,ORDER=ikj");
  const Env env = s.env({2, 0, 1});
  EXPECT_EQ(env("TILE_M")->i, 32);
  EXPECT_EQ(env("ORDER")->s, "ikj");
  EXPECT_FALSE(env("NOPE").has_value());
}

}  // namespace
}  // namespace kevo
