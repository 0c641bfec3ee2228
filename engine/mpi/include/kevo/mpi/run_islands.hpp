// `kevo run` and `kevo resume` over MPI (docs/islands.md). Every rank is an
// island; a process started without mpirun/srun is a world of one rank and
// behaves exactly as the single-island engine.
//
//   0. Every rank binds its device (islands.device_binding) from the config's
//      islands section before anything of the backend is built, so that the
//      task preparation, the baselines and the workers all run on it.
//   1. Rank 0 reads the config, applies --set, validates it (and the tasks)
//      and creates the run directory; then it broadcasts the outcome. A bad
//      config stops every rank with one error from rank 0 (exit 2) and
//      leaves nothing behind.
//   2. Ranks are split into task groups (MPI_Comm_split): with T tasks and N
//      ranks, G = min(T, N) groups; rank r works on the tasks t with
//      t mod G == r mod G. Migration stays inside a group.
//   3. Ids: base + k * N + r for the k-th candidate of rank r: unique across
//      ranks; base is 0 for a fresh run and above every id ever used or
//      reserved for a resumed one.
//   4. Each rank writes RUN_DIR/lineage/rank-NNNN.h5 and
//      RUN_DIR/checkpoint/rank-NNNN.json; rank 0 writes best/ and
//      report.json once every rank is done.
#pragma once

#include "kevo/engine/config.hpp"
#include "kevo/engine/lifecycle.hpp"
#include "kevo/engine/progress.hpp"
#include "kevo/mpi/mpi.hpp"

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

namespace kevo::mpi {

// What the command line asked for (config or resume_dir, --set, --out).
struct IslandsRunArgs : engine::RunRequest {
  // The signal that asked the run to stop, for the stop line and the checkpoint.
  const engine::StopSignal* stop_signal = nullptr;
};

struct IslandsRunResult {
  int exit_code = 0;
  bool printed = false;                // rank 0 printed the table
};

// Runs the whole thing on every rank. Returns the process exit code; input
// errors are reported once (by rank 0) and give 2 on every rank.
int run_islands(Environment& env, const engine::Plugins& plugins, const IslandsRunArgs& args,
                const std::atomic<int>& stop);

// The local rank on this node: OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, or
// the rank in `node` (world.split_shared(), MPI_COMM_TYPE_SHARED).
int local_rank(const Comm& node);

}  // namespace kevo::mpi
