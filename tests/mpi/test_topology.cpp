// Topologies are pure functions: every rank must compute the same graph.
#include "kevo/mpi/topology.hpp"

#include "kevo/core/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace kevo::mpi;

namespace {
std::vector<int> v(std::initializer_list<int> l) { return l; }
}  // namespace

TEST(Topology, Ring) {
  EXPECT_EQ(out_neighbours(Topology::ring, 5, 0), v({1}));
  EXPECT_EQ(out_neighbours(Topology::ring, 5, 4), v({0}));
  EXPECT_EQ(in_neighbours(Topology::ring, 5, 0), v({4}));
  EXPECT_TRUE(out_neighbours(Topology::ring, 1, 0).empty());
}

TEST(Topology, BidirectionalRing) {
  EXPECT_EQ(out_neighbours(Topology::bidirectional_ring, 5, 0), v({1, 4}));
  EXPECT_EQ(out_neighbours(Topology::bidirectional_ring, 2, 1), v({0}));   // no repeats
  EXPECT_EQ(in_neighbours(Topology::bidirectional_ring, 5, 2), v({1, 3}));
}

TEST(Topology, TorusWraps) {
  EXPECT_EQ(torus_shape(12), std::make_pair(3, 4));
  EXPECT_EQ(torus_shape(16), std::make_pair(4, 4));
  EXPECT_EQ(torus_shape(7), std::make_pair(1, 7));
  // 3 x 4 grid: rank 0 is row 0 col 0; up wraps to row 2 (rank 8), left to col 3 (rank 3).
  EXPECT_EQ(out_neighbours(Topology::torus, 12, 0), v({1, 3, 4, 8}));
  EXPECT_EQ(out_neighbours(Topology::torus, 12, 11), v({3, 7, 8, 10}));
  // Symmetric: in == out.
  for (int r = 0; r < 12; ++r)
    EXPECT_EQ(out_neighbours(Topology::torus, 12, r), in_neighbours(Topology::torus, 12, r));
  // 2 x 2: up and down are the same rank.
  EXPECT_EQ(out_neighbours(Topology::torus, 4, 0), v({1, 2}));
}

TEST(Topology, RandomIsKRegularAndSeeded) {
  for (int size : {2, 3, 5, 8, 16, 33}) {
    for (int k : {1, 2, 3}) {
      const int kk = std::min(k, size - 1);
      std::map<int, int> indeg;
      for (int r = 0; r < size; ++r) {
        const auto out = out_neighbours(Topology::random, size, r, k, 42);
        ASSERT_EQ(static_cast<int>(out.size()), kk) << "size " << size << " k " << k << " rank " << r;
        EXPECT_FALSE(std::binary_search(out.begin(), out.end(), r));
        for (int o : out) ++indeg[o];
      }
      for (int r = 0; r < size; ++r) EXPECT_EQ(indeg[r], kk) << "in-degree, size " << size << " k " << k;
    }
  }
  EXPECT_EQ(out_neighbours(Topology::random, 16, 3, 2, 42), out_neighbours(Topology::random, 16, 3, 2, 42));
  bool differs = false;
  for (int r = 0; r < 16; ++r)
    differs |= out_neighbours(Topology::random, 16, r, 2, 42) != out_neighbours(Topology::random, 16, r, 2, 43);
  EXPECT_TRUE(differs) << "the seed should change the graph";
}

TEST(Topology, CompleteAndNone) {
  EXPECT_EQ(out_neighbours(Topology::complete, 4, 2), v({0, 1, 3}));
  EXPECT_TRUE(out_neighbours(Topology::none, 4, 2).empty());
  EXPECT_EQ(parse_topology("bidirectional_ring"), Topology::bidirectional_ring);
  EXPECT_THROW(parse_topology("star"), kevo::Failure);
}
