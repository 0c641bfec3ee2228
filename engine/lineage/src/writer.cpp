#include "kevo/lineage/writer.hpp"

#include "kevo/core/hash.hpp"
#include "kevo/core/text.hpp"
#include "format.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <thread>
#include <unordered_map>

namespace kevo::lineage {
namespace {

using Clock = LineageWriter::Clock;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Two independent 64-bit hashes and the length: a false match (two different
// texts sharing one reference) needs a 128-bit collision. The texts are
// candidates' sources, outputs and LLM replies, written by an adversary; the
// second hash is SipHash-2-4 under a key drawn per writer (red team 22: the
// unkeyed hash it replaced, and std::hash, can be made to collide without a
// key, and a chosen collision would log one candidate's text as another's).
struct TextKey {
  std::uint64_t a, b;
  std::size_t size;
  bool operator==(const TextKey&) const = default;
};
struct TextKeyHash {
  std::size_t operator()(const TextKey& k) const noexcept { return static_cast<std::size_t>(k.a); }
};

// Consecutive failed flushes before the first warning, and the pause between
// later warnings of the same streak.
constexpr unsigned kWarnAfterFailures = 5;
constexpr double kWarnEverySeconds = 30.0;

}  // namespace

struct LineageWriter::Impl {
  std::filesystem::path path;
  WriterOptions opt;
  std::int32_t rank = 0;
  std::uint64_t tasks = 0;

  std::vector<Row> rows;
  std::vector<EventRow> events;
  std::vector<std::string> texts;
  std::uint64_t rows_on_disk = 0, events_on_disk = 0;
  std::uint64_t text_next = 0;        // position of the first buffered text in /text
  std::uint64_t text_extent_set = 0;  // largest /text extent this writer has set
  std::unordered_map<TextKey, std::int64_t, TextKeyHash> text_refs;
  std::uint64_t text_key0 = 0, text_key1 = 0;   // the dedup's SipHash key (kernel randomness, per writer)

  h5::PropList fapl;
  h5::PropList dxpl;
  h5::Datatype str_type;

  Clock::time_point oldest_buffered{};   // append time of the oldest buffered record
  Clock::time_point next_attempt{};      // retry delay after a failed flush
  unsigned streak = 0;                   // consecutive failed flushes
  Clock::time_point last_warning{};
  std::uint64_t flushes = 0, failures = 0;
  std::string last_error;
  bool closed = false;
  bool warned_op_cut = false;

  Impl(std::filesystem::path p, WriterOptions o) : path(std::move(p)), opt(std::move(o)) {
    if (opt.flush_records == 0) opt.flush_records = 1;
    fapl = detail::writer_fapl();
    dxpl = detail::string_dxpl();
    str_type = h5::vlen_utf8();
    std::random_device rd;
    text_key0 = (static_cast<std::uint64_t>(rd()) << 32) | rd();
    text_key1 = (static_cast<std::uint64_t>(rd()) << 32) | rd();
  }

  void warn(const std::string& message) const {
    if (opt.warn)
      opt.warn(message);
    else
      std::cerr << "kevo: warning: lineage: " << message << '\n';
  }

  std::size_t buffered() const { return rows.size() + events.size(); }

  void note_buffered() {
    if (buffered() == 0) oldest_buffered = Clock::now();
  }

  std::int64_t add_text(std::string_view raw) {
    if (raw.empty()) return kNoText;
    std::string fixed;
    std::string_view text = raw;
    if (!is_clean_utf8(raw, kStoredText)) {
      fixed = sanitize_utf8(raw, kStoredText);
      text = fixed;
    }
    const TextKey key{std::hash<std::string_view>{}(text), siphash24(text, text_key0, text_key1), text.size()};
    const auto ref = static_cast<std::int64_t>(text_next + texts.size());
    if (text_refs.size() >= opt.dedupe_entries) text_refs.clear();
    const auto [it, inserted] = text_refs.try_emplace(key, ref);
    if (!inserted) return it->second;
    texts.emplace_back(fixed.empty() ? std::string(text) : std::move(fixed));
    return ref;
  }

  // Moves the buffered texts to start at `at`, and every reference to them.
  void rebase_texts(std::uint64_t at) {
    const auto old_first = static_cast<std::int64_t>(text_next);
    const auto delta = static_cast<std::int64_t>(at - text_next);
    const auto shift = [&](std::int64_t& ref) {
      if (ref >= old_first) ref += delta;
    };
    for (Row& r : rows)
      for (std::int64_t* ref : {&r.message, &r.params, &r.source, &r.compile_log, &r.feedback, &r.output_tail,
                                &r.mismatch, &r.op_note, &r.profile, &r.device})
        shift(*ref);
    for (EventRow& e : events) shift(e.text);
    for (auto& entry : text_refs) shift(entry.second);
    text_next = at;
  }

