// migration_history: what a resumed run learns from the rank files about the
// migration before it (docs/islands.md#checkpoint-and-resume). Three rank
// files written with LineageWriter, as a killed 3-rank run leaves them.
#include "kevo/mpi/network.hpp"

#include "../core/test_util.hpp"

#include "kevo/lineage/reader.hpp"
#include "kevo/lineage/writer.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

using namespace kevo;
using namespace kevo::lineage;

namespace {

Candidate candidate(std::uint64_t id, Status status) {
  Candidate c;
  c.id = id;
  c.op = "param_mutation";
  c.source = "// candidate " + std::to_string(id) + "\n";
  c.verdict.status = status;
  c.verdict.speedup = status == Status::correct ? 1.0 + static_cast<double>(id) : 0.0;
  return c;
}

LineageWriter file(const std::filesystem::path& run_dir, int rank) {
  RunInfo run;
  run.tasks = {"toy"};
  run.rank = rank;
  run.nranks = 3;
  return LineageWriter::create(run_dir / "lineage" / rank_file_name(rank), run);
}

// Rank 0 made 0 (correct) and 3 (wrong), sent 0 to rank 1 and has 1 from
// rank 1. Rank 1 made 1, has 0 from rank 0, sent 1 to rank 0 and to rank 2;
// rank 2 was killed before it recorded 1 (only the departure says so).
void write_run(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir / "lineage");
  auto w0 = file(dir, 0);
  w0.append(candidate(0, Status::correct));
  w0.append(candidate(3, Status::wrong_answer));
  w0.append(Event{EventKind::migration_out, 0.0, 0, 0, 1, ""});
  w0.append(candidate(1, Status::correct), 1);
  w0.append(Event{EventKind::migration_in, 0.0, 1, 1, 0, ""});
  w0.close();
  auto w1 = file(dir, 1);
  w1.append(candidate(1, Status::correct));
  w1.append(candidate(0, Status::correct), 0);
  w1.append(Event{EventKind::migration_in, 0.0, 0, 0, 1, ""});
  w1.append(Event{EventKind::migration_out, 0.0, 1, 1, 0, ""});
  w1.append(Event{EventKind::migration_out, 0.0, 1, 1, 2, ""});
  w1.close();
  auto w2 = file(dir, 2);
  w2.append(candidate(2, Status::correct));
  w2.close();
}

}  // namespace

TEST(MigrationHistory, ReachedFromMigrantRowsAndMigrationEvents) {
  kevo::test::TempDir dir;
  write_run(dir.path());
  const auto h = mpi::migration_history(read_run_dir(dir.path()), 1);
  // Rank 2 never recorded 1, but rank 1's departure to it counts: it is not
  // sent there again. An origin's own row is no arrival (a migrant may still
  // come home once, as an event).
  const std::set<std::pair<std::uint64_t, int>> want{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 2}};
  EXPECT_EQ(h.reached, want);
}

TEST(MigrationHistory, OriginsAreTheRanksOfTheOriginRows) {
  kevo::test::TempDir dir;
  write_run(dir.path());
  const auto h = mpi::migration_history(read_run_dir(dir.path()), 2);
  // Only correct candidates migrate: the wrong one (3) needs no origin.
  const std::unordered_map<std::uint64_t, int> want{{0, 0}, {1, 1}, {2, 2}};
  EXPECT_EQ(h.origins, want);
}

TEST(MigrationHistory, RecordedIsWhatThisRanksFileHolds) {
  kevo::test::TempDir dir;
  write_run(dir.path());
  const auto reader = read_run_dir(dir.path());
  EXPECT_EQ(mpi::migration_history(reader, 0).recorded, (std::unordered_set<std::uint64_t>{0, 1}));
  EXPECT_EQ(mpi::migration_history(reader, 1).recorded, (std::unordered_set<std::uint64_t>{0, 1}));
  EXPECT_EQ(mpi::migration_history(reader, 2).recorded, (std::unordered_set<std::uint64_t>{2}));
  // A rank the run did not have before holds nothing.
  EXPECT_TRUE(mpi::migration_history(reader, 3).recorded.empty());
}
