// What goes into a lineage file comes back out: every field, every status,
// texts (deduplicated), events, run attributes, several ranks.
#include "kevo/lineage/h5.hpp"
#include "kevo/lineage/reader.hpp"
#include "kevo/lineage/writer.hpp"
#include "lineage_test_util.hpp"

#include <fstream>
#include <set>

using namespace kevo::lineage;
using kevo_test::make_candidate;
using kevo_test::TempDir;

TEST(LineageRoundTrip, EveryFieldOfEveryStatusSurvives) {
  TempDir dir;
  const auto path = dir / "lineage/rank-0000.h5";
  const std::uint64_t n = 300;
  std::vector<kevo::Candidate> written;
  {
    WriterOptions opt;
    opt.flush_records = 64;
    auto w = LineageWriter::create(path, kevo_test::make_run(), opt);
    w.append(Event{EventKind::start, 1.75e9, -1, -1, -1, "run started ✓"});
    for (std::uint64_t id = 0; id < n; ++id) {
      written.push_back(make_candidate(id));
      w.append(written.back(), id % 10 == 3 ? std::optional<std::int32_t>(5) : std::nullopt);
      w.maybe_flush();
    }
    w.append(Event{EventKind::migration_in, 1.75e9 + 1, 42, 5, 0, ""});
    w.append(Event{EventKind::stop, 1.75e9 + 2, -1, -1, -1, "budget spent"});
    w.close();
    EXPECT_EQ(w.rows_written(), n);
    EXPECT_EQ(w.events_written(), 3u);
  }
  const LineageReader r = LineageReader::open(path);
  ASSERT_EQ(r.rows().size(), n);
  EXPECT_EQ(r.skipped_rows(), 0u);
  EXPECT_FALSE(r.writer_flag_set());
  const std::vector<kevo::Candidate> got = r.candidates(r.rows());
  std::set<int> statuses;
  for (std::uint64_t i = 0; i < n; ++i) {
    kevo_test::expect_same(written[i], got[i]);
    const Row& row = r.rows()[i];
    EXPECT_EQ(row.rank, 0);
    EXPECT_EQ(row.origin_rank, i % 10 == 3 ? 5 : 0);
    statuses.insert(static_cast<int>(row.status));
  }
  EXPECT_EQ(statuses.size(), 11u) << "every final status is covered";

  // Identical texts are stored once: a duplicate's source is its original's.
  for (const Row& row : r.rows()) {
    if (row.status != kevo::Status::duplicate) continue;
    const Row* original = r.find(static_cast<std::uint64_t>(row.duplicate_of));
    ASSERT_NE(original, nullptr);
    EXPECT_EQ(row.source, original->source);
    EXPECT_NE(row.source, kNoText);
  }
  EXPECT_LT(r.text_count(), n * 4) << "feedback, params and sources are deduplicated";
  const Row& invalid = *std::find_if(r.rows().begin(), r.rows().end(),
                                     [](const Row& x) { return x.status == kevo::Status::invalid; });
  EXPECT_EQ(invalid.source, kNoText);
  EXPECT_NE(invalid.op_note, kNoText);

  ASSERT_EQ(r.events().size(), 3u);
  EXPECT_EQ(r.events()[0], (Event{EventKind::start, 1.75e9, -1, -1, -1, "run started ✓"}));
  EXPECT_EQ(r.events()[1], (Event{EventKind::migration_in, 1.75e9 + 1, 42, 5, 0, ""}));
  EXPECT_EQ(r.events()[2].kind, EventKind::stop);

  const RunInfo want = kevo_test::make_run();
  EXPECT_EQ(r.run().format, kFormat);
  EXPECT_EQ(r.run().config_json, want.config_json);
  EXPECT_EQ(r.run().task_manifests_json, want.task_manifests_json);
  EXPECT_EQ(r.run().tasks, want.tasks);
  EXPECT_EQ(r.run().seed, want.seed);
  EXPECT_EQ(r.run().host, want.host);
  EXPECT_EQ(r.run().start_time, want.start_time);
  EXPECT_EQ(r.run().rank, 0);
  EXPECT_EQ(r.run().nranks, 1);
  EXPECT_EQ(r.run().kevo_version, KEVO_VERSION);
}

TEST(LineageRoundTrip, TextsAreMadeValidUtf8WithoutNul) {
  TempDir dir;
  const auto path = dir / "l.h5";
  kevo::Candidate c = make_candidate(1);
  c.verdict.output_tail = std::string("bin\xff\xfe", 5) + std::string("\0zero", 5) + "ok é";
  {
    auto w = LineageWriter::create(path, kevo_test::make_run());
    w.append(c);
  }
  const LineageReader r = LineageReader::open(path);
  ASSERT_EQ(r.rows().size(), 1u);
  EXPECT_EQ(r.candidate(r.rows()[0]).verdict.output_tail, "bin\xEF\xBF\xBD\xEF\xBF\xBD\xE2\x90\x80zerook é");
}

