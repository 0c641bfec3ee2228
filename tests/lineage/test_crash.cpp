// kill -9 at a random moment: every record the writer reported flushed is in
// the file, no row is corrupted, and the file can be recovered and resumed.
#include "kevo/lineage/h5.hpp"
#include "kevo/lineage/reader.hpp"
#include "kevo/lineage/writer.hpp"
#include "lineage_test_util.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

using namespace kevo::lineage;
using kevo_test::make_candidate;
using kevo_test::TempDir;

namespace {

// Parses "flushed N"; returns false for other lines.
bool parse_flushed(const std::string& line, std::uint64_t& n) {
  if (line.rfind("flushed ", 0) != 0) return false;
  n = std::stoull(line.substr(8));
  return true;
}

// Every row is exactly the candidate its id stands for, and ids run 0..n-1.
void expect_rows_intact(const LineageReader& r) {
  const auto got = r.candidates(r.rows());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const Row& row = r.rows()[i];
    ASSERT_EQ(row.id, i) << "rows are appended in id order without gaps";
    SCOPED_TRACE("row " + std::to_string(i) + " of " + std::to_string(got.size()) + ": refs message " +
                 std::to_string(row.message) + " params " + std::to_string(row.params) + " source " +
                 std::to_string(row.source) + " feedback " + std::to_string(row.feedback) + "; " +
                 std::to_string(r.text_count()) + " texts, " + std::to_string(r.skipped_rows()) + " skipped rows");
    kevo_test::expect_same(make_candidate(i), got[i]);
    if (::testing::Test::HasFailure()) return;   // one broken row says enough
  }
}

}  // namespace

TEST(LineageCrash, KillMinus9KeepsEveryFlushedRecord) {
  std::mt19937 rng(std::random_device{}());
  const bool h5dump = kevo_test::have_h5dump();
  int mid_flush = 0;
  const int rounds = 8;
  for (int round = 0; round < rounds; ++round) {
    TempDir dir;
    const auto path = dir / "lineage/rank-0000.h5";
    // Small batches written flat out: the writer spends much of its time
    // inside a flush, so many kills land in one (about a third, measured).
    const std::size_t flush_records = 1 + rng() % 16;
    const auto kill_after = std::chrono::milliseconds(20 + rng() % 300);
    SCOPED_TRACE("round " + std::to_string(round) + ", flush every " + std::to_string(flush_records) +
                 " records, kill after " + std::to_string(kill_after.count()) + " ms");

    kevo_test::Process child = kevo_test::Process::spawn(
        {KEVO_LINEAGE_CHILD, "write", path.string(), "0", std::to_string(flush_records), "0"});
    std::uint64_t reported = 0;
    std::string line;
    // The clock starts at the first flush (before it the file is being created).
    ASSERT_TRUE(child.read_line(line, 20000) && parse_flushed(line, reported)) << line;
    const auto deadline = std::chrono::steady_clock::now() + kill_after;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (child.read_line(line, static_cast<int>(std::max<long>(1, left.count())))) parse_flushed(line, reported);
    }
    child.kill9();
    EXPECT_EQ(child.wait(), 128 + SIGKILL);
    // Lines still in the pipe were printed after their flush had returned.
    while (child.read_line(line, 0)) parse_flushed(line, reported);
    ASSERT_GT(reported, 0u);

    // The reader copes with the killed writer's file as it is (no h5clear).
    const LineageReader r = LineageReader::open(path);
    if (r.writer_flag_set()) ++mid_flush;
    EXPECT_GE(r.rows().size(), reported) << "every reported flush is in the file";
    expect_rows_intact(r);
    if (HasFailure()) return;
    ASSERT_GE(r.events().size(), 1u);
    EXPECT_EQ(r.events()[0].text, "child start");

    // recover() makes it a plain HDF5 file again, for h5dump and plain h5py...
    recover(path);
    {
      kevo::h5::File plain = kevo::h5::open_file(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    }
    if (h5dump) {
      EXPECT_EQ(kevo_test::run_capture({"h5dump", "-H", path.string()}).first, 0);
    }
    // ...and a resumed run continues it.
    const std::uint64_t kept = LineageReader::open(path).rows().size();
    EXPECT_GE(kept, reported);
    std::string warnings;
    {
      WriterOptions opt;
      opt.warn = [&](const std::string& m) { warnings += m + "\n"; };
      auto w = LineageWriter::open_append(path, opt);
      EXPECT_EQ(w.rows_written(), kept);
      for (std::uint64_t id = kept; id < kept + 10; ++id) w.append(make_candidate(id));
      EXPECT_TRUE(w.flush()) << w.last_error();
    }
    const LineageReader after = LineageReader::open(path);
    EXPECT_EQ(after.rows().size(), kept + 10) << warnings;
    expect_rows_intact(after);
  }
  std::printf("[          ] %d of %d kills landed inside a flush\n", mid_flush, rounds);
}

