#include "kevo/engine/lineage_sink.hpp"

#include "kevo/core/json_text.hpp"
#include "kevo/lineage/writer.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace kevo::engine {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What the island hands to the lineage, in order.
struct Item {
  enum class Kind { candidate, migrant, event } kind = Kind::candidate;
  Candidate c;
  int origin_rank = -1;
  lineage::Event event;
};

// The island's records into one rank's HDF5 lineage file. The writer's work
// (texts checked, hashed and deduplicated, rows built, the file opened,
// written and closed at every flush) runs on a thread of its own when the
// HDF5 library is thread-safe: about a quarter of the island's time per
// candidate with LLM records (issue 19). Records reach the writer in the
// order the island made them; each keeps the time it was made at; a
// candidate the writer would refuse is refused at once, on the island's
// thread (LineageWriter::check). flush() returns when everything handed
// over is written (or kept for a retry, as the writer does with a busy
// file), so the run's end and the results read a complete file.
class Hdf5Sink final : public LineageSink {
 public:
  Hdf5Sink(lineage::LineageWriter writer, std::vector<std::uint32_t> task_map, bool resumed, bool background)
      : writer_(std::move(writer)), task_map_(std::move(task_map)) {
    if (resumed) writer_.append(lineage::Event{lineage::EventKind::resume, 0.0, -1, -1, -1, "run resumed"});
    else writer_.append(lineage::Event{lineage::EventKind::start, 0.0, -1, -1, -1, "run started"});
    if (background && lineage::LineageWriter::library_thread_safe()) worker_ = std::thread([this] { work(); });
  }
  ~Hdf5Sink() override {
    stop_worker();
    try {
      writer_.append(lineage::Event{lineage::EventKind::stop, 0.0, -1, -1, -1, end_text_});
      writer_.close();
    } catch (const std::exception& e) {
      // The destructor must not throw; the writer already warned.
    }
  }
  void record(const Candidate& c) override {
    if (worker_.joinable()) return record_moved(Candidate(c));
    writer_.append(with_global_task(c));
    record_llm(c);
  }
  void record_moved(Candidate&& c) override {
    if (!worker_.joinable()) return record(c);
    writer_.check(set_global_task(c));
    Item item;
    item.c = std::move(c);
    hand_over(std::move(item));
  }
  void record_migrant(const Candidate& c, int origin_rank) override {
    Item item;
    item.kind = Item::Kind::migrant;
    item.c = c;
    writer_.check(set_global_task(item.c));
    item.origin_rank = origin_rank;
    hand_over(std::move(item));
  }
  void event(EventKind kind, std::int64_t id, int from_rank, int to_rank, const std::string& text) override {
    lineage::EventKind k = lineage::EventKind::note;
    switch (kind) {
      case EventKind::migration_in: k = lineage::EventKind::migration_in; break;
      case EventKind::migration_out: k = lineage::EventKind::migration_out; break;
      case EventKind::checkpoint: k = lineage::EventKind::checkpoint; break;
      case EventKind::resume: k = lineage::EventKind::resume; break;
      case EventKind::note: k = lineage::EventKind::note; break;
    }
    Item item;
    item.kind = Item::Kind::event;
    item.event = lineage::Event{k, unix_now(), id, from_rank, to_rank, text};
    hand_over(std::move(item));
  }
  void end(const std::string& text) override { end_text_ = text; }
  void tick() override {
    if (!worker_.joinable()) {
      writer_.maybe_flush();
      return;
    }
    rethrow();
  }
  void flush() override {
    if (!worker_.joinable()) {
      writer_.flush();
      return;
    }
    std::unique_lock lock(mutex_);
    const std::uint64_t mine = ++flush_asked_;
    wake_.notify_all();
    done_.wait(lock, [&] { return flush_done_ >= mine || error_; });
    lock.unlock();
    rethrow();
  }

 private:
  // The run-wide task index of a multi-rank run's rows: set in place on a
  // candidate the sink owns, on a copy of one it does not.
  Candidate& set_global_task(Candidate& c) const {
    if (!task_map_.empty()) c.task = task_map_.at(c.task);
    return c;
  }
  const Candidate& with_global_task(const Candidate& c) {
    if (task_map_.empty()) return c;
    scratch_ = c;
    return set_global_task(scratch_);
  }

