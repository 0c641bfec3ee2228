// Exhaustive measurement for the search-efficiency benchmark: every valid
// point of a task's search space, made from the seed source, judged by a real
// backend (the CPU backend), keeping the candidate's median time per point.
//
// The result is the timing table the null backend replays
// ({"task": {"KEY": seconds, ...}}, see docs/config.md#null-backend), plus a
// sidecar with what the table itself cannot say (incorrect points, how and
// where it was measured), so that a re-run can tell a complete table from a
// stale one.
#pragma once

#include "kevo/core/backend.hpp"
#include "kevo/core/task.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>

namespace kevo::bench {

struct TaskTable {
  std::map<std::string, double> seconds;        // point key -> candidate median time (s), correct points only
  std::map<std::string, std::string> incorrect; // point key -> "status: message" (should stay empty)
  nlohmann::json info = nlohmann::json::object(); // how and where it was measured (backend options, host, date, rounds)
};

struct MeasureOptions {
  int rounds = 1;             // judge every point this often (each round in its own random order); keep the minimum
  std::uint64_t seed = 1;     // orders the rounds and seeds the inputs
  int attempts = 3;           // judgings of a point whose verdict is internal_error (kevo's failure, not the kernel's)
  double progress_seconds = 15.0;
};

// Judges every valid point of `task`'s space through `backend` (which must
// accept the task: prepare() is called here). Progress lines go to `log`.
// Throws Failure when the space is empty or too large to enumerate.
TaskTable measure_task(Backend& backend, const std::shared_ptr<const Task>& task, const MeasureOptions& options,
                       std::ostream& log);

// The table file and its sidecar (TABLE with ".meta.json" appended, holding
// each task's `incorrect` and `info`).
using TableFile = std::map<std::string, TaskTable>;   // task name -> table

std::filesystem::path meta_path(const std::filesystem::path& table);
// Reads TABLE and, when present, its sidecar. Throws InputError naming the
// file and key on malformed content.
TableFile read_table(const std::filesystem::path& table);
// Writes both files (each through a temporary file renamed into place, so an
// interrupted write never leaves a truncated table).
void write_table(const std::filesystem::path& table, const TableFile& file);

// A hash of what a task's timings depend on: the seed source (every point's
// body), the arguments, the visible shapes and the search space. Changes of
// tolerance or description leave it alone.
std::string task_fingerprint(const Task& task);

// Why a stored table does not match the task's current space ("" when it
// does): every valid point must be either timed or recorded as incorrect
// (an internal_error of kevo's own does not count: the point is measured
// again), no key may name a point outside the space, and the task's
// fingerprint must match the one recorded (when one is).
std::string stale_reason(const Task& task, const TaskTable& table);

}  // namespace kevo::bench
