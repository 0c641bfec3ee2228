#include "kevo/engine/checkpoint.hpp"

#include "kevo/engine/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace kevo::engine {
namespace fs = std::filesystem;

namespace {

double steady() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

fs::path checkpoint_file(const fs::path& run_dir, int rank) {
  return run_dir / "checkpoint" / fmt::format("rank-{:04d}.json", rank);
}

CheckpointHook::CheckpointHook(fs::path file, int rank, int ranks, std::uint64_t stride, double period,
                               std::vector<std::string> task_names, std::vector<std::uint32_t> task_map,
                               IslandHook* inner)
    : file_(std::move(file)), rank_(rank), ranks_(ranks), stride_(stride), period_(period),
      names_(std::move(task_names)), map_(std::move(task_map)), inner_(inner) {}

int CheckpointHook::poll(Island& island) {
  int level = inner_ ? inner_->poll(island) : 0;
  for (const auto& b : budgets)
    if (stop_reason.empty() && b->exhausted() && b->stop_when_exhausted()) {
      stop_reason = b->summary();
      island.record_event(LineageSink::EventKind::note, -1, rank_, -1, "stop: " + stop_reason);
    }
  if (!stop_reason.empty()) level = std::max(level, 1);
  if (island.next_id() + stride_ * (kReserveAhead / 4) > reserved_ || steady() - last_ >= period_)
    write(island, false, level > 0);
  return level;
}

void CheckpointHook::write(Island& island, bool final, bool stopped) {
  reserved_ = island.next_id() + stride_ * kReserveAhead;
  last_ = steady();
  nlohmann::json in_flight = nlohmann::json::array();
  for (const auto& [id, task] : island.in_flight_ids())
    in_flight.push_back({{"id", id}, {"task", names_.at(map_.empty() ? task : map_.at(task))}});
  nlohmann::json j = {{"format", "kevo-checkpoint/1"}, {"rank", rank_},       {"ranks", ranks_},
                      {"next_id", island.next_id()},   {"id_stride", stride_}, {"reserved_id", reserved_},
                      {"in_flight", in_flight},        {"time", unix_now()},   {"final", final},
                      {"stopped", stopped}};
  if (final && !extra.empty()) j["costs"] = extra;
  if (final && !signal.is_null()) j["signal"] = signal;
  write_file(file_, j.dump(1) + "\n");
  island.record_event(LineageSink::EventKind::checkpoint, static_cast<std::int64_t>(island.next_id()), rank_, -1,
                      final ? "final" : "");
}

}  // namespace kevo::engine
