#include "kevo/lineage/reader.hpp"

#include "format.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

namespace kevo::lineage {
namespace {

using Clock = std::chrono::steady_clock;

// Opens for reading in every state a run leaves a file in. SWMR read first:
// it is the mode that is safe while a writer appends (and the only one a
// flagged file accepts); it takes no file lock (reader_fapl), so the writer is
// never kept out. Plain read-only is the fallback for files that cannot be
// read in SWMR mode.
h5::File open_for_read(const std::filesystem::path& path, const ReaderOptions& options) {
  h5::init();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path.string(), "", "an existing kevo lineage file (RUN_DIR/lineage/rank-NNNN.h5)");
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, options.busy_timeout_seconds)));
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    bool busy = false;
    std::string error;
    const h5::PropList fapl = detail::reader_fapl();
    try {
      return h5::open_file(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.get());
    } catch (const h5::Error& e) {
      busy = e.lock_conflict() || e.open_for_write();
    }
    try {
      return h5::open_file(path, H5F_ACC_RDONLY, fapl.get());
    } catch (const h5::Error& e) {
      busy = busy || e.lock_conflict() || e.open_for_write();
      error = e.what();
    }
    // An empty file is one whose writer is creating it right now.
    if (!busy && std::filesystem::file_size(path, ec) > 0 && !ec)
      throw InputError(path.string(), "", "an HDF5 file written by kevo (" + error + ")");
    if (Clock::now() >= deadline)
      throw Failure("lineage file " + path.string() + " stayed busy for " +
                    std::to_string(options.busy_timeout_seconds) + " s (" + error +
                    "); if its writer was killed while creating it, run `h5clear -s " + path.string() + "`");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

Mismatch parse_mismatch(const std::string& text, const std::filesystem::path& path, std::int64_t ref) {
  try {
    // The verdict parser owns the format; hand it a verdict holding only this.
    const nlohmann::json j = {{"status", "pending"}, {"stage", "none"}, {"mismatch", nlohmann::json::parse(text)}};
    auto m = verdict_from_json(j).mismatch;
    if (!m) throw std::invalid_argument("null");
    return *m;
  } catch (const std::exception& e) {
    throw InputError(path.string(), "/text/" + std::to_string(ref),
                     std::string("a mismatch JSON object (") + e.what() + ")");
  }
}

}  // namespace

LineageReader LineageReader::open(const std::filesystem::path& path, ReaderOptions options) {
  LineageReader r;
  r.path_ = path;
  r.options_ = options;
  r.writer_flag_set_ = detail::status_flags_set(path);
  h5::File file = open_for_read(path, options);
  detail::check_format(file.get(), path);
  r.run_ = detail::read_run_info(file.get());
  {
    h5::Dataset ds = h5::open_dataset(file.get(), detail::kCandidates);
    const hsize_t n = h5::extent(ds.get());
    std::vector<Row> rows(n);
    h5::read_range(ds.get(), 0, n, detail::row_type(), rows.data());
    r.rows_.reserve(n);
    for (const Row& row : rows) {
      if (row.written())
        r.rows_.push_back(row);
      else
        ++r.skipped_rows_;
    }
  }
  std::vector<EventRow> events;
  {
    h5::Dataset ds = h5::open_dataset(file.get(), detail::kEvents);
    const hsize_t n = h5::extent(ds.get());
    events.resize(n);
    h5::read_range(ds.get(), 0, n, detail::event_type(), events.data());
  }
  {
    h5::Dataset ds = h5::open_dataset(file.get(), detail::kText);
    r.text_count_ = h5::extent(ds.get());
  }
  // A merged file (kevo merge) says which rank's file held each event.
  std::vector<std::int32_t> event_rank;
  if (h5::check(H5Lexists(file.get(), "event_rank", H5P_DEFAULT), "H5Lexists(event_rank)") > 0) {
    h5::Dataset ds = h5::open_dataset(file.get(), "event_rank");
    if (h5::extent(ds.get()) != events.size())
      throw InputError(path.string(), "/event_rank", "one rank per event (" + std::to_string(events.size()) + ")");
    event_rank.resize(events.size());
    h5::read_range(ds.get(), 0, events.size(), H5T_NATIVE_INT32, event_rank.data());
  } else {
    event_rank.assign(events.size(), r.run_.rank);
  }
  file.reset();
  std::vector<std::int64_t> refs;
  std::vector<EventRow> written;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const EventRow& e = events[i];
    if (e.written()) {
      written.push_back(e);
      refs.push_back(e.text);
      r.event_ranks_.push_back(event_rank[i]);
    } else {
      ++r.skipped_events_;
    }
  }
  const std::vector<std::string> texts = r.texts(refs);
  for (std::size_t i = 0; i < written.size(); ++i) {
    const EventRow& e = written[i];
    r.events_.push_back(Event{e.kind, e.time, e.id, e.from_rank, e.to_rank, texts[i]});
  }
  return r;
}

const Row* LineageReader::find(std::uint64_t id) const {
  for (auto it = rows_.rbegin(); it != rows_.rend(); ++it)
    if (it->id == id) return &*it;
  return nullptr;
}

