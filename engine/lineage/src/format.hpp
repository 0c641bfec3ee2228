// Private to kevo_lineage: the HDF5 types of the format, the access property
// lists writer and reader use, and the file-level steps both need.
#pragma once

#include "kevo/lineage/h5.hpp"
#include "kevo/lineage/schema.hpp"

#include <filesystem>

namespace kevo::lineage::detail {

inline constexpr const char* kCandidates = "candidates";
inline constexpr const char* kEvents = "events";
inline constexpr const char* kText = "text";
inline constexpr const char* kTasks = "tasks";

inline constexpr hsize_t kRowChunk = 256;
inline constexpr hsize_t kEventChunk = 64;
inline constexpr hsize_t kTextChunk = 1024;

// The compound and enum types, built once per process; the same type serves
// as memory and file type, so rows are written without conversion.
hid_t row_type();
hid_t event_type();
hid_t status_type();
hid_t stage_type();
hid_t event_kind_type();

// A row / event with its defaults (the fill values) and zeroed padding, so
// that files are byte-for-byte reproducible.
void reset(Row& row);
void reset(EventRow& event);

// Writer access: latest format (SWMR needs it), file locks used where the file
// system has them, every object closed with the file.
h5::PropList writer_fapl(bool clear_status_flags = false);
// Reader access: no file lock, so that a reader never keeps the writer out
// (it reads in SWMR mode, which is safe against a concurrent writer).
h5::PropList reader_fapl();
// Transfer list with a small conversion buffer: HDF5's default 1 MiB buffer
// is allocated and zeroed on every string write, which cost more than the
// write itself (measured: 1.2 ms -> 0.1 ms per flush of 256 strings).
h5::PropList string_dxpl();

// Creates the datasets and attributes of an empty lineage file.
void create_layout(hid_t file, const RunInfo& run);
// Throws InputError unless `file` is a kevo-lineage/1 file.
void check_format(hid_t file, const std::filesystem::path& path);
RunInfo read_run_info(hid_t file);

// Opens a lineage file of a writer that is gone for writing (no SWMR): clears
// a stale status flag and, when the file is shorter than the superblock says,
// grows it first. Trims unwritten rows/events of an interrupted flush and
// texts nothing refers to. Returns what it found.
struct Recovered {
  bool changed = false;
  std::uint64_t rows = 0, events = 0, texts = 0;   // kept
  std::int32_t rank = 0;
  std::uint64_t tasks = 0;
};
Recovered recover_file(const std::filesystem::path& path);

// The superblock's file-consistency flags are set (a writer has the file
// open, or was killed). Reads the superblock bytes; false when unknown.
bool status_flags_set(const std::filesystem::path& path);

}  // namespace kevo::lineage::detail
