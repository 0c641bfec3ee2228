#include "kevo/engine/lineage_sink.hpp"

#include "kevo/lineage/writer.hpp"

namespace kevo::engine {
namespace {

class Hdf5Sink final : public LineageSink {
 public:
  explicit Hdf5Sink(lineage::LineageWriter writer) : writer_(std::move(writer)) {
    writer_.append(lineage::Event{lineage::EventKind::start, 0.0, -1, -1, -1, "run started"});
  }
  ~Hdf5Sink() override {
    try {
      writer_.append(lineage::Event{lineage::EventKind::stop, 0.0, -1, -1, -1, "run ended"});
      writer_.close();
    } catch (const std::exception& e) {
      // The destructor must not throw; the writer already warned.
    }
  }
  void record(const Candidate& c) override { writer_.append(c); }
  void tick() override { writer_.maybe_flush(); }
  void flush() override { writer_.flush(); }

 private:
  lineage::LineageWriter writer_;
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
  return std::make_unique<Hdf5Sink>(lineage::LineageWriter::create(file, info, opts));
}

}  // namespace kevo::engine
