#include "format.hpp"

#include "kevo/core/text.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <new>
#include <string>

namespace kevo::lineage::detail {
namespace {

// Registers one member; the name is the member's own (what readers see).
#define KEVO_INSERT(T, member, type) \
  h5::check(H5Tinsert(t.get(), #member, HOFFSET(T, member), (type)), "H5Tinsert(" #member ")")

h5::Datatype make_status_type() {
  std::vector<std::pair<std::string_view, std::uint8_t>> members;
  for (int i = 0; i < kStatusCount; ++i)
    members.emplace_back(to_string(static_cast<Status>(i)), static_cast<std::uint8_t>(i));
  return h5::enum_type<std::uint8_t>(H5T_NATIVE_UINT8, members);
}

h5::Datatype make_stage_type() {
  std::vector<std::pair<std::string_view, std::uint8_t>> members;
  for (int i = 0; i <= static_cast<int>(Stage::done); ++i)
    members.emplace_back(to_string(static_cast<Stage>(i)), static_cast<std::uint8_t>(i));
  return h5::enum_type<std::uint8_t>(H5T_NATIVE_UINT8, members);
}

h5::Datatype make_event_kind_type() {
  std::vector<std::pair<std::string_view, std::uint8_t>> members;
  for (int i = 0; i < kEventKindCount; ++i)
    members.emplace_back(to_string(static_cast<EventKind>(i)), static_cast<std::uint8_t>(i));
  return h5::enum_type<std::uint8_t>(H5T_NATIVE_UINT8, members);
}

h5::Datatype make_row_type() {
  h5::Datatype t(h5::check_id(H5Tcreate(H5T_COMPOUND, sizeof(Row)), "H5Tcreate(Row)"));
  const h5::Datatype op = h5::fixed_utf8(kOpBytes);
  const h5::Datatype boolean = h5::bool_type();
  KEVO_INSERT(Row, id, H5T_NATIVE_UINT64);
  KEVO_INSERT(Row, task, H5T_NATIVE_UINT32);
  KEVO_INSERT(Row, op, op.get());
  KEVO_INSERT(Row, status, status_type());
  KEVO_INSERT(Row, stage, stage_type());
  KEVO_INSERT(Row, compile_cached, boolean.get());
  KEVO_INSERT(Row, parent0, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, parent1, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, duplicate_of, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, hash, H5T_NATIVE_UINT64);
  KEVO_INSERT(Row, eval_seed, H5T_NATIVE_UINT64);
  KEVO_INSERT(Row, rank, H5T_NATIVE_INT32);
  KEVO_INSERT(Row, origin_rank, H5T_NATIVE_INT32);
  KEVO_INSERT(Row, message, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, params, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, source, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, compile_log, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, feedback, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, output_tail, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, mismatch, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, op_note, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, slot_seconds, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, profile, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, device, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, compile_seconds, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, worker_seconds, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, cand_median_ns, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, cand_iqr_ns, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, ref_median_ns, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, ref_iqr_ns, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, repeats, H5T_NATIVE_INT32);
  KEVO_INSERT(Row, speedup, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, max_abs_error, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, rel_l2_error, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, exit_code, H5T_NATIVE_INT32);
  KEVO_INSERT(Row, signal, H5T_NATIVE_INT32);
  KEVO_INSERT(Row, max_rss_kb, H5T_NATIVE_INT64);
  KEVO_INSERT(Row, t_created, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, t_submitted, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(Row, t_finished, H5T_NATIVE_DOUBLE);
  return t;
}

h5::Datatype make_event_type() {
  h5::Datatype t(h5::check_id(H5Tcreate(H5T_COMPOUND, sizeof(EventRow)), "H5Tcreate(EventRow)"));
  KEVO_INSERT(EventRow, time, H5T_NATIVE_DOUBLE);
  KEVO_INSERT(EventRow, kind, event_kind_type());
  KEVO_INSERT(EventRow, id, H5T_NATIVE_INT64);
  KEVO_INSERT(EventRow, from_rank, H5T_NATIVE_INT32);
  KEVO_INSERT(EventRow, to_rank, H5T_NATIVE_INT32);
  KEVO_INSERT(EventRow, text, H5T_NATIVE_INT64);
  return t;
}

#undef KEVO_INSERT

h5::PropList chunked_dcpl(hsize_t chunk, hid_t fill_type, const void* fill) {
  h5::PropList dcpl = h5::make_plist(H5P_DATASET_CREATE);
  h5::check(H5Pset_chunk(dcpl.get(), 1, &chunk), "H5Pset_chunk");
  if (fill) h5::check(H5Pset_fill_value(dcpl.get(), fill_type, fill), "H5Pset_fill_value");
  return dcpl;
}

void create_appendable(hid_t file, const char* name, hid_t type, hsize_t chunk, const void* fill) {
  const hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  h5::Dataspace space = h5::simple_space(std::span<const hsize_t>(&zero, 1), std::span<const hsize_t>(&unlimited, 1));
  h5::PropList dcpl = chunked_dcpl(chunk, type, fill);
  h5::create_dataset(file, name, type, space.get(), dcpl.get());
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "truncated file: eof = 1234, sblock->base_addr = 0, stored_eof = 5678"
std::uint64_t stored_eof(const std::string& message) {
  const std::string key = "stored_eof = ";
  const auto at = message.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(message.c_str() + at + key.size(), nullptr, 10);
}

}  // namespace

hid_t status_type() {
  static const h5::Datatype t = make_status_type();
  return t.get();
}
hid_t stage_type() {
  static const h5::Datatype t = make_stage_type();
  return t.get();
}
hid_t event_kind_type() {
  static const h5::Datatype t = make_event_kind_type();
  return t.get();
}
hid_t row_type() {
  static const h5::Datatype t = make_row_type();
  return t.get();
}
hid_t event_type() {
  static const h5::Datatype t = make_event_type();
  return t.get();
}

void reset(Row& row) {
  // Zero every byte (padding included), then construct the defaults in place:
  // a constructor writes members, never padding.
  std::memset(static_cast<void*>(&row), 0, sizeof row);
  ::new (static_cast<void*>(&row)) Row;
}

void reset(EventRow& event) {
  std::memset(static_cast<void*>(&event), 0, sizeof event);
  ::new (static_cast<void*>(&event)) EventRow;
}

h5::PropList writer_fapl(bool clear_status_flags) {
  h5::PropList fapl = h5::make_plist(H5P_FILE_ACCESS);
  h5::check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "H5Pset_libver_bounds");
  // Locks keep a reader from seeing a half-written flush and keep two writers
  // apart; file systems without flock (some Lustre mounts) just go without.
  // HDF5_USE_FILE_LOCKING still overrides this.
#if H5_VERSION_GE(1, 10, 7)
  h5::check(H5Pset_file_locking(fapl.get(), true, true), "H5Pset_file_locking");
#endif
  h5::check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), "H5Pset_fclose_degree");
  if (clear_status_flags) {
    // The private property h5clear uses ("clear_status_flags", registered in
    // every file-access list since 1.10.0): the library-level `h5clear -s`.
    hbool_t clear = true;
    h5::check(H5Pset(fapl.get(), "clear_status_flags", &clear),
              "H5Pset(clear_status_flags) [this HDF5 cannot clear a killed writer's status flag itself; "
              "run `h5clear -s FILE`]");
  }
  return fapl;
}

h5::PropList reader_fapl() {
  h5::PropList fapl = h5::make_plist(H5P_FILE_ACCESS);
#if H5_VERSION_GE(1, 10, 7)
  h5::check(H5Pset_file_locking(fapl.get(), false, true), "H5Pset_file_locking");
#endif
  // (Older HDF5: set HDF5_USE_FILE_LOCKING=FALSE for the same effect.)
  h5::check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), "H5Pset_fclose_degree");
  return fapl;
}

