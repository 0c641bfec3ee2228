// When records reach the file: the flush policy (N records or T seconds), the
// destructor, and a reader that holds the file (records wait, nothing lost).
#include "kevo/lineage/reader.hpp"
#include "kevo/lineage/writer.hpp"
#include "lineage_test_util.hpp"

#include <chrono>
#include <optional>
#include <thread>

using namespace kevo::lineage;
using kevo_test::make_candidate;
using kevo_test::TempDir;
using Clock = LineageWriter::Clock;

namespace {
std::size_t rows_on_disk(const std::filesystem::path& p) { return LineageReader::open(p).rows().size(); }
}  // namespace

TEST(LineageFlush, AfterNRecordsAndNotBefore) {
  TempDir dir;
  const auto path = dir / "l.h5";
  WriterOptions opt;
  opt.flush_records = 10;
  opt.flush_seconds = 3600;
  auto w = LineageWriter::create(path, kevo_test::make_run(), opt);
  for (std::uint64_t id = 0; id < 9; ++id) {
    w.append(make_candidate(id));
    EXPECT_FALSE(w.maybe_flush());
  }
  EXPECT_EQ(rows_on_disk(path), 0u) << "appended but not flushed: nothing on disk yet";
  EXPECT_EQ(w.rows_buffered(), 9u);
  w.append(make_candidate(9));
  EXPECT_TRUE(w.maybe_flush());
  EXPECT_EQ(rows_on_disk(path), 10u);
  EXPECT_EQ(w.rows_buffered(), 0u);
  EXPECT_EQ(w.rows_written(), 10u);
  // Events count towards N as well.
  for (int i = 0; i < 9; ++i) w.append(Event{EventKind::note, 0.0, i, -1, -1, "n"});
  EXPECT_FALSE(w.maybe_flush());
  w.append(make_candidate(10));
  EXPECT_TRUE(w.maybe_flush());
  const LineageReader r = LineageReader::open(path);
  EXPECT_EQ(r.rows().size(), 11u);
  EXPECT_EQ(r.events().size(), 9u);
}

TEST(LineageFlush, AfterTSecondsAndNotBefore) {
  TempDir dir;
  const auto path = dir / "l.h5";
  WriterOptions opt;
  opt.flush_records = 1000;
  opt.flush_seconds = 2.0;
  auto w = LineageWriter::create(path, kevo_test::make_run(), opt);
  EXPECT_FALSE(w.maybe_flush(Clock::now() + std::chrono::hours(1))) << "nothing buffered: nothing to do";
  const auto t0 = Clock::now();
  w.append(make_candidate(0));
  w.append(make_candidate(1));
  EXPECT_FALSE(w.maybe_flush(t0 + std::chrono::milliseconds(1500)));
  EXPECT_EQ(rows_on_disk(path), 0u);
  EXPECT_TRUE(w.maybe_flush(t0 + std::chrono::milliseconds(2100)));
  EXPECT_EQ(rows_on_disk(path), 2u);
  // The clock starts again with the next record.
  const auto t1 = Clock::now();
  w.append(make_candidate(2));
  EXPECT_FALSE(w.maybe_flush(t1 + std::chrono::milliseconds(1500)));
  EXPECT_TRUE(w.maybe_flush(t1 + std::chrono::milliseconds(2100)));
  EXPECT_EQ(rows_on_disk(path), 3u);
}

TEST(LineageFlush, ExplicitFlushAndDestructorWriteEverything) {
  TempDir dir;
  const auto path = dir / "l.h5";
  {
    WriterOptions opt;
    opt.flush_records = 1000;
    opt.flush_seconds = 3600;
    auto w = LineageWriter::create(path, kevo_test::make_run(), opt);
    w.append(make_candidate(0));
    EXPECT_TRUE(w.flush());
    EXPECT_EQ(rows_on_disk(path), 1u);
    EXPECT_TRUE(w.flush()) << "an empty flush succeeds";
    w.append(make_candidate(1));
    w.append(make_candidate(2));
    LineageWriter moved = std::move(w);   // ownership moves; nothing is flushed twice
    EXPECT_EQ(moved.rows_buffered(), 2u);
  }
  EXPECT_EQ(rows_on_disk(path), 3u);
}

