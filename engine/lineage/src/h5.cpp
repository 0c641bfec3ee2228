#include "kevo/lineage/h5.hpp"

#include <algorithm>
#include <mutex>

// H5Dget_chunk_info_by_coord (used to find chunks a killed writer left behind).
#if !H5_VERSION_GE(1, 10, 5)
#error "kevo_lineage needs HDF5 1.10.5 or newer"
#endif

namespace kevo::h5 {
namespace {

struct WalkState {
  ErrorInfo* info;
  std::string* message;
};

herr_t walk_entry(unsigned /*n*/, const H5E_error2_t* e, void* data) {
  auto* st = static_cast<WalkState*>(data);
  const std::string desc = e->desc ? e->desc : "";
  if (!st->message->empty()) st->message->append("; ");
  if (e->func_name) st->message->append(e->func_name).append("(): ");
  st->message->append(desc.empty() ? "(no description)" : desc);
  // The conditions a caller can do something about. The lock conflict has its
  // own minor code; the status-flag and truncation cases only have their
  // description, which has been stable across HDF5 1.10.x.
  if (e->min_num == H5E_CANTLOCKFILE) st->info->lock_conflict = true;
  if (desc.find("already open for write") != std::string::npos ||
      desc.find("not already open for SWMR writing") != std::string::npos)
    st->info->open_for_write = true;
  if (desc.find("truncated file") != std::string::npos) st->info->truncated = true;
  return 0;
}

Dataspace space_of(hid_t dataset) {
  return Dataspace(check_id(H5Dget_space(dataset), "H5Dget_space"));
}

// Frees the strings HDF5 allocated into a char* buffer, whatever happened.
struct VlenBuffer {
  std::vector<char*> ptrs;
  hid_t type;
  hid_t space;
  ~VlenBuffer() {
    if (!ptrs.empty()) (void)H5Dvlen_reclaim(type, space, H5P_DEFAULT, ptrs.data());
  }
};

Attribute fresh_attr(hid_t obj, const char* name, hid_t type, hid_t space) {
  if (has_attr(obj, name)) check(H5Adelete(obj, name), std::string("H5Adelete(") + name + ")");
  return Attribute(check_id(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT),
                            std::string("H5Acreate2(") + name + ")"));
}

Attribute open_attr(hid_t obj, const char* name) {
  return Attribute(check_id(H5Aopen(obj, name, H5P_DEFAULT), std::string("H5Aopen(") + name + ")"));
}

template <class T>
void write_attr_scalar(hid_t obj, const char* name, hid_t native, T value) {
  Dataspace s = scalar_space();
  Attribute a = fresh_attr(obj, name, native, s.get());
  check(H5Awrite(a.get(), native, &value), std::string("H5Awrite(") + name + ")");
}

template <class T>
T read_attr_scalar(hid_t obj, const char* name, hid_t native) {
  Attribute a = open_attr(obj, name);
  T value{};
  check(H5Aread(a.get(), native, &value), std::string("H5Aread(") + name + ")");
  return value;
}

}  // namespace

void init() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5open();
    // Errors reach the user through h5::Error, which carries the stack; the
    // library's own printing would duplicate it on stderr (and print expected,
    // retried conditions such as a lock held by a reader).
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

ErrorInfo take_error_stack() {
  ErrorInfo info;
  // A copy of the stack, taken before anything else can clear it.
  const hid_t stack = H5Eget_current_stack();
  if (stack < 0) {
    info.message = "(HDF5 error stack unavailable)";
    return info;
  }
  WalkState st{&info, &info.message};
  (void)H5Ewalk2(stack, H5E_WALK_DOWNWARD, walk_entry, &st);
  (void)H5Eclose_stack(stack);
  if (info.message.empty()) info.message = "(HDF5 reported no details)";
  return info;
}

Error::Error(const std::string& what, ErrorInfo info, std::source_location where)
    : Failure(what + ": " + info.message, where), info_(std::move(info)) {}

PropList make_plist(hid_t cls) { return PropList(check_id(H5Pcreate(cls), "H5Pcreate")); }

File create_file(const std::filesystem::path& path, unsigned flags, hid_t fapl) {
  return File(check_id(H5Fcreate(path.c_str(), flags, H5P_DEFAULT, fapl), "H5Fcreate(" + path.string() + ")"));
}

File open_file(const std::filesystem::path& path, unsigned flags, hid_t fapl) {
  return File(check_id(H5Fopen(path.c_str(), flags, fapl), "H5Fopen(" + path.string() + ")"));
}

