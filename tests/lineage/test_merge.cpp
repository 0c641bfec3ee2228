// merge_run (kevo merge): the merged file is an ordinary lineage file holding
// every rank file's rows and events, texts resolved to the same strings,
// rank columns kept; it refuses bad input and existing files and never
// leaves a partial file behind.
#include "kevo/lineage/merge.hpp"
#include "kevo/lineage/writer.hpp"
#include "lineage_test_util.hpp"

#include <fstream>
#include <atomic>
#include <map>
#include <set>

using namespace kevo::lineage;
using kevo_test::make_candidate;
using kevo_test::TempDir;

namespace {

// Two rank files: rank 1 also holds a migrant from rank 0 (same id, same
// source text, origin_rank 0), and each has events.
void write_run(const std::filesystem::path& run_dir) {
  for (int rank = 0; rank < 2; ++rank) {
    auto w = LineageWriter::create(run_dir / "lineage" / rank_file_name(rank), kevo_test::make_run(rank, 2));
    w.append(Event{EventKind::start, 1.75e9 + rank, -1, -1, -1, "rank " + std::to_string(rank) + " started"});
    for (std::uint64_t k = 0; k < 40; ++k) w.append(make_candidate(k * 2 + static_cast<std::uint64_t>(rank)));
    if (rank == 1) {
      w.append(make_candidate(4), 0);
      w.append(Event{EventKind::migration_in, 1.75e9 + 5, 4, 0, 1, ""});
    } else {
      w.append(Event{EventKind::migration_out, 1.75e9 + 4, 4, 0, 1, ""});
    }
    w.close();
  }
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool has_temp_file(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(LineageMerge, HoldsEveryRowAndEventOfEveryRank) {
  TempDir dir;
  write_run(dir.path());
  const auto out = dir / "merged.h5";
  const MergeResult m = merge_run(dir.path(), out);
  EXPECT_EQ(m.files, 2u);
  EXPECT_EQ(m.rows, 81u);
  EXPECT_EQ(m.events, 4u);
  EXPECT_FALSE(has_temp_file(dir.path()));

  const LineageReader merged = LineageReader::open(out);
  EXPECT_EQ(merged.run().rank, -1);
  EXPECT_EQ(merged.run().nranks, 2);
  EXPECT_EQ(merged.run().tasks, kevo_test::make_run().tasks);
  ASSERT_EQ(merged.rows().size(), 81u);
  ASSERT_EQ(merged.event_ranks().size(), merged.events().size());

  // Same rows with the same resolved texts, rank for rank.
  std::map<std::pair<std::uint64_t, int>, kevo::Candidate> want;
  for (const auto& r : read_run_dir(dir.path())) {
    const auto cands = r.candidates(r.rows());
    for (std::size_t i = 0; i < cands.size(); ++i) want.emplace(std::make_pair(cands[i].id, r.rows()[i].rank), cands[i]);
    for (std::size_t i = 0; i < r.events().size(); ++i) EXPECT_EQ(r.event_ranks()[i], r.run().rank);
  }
  const auto got = merged.candidates(merged.rows());
  std::size_t migrants = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const Row& row = merged.rows()[i];
    const auto it = want.find({row.id, row.rank});
    ASSERT_NE(it, want.end()) << "row " << row.id << " of rank " << row.rank;
    kevo_test::expect_same(it->second, got[i]);
    if (row.origin_rank != row.rank) {
      ++migrants;
      EXPECT_EQ(row.id, 4u);
      EXPECT_EQ(row.origin_rank, 0);
      EXPECT_EQ(row.rank, 1);
    }
  }
  EXPECT_EQ(migrants, 1u);
  // The migrant's texts (equal in both files) are stored once.
  EXPECT_EQ(merged.find(4)->source, [&] {
    for (const Row& r : merged.rows())
      if (r.id == 4 && r.rank == 0) return r.source;
    return kNoText;
  }());

  std::multiset<std::pair<int, std::string>> events;
  for (std::size_t i = 0; i < merged.events().size(); ++i)
    events.emplace(merged.event_ranks()[i], std::string(to_string(merged.events()[i].kind)) + ":" + merged.events()[i].text);
  const std::multiset<std::pair<int, std::string>> want_events = {
      {0, "start:rank 0 started"}, {0, "migration_out:"}, {1, "start:rank 1 started"}, {1, "migration_in:"}};
  EXPECT_EQ(events, want_events);

  // read_run_dir also takes the merged file itself.
  const auto one = read_run_dir(out);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.front().rows().size(), 81u);
}

TEST(LineageMerge, RefusesAnExistingFileUnlessForced) {
  TempDir dir;
  write_run(dir.path());
  const auto out = dir / "merged.h5";
  {
    std::ofstream(out) << "keep me";
  }
  EXPECT_THROW(merge_run(dir.path(), out), kevo::InputError);
  EXPECT_EQ(slurp(out), "keep me");
  EXPECT_FALSE(has_temp_file(dir.path()));
  MergeOptions force;
  force.force = true;
  merge_run(dir.path(), out, force);
  EXPECT_EQ(LineageReader::open(out).rows().size(), 81u);
}

TEST(LineageMerge, BadInputNamesThePathAndWritesNothing) {
  TempDir dir;
  const auto out = dir / "merged.h5";
  try {
    merge_run(dir / "missing", out);
    FAIL() << "no error";
  } catch (const kevo::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(merge_run(dir.path(), out), kevo::InputError);   // no lineage folder
  write_run(dir / "run");
  {
    std::ofstream bad(dir / "run/lineage/rank-0001.h5", std::ios::trunc);
    bad << "not an HDF5 file";
  }
  try {
    merge_run(dir / "run", out);
    FAIL() << "no error";
  } catch (const kevo::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rank-0001.h5"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(has_temp_file(dir.path()));
}

TEST(LineageMerge, AStopRequestLeavesNothingBehind) {
  TempDir dir;
  write_run(dir.path());
  const auto out = dir / "merged.h5";
  std::atomic<int> stop{1};
  MergeOptions options;
  options.stop = &stop;
  EXPECT_THROW(merge_run(dir.path(), out, options), kevo::Failure);
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(has_temp_file(dir.path()));
}