TEST(LineageCrash, ResumeWithoutRecoverClearsTheFlagItself) {
  TempDir dir;
  const auto path = dir / "l.h5";
  kevo_test::Process child =
      kevo_test::Process::spawn({KEVO_LINEAGE_CHILD, "write", path.string(), "0", "4", "0"});
  std::string line;
  std::uint64_t reported = 0;
  // Kill in the middle of the stream of flushes (most likely inside one).
  for (int i = 0; i < 50 && child.read_line(line, 20000); ++i) parse_flushed(line, reported);
  child.kill9();
  child.wait();
  while (child.read_line(line, 0)) parse_flushed(line, reported);
  {
    auto w = LineageWriter::open_append(path);
    EXPECT_GE(w.rows_written(), reported);
    w.append(make_candidate(w.rows_written()));
  }
  const LineageReader r = LineageReader::open(path);
  EXPECT_FALSE(r.writer_flag_set());
  EXPECT_GE(r.rows().size(), reported + 1);
  expect_rows_intact(r);
}

// What a killed flush can leave in /text, made by hand: elements past the
// last referenced text (inside and past the extent) that point at heap
// objects that do not exist. HDF5 frees the old heap object of every string
// element it overwrites, so a resumed writer must never write over these.
TEST(LineageCrash, ResumeNeverWritesOverLeftOverTexts) {
  TempDir dir;
  const auto path = dir / "l.h5";
  {
    auto w = LineageWriter::create(path, kevo_test::make_run());
    for (std::uint64_t id = 0; id < 10; ++id) w.append(make_candidate(id));
  }
  const std::uint64_t texts = LineageReader::open(path).text_count();
  ASSERT_LT(texts + 8, 1024u) << "the test wants the texts inside one chunk";
  {
    kevo::h5::File f = kevo::h5::open_file(path, H5F_ACC_RDWR, H5P_DEFAULT);
    kevo::h5::Dataset ds = kevo::h5::open_dataset(f.get(), "text");
    const hsize_t grown = texts + 3;   // three unreferenced elements inside the extent
    ASSERT_GE(H5Dset_extent(ds.get(), &grown), 0);
    // On disk a string element is: 4-byte length, 8-byte heap address, 4-byte index.
    std::vector<unsigned char> chunk(1024 * 16);
    const hsize_t origin = 0;
    std::uint32_t filters = 0;
    ASSERT_GE(H5Dread_chunk(ds.get(), H5P_DEFAULT, &origin, &filters, chunk.data()), 0);
    for (std::size_t i = texts; i < 1024; ++i) {
      unsigned char* e = &chunk[i * 16];
      const std::uint32_t len = 7, index = 3;
      const std::uint64_t bogus = 48;   // inside the superblock: no heap collection there
      std::memcpy(e, &len, 4);
      std::memcpy(e + 4, &bogus, 8);
      std::memcpy(e + 12, &index, 4);
    }
    ASSERT_GE(H5Dwrite_chunk(ds.get(), H5P_DEFAULT, filters, &origin, chunk.size(), chunk.data()), 0);
  }
  std::string warnings;
  {
    WriterOptions opt;
    opt.warn = [&](const std::string& m) { warnings += m + "\n"; };
    auto w = LineageWriter::open_append(path, opt);
    EXPECT_EQ(w.texts_written(), texts) << "the unreferenced elements are dropped";
    for (std::uint64_t id = 10; id < 20; ++id) w.append(make_candidate(id));
    EXPECT_TRUE(w.flush()) << w.last_error();
  }
  EXPECT_EQ(warnings, "");
  const LineageReader r = LineageReader::open(path);
  ASSERT_EQ(r.rows().size(), 20u);
  expect_rows_intact(r);
  // Every element of /text is readable again.
  std::vector<std::int64_t> all(r.text_count());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  EXPECT_NO_THROW(r.texts(all));
}