Datatype copy_type(hid_t type) { return Datatype(check_id(H5Tcopy(type), "H5Tcopy")); }

Datatype vlen_utf8() {
  Datatype t = copy_type(H5T_C_S1);
  check(H5Tset_size(t.get(), H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(t.get(), H5T_CSET_UTF8), "H5Tset_cset");
  return t;
}

Datatype fixed_utf8(std::size_t bytes) {
  Datatype t = copy_type(H5T_C_S1);
  check(H5Tset_size(t.get(), bytes), "H5Tset_size");
  check(H5Tset_strpad(t.get(), H5T_STR_NULLTERM), "H5Tset_strpad");
  check(H5Tset_cset(t.get(), H5T_CSET_UTF8), "H5Tset_cset");
  return t;
}

Datatype bool_type() {
  static constexpr std::pair<std::string_view, std::int8_t> members[] = {{"FALSE", 0}, {"TRUE", 1}};
  return enum_type<std::int8_t>(H5T_NATIVE_INT8, members);
}

Dataspace simple_space(std::span<const hsize_t> dims, std::span<const hsize_t> max_dims) {
  if (!max_dims.empty() && max_dims.size() != dims.size())
    throw Failure("h5::simple_space: dims and max_dims differ in rank");
  return Dataspace(check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(),
                                             max_dims.empty() ? nullptr : max_dims.data()),
                            "H5Screate_simple"));
}

Dataspace scalar_space() { return Dataspace(check_id(H5Screate(H5S_SCALAR), "H5Screate")); }

Dataset create_dataset(hid_t loc, const char* name, hid_t type, hid_t space, hid_t dcpl) {
  return Dataset(check_id(H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                          std::string("H5Dcreate2(") + name + ")"));
}

Dataset open_dataset(hid_t loc, const char* name) {
  return Dataset(check_id(H5Dopen2(loc, name, H5P_DEFAULT), std::string("H5Dopen2(") + name + ")"));
}

hsize_t extent(hid_t dataset) {
  Dataspace s = space_of(dataset);
  if (check(H5Sget_simple_extent_ndims(s.get()), "H5Sget_simple_extent_ndims") != 1)
    throw Failure("h5::extent: dataset is not one-dimensional");
  hsize_t n = 0;
  check(H5Sget_simple_extent_dims(s.get(), &n, nullptr), "H5Sget_simple_extent_dims");
  return n;
}

void write_at(hid_t dataset, hsize_t at, hsize_t count, hid_t mem_type, const void* data, hid_t dxpl) {
  const hsize_t size = at + count;
  check(H5Dset_extent(dataset, &size), "H5Dset_extent");
  if (count == 0) return;
  Dataspace file_space = space_of(dataset);
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &at, nullptr, &count, nullptr),
        "H5Sselect_hyperslab");
  Dataspace mem_space = simple_space(std::span<const hsize_t>(&count, 1));
  check(H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), dxpl, data), "H5Dwrite");
}

void read_range(hid_t dataset, hsize_t start, hsize_t count, hid_t mem_type, void* data, hid_t dxpl) {
  if (count == 0) return;
  Dataspace file_space = space_of(dataset);
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr),
        "H5Sselect_hyperslab");
  Dataspace mem_space = simple_space(std::span<const hsize_t>(&count, 1));
  check(H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), dxpl, data), "H5Dread");
}

void read_points(hid_t dataset, std::span<const hsize_t> points, hid_t mem_type, void* data) {
  if (points.empty()) return;
  Dataspace file_space = space_of(dataset);
  check(H5Sselect_elements(file_space.get(), H5S_SELECT_SET, points.size(), points.data()),
        "H5Sselect_elements");
  const hsize_t n = points.size();
  Dataspace mem_space = simple_space(std::span<const hsize_t>(&n, 1));
  check(H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data), "H5Dread");
}

bool chunk_allocated(hid_t dataset, hsize_t offset) {
  unsigned filter_mask = 0;
  haddr_t addr = HADDR_UNDEF;
  hsize_t size = 0;
  check(H5Dget_chunk_info_by_coord(dataset, &offset, &filter_mask, &addr, &size), "H5Dget_chunk_info_by_coord");
  return addr != HADDR_UNDEF;
}