std::string LineageReader::text(std::int64_t ref) const {
  if (ref == kNoText) return {};
  return texts(std::span<const std::int64_t>(&ref, 1)).front();
}

std::vector<std::string> LineageReader::texts(std::span<const std::int64_t> refs) const {
  std::vector<std::string> out(refs.size());
  std::vector<hsize_t> points;
  for (std::int64_t ref : refs) {
    if (ref == kNoText) continue;
    if (ref < 0) throw InputError(path_.string(), "/text", "text references >= -1, got " + std::to_string(ref));
    points.push_back(static_cast<hsize_t>(ref));
  }
  if (points.empty()) return out;
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  h5::File file = open_for_read(path_, options_);
  h5::Dataset ds = h5::open_dataset(file.get(), detail::kText);
  const hsize_t n = h5::extent(ds.get());
  if (points.back() >= n)
    throw InputError(path_.string(), "/text",
                     "text reference below " + std::to_string(n) + ", got " + std::to_string(points.back()));
  const std::vector<std::string> got = h5::read_strings_at(ds.get(), points);
  for (std::size_t i = 0; i < refs.size(); ++i) {
    if (refs[i] == kNoText) continue;
    const auto at = std::lower_bound(points.begin(), points.end(), static_cast<hsize_t>(refs[i])) - points.begin();
    out[i] = got[static_cast<std::size_t>(at)];
  }
  return out;
}

Candidate LineageReader::candidate(const Row& row) const {
  return candidates(std::span<const Row>(&row, 1)).front();
}

Candidate LineageReader::without_texts(const Row& r) {
  Candidate c;
  c.id = r.id;
  c.task = r.task;
  c.parent0 = r.parent0;
  c.parent1 = r.parent1;
  c.op = std::string(r.op_name());
  c.hash = r.hash;
  c.eval_seed = r.eval_seed;
  c.duplicate_of = r.duplicate_of;
  c.t_created = r.t_created;
  c.t_submitted = r.t_submitted;
  c.t_finished = r.t_finished;
  Verdict& v = c.verdict;
  v.status = r.status;
  v.stage = r.stage;
  v.compile_cached = r.compile_cached;
  v.compile_seconds = r.compile_seconds;
  v.worker_seconds = r.worker_seconds;
  v.slot_seconds = r.slot_seconds;
  v.cand_median_ns = r.cand_median_ns;
  v.cand_iqr_ns = r.cand_iqr_ns;
  v.ref_median_ns = r.ref_median_ns;
  v.ref_iqr_ns = r.ref_iqr_ns;
  v.repeats = r.repeats;
  v.speedup = r.speedup;
  v.max_abs_error = r.max_abs_error;
  v.rel_l2_error = r.rel_l2_error;
  v.exit_code = r.exit_code;
  v.signal = r.signal;
  v.max_rss_kb = r.max_rss_kb;
  return c;
}

std::vector<Candidate> LineageReader::candidates(std::span<const Row> rows) const {
  constexpr std::size_t kRefs = 10;
  std::vector<std::int64_t> refs;
  refs.reserve(rows.size() * kRefs);
  for (const Row& r : rows)
    for (std::int64_t ref : {r.message, r.params, r.source, r.compile_log, r.feedback, r.output_tail, r.mismatch,
                             r.op_note, r.profile, r.device})
      refs.push_back(ref);
  const std::vector<std::string> t = texts(refs);
  std::vector<Candidate> out;
  out.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const std::string* s = &t[i * kRefs];
    Candidate c = without_texts(r);
    Verdict& v = c.verdict;
    v.message = s[0];
    c.params_json = s[1];
    c.source = s[2];
    v.compile_log = s[3];
    v.feedback = s[4];
    v.output_tail = s[5];
    if (r.mismatch != kNoText) v.mismatch = parse_mismatch(s[6], path_, r.mismatch);
    c.op_note = s[7];
    v.profile = s[8];
    v.device = s[9];
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<LineageReader> read_run_dir(const std::filesystem::path& run_dir, ReaderOptions options) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(run_dir, ec)) {
    std::vector<LineageReader> one;
    one.push_back(LineageReader::open(run_dir, options));
    return one;
  }
  const std::filesystem::path dir = run_dir / "lineage";
  std::map<long, std::filesystem::path> files;   // by rank number, not by name
  if (std::filesystem::is_directory(dir, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.size() < 9 || name.rfind("rank-", 0) != 0 || name.substr(name.size() - 3) != ".h5") continue;
      const std::string digits = name.substr(5, name.size() - 8);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      files.emplace(std::strtol(digits.c_str(), nullptr, 10), entry.path());
    }
  }
  if (files.empty())
    throw InputError(dir.string(), "", "a run directory's lineage folder with rank-NNNN.h5 files");
  std::vector<LineageReader> out;
  for (const auto& [rank, file] : files) out.push_back(LineageReader::open(file, options));
  return out;
}

bool recover(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path.string(), "", "an existing kevo lineage file");
  return detail::recover_file(path).changed;
}

}  // namespace kevo::lineage