  // Checks that the dataset holds what this writer put there (plus, at most,
  // the part of a batch an earlier failed attempt got in).
  void check_extent(hid_t dataset, const char* name, std::uint64_t on_disk, std::size_t pending) const {
    const hsize_t n = h5::extent(dataset);
    if (n < on_disk || n > on_disk + pending)
      throw Failure("lineage file " + path.string() + ": /" + name + " has " + std::to_string(n) +
                    " elements but this writer wrote " + std::to_string(on_disk) +
                    ": another process changed the file");
  }

  // One flush: open (SWMR write), texts, flush, rows and events, close.
  // Throws on any failure. A retry writes rows and events to the same
  // positions (never duplicating them) and texts past anything an earlier
  // attempt may have written.
  void write_batch() {
    h5::File file = h5::open_file(path, H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl.get());
    if (!texts.empty()) {
      h5::Dataset ds = h5::open_dataset(file.get(), detail::kText);
      const hsize_t n = h5::extent(ds.get());
      if (n < text_next || n > std::max<std::uint64_t>(text_next, text_extent_set))
        throw Failure("lineage file " + path.string() + ": /text has " + std::to_string(n) +
                      " elements but this writer wrote " + std::to_string(text_next) +
                      ": another process changed the file");
      // An earlier attempt that failed half-way may have left elements here
      // (up to the largest extent it set, whether or not that reached the
      // file). Never write over them: HDF5 frees the heap object an
      // overwritten string element held, and it may never have been written.
      const std::uint64_t fresh = std::max<std::uint64_t>(n, text_extent_set);
      if (fresh > text_next) rebase_texts(fresh);
      std::vector<const char*> ptrs;
      ptrs.reserve(texts.size());
      for (const auto& t : texts) ptrs.push_back(t.c_str());
      text_extent_set = std::max<std::uint64_t>(text_extent_set, text_next + texts.size());
      h5::write_at(ds.get(), text_next, texts.size(), str_type.get(), ptrs.data(), dxpl.get());
      ds.close("H5Dclose(text)");
      // Texts (in HDF5's global heap) reach the file before any row that
      // refers to them: a writer killed from here on leaves rows whose texts
      // are readable. (Measured: without this, a kill could leave visible
      // rows pointing at strings that were never written.)
      h5::check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), "H5Fflush");
    }
    if (!rows.empty()) {
      h5::Dataset ds = h5::open_dataset(file.get(), detail::kCandidates);
      check_extent(ds.get(), detail::kCandidates, rows_on_disk, rows.size());
      h5::write_at(ds.get(), rows_on_disk, rows.size(), detail::row_type(), rows.data());
      ds.close("H5Dclose(candidates)");
    }
    if (!events.empty()) {
      h5::Dataset ds = h5::open_dataset(file.get(), detail::kEvents);
      check_extent(ds.get(), detail::kEvents, events_on_disk, events.size());
      h5::write_at(ds.get(), events_on_disk, events.size(), detail::event_type(), events.data());
      ds.close("H5Dclose(events)");
    }
    file.close("H5Fclose(" + path.string() + ")");
    if (opt.fsync) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      check_errno(fd >= 0, "open " + path.string());
      const int rc = ::fsync(fd);
      const int err = errno;
      ::close(fd);
      errno = err;
      check_errno(rc == 0, "fsync " + path.string());
    }
  }

  // Never throws (except from a throwing warn callback, which callers shield).
  bool try_flush(Clock::time_point now) {
    if (buffered() == 0 && texts.empty()) return true;
    try {
      write_batch();
    } catch (const std::exception& e) {
      ++failures;
      ++streak;
      last_error = e.what();
      const bool lock = dynamic_cast<const h5::Error*>(&e) && static_cast<const h5::Error&>(e).lock_conflict();
      // Back off (50 ms doubling to 2 s) so that a reader holding the file is
      // not hammered and the run does not pay for a failed open per record.
      const double delay = std::min(2.0, 0.05 * std::pow(2.0, std::min(streak, 10u) - 1));
      next_attempt = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
      if (streak == kWarnAfterFailures ||
          (streak > kWarnAfterFailures && seconds(now - last_warning) >= kWarnEverySeconds)) {
        last_warning = now;
        std::string msg = "cannot write " + path.string() + " (" + std::to_string(streak) +
                          " attempts in a row; " + std::to_string(rows.size()) + " rows and " +
                          std::to_string(events.size()) + " events kept in memory, retrying): " + last_error;
        if (lock)
          msg += ". A reader holds the file open: close it, or open it without a lock "
                 "(h5py: locking=False; tools: HDF5_USE_FILE_LOCKING=FALSE)";
        warn(msg);
      }
      return false;
    }
    rows_on_disk += rows.size();
    events_on_disk += events.size();
    text_next += texts.size();
    rows.clear();
    events.clear();
    texts.clear();
    ++flushes;
    if (streak >= kWarnAfterFailures)
      warn("wrote " + path.string() + " again after " + std::to_string(streak) + " failed attempts");
    streak = 0;
    next_attempt = {};
    return true;
  }

  void require_open() const {
    if (closed) throw Failure("lineage writer for " + path.string() + " is closed");
  }
};