  // To the writer: at once without a worker, else through the queue (which
  // waits while the worker is far behind, so memory stays bounded).
  void hand_over(Item item) {
    if (!worker_.joinable()) return write(item);
    rethrow();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return queue_.size() < kMaxQueued || error_; });
    queue_.push_back(std::move(item));
    // The worker looks every 50 ms anyway: woken for a batch only, not for
    // every record (a wake-up per candidate cost more than the hand-over).
    if (queue_.size() == kWakeAt) wake_.notify_all();
  }

  void write(Item& item) {
    switch (item.kind) {
      case Item::Kind::candidate:
        writer_.append(item.c);
        record_llm(item.c);
        break;
      case Item::Kind::migrant: writer_.append(item.c, item.origin_rank); break;
      case Item::Kind::event: writer_.append(item.event); break;
    }
  }

  // The worker: what is queued, then the writer's own flush policy; woken by
  // a batch of kWakeAt records, a flush, the end, and otherwise every 50 ms
  // (the writer's time limit, a busy file's retries).
  void work() {
    std::deque<Item> batch;
    while (true) {
      std::uint64_t asked = 0;
      bool stopping = false;
      {
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, std::chrono::milliseconds(50),
                       [&] { return queue_.size() >= kWakeAt || stop_ || flush_asked_ > flush_done_; });
        batch.swap(queue_);
        asked = flush_asked_;
        stopping = stop_;
        if (!batch.empty()) done_.notify_all();   // room in the queue again
      }
      try {
        for (Item& item : batch) write(item);
        batch.clear();
        if (asked > flush_done_) writer_.flush();
        else writer_.maybe_flush();
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
        done_.notify_all();
        return;
      }
      {
        std::lock_guard lock(mutex_);
        if (asked > flush_done_) {
          flush_done_ = asked;
          done_.notify_all();
        }
        if (stopping && queue_.empty()) return;
      }
    }
  }

  void stop_worker() {
    if (!worker_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
      wake_.notify_all();
    }
    worker_.join();
  }

  void rethrow() {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }

  // One llm event per LLM request made for the candidate (docs/lineage.md).
  // Migrants do not repeat them: the origin rank's file has them.
  void record_llm(const Candidate& c) {
    if (c.llm.empty()) return;
    // Each record as its compact dump: what the operators write is that
    // already, so it is cut out rather than parsed and dumped again.
    if (json_text::canonical_array(c.llm, records_)) {
      for (const std::string_view t : records_)
        writer_.append(lineage::Event{lineage::EventKind::llm, 0.0, static_cast<std::int64_t>(c.id), -1, -1,
                                      std::string(t)});
      return;
    }
    const auto turns = nlohmann::json::parse(c.llm, nullptr, false);
    if (!turns.is_array()) return;
    for (const auto& t : turns)
      writer_.append(lineage::Event{lineage::EventKind::llm, 0.0, static_cast<std::int64_t>(c.id), -1, -1,
                                    t.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  }

  static constexpr std::size_t kWakeAt = 64, kMaxQueued = 4096;
  lineage::LineageWriter writer_;
  std::vector<std::uint32_t> task_map_;
  Candidate scratch_;
  std::vector<std::string_view> records_;
  std::string end_text_ = "run ended";

  std::mutex mutex_;
  std::condition_variable wake_;   // the worker: something queued, a flush asked, stop
  std::condition_variable done_;   // the island: room in the queue, a flush done, an error
  std::deque<Item> queue_;
  std::uint64_t flush_asked_ = 0, flush_done_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;   // last: started when everything above exists
};

}  // namespace

std::unique_ptr<LineageSink> open_hdf5_sink(const std::filesystem::path& file, const RunAttributes& attrs,
                                            int flush_records, double flush_seconds, bool background) {
  lineage::RunInfo info;
  info.config_json = attrs.config.dump();
  info.task_manifests_json = attrs.tasks.dump();
  info.tasks = attrs.task_names;
  info.seed = attrs.seed;
  info.host = attrs.host;
  info.start_time = attrs.start_time;
  info.rank = attrs.rank;
  info.nranks = attrs.ranks;
  lineage::WriterOptions opts;
  opts.flush_records = static_cast<std::size_t>(flush_records);
  opts.flush_seconds = flush_seconds;
  if (attrs.append && std::filesystem::exists(file))
    return std::make_unique<Hdf5Sink>(lineage::LineageWriter::open_append(file, opts), attrs.task_map, true,
                                      background);
  return std::make_unique<Hdf5Sink>(lineage::LineageWriter::create(file, info, opts), attrs.task_map, attrs.append,
                                    background);
}

}  // namespace kevo::engine
