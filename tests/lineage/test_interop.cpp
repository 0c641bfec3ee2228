// The file as other tools see it: h5py (names, enums, bools, texts) and
// h5dump, on a finished file and while a run is writing it.
#include "kevo/lineage/writer.hpp"
#include "lineage_test_util.hpp"

#include <chrono>
#include <sstream>

using namespace kevo::lineage;
using kevo_test::make_candidate;
using kevo_test::TempDir;
using SteadyClock = std::chrono::steady_clock;

namespace {

void write_file(const std::filesystem::path& path, std::uint64_t n) {
  auto w = LineageWriter::create(path, kevo_test::make_run());
  w.append(Event{EventKind::start, 0.0, -1, -1, -1, "start"});
  for (std::uint64_t id = 0; id < n; ++id) w.append(make_candidate(id));
}

// Drains a writer child's stdout (so it never blocks on a full pipe) and
// waits for its first flush.
void wait_first_flush(kevo_test::Process& child) {
  std::string line;
  ASSERT_TRUE(child.read_line(line, 20000)) << "the writer child never flushed";
  ASSERT_EQ(line.rfind("flushed ", 0), 0u) << line;
}

// Reads a writer child's stdout without blocking it, and keeps its final
// "done N" line.
struct ChildOutput {
  kevo_test::Process& child;
  std::string done;
  void drain() {
    std::string l;
    while (child.read_line(l, 0))
      if (l.rfind("done ", 0) == 0) done = l;
  }
  std::string finish() {
    std::string l;
    while (done.empty() && child.read_line(l, 20000))
      if (l.rfind("done ", 0) == 0) done = l;
    return done;
  }
};

// Rows of /candidates according to an h5dump listing: the extent after the
// dataset's header line.
long dumped_rows(const std::string& out, const std::string& header) {
  const auto at = out.find(header);
  if (at == std::string::npos) return -1;
  const auto space = out.find("DATASPACE  SIMPLE { ( ", at);
  if (space == std::string::npos) return -1;
  return std::stol(out.substr(space + 22));
}

}  // namespace

TEST(LineageInterop, H5pySeesNamedColumnsEnumsBoolsAndTexts) {
  const auto py = kevo_test::python_with_h5py();
  if (!py) GTEST_SKIP() << "no Python with h5py (apt-get install python3-h5py, or set KEVO_TEST_PYTHON)";
  TempDir dir;
  const auto path = dir / "l.h5";
  write_file(path, 40);
  const char* script = R"PY(
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
assert f.attrs["format"] == "kevo-lineage/1", f.attrs["format"]
assert f.attrs["rank"] == 0 and f.attrs["nranks"] == 1
assert list(f["tasks"].asstr()[:]) == ["sgemm", "softmax", "naïve_conv"]
ds = f["candidates"]
names = ds.dtype.names
assert names[:6] == ("id", "task", "op", "status", "stage", "compile_cached"), names
status = h5py.check_enum_dtype(ds.dtype["status"])
assert status["correct"] == 1 and status["duplicate"] == 8 and status["lost"] == 10, status
assert h5py.check_enum_dtype(ds.dtype["stage"])["done"] == 4
assert ds.dtype["compile_cached"] == np.bool_, ds.dtype["compile_cached"]
rows = ds[:]
assert len(rows) == 40 and list(rows["id"]) == list(range(40))
assert rows[4]["op"].decode() == "llm_fix_ünïcode", rows[4]["op"]
assert rows[0]["compile_cached"] == True and rows[1]["compile_cached"] == False
text = f["text"].asstr()
src = text[rows[0]["source"]]
assert "candidate 0" in src and "🚀" in src, src[:80]
inv = rows[rows["status"] == status["invalid"]][0]
assert inv["source"] == -1 and "no code block" in text[inv["op_note"]]
ev = f["events"][:]
assert h5py.check_enum_dtype(f["events"].dtype["kind"])["migration_in"] == 3
assert text[ev[0]["text"]] == "start"
print("ok")
)PY";
  const auto [rc, out] = kevo_test::run_capture({*py, "-c", script, path.string()}, false);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok"), std::string::npos) << out;
}

TEST(LineageInterop, H5dumpPrintsEnumNames) {
  if (!kevo_test::have_h5dump()) GTEST_SKIP() << "h5dump not found (apt-get install hdf5-tools)";
  TempDir dir;
  const auto path = dir / "l.h5";
  write_file(path, 12);
  const auto [rc, out] = kevo_test::run_capture({"h5dump", "-d", "/candidates", path.string()});
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(dumped_rows(out, "DATASET \"/candidates\""), 12);
  EXPECT_NE(out.find("H5T_ENUM"), std::string::npos);
  EXPECT_NE(out.find("wrong_answer"), std::string::npos) << "enum values print by name";
  EXPECT_NE(out.find("\"param_mutation\""), std::string::npos);
}

