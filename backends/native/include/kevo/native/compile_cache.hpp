// The compile cache of the native backends: built objects (a kernel's .so,
// a cubin) kept on disk under the SHA-256 of everything that went into the
// build, so that a source compiled once is never compiled again, in this run
// or a later one, by this process or another sharing the directory (the MPI
// ranks of one host).
//
// A hit is never trusted on its key alone. An entry keeps the full key
// material, compared byte for byte with the request (another request under
// the same key is a clash: a miss), and the SHA-256 of its object, checked
// on the copy handed out on every hit (a mismatch is a corrupt entry: a miss,
// and the entry is removed).
//
// On disk, under the root:
//   <key>/object          the built file                        0444
//   <key>/key             the key material (key_material())     0444
//   <key>/object.sha256   the object's SHA-256, hex and "\n"     0444
//   <key>/                the entry; its mtime is its last use   0555
//   .tmp-<key>-XXXXXX/    an entry being written (then renamed to <key>)
//   .trash-<key>-<hex>/   an entry being removed (renamed here first)
// Stores, prunes and removals are renames within the root, so a reader
// sees a whole entry or none; see docs/sandbox.md (cache_dir).
//
// One CompileCache serves one thread; processes share a root safely.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::native {

// What may be kept. The config keys backend.<flavour>.cache.max_entry_mb
// and backend.<flavour>.cache.max_total_mb set them (in MiB).
struct CacheLimits {
  std::uint64_t max_entry_bytes = std::uint64_t{256} << 20;   // one object; larger ones are not stored
  std::uint64_t max_total_bytes = std::uint64_t{4} << 30;     // all entries; over it, the least recently used go
};

// Everything that goes into a build, one part each: the source with its
// adapter, the compiler's path and identity (its --version line), flags,
// link flags, libraries, the host CPU's id... The order is the caller's
// and is part of the key.
using KeyParts = std::vector<std::string>;

// The key material: a format line, then each part as "<length>:<bytes>\n",
// so that ("ab", "c") and ("a", "bc") differ. Stored in each entry as is.
std::string key_material(const KeyParts& parts);

enum class FetchOutcome {
  hit,       // verified: `dest` holds the object
  miss,      // no entry (or it went away while being read)
  clash,     // an entry under this key was built from other inputs
  corrupt,   // the entry failed its checks and was removed
};
const char* to_string(FetchOutcome o) noexcept;

struct FetchResult {
  FetchOutcome outcome = FetchOutcome::miss;
  std::string detail;   // why not a hit, in words; "" on a hit or a plain miss
  bool hit() const noexcept { return outcome == FetchOutcome::hit; }
};

enum class StoreOutcome {
  stored,           // a new entry
  already_stored,   // an entry of the same inputs was there (a concurrent store)
  too_large,        // the object is over max_entry_bytes: not kept (the build itself is fine)
  clash,            // an entry of other inputs holds this key: not kept
  failed,           // a file-system error: not kept; message says which call failed and why
};
const char* to_string(StoreOutcome o) noexcept;

struct StoreResult {
  StoreOutcome outcome = StoreOutcome::failed;
  std::string message;   // why it was not kept; "" when kept
  bool kept() const noexcept { return outcome == StoreOutcome::stored || outcome == StoreOutcome::already_stored; }
};

// Counts of this CompileCache object (this process), not of the directory.
struct CacheStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t clashes = 0;          // fetches and stores that met other inputs under their key
  std::uint64_t corrupt = 0;          // entries found damaged (and removed)
  std::uint64_t stores = 0;           // new entries written
  std::uint64_t store_failures = 0;   // StoreOutcome::failed
  std::uint64_t too_large = 0;        // objects over max_entry_bytes
  std::uint64_t entries_pruned = 0;
  std::uint64_t bytes_pruned = 0;
};

// What the directory holds now (all processes' entries).
struct CacheUsage {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;   // the sizes of the entries' files
};

class CompileCache {
 public:
  // Creates `root` when missing. Throws Failure when it cannot, or when the
  // limits are inconsistent (an entry cap of 0 or over the total cap).
  explicit CompileCache(std::filesystem::path root, CacheLimits limits = {});

  // Looks the build up. On a verified hit `dest` (replaced if present) holds
  // the object: a hard link to the entry's file (a copy across file systems
  // or where linking is refused), read-only and to be treated as such, as
  // it may share its inode with the entry. Every entry-side problem is an
  // outcome; throws Failure only when `dest` cannot be written.
  FetchResult fetch(const KeyParts& parts, const std::filesystem::path& dest);

  // Keeps the file `built` as the object of this build. Never throws for
  // the file system: a failure is an outcome, with the failed call's errno
  // text. May prune least recently used entries (see prune()).
  StoreResult store(const KeyParts& parts, const std::filesystem::path& built);

  // When the entries exceed max_total_bytes, removes the least recently
  // used (last fetch or store) until they fit in 90% of it. Returns the
  // bytes removed. store() calls it when this process's count says the cap
  // may be passed, and after every 1/32 of the cap it has stored (so that
  // processes sharing a root see each other's stores).
  std::uint64_t prune();

  CacheUsage usage() const;
  const CacheStats& stats() const noexcept { return stats_; }
  const CacheLimits& limits() const noexcept { return limits_; }
  const std::filesystem::path& root() const noexcept { return root_; }

  // The key of a request: sha256_hex(material) unless a test replaced the
  // function (to force clashes); a key must be 64 lowercase hex digits.
  std::string key_of(std::string_view material) const;
  void set_key_function_for_testing(std::function<std::string(std::string_view material)> fn);

 private:
  struct Entry;
  StoreResult store_file(const std::string& material, const std::string& key, const std::filesystem::path& built,
                         std::uint64_t& bytes);
  StoreResult publish(const std::filesystem::path& staged, const std::string& key, const std::string& material);
  FetchResult damaged(int dir_fd, const std::string& key, const std::string& why);
  bool is_live(int dir_fd, const std::string& key) const;
  bool retire(const std::string& name);
  void after_store(const std::string& key, std::uint64_t bytes);
  std::uint64_t prune_keeping(const std::string& keep);
  std::vector<Entry> list_entries() const;
  void sweep_leftovers() const;

  std::filesystem::path root_;
  CacheLimits limits_;
  CacheStats stats_;
  std::function<std::string(std::string_view)> key_fn_;
  std::optional<std::uint64_t> scanned_bytes_;   // the entries' size at the last scan
  std::uint64_t stored_since_scan_ = 0;          // what this process stored since
};

// Removes a file or a directory tree, making read-only directories writable
// as it goes (entries are 0555). Returns false when something stayed.
bool remove_tree(const std::filesystem::path& path) noexcept;

}  // namespace kevo::native
