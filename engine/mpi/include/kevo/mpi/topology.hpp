// Migration topologies: who sends migrants to whom among the `size` islands
// of one task group. Pure functions of (kind, size, rank, degree, seed), so
// every rank computes the same graph without talking to the others.
//
//   ring                 rank -> rank+1 (mod size)
//   bidirectional_ring   rank -> rank-1, rank+1
//   torus                a rows x cols grid (the most square factorisation of
//                        size, rows <= cols), rank -> its 4 wrapped neighbours
//   random               a seeded k-regular digraph: the union of k random
//                        permutations without fixed points or repeated edges,
//                        so every rank sends to k ranks and receives from k
//   complete             rank -> every other rank
//   none                 no migration
// Neighbour lists are sorted and hold neither `rank` nor repeats.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kevo::mpi {

enum class Topology { ring, bidirectional_ring, torus, random, complete, none };

Topology parse_topology(const std::string& name);   // throws Failure on an unknown name
std::string to_string(Topology t);

// The grid of a torus of `size` ranks: rows <= cols, rows * cols == size.
std::pair<int, int> torus_shape(int size);

// Out-neighbours of `rank` (where its migrants go). For `random`, degree is
// clamped to size - 1.
std::vector<int> out_neighbours(Topology t, int size, int rank, int degree = 2, std::uint64_t seed = 1);

// In-neighbours (who sends to `rank`), from the same graph.
std::vector<int> in_neighbours(Topology t, int size, int rank, int degree = 2, std::uint64_t seed = 1);

}  // namespace kevo::mpi