h5::PropList string_dxpl() {
  h5::PropList dxpl = h5::make_plist(H5P_DATASET_XFER);
  h5::check(H5Pset_buffer(dxpl.get(), 64 * 1024, nullptr, nullptr), "H5Pset_buffer");
  return dxpl;
}

void create_layout(hid_t file, const RunInfo& run) {
  Row fill_row;
  reset(fill_row);
  EventRow fill_event;
  reset(fill_event);
  create_appendable(file, kCandidates, row_type(), kRowChunk, &fill_row);
  create_appendable(file, kEvents, event_type(), kEventChunk, &fill_event);
  {
    h5::Datatype str = h5::vlen_utf8();
    create_appendable(file, kText, str.get(), kTextChunk, nullptr);
    const hsize_t n = run.tasks.size();
    h5::Dataspace space = h5::simple_space(std::span<const hsize_t>(&n, 1));
    h5::PropList dcpl = h5::make_plist(H5P_DATASET_CREATE);
    h5::Dataset tasks = h5::create_dataset(file, kTasks, str.get(), space.get(), dcpl.get());
    std::vector<std::string> names;
    for (const auto& t : run.tasks) names.push_back(sanitize_utf8(t, kStoredText));
    std::vector<const char*> ptrs;
    for (const auto& t : names) ptrs.push_back(t.c_str());
    if (n > 0) h5::check(H5Dwrite(tasks.get(), str.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), "H5Dwrite(tasks)");
  }
  h5::write_attr_string(file, "format", kFormat);
  h5::write_attr_string(file, "kevo_version", run.kevo_version.empty() ? std::string(KEVO_VERSION) : run.kevo_version);
  h5::write_attr_string(file, "hdf5_version", h5::library_version());
  h5::write_attr_string(file, "config", sanitize_utf8(run.config_json, kStoredText));
  h5::write_attr_string(file, "task_manifests", sanitize_utf8(run.task_manifests_json, kStoredText));
  h5::write_attr_u64(file, "seed", run.seed);
  h5::write_attr_string(file, "host", sanitize_utf8(run.host.empty() ? host_name() : run.host, kStoredText));
  h5::write_attr_f64(file, "start_time", run.start_time > 0.0 ? run.start_time : unix_now());
  h5::write_attr_i64(file, "rank", run.rank);
  h5::write_attr_i64(file, "nranks", run.nranks);
}

