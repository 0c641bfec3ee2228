// LineageReader: a snapshot of one lineage file. open() reads the run
// attributes, every row and every event in one short visit and closes the
// file again, so a reader never keeps a running writer out; texts are read on
// demand (again a short visit each call, batched).
//
// It opens files in every state a run leaves them in: closed between two
// flushes, in the middle of a flush (SWMR read), after the writer was killed
// (status flag still set: no need for h5clear), and it retries for a while
// when the writer holds the file for a moment. Rows of an interrupted flush
// that were never written are skipped (counted in skipped_rows()).
#pragma once

#include "kevo/core/candidate.hpp"
#include "kevo/core/error.hpp"
#include "kevo/lineage/schema.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace kevo::lineage {

struct ReaderOptions {
  // Keep retrying an open that fails because the writer holds the file (or
  // has just created it) for this long, then throw.
  double busy_timeout_seconds = 10.0;
};

class LineageReader {
 public:
  // Throws InputError when `path` is missing or not a kevo lineage file, and
  // Failure when it stays unreadable for busy_timeout_seconds.
  static LineageReader open(const std::filesystem::path& path, ReaderOptions options = {});

  const std::filesystem::path& path() const { return path_; }
  const RunInfo& run() const { return run_; }
  const std::vector<Row>& rows() const { return rows_; }   // in file (append) order
  const std::vector<Event>& events() const { return events_; }
  // The rank whose file held each event (parallel to events()): this file's
  // rank, or, in a merged file (kevo merge), the /event_rank column.
  const std::vector<std::int32_t>& event_ranks() const { return event_ranks_; }
  std::uint64_t text_count() const { return text_count_; }
  // Rows and events the file holds but that were never written (an
  // interrupted flush of a killed writer).
  std::uint64_t skipped_rows() const { return skipped_rows_; }
  std::uint64_t skipped_events() const { return skipped_events_; }
  // The superblock said a writer had the file open (a flush in progress, or a
  // writer that was killed); the snapshot was taken in SWMR-read mode.
  bool writer_flag_set() const { return writer_flag_set_; }

  // The row of candidate `id` (the last one when a migrant appears twice), or nullptr.
  const Row* find(std::uint64_t id) const;

  // Texts by reference (kNoText gives ""); one file visit per call.
  std::string text(std::int64_t ref) const;
  std::vector<std::string> texts(std::span<const std::int64_t> refs) const;

  // A row as a kevo::Candidate with every text resolved (point stays empty:
  // params_json carries it). Batch form: one file visit for all rows.
  Candidate candidate(const Row& row) const;
  std::vector<Candidate> candidates(std::span<const Row> rows) const;
  // The row's own fields (ids, operator, hash, times, verdict figures)
  // without its texts, for readers that need few or none of them (a resume
  // reads only the sources of the history).
  static Candidate without_texts(const Row& row);

 private:
  LineageReader() = default;
  std::filesystem::path path_;
  ReaderOptions options_;
  RunInfo run_;
  std::vector<Row> rows_;
  std::vector<Event> events_;
  std::vector<std::int32_t> event_ranks_;
  std::uint64_t text_count_ = 0;
  std::uint64_t skipped_rows_ = 0;
  std::uint64_t skipped_events_ = 0;
  bool writer_flag_set_ = false;
};

// Every RUN_DIR/lineage/rank-*.h5, in rank order. Throws InputError when the
// folder has none. `run_dir` may also name one lineage file (a merged file
// from `kevo merge`, or a single rank's file): then that file alone.
std::vector<LineageReader> read_run_dir(const std::filesystem::path& run_dir, ReaderOptions options = {});

// Makes a lineage file of a killed writer readable by every tool again
// (h5dump, h5py without SWMR): clears the superblock's status flag and drops
// the unwritten rows and texts of an interrupted flush. Only when no writer is
// running. Returns false when the file needed nothing.
bool recover(const std::filesystem::path& path);

}  // namespace kevo::lineage
