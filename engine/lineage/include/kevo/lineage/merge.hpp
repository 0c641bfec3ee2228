// merge_run: one lineage file holding every rank's records of a run (the
// engine of `kevo merge RUN_DIR -o FILE`).
//
// The merged file has the format of a rank's file (kevo-lineage/1), so every
// reader of lineage files reads it, kevo's LineageReader included:
//   /candidates  every written row of every rank file, rank columns kept
//   /events      every written event, plus /event_rank (i32, one per event:
//                the rank whose file held it; start, stop, note... carry no
//                rank of their own)
//   /text        one table; every text reference remapped, equal texts once
//   /tasks       the run's task names (rows' task indexes remapped if rank
//                files ever disagree)
//   attributes   those of the lowest rank's file, with rank = -1 ("all
//                ranks"), nranks = number of rank files, start_time = the
//                earliest, merged_from (JSON array of the source file names)
//                and merged_time.
//
// Rank files are read with LineageReader, so the reader's recovery rules
// apply: a live run's files are read between flushes, a killed writer's file
// without h5clear, rows of an interrupted flush are skipped. The result is
// written under a temporary name next to `out` and renamed into place, so
// `out` is either absent, the old file, or complete.
#pragma once

#include "kevo/lineage/reader.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>

namespace kevo::lineage {

struct MergeOptions {
  bool force = false;              // replace an existing `out`
  ReaderOptions reader;
  // Checked between steps: when it becomes non-zero the merge stops, removes
  // its temporary file and throws Failure ("interrupted").
  const std::atomic<int>* stop = nullptr;
};

struct MergeResult {
  std::uint64_t files = 0, rows = 0, events = 0, texts = 0;
  std::uint64_t skipped_rows = 0, skipped_events = 0;   // unwritten rows of interrupted flushes
};

// Throws InputError (naming the path) for a run directory without lineage
// files, an unreadable or foreign rank file, or an existing `out` without
// `force`; Failure for a failed write.
MergeResult merge_run(const std::filesystem::path& run_dir, const std::filesystem::path& out,
                      const MergeOptions& options = {});

}  // namespace kevo::lineage
