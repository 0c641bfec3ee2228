#include "kevo/mpi/topology.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/rng.hpp"

#include <algorithm>
#include <numeric>
#include <set>

namespace kevo::mpi {

Topology parse_topology(const std::string& name) {
  if (name == "ring") return Topology::ring;
  if (name == "bidirectional_ring") return Topology::bidirectional_ring;
  if (name == "torus") return Topology::torus;
  if (name == "random") return Topology::random;
  if (name == "complete") return Topology::complete;
  if (name == "none") return Topology::none;
  throw Failure("unknown topology '" + name + "'");
}

std::string to_string(Topology t) {
  switch (t) {
    case Topology::ring: return "ring";
    case Topology::bidirectional_ring: return "bidirectional_ring";
    case Topology::torus: return "torus";
    case Topology::random: return "random";
    case Topology::complete: return "complete";
    case Topology::none: return "none";
  }
  return "?";
}

std::pair<int, int> torus_shape(int size) {
  int rows = 1;
  for (int r = 1; r * r <= size; ++r)
    if (size % r == 0) rows = r;
  return {rows, size / rows};
}

namespace {

// The whole random k-regular digraph: edges[r] = out-neighbours of r. Built
// from k permutations drawn one after another; a permutation that would add
// a self loop or an edge already present is redrawn (a bounded number of
// times; after that the edge set is completed greedily, which keeps the
// degree exact for every size >= k + 1).
std::vector<std::set<int>> random_graph(int size, int degree, std::uint64_t seed) {
  std::vector<std::set<int>> edges(static_cast<std::size_t>(size));
  Rng rng = Rng::derive(seed, 0x70b0ULL);
  std::vector<int> perm(static_cast<std::size_t>(size));
  for (int k = 0; k < degree; ++k) {
    bool placed = false;
    for (int attempt = 0; attempt < 200 && !placed; ++attempt) {
      std::iota(perm.begin(), perm.end(), 0);
      for (int i = size - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(static_cast<std::uint64_t>(i) + 1)]);
      placed = true;
      for (int r = 0; r < size && placed; ++r)
        if (perm[r] == r || edges[r].count(perm[r])) placed = false;
    }
    if (placed) {
      for (int r = 0; r < size; ++r) edges[r].insert(perm[r]);
      continue;
    }
    // Fallback: the circulant shift that adds no repeated edge.
    for (int shift = 1; shift < size; ++shift) {
      bool ok = true;
      for (int r = 0; r < size && ok; ++r) ok = !edges[r].count((r + shift) % size);
      if (ok) {
        for (int r = 0; r < size; ++r) edges[r].insert((r + shift) % size);
        break;
      }
    }
  }
  return edges;
}

}  // namespace

std::vector<int> out_neighbours(Topology t, int size, int rank, int degree, std::uint64_t seed) {
  if (size <= 0 || rank < 0 || rank >= size) throw Failure("topology: rank outside the group");
  std::set<int> out;
  auto add = [&](int r) {
    r = ((r % size) + size) % size;
    if (r != rank) out.insert(r);
  };
  switch (t) {
    case Topology::none: break;
    case Topology::ring: add(rank + 1); break;
    case Topology::bidirectional_ring:
      add(rank + 1);
      add(rank - 1);
      break;
    case Topology::torus: {
      const auto [rows, cols] = torus_shape(size);
      const int row = rank / cols, col = rank % cols;
      auto at = [&](int r, int c) { add(((r + rows) % rows) * cols + (c + cols) % cols); };
      at(row - 1, col);
      at(row + 1, col);
      at(row, col - 1);
      at(row, col + 1);
      break;
    }
    case Topology::random: {
      const int k = std::clamp(degree, 0, size - 1);
      const auto edges = random_graph(size, k, seed);
      for (int r : edges[static_cast<std::size_t>(rank)]) add(r);
      break;
    }
    case Topology::complete:
      for (int r = 0; r < size; ++r) add(r);
      break;
  }
  return {out.begin(), out.end()};
}

std::vector<int> in_neighbours(Topology t, int size, int rank, int degree, std::uint64_t seed) {
  std::vector<int> in;
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    const auto out = out_neighbours(t, size, r, degree, seed);
    if (std::binary_search(out.begin(), out.end(), rank)) in.push_back(r);
  }
  return in;
}

}  // namespace kevo::mpi
