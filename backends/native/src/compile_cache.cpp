#include "kevo/native/compile_cache.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/sandbox/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace kevo::native {

namespace fs = std::filesystem;
using sandbox::UniqueFd;

struct CompileCache::Entry {
  std::string name;
  timespec used{};            // the directory's mtime: last fetch or store
  std::uint64_t bytes = 0;    // its files' sizes
};

namespace {

constexpr const char* kObject = "object";
constexpr const char* kKey = "key";
constexpr const char* kObjectHash = "object.sha256";
constexpr const char* kFormatLine = "kevo-compile-cache v1";
constexpr std::size_t kChunk = std::size_t{1} << 16;
// Temporaries and trash older than this are a dead process's leftovers: a
// live store renames its temporary within a second or so.
constexpr std::time_t kLeftoverSeconds = 3600;

// A failed system call, with the errno it left (read before anything else
// could change it). Stays inside this file: store() turns it into a result.
class OsError : public std::runtime_error {
 public:
  OsError(int err, const std::string& what) : std::runtime_error(what + ": " + std::strerror(err)) {}
};

// Throws OsError for `call` on `path` unless `ok`. errno is read first, and
// `path` must be an object that already exists (not built in the argument
// list, where building it could run after the failed call and touch errno).
void check(bool ok, const char* call, const fs::path& path) {
  if (ok) return;
  const int err = errno;
  throw OsError(err, std::string(call) + " " + path.string());
}

// The destination side of a fetch failed: the caller's problem, a Failure.
[[noreturn]] void dest_failure(int err, const char* call, const fs::path& path) {
  throw Failure(std::string("compile cache: ") + call + " " + path.string() + ": " + std::strerror(err));
}

bool is_key_name(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

timespec now() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

bool older(const timespec& a, const timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

// Marks an entry as used now. Its mtime orders the prune; the clock is set
// explicitly because the kernel's own timestamps are only a tick fine.
bool touch(int dir_fd) {
  const timespec times[2] = {{0, UTIME_OMIT}, now()};
  return ::futimens(dir_fd, times) == 0;
}

UniqueFd open_dir(const fs::path& path) {
  return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// A regular file of an entry, for reading: never through a symbolic link,
// never blocking on a FIFO put in its place. Invalid when it is none.
UniqueFd open_regular(int dir_fd, const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd && (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))) return {};
  return fd;
}

// Reads to the end or to `limit` bytes, whichever comes first; false on a
// read error.
bool read_up_to(int fd, std::size_t limit, std::string& out) {
  out.clear();
  char buf[4096];
  while (out.size() < limit) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

std::optional<std::string> sha256_of(int fd) {
  Sha256 h;
  std::string buf(kChunk, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return h.finish_hex();
    h.update(buf.data(), static_cast<std::size_t>(n));
  }
}

std::optional<std::string> sha256_of_file(const fs::path& path) {
  const UniqueFd fd = open_regular(AT_FDCWD, path.c_str());
  if (!fd) return std::nullopt;
  return sha256_of(fd.get());
}

void write_all(int fd, const char* data, std::size_t size, const fs::path& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    check(n > 0, "write", path);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Copies `from` to its end into `to`, adding what passes to `hash` when
// given. Returns 0, or the errno of a failed read; a failed write throws
// OsError naming `to_path`.
int copy_fd(int from, int to, const fs::path& to_path, Sha256* hash) {
  std::string buf(kChunk, '\0');
  for (;;) {
    const ssize_t n = ::read(from, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    if (hash) hash->update(buf.data(), static_cast<std::size_t>(n));
    write_all(to, buf.data(), static_cast<std::size_t>(n), to_path);
  }
}

// close() reports a write the file system could not finish (NFS, quotas).
void close_checked(UniqueFd& fd, const fs::path& path) { check(::close(fd.release()) == 0, "close", path); }

UniqueFd create_read_only(int dir_fd, const char* name, const fs::path& path) {
  UniqueFd fd(::openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
  check(fd.valid(), "create", path);
  return fd;
}

void write_file(int dir_fd, const char* name, const std::string& text, const fs::path& dir) {
  const fs::path path = dir / name;
  UniqueFd fd = create_read_only(dir_fd, name, path);
  write_all(fd.get(), text.data(), text.size(), path);
  check(::fchmod(fd.get(), 0444) == 0, "chmod", path);   // exact, whatever the umask
  close_checked(fd, path);
}

// A path removed (as a tree) when this goes out of scope, unless released.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(fs::path path) : path_(std::move(path)) {}
  ~RemoveOnExit() {
    if (!path_.empty()) remove_tree(path_);
  }
  RemoveOnExit(RemoveOnExit&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(RemoveOnExit&&) = delete;
  const fs::path& path() const noexcept { return path_; }
  void release() noexcept { path_.clear(); }

 private:
  fs::path path_;
};

enum class KeyCheck { same, other, unreadable };

// Compares an entry's key file with a request's key material, byte for byte.
KeyCheck check_key(int dir_fd, const std::string& material) {
  const UniqueFd fd = open_regular(dir_fd, kKey);
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return KeyCheck::unreadable;
  if (static_cast<std::uint64_t>(st.st_size) != material.size()) return KeyCheck::other;
  std::string text;
  if (!read_up_to(fd.get(), material.size() + 1, text)) return KeyCheck::unreadable;
  return text == material ? KeyCheck::same : KeyCheck::other;
}

// The object's SHA-256 as its entry records it; nullopt when unreadable.
std::optional<std::string> recorded_hash(int dir_fd) {
  const UniqueFd fd = open_regular(dir_fd, kObjectHash);
  std::string text;
  if (!fd || !read_up_to(fd.get(), 66, text) || text.size() != 65 || text.back() != '\n') return std::nullopt;
  text.pop_back();
  if (!is_key_name(text)) return std::nullopt;
  return text;
}

// A fresh name beside `dest`, on its file system, for the fetch to fill
// before renaming over `dest`.
fs::path temp_beside(const fs::path& dest) {
  return dest.parent_path() / ("." + dest.filename().string() + ".kevo-" + random_hex(6));
}

// Puts the entry's object at `tmp`: a hard link, else (another file system,
// or linking refused) a copy. False when the entry has no readable regular
// object; throws Failure when `tmp` cannot be written.
bool link_or_copy(int dir_fd, const fs::path& tmp) {
  if (::linkat(dir_fd, kObject, AT_FDCWD, tmp.c_str(), 0) == 0) return true;
  const int err = errno;
  struct stat st {};
  if (err == ENOENT && ::fstatat(dir_fd, kObject, &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (err != EXDEV && err != EPERM && err != EMLINK) dest_failure(err, "link", tmp);
  const UniqueFd from = open_regular(dir_fd, kObject);
  if (!from) return false;
  UniqueFd to(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
  if (!to) dest_failure(errno, "create", tmp);
  try {
    if (copy_fd(from.get(), to.get(), tmp, nullptr) != 0) return false;
    close_checked(to, tmp);
  } catch (const OsError& e) {
    throw Failure(std::string("compile cache: ") + e.what());
  }
  return true;
}

// Writes a whole entry under a temporary name in `root`: the key material,
// the object copied from `src` (hashed as it passes) and its hash, all
// read-only, the directory 0555 and marked used now. Removed again unless
// the caller releases it.
RemoveOnExit stage_entry(const fs::path& root, const std::string& key, const std::string& material, int src,
                         const fs::path& built) {
  std::string templ = (root / (".tmp-" + key + "-XXXXXX")).string();
  check(::mkdtemp(templ.data()) != nullptr, "mkdtemp", root);
  RemoveOnExit staged{fs::path(templ)};
  const fs::path& dir_path = staged.path();
  const UniqueFd dir = open_dir(dir_path);
  check(dir.valid(), "open", dir_path);
  write_file(dir.get(), kKey, material, dir_path);

  const fs::path object = dir_path / kObject;
  UniqueFd out = create_read_only(dir.get(), kObject, object);
  Sha256 hash;
  if (const int err = copy_fd(src, out.get(), object, &hash)) throw OsError(err, "read " + built.string());
  check(::fchmod(out.get(), 0444) == 0, "chmod", object);
  close_checked(out, object);
  write_file(dir.get(), kObjectHash, hash.finish_hex() + "\n", dir_path);

  check(touch(dir.get()), "utimensat", dir_path);
  check(::fchmod(dir.get(), 0555) == 0, "chmod", dir_path);
  return staged;
}

bool remove_at(int parent_fd, const char* name) noexcept;

// Empties and removes the directory `name` in `parent_fd`, by descriptors
// all the way (a directory swapped for a link meanwhile is not followed).
bool remove_dir_at(int parent_fd, const char* name) noexcept {
  const UniqueFd dir(::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return errno == ENOENT;
  ::fchmod(dir.get(), 0700);   // an entry is 0555: its files cannot be unlinked before
  bool ok = false;
  std::vector<std::string> names;
  const int listing = ::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0);   // fdopendir owns what it is given
  if (DIR* d = listing >= 0 ? ::fdopendir(listing) : nullptr) {
    ok = true;
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    ::closedir(d);
  } else if (listing >= 0) {
    ::close(listing);
  }
  for (const std::string& n : names) ok = remove_at(dir.get(), n.c_str()) && ok;
  return (::unlinkat(parent_fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) && ok;
}

bool remove_at(int parent_fd, const char* name) noexcept {
  if (::unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR && errno != EPERM) return false;   // Linux says EISDIR for a directory, POSIX EPERM
  return remove_dir_at(parent_fd, name);
}

}  // namespace

bool remove_tree(const fs::path& path) noexcept { return remove_at(AT_FDCWD, path.c_str()); }

std::string key_material(const KeyParts& parts) {
  std::string out = std::string(kFormatLine) + " " + std::to_string(parts.size()) + " parts\n";
  for (const std::string& p : parts) {
    out += std::to_string(p.size());
    out += ':';
    out += p;
    out += '\n';
  }
  return out;
}

const char* to_string(FetchOutcome o) noexcept {
  switch (o) {
    case FetchOutcome::hit: return "hit";
    case FetchOutcome::miss: return "miss";
    case FetchOutcome::clash: return "clash";
    case FetchOutcome::corrupt: return "corrupt";
  }
  return "?";
}

const char* to_string(StoreOutcome o) noexcept {
  switch (o) {
    case StoreOutcome::stored: return "stored";
    case StoreOutcome::already_stored: return "already stored";
    case StoreOutcome::too_large: return "too large";
    case StoreOutcome::clash: return "clash";
    case StoreOutcome::failed: return "failed";
  }
  return "?";
}

CompileCache::CompileCache(fs::path root, CacheLimits limits) : root_(std::move(root)), limits_(limits) {
  if (limits_.max_entry_bytes == 0 || limits_.max_entry_bytes > limits_.max_total_bytes)
    throw Failure("compile cache: the entry cap (" + std::to_string(limits_.max_entry_bytes) +
                  " bytes) must be at least 1 byte and at most the total cap (" +
                  std::to_string(limits_.max_total_bytes) + " bytes)");
  if (root_.empty()) throw Failure("compile cache: no directory given");
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (!ec && !fs::is_directory(root_, ec)) ec = std::make_error_code(std::errc::not_a_directory);
  if (ec) throw Failure("compile cache: cannot create the directory " + root_.string() + ": " + ec.message());
}

std::string CompileCache::key_of(std::string_view material) const {
  if (!key_fn_) return sha256_hex(material);
  std::string key = key_fn_(material);
  if (!is_key_name(key)) throw Failure("compile cache: the test's key function gave \"" + key + "\", not 64 lowercase hex digits");
  return key;
}

void CompileCache::set_key_function_for_testing(std::function<std::string(std::string_view)> fn) {
  key_fn_ = std::move(fn);
}

FetchResult CompileCache::fetch(const KeyParts& parts, const fs::path& dest) {
  const std::string material = key_material(parts);
  const std::string key = key_of(material);
  const fs::path entry = root_ / key;
  // Everything below reads through this descriptor: one entry, even if the
  // name is pruned and stored again meanwhile.
  const UniqueFd dir = open_dir(entry);
  if (!dir) {
    const int err = errno;
    ++stats_.misses;
    return {FetchOutcome::miss, err == ENOENT ? "" : "cannot open " + entry.string() + ": " + std::strerror(err)};
  }
  switch (check_key(dir.get(), material)) {
    case KeyCheck::other:
      ++stats_.clashes;
      return {FetchOutcome::clash, "entry " + key + " was built from other inputs"};
    case KeyCheck::unreadable: return damaged(dir.get(), key, "has no readable key file");
    case KeyCheck::same: break;
  }
  const std::optional<std::string> want = recorded_hash(dir.get());
  if (!want) return damaged(dir.get(), key, "has no readable object.sha256");
  // Link first, check the link: a prune after the link cannot take the
  // object away, and a file swapped into the entry before it is caught.
  RemoveOnExit linked(temp_beside(dest));
  if (!link_or_copy(dir.get(), linked.path())) return damaged(dir.get(), key, "has no readable object");
  if (sha256_of_file(linked.path()) != want) return damaged(dir.get(), key, "holds an object that does not match its SHA-256");
  if (::rename(linked.path().c_str(), dest.c_str()) != 0) dest_failure(errno, "rename to", dest);
  linked.release();
  touch(dir.get());   // best effort: only the entry's owner may set its time
  ++stats_.hits;
  return {FetchOutcome::hit, ""};
}

// An entry failed a check. If it is still the one under its name, it is
// damaged (or was tampered with) and goes; if not, a prune took it while it
// was being read, and this was a plain miss.
FetchResult CompileCache::damaged(int dir_fd, const std::string& key, const std::string& why) {
  if (!is_live(dir_fd, key)) {
    ++stats_.misses;
    return {FetchOutcome::miss, "entry " + key + " went away while being read"};
  }
  ++stats_.corrupt;
  const bool removed = retire(key);
  return {FetchOutcome::corrupt, "entry " + key + " " + why + (removed ? "; removed" : "; could not remove it")};
}

// Whether the directory open as `dir_fd` is still the entry named `key`.
bool CompileCache::is_live(int dir_fd, const std::string& key) const {
  struct stat mine {}, live {};
  const fs::path entry = root_ / key;
  return ::fstat(dir_fd, &mine) == 0 && ::lstat(entry.c_str(), &live) == 0 && mine.st_dev == live.st_dev &&
         mine.st_ino == live.st_ino;
}

StoreResult CompileCache::store(const KeyParts& parts, const fs::path& built) {
  const std::string material = key_material(parts);
  const std::string key = key_of(material);
  std::uint64_t bytes = 0;
  StoreResult result;
  try {
    result = store_file(material, key, built, bytes);
  } catch (const OsError& e) {
    result = {StoreOutcome::failed, e.what()};
  }
  switch (result.outcome) {
    case StoreOutcome::stored:
      ++stats_.stores;
      after_store(key, bytes);
      break;
    case StoreOutcome::failed:
      ++stats_.store_failures;
      result.message = "cannot store the object in the compile cache " + root_.string() + ": " + result.message;
      break;
    case StoreOutcome::too_large: ++stats_.too_large; break;
    case StoreOutcome::clash: ++stats_.clashes; break;
    case StoreOutcome::already_stored: break;
  }
  return result;
}

// store() without the counting; a failed call throws OsError. `bytes` is
// set to the new entry's size.
StoreResult CompileCache::store_file(const std::string& material, const std::string& key, const fs::path& built,
                                     std::uint64_t& bytes) {
  const UniqueFd src(::open(built.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  check(src.valid(), "open", built);
  struct stat st {};
  check(::fstat(src.get(), &st) == 0, "stat", built);
  if (!S_ISREG(st.st_mode)) return {StoreOutcome::failed, built.string() + " is not a regular file"};
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > limits_.max_entry_bytes)
    return {StoreOutcome::too_large, "the object is " + std::to_string(size) + " bytes, over the cache's entry cap of " +
                                         std::to_string(limits_.max_entry_bytes) + " bytes"};
  RemoveOnExit staged = stage_entry(root_, key, material, src.get(), built);
  const StoreResult result = publish(staged.path(), key, material);
  if (result.outcome == StoreOutcome::stored) staged.release();
  bytes = size + material.size() + 65;
  return result;
}

// Renames a staged entry into place. rename() does not replace a non-empty
// directory, so of several processes storing one key, one wins and the
// others find its entry.
StoreResult CompileCache::publish(const fs::path& staged, const std::string& key, const std::string& material) {
  const fs::path entry = root_ / key;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (::rename(staged.c_str(), entry.c_str()) == 0) return {StoreOutcome::stored, ""};
    check(errno == EEXIST || errno == ENOTEMPTY, "rename into", entry);
    const UniqueFd dir = open_dir(entry);
    if (!dir) continue;   // pruned in the meantime
    switch (check_key(dir.get(), material)) {
      case KeyCheck::same: return {StoreOutcome::already_stored, ""};
      case KeyCheck::other: return {StoreOutcome::clash, "entry " + key + " holds an object built from other inputs"};
      case KeyCheck::unreadable:
        // A damaged entry in the way: remove it and try again.
        if (is_live(dir.get(), key)) {
          ++stats_.corrupt;
          retire(key);
        }
        break;
    }
  }
  return {StoreOutcome::failed, "the entry " + entry.string() + " kept changing under other processes' stores"};
}

// Takes an entry out of use by renaming it to trash (atomic: a reader sees
// it whole or not at all; of two pruners one wins), then deletes it.
bool CompileCache::retire(const std::string& name) {
  const fs::path from = root_ / name;
  const fs::path trash = root_ / (".trash-" + name + "-" + random_hex(4));
  if (::rename(from.c_str(), trash.c_str()) != 0) return false;
  remove_tree(trash);
  return true;
}

void CompileCache::after_store(const std::string& key, std::uint64_t bytes) {
  stored_since_scan_ += bytes;
  const std::uint64_t cap = limits_.max_total_bytes;
  if (!scanned_bytes_ || *scanned_bytes_ + stored_since_scan_ > cap || stored_since_scan_ >= cap / 32)
    prune_keeping(key);
}

std::uint64_t CompileCache::prune() { return prune_keeping(""); }

std::uint64_t CompileCache::prune_keeping(const std::string& keep) {
  sweep_leftovers();
  std::vector<Entry> entries = list_entries();
  std::uint64_t total = 0;
  for (const Entry& e : entries) total += e.bytes;
  std::uint64_t removed = 0;
  if (total > limits_.max_total_bytes) {
    const std::uint64_t target = limits_.max_total_bytes / 10 * 9;
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return older(a.used, b.used) || (!older(b.used, a.used) && a.name < b.name);
    });
    for (const Entry& e : entries) {
      if (total <= target) break;
      if (e.name == keep || !retire(e.name)) continue;
      total -= e.bytes;
      removed += e.bytes;
      ++stats_.entries_pruned;
    }
    stats_.bytes_pruned += removed;
  }
  scanned_bytes_ = total;
  stored_since_scan_ = 0;
  return removed;
}

std::vector<CompileCache::Entry> CompileCache::list_entries() const {
  std::vector<Entry> out;
  const UniqueFd root = open_dir(root_);
  std::error_code ec;
  for (fs::directory_iterator it(root_, ec), end; root && !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    struct stat st {};
    if (!is_key_name(name) || ::fstatat(root.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
      continue;
    Entry e{name, st.st_mtim, 0};
    for (const char* file : {kObject, kKey, kObjectHash}) {
      const std::string rel = name + "/" + file;
      struct stat f {};
      if (::fstatat(root.get(), rel.c_str(), &f, AT_SYMLINK_NOFOLLOW) == 0) e.bytes += static_cast<std::uint64_t>(f.st_size);
    }
    out.push_back(std::move(e));
  }
  return out;
}

// Removes what dead processes left: temporaries of stores and trash of
// removals older than kLeftoverSeconds.
void CompileCache::sweep_leftovers() const {
  const timespec cutoff{now().tv_sec - kLeftoverSeconds, 0};
  std::vector<fs::path> old;
  std::error_code ec;
  for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    struct stat st {};
    if ((starts_with(name, ".tmp-") || starts_with(name, ".trash-")) && ::lstat(it->path().c_str(), &st) == 0 &&
        older(st.st_mtim, cutoff))
      old.push_back(it->path());
  }
  for (const fs::path& p : old) remove_tree(p);
}

CacheUsage CompileCache::usage() const {
  CacheUsage u;
  for (const Entry& e : list_entries()) {
    ++u.entries;
    u.bytes += e.bytes;
  }
  return u;
}

}  // namespace kevo::native
