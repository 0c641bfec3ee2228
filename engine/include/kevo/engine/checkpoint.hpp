// RUN_DIR/checkpoint/rank-NNNN.json: what a killed rank cannot flush any
// more, written atomically by the island's hook (docs/islands.md#checkpoint-and-resume):
// the id reservation (so a resumed run never hands out an id twice) and the
// ids in flight (recorded as lost on resume).
#pragma once

#include "kevo/core/shared_budget.hpp"
#include "kevo/engine/island.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kevo::engine {

std::filesystem::path checkpoint_file(const std::filesystem::path& run_dir, int rank);

// Ids reserved ahead by a checkpoint (in units of the id stride): a resumed
// run starts above every reservation, so an id created after the last
// flush and lost with the process is never handed out again either.
inline constexpr std::uint64_t kReserveAhead = 1 << 16;

// Writes the checkpoint every `period` seconds and whenever the id
// reservation runs low; wraps the hook of a multi-rank run (`inner`, the
// network; null for one rank). A shared plugin budget (LLM tokens/USD)
// spent for the whole run stops the run like a signal: drain, record,
// resumable.
class CheckpointHook final : public IslandHook {
 public:
  CheckpointHook(std::filesystem::path file, int rank, int ranks, std::uint64_t stride, double period,
                 std::vector<std::string> task_names, std::vector<std::uint32_t> task_map, IslandHook* inner);

  int poll(Island& island) override;
  // The checkpoint now; `final` at the end of the session, `stopped` when a
  // stop (signal, budget, lost rank) ended it.
  void write(Island& island, bool final, bool stopped);

  nlohmann::json extra = nlohmann::json::object();   // added to the final checkpoint (costs)
  nlohmann::json signal;                              // the stop signal and its arrival, in the final one
  std::vector<std::shared_ptr<SharedBudget>> budgets;
  std::string stop_reason;                            // the budget that stopped the run, "" = none

 private:
  std::filesystem::path file_;
  int rank_, ranks_;
  std::uint64_t stride_;
  double period_;
  std::vector<std::string> names_;
  std::vector<std::uint32_t> map_;
  IslandHook* inner_;
  std::uint64_t reserved_ = 0;
  double last_ = -1e18;
};

}  // namespace kevo::engine
