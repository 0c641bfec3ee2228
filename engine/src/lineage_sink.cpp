#include "kevo/engine/lineage_sink.hpp"

#include "kevo/core/json_text.hpp"
#include "kevo/lineage/writer.hpp"

namespace kevo::engine {
namespace {

class Hdf5Sink final : public LineageSink {
 public:
  Hdf5Sink(lineage::LineageWriter writer, std::vector<std::uint32_t> task_map, bool resumed)
      : writer_(std::move(writer)), task_map_(std::move(task_map)) {
    if (resumed) writer_.append(lineage::Event{lineage::EventKind::resume, 0.0, -1, -1, -1, "run resumed"});
    else writer_.append(lineage::Event{lineage::EventKind::start, 0.0, -1, -1, -1, "run started"});
  }
  ~Hdf5Sink() override {
    try {
      writer_.append(lineage::Event{lineage::EventKind::stop, 0.0, -1, -1, -1, end_text_});
      writer_.close();
    } catch (const std::exception& e) {
      // The destructor must not throw; the writer already warned.
    }
  }
  void record(const Candidate& c) override {
    writer_.append(global(c));
    record_llm(c);
  }
  void record_migrant(const Candidate& c, int origin_rank) override { writer_.append(global(c), origin_rank); }
  void event(EventKind kind, std::int64_t id, int from_rank, int to_rank, const std::string& text) override {
    lineage::EventKind k = lineage::EventKind::note;
    switch (kind) {
      case EventKind::migration_in: k = lineage::EventKind::migration_in; break;
      case EventKind::migration_out: k = lineage::EventKind::migration_out; break;
      case EventKind::checkpoint: k = lineage::EventKind::checkpoint; break;
      case EventKind::resume: k = lineage::EventKind::resume; break;
      case EventKind::note: k = lineage::EventKind::note; break;
    }
    writer_.append(lineage::Event{k, 0.0, id, from_rank, to_rank, text});
  }
  void end(const std::string& text) override { end_text_ = text; }
  void tick() override { writer_.maybe_flush(); }
  void flush() override { writer_.flush(); }

 private:
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
  const Candidate& global(const Candidate& c) {
    if (task_map_.empty()) return c;
    scratch_ = c;
    scratch_.task = task_map_.at(c.task);
    return scratch_;
  }
  lineage::LineageWriter writer_;
  std::vector<std::uint32_t> task_map_;
  Candidate scratch_;
  std::vector<std::string_view> records_;
  std::string end_text_ = "run ended";
};

}  // namespace

std::unique_ptr<LineageSink> open_hdf5_sink(const std::filesystem::path& file, const RunAttributes& attrs,
                                            int flush_records, double flush_seconds) {
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
    return std::make_unique<Hdf5Sink>(lineage::LineageWriter::open_append(file, opts), attrs.task_map, true);
  return std::make_unique<Hdf5Sink>(lineage::LineageWriter::create(file, info, opts), attrs.task_map, attrs.append);
}

}  // namespace kevo::engine
