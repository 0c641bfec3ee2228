#include "kevo/lineage/merge.hpp"

#include "kevo/core/text.hpp"
#include "format.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace kevo::lineage {
namespace {

constexpr const char* kEventRank = "event_rank";

// The temporary file of a merge: removed unless it was renamed into place,
// so a failed or interrupted merge leaves nothing behind.
class TempFile {
 public:
  explicit TempFile(std::filesystem::path path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (armed_) {
      std::error_code ec;
      std::filesystem::remove(path_, ec);
    }
  }
  const std::filesystem::path& path() const { return path_; }
  void release() { armed_ = false; }

 private:
  std::filesystem::path path_;
  bool armed_ = true;
};

// One text table for the merged file: equal texts are stored once (a
// migrant's source is in its origin's file and in every receiver's).
class TextTable {
 public:
  std::int64_t add(const std::string& text) {
    const auto [it, fresh] = index_.try_emplace(text, static_cast<std::int64_t>(order_.size()));
    if (fresh) order_.push_back(&it->first);   // node-based map: the key's address is stable
    return it->second;
  }
  const std::vector<const std::string*>& texts() const { return order_; }

 private:
  std::unordered_map<std::string, std::int64_t> index_;
  std::vector<const std::string*> order_;
};

void check_stop(const MergeOptions& options, const std::filesystem::path& out) {
  if (options.stop && options.stop->load() != 0)
    throw Failure("merge interrupted by a signal; " + out.string() + " was not written");
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Data reaches the disk before the rename makes the file visible under its name.
void fsync_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Failure("open(" + path.string() + "): " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw Failure("fsync(" + path.string() + "): " + std::strerror(err));
}

// Moves `from` to `to`: without `replace`, atomically refuses an existing
// `to` (link(2) fails with EEXIST), so a file created meanwhile is never
// overwritten.
void publish(const std::filesystem::path& from, const std::filesystem::path& to, bool replace) {
  if (replace) {
    if (::rename(from.c_str(), to.c_str()) != 0)
      throw Failure("rename(" + from.string() + ", " + to.string() + "): " + std::strerror(errno));
    return;
  }
  if (::link(from.c_str(), to.c_str()) == 0) {
    ::unlink(from.c_str());
    return;
  }
  const int err = errno;
  if (err == EEXIST)
    throw InputError(to.string(), "", "a file that does not exist yet (kevo merge --force replaces it)");
  // File systems without hard links: check, then rename.
  std::error_code ec;
  if (std::filesystem::exists(to, ec))
    throw InputError(to.string(), "", "a file that does not exist yet (kevo merge --force replaces it)");
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw Failure("rename(" + from.string() + ", " + to.string() + "): " + std::strerror(errno));
}

}  // namespace

namespace {

MergeResult merge_once(const std::filesystem::path& run_dir, const std::filesystem::path& out,
                       const MergeOptions& options);

}  // namespace

MergeResult merge_run(const std::filesystem::path& run_dir, const std::filesystem::path& out,
                      const MergeOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec))
    throw InputError(run_dir.string(), "", "a run directory (holding lineage/rank-NNNN.h5)");
  // Refuse early (the rename checks again, atomically).
  if (!options.force && std::filesystem::exists(out, ec))
    throw InputError(out.string(), "", "a file that does not exist yet (kevo merge --force replaces it)");
  const std::filesystem::path folder = out.parent_path().empty() ? std::filesystem::path(".") : out.parent_path();
  if (!std::filesystem::is_directory(folder, ec))
    throw InputError(out.string(), "", "a path in an existing folder");
  if (std::filesystem::is_directory(out, ec)) throw InputError(out.string(), "", "a file name, not a folder");
  // A running run's rank file can change under its reader: a chunk that the
  // writer appended after the open was read past the end of the file as the
  // reader saw it (an HDF5 error, seen once in a clean-clone CI:
  // tests/mpi/mpi_merge.py, part 4). Read again from a fresh open, a few
  // times, before giving up; nothing is written before the files are read.
  for (int attempt = 1;; ++attempt) {
    try {
      return merge_once(run_dir, out, options);
    } catch (const h5::Error&) {
      if (attempt >= 5) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20 << attempt));
    }
  }
}

namespace {

MergeResult merge_once(const std::filesystem::path& run_dir, const std::filesystem::path& out,
                       const MergeOptions& options) {
  std::error_code ec;
  const std::filesystem::path folder = out.parent_path().empty() ? std::filesystem::path(".") : out.parent_path();
  // Every rank file, in rank order: throws InputError naming the file that
  // cannot be read.
  const std::vector<LineageReader> readers = read_run_dir(run_dir, options.reader);
  for (const auto& r : readers)
    if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(r.path(), out, ec))
      throw InputError(out.string(), "", "an output file other than the run's own lineage files");
  check_stop(options, out);

  MergeResult result;
  result.files = readers.size();
  RunInfo run = readers.front().run();
  std::vector<std::string>& tasks = run.tasks;
  std::map<std::string, std::uint32_t> task_index;
  for (std::uint32_t i = 0; i < tasks.size(); ++i) task_index.emplace(tasks[i], i);