LineageWriter::LineageWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LineageWriter::LineageWriter(LineageWriter&&) noexcept = default;
LineageWriter& LineageWriter::operator=(LineageWriter&& other) noexcept {
  if (this != &other) {
    LineageWriter old(std::move(*this));   // the old writer flushes and closes here
    impl_ = std::move(other.impl_);
  }
  return *this;
}

LineageWriter::~LineageWriter() {
  if (!impl_ || impl_->closed) return;
  try {
    close();
  } catch (const std::exception& e) {
    try {
      impl_->warn(e.what());
    } catch (...) {
    }
  } catch (...) {
  }
}

LineageWriter LineageWriter::create(const std::filesystem::path& path, const RunInfo& run, WriterOptions options) {
  h5::init();
  if (run.rank < 0 || run.nranks < 1 || run.rank >= run.nranks)
    throw Failure("lineage: rank " + std::to_string(run.rank) + " of " + std::to_string(run.nranks) +
                  " ranks is not a valid rank");
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    throw Failure("lineage file " + path.string() + " already exists (a run never overwrites a lineage)");
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  auto impl = std::make_unique<Impl>(path, std::move(options));
  try {
    h5::File file = h5::create_file(path, H5F_ACC_EXCL, impl->fapl.get());
    detail::create_layout(file.get(), run);
    file.close("H5Fclose(" + path.string() + ")");
  } catch (...) {
    // A half-made file would block the rerun; nothing in it is worth keeping.
    std::filesystem::remove(path, ec);
    throw;
  }
  impl->rank = run.rank;
  impl->tasks = run.tasks.size();
  return LineageWriter(std::move(impl));
}

LineageWriter LineageWriter::open_append(const std::filesystem::path& path, WriterOptions options) {
  h5::init();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path.string(), "", "an existing kevo lineage file");
  const detail::Recovered r = detail::recover_file(path);
  auto impl = std::make_unique<Impl>(path, std::move(options));
  impl->rank = r.rank;
  impl->tasks = r.tasks;
  impl->rows_on_disk = r.rows;
  impl->events_on_disk = r.events;
  impl->text_next = r.texts;
  impl->text_extent_set = r.texts;
  return LineageWriter(std::move(impl));
}

bool LineageWriter::library_thread_safe() {
  hbool_t safe = 0;
  return H5is_library_threadsafe(&safe) >= 0 && safe;
}

void LineageWriter::check(const Candidate& c) const {
  const Impl& m = *impl_;
  if (c.verdict.status == Status::pending)
    throw Failure("lineage: candidate " + std::to_string(c.id) + " has status pending; only judged candidates are recorded");
  if (static_cast<int>(c.verdict.status) >= kStatusCount || static_cast<int>(c.verdict.stage) > static_cast<int>(Stage::done))
    throw Failure("lineage: candidate " + std::to_string(c.id) + " has an unknown status or stage value");
  if (c.task >= m.tasks)
    throw Failure("lineage: candidate " + std::to_string(c.id) + " names task " + std::to_string(c.task) +
                  " but the run has " + std::to_string(m.tasks) + " tasks");
  if (c.id == kUnwrittenId) throw Failure("lineage: candidate id " + std::to_string(c.id) + " is reserved");
}