TEST(LineageFlush, ReaderHoldingTheFileDelaysButLosesNothing) {
  TempDir dir;
  const auto path = dir / "l.h5";
  std::vector<std::string> warnings;
  WriterOptions opt;
  opt.flush_records = 1;
  opt.warn = [&](const std::string& m) { warnings.push_back(m); };
  auto w = LineageWriter::create(path, kevo_test::make_run(), opt);
  w.append(make_candidate(0));
  ASSERT_TRUE(w.flush());

  // A plain reader (with a file lock, like h5py's default) keeps the file open.
  kevo_test::Process holder = kevo_test::Process::spawn({KEVO_LINEAGE_CHILD, "hold", path.string(), "1.5"});
  std::string line;
  ASSERT_TRUE(holder.read_line(line, 10000));
  ASSERT_EQ(line, "held");

  w.append(make_candidate(1));
  EXPECT_FALSE(w.flush()) << "the file is locked by the reader";
  EXPECT_EQ(w.rows_buffered(), 1u) << "records stay in memory";
  EXPECT_NE(w.last_error().find("lock"), std::string::npos) << w.last_error();
  // maybe_flush backs off instead of trying on every call.
  w.append(make_candidate(2));
  EXPECT_FALSE(w.maybe_flush());
  const auto failed = w.failed_flushes();
  EXPECT_FALSE(w.maybe_flush());
  EXPECT_EQ(w.failed_flushes(), failed) << "within the retry delay no new attempt is made";
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(w.flush());
  ASSERT_FALSE(warnings.empty()) << "repeated failures are reported";
  EXPECT_NE(warnings[0].find("reader"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("locking=False"), std::string::npos) << warnings[0];

  EXPECT_EQ(holder.wait(), 0);
  EXPECT_TRUE(w.flush());
  EXPECT_EQ(w.rows_written(), 3u);
  w.close();
  const LineageReader r = LineageReader::open(path);
  ASSERT_EQ(r.rows().size(), 3u);
  for (std::uint64_t id = 0; id < 3; ++id) EXPECT_EQ(r.rows()[id].id, id);
}

TEST(LineageFlush, CloseRetriesABusyFileThenReportsWhatIsLost) {
  TempDir dir;
  const auto path = dir / "l.h5";
  WriterOptions opt;
  opt.close_retry_seconds = 0.3;
  opt.warn = [](const std::string&) {};
  auto w = LineageWriter::create(path, kevo_test::make_run(), opt);
  kevo_test::Process holder = kevo_test::Process::spawn({KEVO_LINEAGE_CHILD, "hold", path.string(), "3"});
  std::string line;
  ASSERT_TRUE(holder.read_line(line, 10000));
  w.append(make_candidate(0));
  const auto t0 = Clock::now();
  try {
    w.close();
    FAIL() << "expected Failure";
  } catch (const kevo::Failure& e) {
    EXPECT_NE(std::string(e.what()).find("1 rows"), std::string::npos) << e.what();
  }
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(250)) << "it retried for close_retry_seconds";
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
}

TEST(LineageFlush, CloseWaitsOutAShortReader) {
  TempDir dir;
  const auto path = dir / "l.h5";
  std::optional<kevo_test::Process> holder;   // outlives the writer
  {
    auto w = LineageWriter::create(path, kevo_test::make_run());
    holder.emplace(kevo_test::Process::spawn({KEVO_LINEAGE_CHILD, "hold", path.string(), "0.5"}));
    std::string line;
    ASSERT_TRUE(holder->read_line(line, 10000));
    for (std::uint64_t id = 0; id < 5; ++id) w.append(make_candidate(id));
    EXPECT_FALSE(w.flush());
    // The destructor retries until the reader is gone (within close_retry_seconds).
  }
  EXPECT_EQ(holder->wait(), 0);
  EXPECT_EQ(rows_on_disk(path), 5u);
}
