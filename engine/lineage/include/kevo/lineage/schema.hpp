// The lineage file format "kevo-lineage/1" (documented field by field in
// docs/lineage.md). One HDF5 file per rank:
//
//   /candidates  compound Row, one per candidate, chunked, unlimited, append-only
//   /events      compound EventRow (start, stop, migration...), chunked, unlimited
//   /text        variable-length UTF-8 strings; rows refer to them by index
//   /tasks       task names; Row::task indexes it
//   attributes on "/": format, kevo_version, config, task_manifests, seed,
//                      host, start_time, rank, nranks
//
// Rows are fixed-layout so that readers (h5py, pandas, h5dump, a SWMR reader
// following a live run) get a plain table; variable text lives in /text.
#pragma once

#include "kevo/core/verdict.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kevo::lineage {

inline constexpr std::string_view kFormat = "kevo-lineage/1";

// A text reference: an index into /text, or kNoText.
inline constexpr std::int64_t kNoText = -1;

// Bytes of the fixed-length operator name field: UTF-8, NUL-terminated, so at
// most kOpBytes - 1 bytes of name (a longer name is cut at a character
// boundary, with a warning).
inline constexpr std::size_t kOpBytes = 32;

// The id of a row that was allocated but never written (the dataset's fill
// value). Only an interrupted flush of a killed writer leaves such rows;
// readers skip them.
inline constexpr std::uint64_t kUnwrittenId = std::numeric_limits<std::uint64_t>::max();

// One candidate, as stored in /candidates. Field order is the column order
// readers see.
struct Row {
  std::uint64_t id = kUnwrittenId;
  std::uint32_t task = 0;             // index into /tasks
  char op[kOpBytes] = {};             // operator name, NUL-terminated
  Status status = Status::pending;    // HDF5 enum (names as in docs/verdicts.md)
  Stage stage = Stage::none;          // HDF5 enum
  bool compile_cached = false;        // HDF5 enum {FALSE, TRUE} (numpy bool in h5py)
  std::int64_t parent0 = -1;          // -1 = none
  std::int64_t parent1 = -1;
  std::int64_t duplicate_of = -1;
  std::uint64_t hash = 0;             // normalised-source hash
  std::uint64_t eval_seed = 0;
  std::int32_t rank = 0;              // rank whose file holds the row
  std::int32_t origin_rank = 0;       // rank that created the candidate (a migrant keeps its id)
  // Text references into /text (kNoText when empty).
  std::int64_t message = kNoText;
  std::int64_t params = kNoText;      // search-space point as JSON
  std::int64_t source = kNoText;
  std::int64_t compile_log = kNoText;
  std::int64_t feedback = kNoText;
  std::int64_t output_tail = kNoText;
  std::int64_t mismatch = kNoText;    // JSON object, as in the verdict JSON
  std::int64_t op_note = kNoText;     // operator's remark or failure reason
  double slot_seconds = 0.0;          // exclusive timing-slot time (CUDA)
  std::int64_t profile = kNoText;     // profiler summary (CUDA: ncu), if any
  std::int64_t device = kNoText;      // accelerator that judged it, if any
  // Timings (seconds / nanoseconds as named).
  double compile_seconds = 0.0;
  double worker_seconds = 0.0;
  double cand_median_ns = 0.0;
  double cand_iqr_ns = 0.0;
  double ref_median_ns = 0.0;
  double ref_iqr_ns = 0.0;
  std::int32_t repeats = 0;
  double speedup = 0.0;
  // Errors and the worker process.
  double max_abs_error = 0.0;
  double rel_l2_error = 0.0;
  std::int32_t exit_code = 0;
  std::int32_t signal = 0;
  std::int64_t max_rss_kb = 0;
  // Unix seconds.
  double t_created = 0.0;
  double t_submitted = 0.0;
  double t_finished = 0.0;

  std::string_view op_name() const;   // op up to its NUL
  bool written() const { return id != kUnwrittenId && status != Status::pending; }
};
static_assert(std::is_standard_layout_v<Row>, "Row is described to HDF5 by member offsets");
static_assert(sizeof(Status) == 1 && sizeof(Stage) == 1 && sizeof(bool) == 1);

enum class EventKind : std::uint8_t {
  start = 0,          // a writer began (a fresh run)
  stop = 1,           // the run ended normally
  resume = 2,         // a run continued from its checkpoint
  migration_in = 3,   // candidate `id` arrived from `from_rank`
  migration_out = 4,  // candidate `id` was sent to `to_rank`
  checkpoint = 5,
  note = 6,           // free text
  llm = 7,            // one LLM request made for candidate `id`; text is its JSON record
};
inline constexpr int kEventKindCount = 8;
std::string_view to_string(EventKind);

// One event, as stored in /events.
struct EventRow {
  double time = -1.0;                 // Unix seconds; < 0 marks an unwritten row
  EventKind kind = EventKind::note;
  std::int64_t id = -1;               // candidate id, -1 = none
  std::int32_t from_rank = -1;
  std::int32_t to_rank = -1;
  std::int64_t text = kNoText;        // reference into /text
  bool written() const { return time >= 0.0 && static_cast<int>(kind) < kEventKindCount; }
};
static_assert(std::is_standard_layout_v<EventRow>, "EventRow is described to HDF5 by member offsets");

// An event as the API takes and returns it (text resolved).
struct Event {
  EventKind kind = EventKind::note;
  double time = 0.0;                  // Unix seconds; 0 = "now" when appended
  std::int64_t id = -1;
  std::int32_t from_rank = -1;
  std::int32_t to_rank = -1;
  std::string text;
  bool operator==(const Event&) const = default;
};

// The run attributes of a lineage file.
struct RunInfo {
  std::string config_json = "{}";       // effective config
  std::string task_manifests_json = "[]";  // JSON array, one manifest per task, in task order
  std::vector<std::string> tasks;       // task names; Row::task indexes this
  std::string kevo_version;             // "" = this build's version
  std::uint64_t seed = 0;
  std::string host;                     // "" = this machine's host name
  double start_time = 0.0;              // Unix seconds; 0 = now
  std::int32_t rank = 0;
  std::int32_t nranks = 1;
  std::string format;                   // filled when read; the writer writes kFormat
};

// The file of rank `rank` inside a run directory: RUN_DIR/lineage/rank-0000.h5.
std::string rank_file_name(int rank);

// Texts are written as sanitize_utf8(text, kStoredText) (kevo/core/text.hpp):
// valid UTF-8 without NUL bytes (HDF5 strings end at NUL, and h5py decodes
// strictly).

}  // namespace kevo::lineage