void check_format(hid_t file, const std::filesystem::path& path) {
  if (!h5::has_attr(file, "format"))
    throw InputError(path.string(), "attribute format",
                     "a kevo lineage file (root attribute format = \"" + std::string(kFormat) + "\")");
  const std::string format = h5::read_attr_string(file, "format");
  if (format != kFormat)
    throw InputError(path.string(), "attribute format",
                     "\"" + std::string(kFormat) + "\" (this kevo reads only that version), got \"" + format + "\"");
}

RunInfo read_run_info(hid_t file) {
  RunInfo run;
  run.format = h5::read_attr_string(file, "format");
  run.kevo_version = h5::read_attr_string(file, "kevo_version");
  run.config_json = h5::read_attr_string(file, "config");
  run.task_manifests_json = h5::read_attr_string(file, "task_manifests");
  run.seed = h5::read_attr_u64(file, "seed");
  run.host = h5::read_attr_string(file, "host");
  run.start_time = h5::read_attr_f64(file, "start_time");
  run.rank = static_cast<std::int32_t>(h5::read_attr_i64(file, "rank"));
  run.nranks = static_cast<std::int32_t>(h5::read_attr_i64(file, "nranks"));
  h5::Dataset tasks = h5::open_dataset(file, kTasks);
  run.tasks = h5::read_strings(tasks.get(), 0, h5::extent(tasks.get()));
  return run;
}

