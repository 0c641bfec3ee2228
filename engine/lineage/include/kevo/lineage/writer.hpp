// LineageWriter: appends every candidate of a run (and run events) to one
// HDF5 file per rank. Records are buffered in memory and written in batches:
//
//   append(candidate)   buffers a row (and its texts, deduplicated)
//   maybe_flush(now)    writes the buffer when flush_records are waiting or
//                       flush_seconds have passed since the last flush
//   flush()             writes the buffer now
//   close() / ~         final flush (retrying a busy file for a while), close
//
// Between flushes the file is CLOSED, so h5py, h5dump and any other reader can
// open it while the run goes on. Each flush opens the file in SWMR-write mode,
// appends (texts first, then rows), and closes it: a process killed with
// SIGKILL leaves a file in which every flush that returned is complete (see
// docs/lineage.md, "Durability"). When a reader holds the file (a file lock),
// the flush fails softly: records stay buffered and the next maybe_flush
// retries, with a warning after repeated failures. Nothing here blocks for
// long or throws on a busy file, except close(), which reports records it
// could not write.
//
// Not thread-safe: one writer per rank, used from one thread at a time
// (check() and library_thread_safe() excepted). The engine's sink may run it
// on a thread of its own (engine/src/lineage_sink.cpp).
#pragma once

#include "kevo/core/candidate.hpp"
#include "kevo/core/error.hpp"
#include "kevo/lineage/schema.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace kevo::lineage {

struct WriterOptions {
  std::size_t flush_records = 256;   // flush when this many rows + events are buffered...
  double flush_seconds = 2.0;        // ...or this long after the last flush
  // How long close() (and the destructor) keep retrying while a reader holds
  // the file, before giving up on the buffered records.
  double close_retry_seconds = 10.0;
  // fsync(2) the file after each flush: also survive a machine crash, at the
  // cost of a disk round trip per flush (a killed process never needs it).
  bool fsync = false;
  // Cap on the number of distinct texts remembered for deduplication (about
  // 48 bytes each); when reached the memory is dropped and dedup starts over.
  std::size_t dedupe_entries = std::size_t{1} << 22;
  // Where warnings go (a busy file, a truncated operator name...). Empty:
  // "kevo: warning: lineage: ..." on stderr.
  std::function<void(const std::string&)> warn;
};

class LineageWriter {
 public:
  using Clock = std::chrono::steady_clock;

  // Creates a new lineage file (its folder too) with the run attributes and
  // the empty datasets. Throws Failure if the file exists or cannot be made.
  static LineageWriter create(const std::filesystem::path& path, const RunInfo& run,
                              WriterOptions options = {});
  // Continues an existing lineage file (resume): clears the status flag a
  // killed writer left, drops rows and texts of its interrupted last flush,
  // and appends after what is there. The caller must know that no other
  // writer has the file. Throws Failure/InputError for a file that is not a
  // kevo lineage file.
  static LineageWriter open_append(const std::filesystem::path& path, WriterOptions options = {});

  // Whether the HDF5 library serialises calls from several threads (built
  // thread-safe): then a writer may work on a thread of its own while other
  // threads use HDF5 too.
  static bool library_thread_safe();

  LineageWriter(LineageWriter&&) noexcept;
  LineageWriter& operator=(LineageWriter&&) noexcept;
  LineageWriter(const LineageWriter&) = delete;
  LineageWriter& operator=(const LineageWriter&) = delete;
  // Flushes (retrying a busy file up to close_retry_seconds) and closes.
  // Never throws; records it could not write are reported through `warn`.
  ~LineageWriter();

  // Throws the Failure append() would throw for a candidate that cannot be
  // recorded (status pending, an unknown status or stage, a task the run does
  // not have, the reserved id). Reads only what is fixed when the writer is
  // made: another thread may call it while the writer's own thread works.
  void check(const Candidate& candidate) const;
  // Buffers one candidate. `origin_rank`: the rank that created it (a
  // migrant keeps its id and origin); default: this file's rank. Throws
  // Failure for a candidate that cannot be final (status pending).
  void append(const Candidate& candidate, std::optional<std::int32_t> origin_rank = std::nullopt);
  // Buffers one event (time 0 = now).
  void append(const Event& event);

  // Flushes when flush_records are buffered or flush_seconds have passed since
  // the last flush (and a busy file's retry delay is over). Returns true when
  // it wrote something. Never throws for a busy or failing file.
  bool maybe_flush(Clock::time_point now = Clock::now());
  // Writes everything buffered now. Returns false (records kept, retried
  // later) when the file could not be written; never throws for that.
  bool flush();
  // Final flush with retries, then the writer is closed (further appends
  // throw). Throws Failure when records could not be written.
  void close();

  const std::filesystem::path& path() const;
  std::int32_t rank() const;
  std::uint64_t rows_written() const;     // rows known to be in the file (flushed)
  std::uint64_t events_written() const;
  std::size_t rows_buffered() const;
  std::size_t events_buffered() const;
  std::uint64_t texts_written() const;    // elements in /text (distinct texts)
  std::uint64_t flushes() const;          // successful flushes
  std::uint64_t failed_flushes() const;   // attempts that found the file busy or failing
  std::string last_error() const;         // message of the last failed attempt ("" if none)

 private:
  struct Impl;
  explicit LineageWriter(std::unique_ptr<Impl>);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevo::lineage