TEST(LineageRoundTrip, LongOperatorNameIsCutAtACharacterAndWarnedOnce) {
  TempDir dir;
  std::vector<std::string> warnings;
  WriterOptions opt;
  opt.warn = [&](const std::string& m) { warnings.push_back(m); };
  kevo::Candidate c = make_candidate(0);
  c.op = std::string(30, 'o') + "é_and_more";   // 'é' is bytes 30 and 31: cut before it
  {
    auto w = LineageWriter::create(dir / "l.h5", kevo_test::make_run(), opt);
    w.append(c);
    w.append(c);
  }
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("longer than 31 bytes"), std::string::npos);
  const LineageReader r = LineageReader::open(dir / "l.h5");
  EXPECT_EQ(r.rows()[0].op_name(), std::string(30, 'o'));
}

TEST(LineageWriterChecks, RejectsWhatCannotBeARecord) {
  TempDir dir;
  auto w = LineageWriter::create(dir / "l.h5", kevo_test::make_run());
  kevo::Candidate pending = make_candidate(0);
  pending.verdict.status = kevo::Status::pending;
  EXPECT_THROW(w.append(pending), kevo::Failure);
  kevo::Candidate bad_task = make_candidate(0);
  bad_task.task = kevo_test::kTasks;
  EXPECT_THROW(w.append(bad_task), kevo::Failure);
  EXPECT_EQ(w.rows_buffered(), 0u);
  w.close();
  EXPECT_THROW(w.append(make_candidate(1)), kevo::Failure);
  // A run never overwrites a lineage file.
  EXPECT_THROW(LineageWriter::create(dir / "l.h5", kevo_test::make_run()), kevo::Failure);
  EXPECT_THROW(LineageWriter::create(dir / "x.h5", kevo_test::make_run(2, 2)), kevo::Failure);
}

TEST(LineageReaderChecks, ErrorsNameTheFileAndCarryTheHdf5Stack) {
  TempDir dir;
  {
    std::ofstream(dir / "junk.h5") << "this is not an HDF5 file";
  }
  try {
    LineageReader::open(dir / "junk.h5", ReaderOptions{0.2});
    FAIL() << "expected InputError";
  } catch (const kevo::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("junk.h5"), std::string::npos) << what;
    EXPECT_NE(what.find("signature"), std::string::npos) << "HDF5's own reason: " << what;
  }
  EXPECT_THROW(LineageReader::open(dir / "missing.h5"), kevo::InputError);

  // An HDF5 file that is not a lineage.
  kevo::h5::init();
  {
    kevo::h5::File f = kevo::h5::create_file(dir / "other.h5", H5F_ACC_TRUNC, H5P_DEFAULT);
  }
  try {
    LineageReader::open(dir / "other.h5");
    FAIL() << "expected InputError";
  } catch (const kevo::InputError& e) {
    EXPECT_EQ(e.key(), "attribute format");
  }

  // The wrappers turn a failed call into h5::Error with the stack.
  try {
    kevo::h5::open_file(dir / "missing.h5", H5F_ACC_RDONLY, H5P_DEFAULT);
    FAIL() << "expected h5::Error";
  } catch (const kevo::h5::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("H5Fopen"), std::string::npos) << what;
    EXPECT_NE(what.find("unable to open file"), std::string::npos) << what;
  }
}

TEST(LineageRunDir, ReadsEveryRankFileInRankOrder) {
  TempDir dir;
  for (int rank : {1, 0, 2}) {
    auto w = LineageWriter::create(dir.path() / "lineage" / rank_file_name(rank), kevo_test::make_run(rank, 3));
    for (std::uint64_t id = 0; id < 5; ++id) w.append(make_candidate(100 * static_cast<std::uint64_t>(rank) + id));
  }
  {
    std::ofstream(dir.path() / "lineage" / "notes.txt") << "ignored";
  }
  const auto readers = read_run_dir(dir.path());
  ASSERT_EQ(readers.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(readers[rank].run().rank, rank);
    EXPECT_EQ(readers[rank].run().nranks, 3);
    ASSERT_EQ(readers[rank].rows().size(), 5u);
    EXPECT_EQ(readers[rank].rows()[0].id, 100u * rank);
    EXPECT_EQ(readers[rank].rows()[0].rank, rank);
  }
  EXPECT_EQ(rank_file_name(7), "rank-0007.h5");
  TempDir empty;
  EXPECT_THROW(read_run_dir(empty.path()), kevo::InputError);
}

TEST(LineageAppend, ResumeContinuesAfterWhatIsThere) {
  TempDir dir;
  const auto path = dir / "l.h5";
  {
    auto w = LineageWriter::create(path, kevo_test::make_run());
    for (std::uint64_t id = 0; id < 10; ++id) w.append(make_candidate(id));
  }
  {
    auto w = LineageWriter::open_append(path);
    EXPECT_EQ(w.rows_written(), 10u);
    w.append(Event{EventKind::resume, 0.0, -1, -1, -1, "resumed"});
    for (std::uint64_t id = 10; id < 20; ++id) w.append(make_candidate(id));
  }
  const LineageReader r = LineageReader::open(path);
  ASSERT_EQ(r.rows().size(), 20u);
  const auto got = r.candidates(r.rows());
  for (std::uint64_t id = 0; id < 20; ++id) kevo_test::expect_same(make_candidate(id), got[id]);
  ASSERT_EQ(r.events().size(), 1u);
  EXPECT_EQ(r.events()[0].text, "resumed");
  EXPECT_GT(r.events()[0].time, 1.5e9);
}