bool status_flags_set(const std::filesystem::path& path) {
  // Superblock v2/v3 at offset 0: signature (8), version, sizeof offsets,
  // sizeof lengths, file consistency flags (bit 0: write access, bit 2: SWMR
  // write access). kevo files have no user block, so offset 0 is enough.
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 12> b{};
  if (!in.read(reinterpret_cast<char*>(b.data()), b.size())) return false;
  static constexpr unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (std::memcmp(b.data(), sig, 8) != 0 || b[8] < 2) return false;
  return (b[11] & 0x05) != 0;
}

Recovered recover_file(const std::filesystem::path& path) {
  h5::init();
  Recovered out;
  out.changed = status_flags_set(path);
  h5::File file;
  for (int attempt = 0;; ++attempt) {
    try {
      h5::PropList fapl = writer_fapl(true);
      file = h5::open_file(path, H5F_ACC_RDWR, fapl.get());
      break;
    } catch (const h5::Error& e) {
      // A writer killed after the superblock recorded a larger end of file
      // than was written: grow the file to that size (the gap is space the
      // library had reserved and nothing valid refers into), like
      // `h5clear --increment`.
      const std::uint64_t want = e.info().truncated ? stored_eof(e.info().message) : 0;
      std::error_code ec;
      const auto have = std::filesystem::file_size(path, ec);
      if (attempt > 0 || want == 0 || ec || want <= have) throw;
      std::filesystem::resize_file(path, want);
      out.changed = true;
    }
  }
  // What the killed flush wrote past the superblock's end of allocated space
  // (chunks, index blocks that rows or extents may point into) becomes
  // readable; what nothing kept refers to is dropped below.
  if (h5::cover_file_end(file.get())) out.changed = true;
  check_format(file.get(), path);
  out.rank = static_cast<std::int32_t>(h5::read_attr_i64(file.get(), "rank"));
  {
    h5::Dataset tasks = h5::open_dataset(file.get(), kTasks);
    out.tasks = h5::extent(tasks.get());
  }

  h5::Dataset cand = h5::open_dataset(file.get(), kCandidates);
  h5::Dataset ev = h5::open_dataset(file.get(), kEvents);
  h5::Dataset text = h5::open_dataset(file.get(), kText);
  const hsize_t n_rows = h5::extent(cand.get());
  const hsize_t n_events = h5::extent(ev.get());
  const hsize_t n_texts = h5::extent(text.get());

  // Keep everything up to the last written row. Remember the largest text
  // reference anything kept points at, and the references into the chunk of
  // /text that holds it (texts are appended in order, so that set stays
  // within one chunk's worth).
  std::int64_t max_ref = -1;
  std::set<hsize_t> tail_refs;
  const auto note_ref = [&](std::int64_t ref) {
    if (ref < 0) return;
    const auto r = static_cast<hsize_t>(ref);
    if (ref > max_ref) {
      max_ref = ref;
      tail_refs.erase(tail_refs.begin(), tail_refs.lower_bound(r / kTextChunk * kTextChunk));
    }
    if (r >= static_cast<hsize_t>(max_ref) / kTextChunk * kTextChunk) tail_refs.insert(r);
  };
  hsize_t keep_rows = 0;
  constexpr hsize_t block = 16384;
  std::vector<Row> rows;
  for (hsize_t start = 0; start < n_rows; start += block) {
    const hsize_t count = std::min(block, n_rows - start);
    rows.resize(count);
    h5::read_range(cand.get(), start, count, row_type(), rows.data());
    for (hsize_t i = 0; i < count; ++i) {
      const Row& r = rows[i];
      if (!r.written()) continue;
      keep_rows = start + i + 1;
      for (std::int64_t ref : {r.message, r.params, r.source, r.compile_log, r.feedback, r.output_tail,
                               r.mismatch, r.op_note, r.profile, r.device})
        note_ref(ref);
    }
  }
  std::vector<EventRow> events(n_events);
  h5::read_range(ev.get(), 0, n_events, event_type(), events.data());
  hsize_t keep_events = 0;
  for (hsize_t i = 0; i < n_events; ++i) {
    if (!events[i].written()) continue;
    keep_events = i + 1;
    note_ref(events[i].text);
  }
  if (keep_rows != n_rows) h5::check(H5Dset_extent(cand.get(), &keep_rows), "H5Dset_extent(candidates)");
  if (keep_events != n_events) h5::check(H5Dset_extent(ev.get(), &keep_events), "H5Dset_extent(events)");

  // /text. Writing a variable-length string over an element makes HDF5 free
  // the heap object the element held before. A flush that was killed can
  // leave elements (inside or past the extent, even whole chunks past it)
  // that point at heap objects never written, and a later write over them
  // fails or damages live texts (seen in the kill tests). So from the chunk
  // holding the last kept text on, every chunk is dropped, and the kept texts
  // of that chunk are written again into a fresh one.
  const hsize_t keep_texts = static_cast<hsize_t>(max_ref + 1);
  if (keep_texts > n_texts)
    throw Failure("lineage file " + path.string() + ": rows refer to text " + std::to_string(max_ref) +
                  " but /text has " + std::to_string(n_texts) + " elements");
  const hsize_t first = keep_texts / kTextChunk * kTextChunk;   // first element of the rebuilt chunk
  // A partly used chunk may hold anything past the extent; elements past the
  // kept texts, and any chunk after them, are left-overs of a killed flush.
  bool rebuild = keep_texts % kTextChunk != 0 || n_texts > keep_texts;
  hsize_t probe_end = n_texts;   // an extent that covers every chunk found
  for (hsize_t chunk = (keep_texts + kTextChunk - 1) / kTextChunk * kTextChunk, misses = 0; misses < 16;
       chunk += kTextChunk) {
    if (h5::chunk_allocated(text.get(), chunk)) {
      rebuild = true;
      misses = 0;
      probe_end = std::max(probe_end, chunk + kTextChunk);
    } else {
      ++misses;
    }
  }
  if (rebuild) {
    // Every resume rewrites the referenced texts of the last, partly used
    // chunk (at most one chunk's worth; their old heap objects stay unused).
    const std::vector<hsize_t> saved_at(tail_refs.lower_bound(first), tail_refs.end());
    const std::vector<std::string> saved = h5::read_strings_at(text.get(), saved_at);
    // Cover every chunk found, then cut back to a chunk boundary: HDF5 drops
    // the chunks past the new extent.
    h5::check(H5Dset_extent(text.get(), &probe_end), "H5Dset_extent(text)");
    h5::check(H5Dset_extent(text.get(), &first), "H5Dset_extent(text)");
    h5::check(H5Dset_extent(text.get(), &keep_texts), "H5Dset_extent(text)");
    if (!saved.empty()) {
      h5::Datatype str = h5::vlen_utf8();
      h5::PropList dxpl = string_dxpl();
      std::vector<const char*> ptrs;
      for (const auto& t : saved) ptrs.push_back(t.c_str());
      h5::Dataspace file_space(h5::check_id(H5Dget_space(text.get()), "H5Dget_space"));
      h5::check(H5Sselect_elements(file_space.get(), H5S_SELECT_SET, saved_at.size(), saved_at.data()),
                "H5Sselect_elements");
      const hsize_t n = saved_at.size();
      h5::Dataspace mem_space = h5::simple_space(std::span<const hsize_t>(&n, 1));
      h5::check(H5Dwrite(text.get(), str.get(), mem_space.get(), file_space.get(), dxpl.get(), ptrs.data()),
                "H5Dwrite(text)");
    }
    out.changed = out.changed || n_texts != keep_texts || probe_end > n_texts;
  }
  out.changed = out.changed || keep_rows != n_rows || keep_events != n_events;
  out.rows = keep_rows;
  out.events = keep_events;
  out.texts = keep_texts;
  cand.reset();
  ev.reset();
  text.reset();
  file.close("H5Fclose(" + path.string() + ")");
  return out;
}

}  // namespace kevo::lineage::detail