namespace {

// HDF5's metadata checksum (Bob Jenkins' lookup3 hashlittle, byte by byte,
// initial value 0), written here to re-seal a superblock the test edits.
std::uint32_t lookup3(const unsigned char* k, std::size_t length) {
  const auto rot = [](std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + static_cast<std::uint32_t>(length);
  const auto word = [&](const unsigned char* p, std::size_t n) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v += static_cast<std::uint32_t>(p[i]) << (8 * i);
    return v;
  };
  while (length > 12) {
    a += word(k, 4);
    b += word(k + 4, 4);
    c += word(k + 8, 4);
    a -= c; a ^= rot(c, 4);  c += b;
    b -= a; b ^= rot(a, 6);  a += c;
    c -= b; c ^= rot(b, 8);  b += a;
    a -= c; a ^= rot(c, 16); c += b;
    b -= a; b ^= rot(a, 19); a += c;
    c -= b; c ^= rot(b, 4);  b += a;
    length -= 12;
    k += 12;
  }
  if (length == 0) return c;
  a += word(k, std::min<std::size_t>(length, 4));
  if (length > 4) b += word(k + 4, std::min<std::size_t>(length - 4, 4));
  if (length > 8) c += word(k + 8, length - 8);
  c ^= b; c -= rot(b, 14);
  a ^= c; a -= rot(c, 11);
  b ^= a; b -= rot(a, 25);
  c ^= b; c -= rot(b, 16);
  a ^= c; a -= rot(c, 4);
  b ^= a; b -= rot(a, 14);
  c ^= b; c -= rot(b, 24);
  return c;
}

// The 48 bytes of a version 2/3 superblock (kevo files have no user block):
// signature, versions and sizes (12), base address, extension address, end
// of file address (the EOA), root object header address (8 each), checksum.
std::array<unsigned char, 48> read_superblock(const std::filesystem::path& path) {
  std::array<unsigned char, 48> sb{};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(sb.data()), sb.size());
  return sb;
}

void write_superblock(const std::filesystem::path& path, std::array<unsigned char, 48> sb) {
  const std::uint32_t sum = lookup3(sb.data(), 44);
  std::memcpy(&sb[44], &sum, 4);
  std::fstream io(path, std::ios::binary | std::ios::in | std::ios::out);
  io.write(reinterpret_cast<const char*>(sb.data()), sb.size());
}

}  // namespace

// What a writer killed inside the close of a flush leaves (seen in CI): the
// rows' new chunk and the index pointing at it are on disk, the superblock
// still records the end of allocated space (EOA) of the flush before, and
// the "open for writing" flags are set. Made here by hand from a good file:
// a second session appends a chunk's worth of rows, then the superblock is
// put back to the first session's EOA. SWMR readers read past the EOA;
// recover() (and so a resumed run) must too, keeping every row.
TEST(LineageCrash, RowsPastTheSuperblocksEndOfAllocationAreKept) {
  TempDir dir;
  const auto path = dir / "l.h5";
  {
    auto w = LineageWriter::create(path, kevo_test::make_run());
    for (std::uint64_t id = 0; id < 10; ++id) w.append(make_candidate(id));
  }
  const auto first = read_superblock(path);
  ASSERT_EQ(first[8], 3) << "superblock version 3 (SWMR)";
  std::uint32_t sum = 0;
  std::memcpy(&sum, &first[44], 4);
  ASSERT_EQ(lookup3(first.data(), 44), sum) << "the test's checksum is HDF5's";
  std::uint64_t eoa = 0;
  std::memcpy(&eoa, &first[28], 8);
  ASSERT_EQ(eoa, std::filesystem::file_size(path));
  {
    auto w = LineageWriter::open_append(path);
    for (std::uint64_t id = 10; id < 600; ++id) w.append(make_candidate(id));
    ASSERT_TRUE(w.flush()) << w.last_error();
  }
  ASSERT_GT(std::filesystem::file_size(path), eoa);
  auto sb = read_superblock(path);
  std::memcpy(&sb[28], &eoa, 8);
  sb[11] |= 0x05;   // write access and SWMR write access: the writer was killed
  write_superblock(path, sb);

  ASSERT_EQ(LineageReader::open(path).rows().size(), 600u) << "the SWMR reader reads past the EOA";
  EXPECT_TRUE(recover(path));
  {
    kevo::h5::File plain = kevo::h5::open_file(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  }
  if (kevo_test::have_h5dump()) {
    EXPECT_EQ(kevo_test::run_capture({"h5dump", "-H", path.string()}).first, 0);
  }
  {
    auto w = LineageWriter::open_append(path);
    EXPECT_EQ(w.rows_written(), 600u);
    for (std::uint64_t id = 600; id < 610; ++id) w.append(make_candidate(id));
    EXPECT_TRUE(w.flush()) << w.last_error();
  }
  const LineageReader r = LineageReader::open(path);
  EXPECT_FALSE(r.writer_flag_set());
  ASSERT_EQ(r.rows().size(), 610u);
  expect_rows_intact(r);
}