bool cover_file_end(hid_t file) {
  haddr_t eoa = HADDR_UNDEF;
  check(H5Fget_eoa(file, &eoa), "H5Fget_eoa");
  hsize_t eof = 0;
  check(H5Fget_filesize(file, &eof), "H5Fget_filesize");
  if (eoa != HADDR_UNDEF && eof <= eoa) return false;
  check(H5Fincrement_filesize(file, 0), "H5Fincrement_filesize");
  return true;
}

namespace {

std::vector<std::string> read_strings_sel(hid_t dataset, hid_t file_space, hsize_t n) {
  std::vector<std::string> out;
  if (n == 0) return out;
  Datatype t = vlen_utf8();
  Dataspace mem_space = simple_space(std::span<const hsize_t>(&n, 1));
  VlenBuffer buf{std::vector<char*>(n, nullptr), t.get(), mem_space.get()};
  check(H5Dread(dataset, t.get(), mem_space.get(), file_space, H5P_DEFAULT, buf.ptrs.data()), "H5Dread(strings)");
  out.reserve(n);
  for (char* p : buf.ptrs) out.emplace_back(p ? p : "");
  return out;
}

}  // namespace

std::vector<std::string> read_strings(hid_t dataset, hsize_t start, hsize_t count) {
  if (count == 0) return {};
  Dataspace file_space = space_of(dataset);
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr),
        "H5Sselect_hyperslab");
  return read_strings_sel(dataset, file_space.get(), count);
}

std::vector<std::string> read_strings_at(hid_t dataset, std::span<const hsize_t> points) {
  if (points.empty()) return {};
  Dataspace file_space = space_of(dataset);
  check(H5Sselect_elements(file_space.get(), H5S_SELECT_SET, points.size(), points.data()),
        "H5Sselect_elements");
  return read_strings_sel(dataset, file_space.get(), points.size());
}

void write_attr_string(hid_t obj, const char* name, std::string_view value) {
  Datatype t = vlen_utf8();
  Dataspace s = scalar_space();
  Attribute a = fresh_attr(obj, name, t.get(), s.get());
  const std::string copy(value);
  const char* p = copy.c_str();
  check(H5Awrite(a.get(), t.get(), &p), std::string("H5Awrite(") + name + ")");
}

void write_attr_i64(hid_t obj, const char* name, std::int64_t value) {
  write_attr_scalar(obj, name, H5T_NATIVE_INT64, value);
}
void write_attr_u64(hid_t obj, const char* name, std::uint64_t value) {
  write_attr_scalar(obj, name, H5T_NATIVE_UINT64, value);
}
void write_attr_f64(hid_t obj, const char* name, double value) {
  write_attr_scalar(obj, name, H5T_NATIVE_DOUBLE, value);
}

bool has_attr(hid_t obj, const char* name) {
  return check(H5Aexists(obj, name), std::string("H5Aexists(") + name + ")") > 0;
}

std::string read_attr_string(hid_t obj, const char* name) {
  Attribute a = open_attr(obj, name);
  Datatype file_type(check_id(H5Aget_type(a.get()), "H5Aget_type"));
  if (H5Tget_class(file_type.get()) != H5T_STRING)
    throw Failure(std::string("attribute ") + name + " is not a string");
  if (check(H5Tis_variable_str(file_type.get()), "H5Tis_variable_str") > 0) {
    Datatype t = vlen_utf8();
    char* p = nullptr;
    check(H5Aread(a.get(), t.get(), &p), std::string("H5Aread(") + name + ")");
    std::string out = p ? p : "";
    if (p) H5free_memory(p);
    return out;
  }
  // A fixed-length string (written by another tool): read its bytes.
  const std::size_t size = H5Tget_size(file_type.get());
  std::string out(size, '\0');
  Datatype t = fixed_utf8(size);
  check(H5Aread(a.get(), t.get(), out.data()), std::string("H5Aread(") + name + ")");
  out.resize(std::min(out.size(), out.find('\0')));
  return out;
}

std::int64_t read_attr_i64(hid_t obj, const char* name) {
  return read_attr_scalar<std::int64_t>(obj, name, H5T_NATIVE_INT64);
}
std::uint64_t read_attr_u64(hid_t obj, const char* name) {
  return read_attr_scalar<std::uint64_t>(obj, name, H5T_NATIVE_UINT64);
}
double read_attr_f64(hid_t obj, const char* name) {
  return read_attr_scalar<double>(obj, name, H5T_NATIVE_DOUBLE);
}

std::string library_version() {
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  return std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel);
}

}  // namespace kevo::h5