  TextTable text;
  std::vector<Row> rows;
  std::vector<EventRow> events;
  std::vector<std::int32_t> event_rank;
  nlohmann::json merged_from = nlohmann::json::array();
  for (const auto& reader : readers) {
    merged_from.push_back((std::filesystem::path("lineage") / reader.path().filename()).string());
    run.start_time = std::min(run.start_time, reader.run().start_time);
    result.skipped_rows += reader.skipped_rows();
    result.skipped_events += reader.skipped_events();

    // Task indexes of this file in the merged /tasks (all files of one run
    // name the same tasks; a name seen first here is appended).
    std::vector<std::uint32_t> task_map;
    for (const auto& name : reader.run().tasks) {
      const auto [it, fresh] = task_index.try_emplace(name, static_cast<std::uint32_t>(tasks.size()));
      if (fresh) tasks.push_back(name);
      task_map.push_back(it->second);
    }

    // Every text this file's rows refer to, in one visit; then remapped.
    std::vector<std::int64_t> refs;
    for (const Row& r : reader.rows())
      for (std::int64_t ref : {r.message, r.params, r.source, r.compile_log, r.feedback, r.output_tail, r.mismatch,
                               r.op_note, r.profile, r.device})
        if (ref != kNoText) refs.push_back(ref);
    std::sort(refs.begin(), refs.end());
    refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
    const std::vector<std::string> got = reader.texts(refs);
    std::unordered_map<std::int64_t, std::int64_t> remap;
    remap.reserve(refs.size());
    for (std::size_t i = 0; i < refs.size(); ++i) remap.emplace(refs[i], text.add(got[i]));
    const auto to_merged = [&](std::int64_t& ref) {
      if (ref != kNoText) ref = remap.at(ref);
    };

    for (Row r : reader.rows()) {
      for (std::int64_t* ref : {&r.message, &r.params, &r.source, &r.compile_log, &r.feedback, &r.output_tail,
                                &r.mismatch, &r.op_note, &r.profile, &r.device})
        to_merged(*ref);
      if (r.task < task_map.size()) r.task = task_map[r.task];
      rows.push_back(r);
    }
    for (const Event& e : reader.events()) {
      EventRow row;
      detail::reset(row);
      row.time = e.time;
      row.kind = e.kind;
      row.id = e.id;
      row.from_rank = e.from_rank;
      row.to_rank = e.to_rank;
      row.text = e.text.empty() ? kNoText : text.add(e.text);
      events.push_back(row);
      event_rank.push_back(reader.run().rank);
    }
    check_stop(options, out);
  }
  run.rank = -1;
  run.nranks = static_cast<std::int32_t>(readers.size());

  // Write next to `out` (same file system, so the rename is atomic).
  TempFile tmp(folder / ("." + out.filename().string() + ".tmp-" + std::to_string(::getpid())));
  {
    h5::PropList fapl = detail::writer_fapl();
    h5::File file = h5::create_file(tmp.path(), H5F_ACC_EXCL, fapl.get());
    detail::create_layout(file.get(), run);
    h5::write_attr_string(file.get(), "merged_from", merged_from.dump());
    h5::write_attr_f64(file.get(), "merged_time", unix_now());
    {
      h5::Dataset ds = h5::open_dataset(file.get(), detail::kText);
      h5::Datatype str = h5::vlen_utf8();
      h5::PropList dxpl = detail::string_dxpl();
      // In batches: HDF5 converts a whole selection at once.
      constexpr std::size_t batch = 65536;
      const auto& all = text.texts();
      std::vector<std::string> valid;
      std::vector<const char*> ptrs;
      for (std::size_t at = 0; at < all.size(); at += batch) {
        const std::size_t n = std::min(batch, all.size() - at);
        valid.clear();
        ptrs.clear();
        // The writer already stored valid UTF-8 without NUL; keep it so.
        for (std::size_t i = 0; i < n; ++i) valid.push_back(sanitize_utf8(*all[at + i], kStoredText));
        for (const auto& s : valid) ptrs.push_back(s.c_str());
        h5::write_at(ds.get(), at, n, str.get(), ptrs.data(), dxpl.get());
      }
    }
    {
      h5::Dataset ds = h5::open_dataset(file.get(), detail::kCandidates);
      h5::write_at(ds.get(), 0, rows.size(), detail::row_type(), rows.data());
    }
    {
      h5::Dataset ds = h5::open_dataset(file.get(), detail::kEvents);
      h5::write_at(ds.get(), 0, events.size(), detail::event_type(), events.data());
    }
    {
      const hsize_t n = event_rank.size();
      h5::Dataspace space = h5::simple_space(std::span<const hsize_t>(&n, 1));
      h5::PropList dcpl = h5::make_plist(H5P_DATASET_CREATE);
      h5::Dataset ds = h5::create_dataset(file.get(), kEventRank, H5T_NATIVE_INT32, space.get(), dcpl.get());
      if (n > 0)
        h5::check(H5Dwrite(ds.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, event_rank.data()),
                  "H5Dwrite(event_rank)");
    }
    file.close("H5Fclose(" + tmp.path().string() + ")");
  }
  fsync_file(tmp.path());
  check_stop(options, out);
  publish(tmp.path(), out, options.force);
  tmp.release();
  result.rows = rows.size();
  result.events = events.size();
  result.texts = text.texts().size();
  return result;
}

}  // namespace

}  // namespace kevo::lineage
