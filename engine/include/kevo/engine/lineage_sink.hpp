// The island's lineage sink backed by the HDF5 lineage writer.
#pragma once

#include "kevo/engine/island.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kevo::engine {

struct RunAttributes {
  nlohmann::json config;                 // effective config
  nlohmann::json tasks;                  // array of task manifests (as read)
  std::vector<std::string> task_names;   // index -> name
  std::uint64_t seed = 0;
  std::string host;
  double start_time = 0.0;
  int rank = 0;
  int ranks = 1;
  // Multi-rank runs: every file names all the run's tasks (task_names) and
  // rows carry the run-wide task index; task_map[i] is the run-wide index of
  // the island's task i (empty: identity).
  std::vector<std::uint32_t> task_map;
  // Resume: continue the file if it exists (a "resume" event instead of "start").
  bool append = false;
};

// `background`: the writer works on a thread of its own when the HDF5
// library is thread-safe (the island's thread only hands records over);
// false, or a library that is not, writes on the caller's thread. The file
// is the same either way.
std::unique_ptr<LineageSink> open_hdf5_sink(const std::filesystem::path& file, const RunAttributes& attrs,
                                            int flush_records, double flush_seconds, bool background = true);

}  // namespace kevo::engine
