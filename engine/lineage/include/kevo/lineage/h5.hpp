// Thin RAII wrappers over the HDF5 C API, in the spirit of HighFive: one
// move-only holder per kind of hid_t, every C call checked once, and HDF5
// failures turned into exceptions that carry the library's error stack.
//
// HDF5's automatic error printing is switched off (h5::init()): a failed call
// is reported once, by the exception, with the whole stack in its message.
#pragma once

#include "kevo/core/error.hpp"

#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace kevo::h5 {

// Idempotent and thread-safe: silences HDF5's automatic error printing for
// the process (kevo reports errors through exceptions instead).
void init();

// What an HDF5 error stack said, and the few conditions callers react to.
struct ErrorInfo {
  std::string message;          // "H5Fopen(): unable to open file / H5F_open(): unable to lock the file / ..."
  bool lock_conflict = false;   // another process holds a conflicting file lock
  bool open_for_write = false;  // superblock status flags say a writer has (or had) the file open
  bool truncated = false;       // the file is shorter than its superblock says (killed writer)
};

// Takes (and clears) the current thread's HDF5 error stack.
ErrorInfo take_error_stack();

// An HDF5 call failed. what() reads "<what>: <HDF5 error stack> (file:line)".
class Error : public Failure {
 public:
  Error(const std::string& what, ErrorInfo info,
        std::source_location where = std::source_location::current());
  const ErrorInfo& info() const noexcept { return info_; }
  bool lock_conflict() const noexcept { return info_.lock_conflict; }
  bool open_for_write() const noexcept { return info_.open_for_write; }

 private:
  ErrorInfo info_;
};

// Throw h5::Error (with the current error stack) when an HDF5 call failed.
inline hid_t check_id(hid_t id, std::string_view what,
                      std::source_location where = std::source_location::current()) {
  if (id < 0) throw Error(std::string(what), take_error_stack(), where);
  return id;
}
inline herr_t check(herr_t rc, std::string_view what,
                    std::source_location where = std::source_location::current()) {
  if (rc < 0) throw Error(std::string(what), take_error_stack(), where);
  return rc;
}

// Move-only owner of one hid_t; Close is the matching H5?close function. Each
// instantiation below is its own class, so a dataset can never be handed
// where a file is expected.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() noexcept = default;
  explicit Handle(hid_t id) noexcept : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  // Never throws: an error while closing during unwinding is dropped (the
  // first error is the one that matters). Use close() where it must be seen.
  ~Handle() { reset(); }

  hid_t get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ >= 0; }

  void reset() noexcept {
    if (id_ >= 0) {
      (void)Close(id_);
      id_ = H5I_INVALID_HID;
      // A failed close in a destructor must not leave a stale stack behind
      // that a later, unrelated error report would pick up.
      H5Eclear2(H5E_DEFAULT);
    }
  }
  // Closes and reports failure (for a file, closing is when data is written).
  void close(std::string_view what, std::source_location where = std::source_location::current()) {
    if (id_ < 0) return;
    const hid_t id = std::exchange(id_, H5I_INVALID_HID);
    check(Close(id), what, where);
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using PropList = Handle<H5Pclose>;
using Attribute = Handle<H5Aclose>;

// --- property lists -------------------------------------------------------
PropList make_plist(hid_t cls);  // H5P_FILE_ACCESS, H5P_DATASET_CREATE, H5P_DATASET_XFER...

// --- files -----------------------------------------------------------------
File create_file(const std::filesystem::path& path, unsigned flags, hid_t fapl);
File open_file(const std::filesystem::path& path, unsigned flags, hid_t fapl);

// --- datatypes -------------------------------------------------------------
Datatype copy_type(hid_t type);
Datatype vlen_utf8();                    // variable-length UTF-8 string
Datatype fixed_utf8(std::size_t bytes);  // NUL-terminated fixed-length UTF-8 string
// An enum over `base`, a native integer type of the same size as T, with the
// given (name, value) pairs.
template <class T>
Datatype enum_type(hid_t base, std::span<const std::pair<std::string_view, T>> members) {
  static_assert(std::is_integral_v<T> || std::is_enum_v<T>);
  if (H5Tget_size(base) != sizeof(T)) throw Failure("h5::enum_type: base type size differs from the value type");
  Datatype t(check_id(H5Tenum_create(base), "H5Tenum_create"));
  for (const auto& [name, value] : members) {
    const std::string n(name);
    check(H5Tenum_insert(t.get(), n.c_str(), &value), "H5Tenum_insert");
  }
  return t;
}
// The boolean h5py understands: enum int8 {FALSE = 0, TRUE = 1} (numpy bool).
Datatype bool_type();

// --- dataspaces and datasets -----------------------------------------------
Dataspace simple_space(std::span<const hsize_t> dims, std::span<const hsize_t> max_dims = {});
Dataspace scalar_space();
Dataset create_dataset(hid_t loc, const char* name, hid_t type, hid_t space, hid_t dcpl);
Dataset open_dataset(hid_t loc, const char* name);
// Number of elements of a one-dimensional dataset (its current extent).
hsize_t extent(hid_t dataset);
// Sets the extent of a one-dimensional chunked dataset to `at + count` and
// writes `count` elements of `mem_type` from `data` to [at, at + count).
// Writing at a fixed position (not "at the end") makes a retried flush idempotent.
void write_at(hid_t dataset, hsize_t at, hsize_t count, hid_t mem_type, const void* data,
              hid_t dxpl = H5P_DEFAULT);
// Reads [start, start + count) of a one-dimensional dataset.
void read_range(hid_t dataset, hsize_t start, hsize_t count, hid_t mem_type, void* data,
                hid_t dxpl = H5P_DEFAULT);
// Reads the elements at `points` (in that order) of a one-dimensional dataset.
void read_points(hid_t dataset, std::span<const hsize_t> points, hid_t mem_type, void* data);

// Whether the one-dimensional chunked dataset has storage for the chunk that
// holds element `offset` (also past the current extent).
bool chunk_allocated(hid_t dataset, hsize_t offset);

// Raises the file's end of allocated space (EOA) to the end of the file when
// the file is longer, as `h5clear --increment=0` does; returns whether it
// did. A SWMR writer killed inside a flush can leave metadata and chunks past
// the EOA its superblock records; SWMR readers may read there, other opens
// refuse ("addr overflow").
bool cover_file_end(hid_t file);

// Variable-length UTF-8 strings: [start, start + count), or chosen elements.
std::vector<std::string> read_strings(hid_t dataset, hsize_t start, hsize_t count);
std::vector<std::string> read_strings_at(hid_t dataset, std::span<const hsize_t> points);

// --- attributes (on any object; scalar) -------------------------------------
void write_attr_string(hid_t obj, const char* name, std::string_view value);
void write_attr_i64(hid_t obj, const char* name, std::int64_t value);
void write_attr_u64(hid_t obj, const char* name, std::uint64_t value);
void write_attr_f64(hid_t obj, const char* name, double value);
bool has_attr(hid_t obj, const char* name);
std::string read_attr_string(hid_t obj, const char* name);
std::int64_t read_attr_i64(hid_t obj, const char* name);
std::uint64_t read_attr_u64(hid_t obj, const char* name);
double read_attr_f64(hid_t obj, const char* name);

// "1.10.8": the library this process runs with.
std::string library_version();

}  // namespace kevo::h5