TEST(LineageConcurrentReaders, H5pyReadsWhileTheRunWrites) {
  const auto py = kevo_test::python_with_h5py();
  if (!py) GTEST_SKIP() << "no Python with h5py (apt-get install python3-h5py, or set KEVO_TEST_PYTHON)";
  TempDir dir;
  const auto path = dir / "l.h5";
  // About 4 s of writing: 1 record per ms, a flush every 16 records.
  kevo_test::Process child =
      kevo_test::Process::spawn({KEVO_LINEAGE_CHILD, "write", path.string(), "4000", "16", "1000"});
  wait_first_flush(child);
  // Alternates the two ways docs/lineage.md gives: a plain open (file lock,
  // retried while a flush is in progress) and a SWMR open without a lock.
  // Rows of a flush in progress may show as fill rows (id 2**64-1) at the end.
  // A SWMR read of /text (variable-length strings) may fail with OSError
  // while a flush appends texts (seen with h5py wheels bundling HDF5 2.0):
  // as docs/lineage.md says, the reader then starts that read again; a
  // locked read must never fail, and what a read returns must be right.
  const char* script = R"PY(
import sys, time, h5py, numpy as np
path, seconds = sys.argv[1], float(sys.argv[2])
UNWRITTEN = np.uint64(2**64 - 1)
end = time.time() + seconds
last, i, retried, good = -1, 0, 0, 0
while time.time() < end:
    mode = i % 2
    i += 1
    t0 = time.time()
    while True:
        try:
            if mode == 0:
                f = h5py.File(path, "r")
            else:
                f = h5py.File(path, "r", swmr=True, locking=False)
            break
        except OSError:
            if time.time() - t0 > 10:
                raise
            time.sleep(0.02)
    try:
        with f:
            ds = f["candidates"]
            ids = ds["id"]
            written = ids[ids != UNWRITTEN]
            n = len(written)
            if not np.array_equal(written, np.arange(n, dtype=ids.dtype)) or not np.all(ids[n:] == UNWRITTEN):
                print("inconsistent ids", ids[:10], ids[-10:]); sys.exit(3)
            if n < last:
                print("rows went back", last, n); sys.exit(4)
            if n:
                ref = int(ds[n - 1]["source"])
                if ref >= 0 and "candidate" not in f["text"].asstr()[ref]:
                    print("bad text"); sys.exit(5)
    except OSError as e:
        if mode == 0:
            raise
        retried += 1
        print("retry", e, file=sys.stderr, flush=True)
        time.sleep(0.02)
        continue
    good += 1
    print(mode, n, flush=True)
    last = n
    time.sleep(0.03)
if retried > good // 4:
    print("too many SWMR reads failed", retried, good); sys.exit(6)
)PY";
  kevo_test::Process reader = kevo_test::Process::spawn({*py, "-c", script, path.string(), "2.5"}, false);
  ChildOutput out{child, {}};
  std::vector<long> counts;
  std::string line, all;
  for (;;) {
    if (reader.read_line(line, 50)) {
      all += line + "\n";
      std::istringstream in(line);
      int mode = 0;
      long n = 0;
      if (in >> mode >> n) counts.push_back(n);
    } else if (reader.at_eof()) {
      break;
    }
    out.drain();
  }
  EXPECT_EQ(reader.wait(), 0) << all;
  ASSERT_GE(counts.size(), 10u) << all;
  for (std::size_t i = 1; i < counts.size(); ++i) EXPECT_LE(counts[i - 1], counts[i]) << all;
  EXPECT_LT(counts.front(), counts.back()) << "the reader saw the run grow: " << all;
  // The writer was never stopped by the readers: it finishes everything.
  EXPECT_EQ(out.finish(), "done 4000");
  EXPECT_EQ(child.wait(), 0);
}

TEST(LineageConcurrentReaders, H5dumpReadsWhileTheRunWrites) {
  if (!kevo_test::have_h5dump()) GTEST_SKIP() << "h5dump not found (apt-get install hdf5-tools)";
  TempDir dir;
  const auto path = dir / "l.h5";
  kevo_test::Process child =
      kevo_test::Process::spawn({KEVO_LINEAGE_CHILD, "write", path.string(), "3000", "16", "1000"});
  wait_first_flush(child);
  ChildOutput out{child, {}};
  std::vector<long> counts;
  const auto end = SteadyClock::now() + std::chrono::milliseconds(2500);
  for (int i = 0; SteadyClock::now() < end; ++i) {
    const bool header_only = i % 2 == 0;
    std::vector<std::string> argv = header_only ? std::vector<std::string>{"h5dump", "-H", path.string()}
                                                : std::vector<std::string>{"h5dump", "-d", "/candidates", path.string()};
    // h5dump cannot open the file while a flush is in progress: retry, bounded.
    const auto give_up = SteadyClock::now() + std::chrono::seconds(10);
    std::pair<int, std::string> res;
    int attempts = 0;
    do {
      out.drain();
      res = kevo_test::run_capture(argv);
      ++attempts;
    } while (res.first != 0 && SteadyClock::now() < give_up);
    ASSERT_EQ(res.first, 0) << "h5dump failed " << attempts << " times: " << res.second.substr(0, 2000);
    const long n = dumped_rows(res.second, header_only ? "DATASET \"candidates\"" : "DATASET \"/candidates\"");
    ASSERT_GE(n, 0) << res.second.substr(0, 2000);
    if (!header_only && n > 0) {
      EXPECT_NE(res.second.find("correct"), std::string::npos);
    }
    counts.push_back(n);
  }
  ASSERT_GE(counts.size(), 4u);
  for (std::size_t i = 1; i < counts.size(); ++i) EXPECT_LE(counts[i - 1], counts[i]);
  EXPECT_LT(counts.front(), counts.back()) << "h5dump saw the run grow";
  EXPECT_EQ(out.finish(), "done 3000");
  EXPECT_EQ(child.wait(), 0);
}