void LineageWriter::append(const Candidate& c, std::optional<std::int32_t> origin_rank) {
  Impl& m = *impl_;
  m.require_open();
  check(c);
  m.note_buffered();
  Row& r = m.rows.emplace_back();
  detail::reset(r);
  const Verdict& v = c.verdict;
  r.id = c.id;
  r.task = c.task;
  const std::string op = is_clean_utf8(c.op, kShownText) ? c.op : sanitize_utf8(c.op, kShownText);
  const std::string_view name = utf8_prefix(op, kOpBytes - 1);
  if (name.size() < op.size() && !m.warned_op_cut) {
    m.warned_op_cut = true;
    m.warn("operator name \"" + op + "\" is longer than " + std::to_string(kOpBytes - 1) +
           " bytes; the lineage keeps \"" + std::string(name) + "\" (warned once)");
  }
  std::memcpy(r.op, name.data(), name.size());
  r.status = v.status;
  r.stage = v.stage;
  r.compile_cached = v.compile_cached;
  r.parent0 = c.parent0;
  r.parent1 = c.parent1;
  r.duplicate_of = c.duplicate_of;
  r.hash = c.hash;
  r.eval_seed = c.eval_seed;
  r.rank = m.rank;
  r.origin_rank = origin_rank.value_or(m.rank);
  r.message = m.add_text(v.message);
  r.params = m.add_text(c.params_json);
  r.source = m.add_text(c.source);
  r.compile_log = m.add_text(v.compile_log);
  r.feedback = m.add_text(v.feedback);
  r.output_tail = m.add_text(v.output_tail);
  if (v.mismatch) {
    // The verdict JSON's own "mismatch" object, so both spell it the same way
    // (non-finite numbers as "nan"/"inf" strings).
    Verdict only;
    only.mismatch = v.mismatch;
    r.mismatch = m.add_text(to_json(only)["mismatch"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  r.op_note = m.add_text(c.op_note);
  r.profile = m.add_text(v.profile);
  r.device = m.add_text(v.device);
  r.compile_seconds = v.compile_seconds;
  r.worker_seconds = v.worker_seconds;
  r.slot_seconds = v.slot_seconds;
  r.cand_median_ns = v.cand_median_ns;
  r.cand_iqr_ns = v.cand_iqr_ns;
  r.ref_median_ns = v.ref_median_ns;
  r.ref_iqr_ns = v.ref_iqr_ns;
  r.repeats = v.repeats;
  r.speedup = v.speedup;
  r.max_abs_error = v.max_abs_error;
  r.rel_l2_error = v.rel_l2_error;
  r.exit_code = v.exit_code;
  r.signal = v.signal;
  r.max_rss_kb = v.max_rss_kb;
  r.t_created = c.t_created;
  r.t_submitted = c.t_submitted;
  r.t_finished = c.t_finished;
}

void LineageWriter::append(const Event& event) {
  Impl& m = *impl_;
  m.require_open();
  if (static_cast<int>(event.kind) >= kEventKindCount) throw Failure("lineage: unknown event kind");
  m.note_buffered();
  EventRow& e = m.events.emplace_back();
  detail::reset(e);
  e.time = event.time > 0.0 ? event.time : unix_now();
  e.kind = event.kind;
  e.id = event.id;
  e.from_rank = event.from_rank;
  e.to_rank = event.to_rank;
  e.text = m.add_text(event.text);
}

bool LineageWriter::maybe_flush(Clock::time_point now) {
  Impl& m = *impl_;
  if (m.closed || m.buffered() == 0 || now < m.next_attempt) return false;
  if (m.buffered() < m.opt.flush_records && seconds(now - m.oldest_buffered) < m.opt.flush_seconds) return false;
  try {
    return m.try_flush(now);
  } catch (...) {   // only a throwing warn callback gets here
    return false;
  }
}

bool LineageWriter::flush() {
  Impl& m = *impl_;
  if (m.closed) return m.buffered() == 0;
  if (m.buffered() == 0) return true;
  try {
    return m.try_flush(Clock::now());
  } catch (...) {
    return false;
  }
}

void LineageWriter::close() {
  Impl& m = *impl_;
  if (m.closed) return;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, m.opt.close_retry_seconds)));
  while (m.buffered() > 0) {
    bool ok = false;
    try {
      ok = m.try_flush(Clock::now());
    } catch (...) {
    }
    if (ok) break;
    const auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(deadline - now, std::max(m.next_attempt - now, Clock::duration(std::chrono::milliseconds(10)))));
  }
  m.closed = true;
  if (m.buffered() > 0)
    throw Failure("lineage: " + std::to_string(m.rows.size()) + " rows and " + std::to_string(m.events.size()) +
                  " events could not be written to " + m.path.string() + " within " +
                  std::to_string(m.opt.close_retry_seconds) + " s: " + m.last_error);
}

const std::filesystem::path& LineageWriter::path() const { return impl_->path; }
std::int32_t LineageWriter::rank() const { return impl_->rank; }
std::uint64_t LineageWriter::rows_written() const { return impl_->rows_on_disk; }
std::uint64_t LineageWriter::events_written() const { return impl_->events_on_disk; }
std::size_t LineageWriter::rows_buffered() const { return impl_->rows.size(); }
std::size_t LineageWriter::events_buffered() const { return impl_->events.size(); }
std::uint64_t LineageWriter::texts_written() const { return impl_->text_next; }
std::uint64_t LineageWriter::flushes() const { return impl_->flushes; }
std::uint64_t LineageWriter::failed_flushes() const { return impl_->failures; }
std::string LineageWriter::last_error() const { return impl_->last_error; }

}  // namespace kevo::lineage
