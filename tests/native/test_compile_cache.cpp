#include "kevo/native/compile_cache.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/sandbox/scratch_dir.hpp"
#include "kevo/sandbox/unique_fd.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

namespace kevo::native {
namespace {

namespace fs = std::filesystem;
using sandbox::UniqueFd;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw Failure("test: cannot write " + p.string());
}

// What a CPU build's key is made of, with `source` varying.
KeyParts parts_for(const std::string& source) {
  return {source, "/usr/bin/g++", "g++ (Debian 12.2.0-14) 12.2.0", "-O2 -march=native -fPIC", "-shared", "-lm",
          "cpu 1f2e3d4c"};
}

// A stand-in for a built object: `size` bytes that differ for every `seed`
// and every offset, so that a wrong or partial object never compares equal.
std::string object_bytes(std::uint64_t seed, std::size_t size) {
  Rng r(seed);
  std::string s(size, '\0');
  for (char& c : s) c = static_cast<char>(r.below(256));
  return s;
}

bool present_at(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// Runs `body` in a forked child; returns its exit code (100 + signal when
// killed, 99 when it threw).
pid_t spawn(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) throw Failure("test: fork failed");
  if (pid == 0) {
    int rc = 99;
    try {
      rc = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    ::_exit(rc);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = sandbox::ScratchDir::create(sandbox::default_scratch_base(), "kevo-test-cache");
    root_ = scratch_.path() / "cache";
    work_ = scratch_.path() / "work";
    fs::create_directories(work_);
  }
  // Entries are read-only: the scratch directory's own removal would stop at
  // them (for a user other than root).
  void TearDown() override { remove_tree(root_); }

  fs::path built(const std::string& name, const std::string& content) const {
    const fs::path p = work_ / name;
    write_file(p, content);
    return p;
  }
  fs::path entry_of(const CompileCache& c, const KeyParts& parts) const { return root_ / c.key_of(key_material(parts)); }

  // Names in `dir` that start with a dot: temporaries and trash.
  static std::vector<std::string> dot_names(const fs::path& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (!n.empty() && n[0] == '.') out.push_back(n);
    }
    return out;
  }

  sandbox::ScratchDir scratch_;
  fs::path root_, work_;
};

TEST(CompileCacheKey, MaterialIsLengthPrefixed) {
  EXPECT_EQ(key_material({"ab", "c"}), "kevo-compile-cache v1 2 parts\n2:ab\n1:c\n");
  EXPECT_NE(key_material({"ab", "c"}), key_material({"a", "bc"}));
  EXPECT_NE(key_material({"ab", "c"}), key_material({"abc"}));
  EXPECT_NE(key_material({"a\n1:b"}), key_material({"a", "b"}));
  EXPECT_NE(key_material({""}), key_material({}));
  EXPECT_NE(key_material({"", ""}), key_material({""}));
}

TEST_F(CompileCacheTest, HitAfterStore) {
  CompileCache c(root_);
  const KeyParts parts = parts_for("extern \"C\" void k() {}");
  const std::string object = object_bytes(1, 5000);
  const StoreResult r = c.store(parts, built("a.so", object));
  ASSERT_EQ(r.outcome, StoreOutcome::stored) << r.message;
  EXPECT_TRUE(r.kept());

  // The layout: <sha256 of the key material>/{object,key,object.sha256}.
  const fs::path entry = root_ / sha256_hex(key_material(parts));
  EXPECT_EQ(entry_of(c, parts), entry);
  EXPECT_EQ(read_file(entry / "object"), object);
  EXPECT_EQ(read_file(entry / "key"), key_material(parts));
  EXPECT_EQ(read_file(entry / "object.sha256"), sha256_hex(object) + "\n");

  const fs::path dest = work_ / "kernel.so";
  write_file(dest, "stale");   // replaced
  const FetchResult f = c.fetch(parts, dest);
  ASSERT_EQ(f.outcome, FetchOutcome::hit) << f.detail;
  EXPECT_EQ(read_file(dest), object);
  struct stat d {}, o {};
  ASSERT_EQ(::stat(dest.c_str(), &d), 0);
  ASSERT_EQ(::stat((entry / "object").c_str(), &o), 0);
  EXPECT_EQ(d.st_ino, o.st_ino) << "on one file system the object is hard-linked";
  EXPECT_EQ(dot_names(work_), std::vector<std::string>{}) << "no temporary left beside dest";
  EXPECT_EQ(c.stats().stores, 1u);
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().misses, 0u);

  // Another process, or a later run, finds it too.
  CompileCache later(root_);
  EXPECT_TRUE(later.fetch(parts, work_ / "again.so").hit());
  EXPECT_EQ(read_file(work_ / "again.so"), object);
}

TEST_F(CompileCacheTest, MissForOtherInputs) {
  CompileCache c(root_);
  const KeyParts parts = parts_for("source A");
  ASSERT_EQ(c.store(parts, built("a.so", object_bytes(1, 100))).outcome, StoreOutcome::stored);

  KeyParts other_flags = parts;
  other_flags[3] = "-O3 -march=native -fPIC";
  KeyParts extra_part = parts;
  extra_part.push_back("");
  const KeyParts others[] = {parts_for("source B"), other_flags, extra_part, {}};
  for (const KeyParts& o : others) {
    const FetchResult f = c.fetch(o, work_ / "dest.so");
    EXPECT_EQ(f.outcome, FetchOutcome::miss) << key_material(o);
    EXPECT_EQ(f.detail, "");
  }
  EXPECT_FALSE(present_at(work_ / "dest.so"));
  EXPECT_EQ(c.stats().misses, 4u);

  // Parts are length-prefixed: the same bytes split otherwise are another key.
  ASSERT_EQ(c.store({"ab", "c"}, built("abc.so", "x")).outcome, StoreOutcome::stored);
  EXPECT_EQ(c.fetch({"a", "bc"}, work_ / "dest.so").outcome, FetchOutcome::miss);
  EXPECT_TRUE(c.fetch({"ab", "c"}, work_ / "dest.so").hit());
}

TEST_F(CompileCacheTest, ForcedClashIsAMissAndEachRequestGetsItsOwnObject) {
  CompileCache c(root_);
  c.set_key_function_for_testing([](std::string_view) { return std::string(64, '0'); });
  const KeyParts a = parts_for("honest kernel"), b = parts_for("wrong kernel, same key");
  const std::string obj_a = object_bytes(1, 300), obj_b = object_bytes(2, 300);
  ASSERT_EQ(c.store(a, built("a.so", obj_a)).outcome, StoreOutcome::stored);

  const FetchResult fb = c.fetch(b, work_ / "b.so");
  EXPECT_EQ(fb.outcome, FetchOutcome::clash) << fb.detail;
  EXPECT_FALSE(present_at(work_ / "b.so")) << "a clash hands nothing out";
  const StoreResult sb = c.store(b, built("b-built.so", obj_b));
  EXPECT_EQ(sb.outcome, StoreOutcome::clash);
  EXPECT_FALSE(sb.kept());
  EXPECT_NE(sb.message.find("other inputs"), std::string::npos) << sb.message;

  ASSERT_TRUE(c.fetch(a, work_ / "a-out.so").hit());
  EXPECT_EQ(read_file(work_ / "a-out.so"), obj_a);
  EXPECT_EQ(c.fetch(b, work_ / "b.so").outcome, FetchOutcome::clash);
  EXPECT_FALSE(present_at(work_ / "b.so"));
  EXPECT_EQ(c.stats().clashes, 3u);
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().corrupt, 0u);
}

TEST_F(CompileCacheTest, KeyFunctionMustGiveAHexName) {
  CompileCache c(root_);
  c.set_key_function_for_testing([](std::string_view) { return std::string("../../etc"); });
  EXPECT_THROW(c.fetch(parts_for("x"), work_ / "x.so"), Failure);
  EXPECT_THROW(c.store(parts_for("x"), built("x.so", "x")), Failure);
}

// Each way an entry can be damaged (or tampered with): the fetch finds it,
// hands nothing out, removes the entry; a new store then works.
TEST_F(CompileCacheTest, CorruptEntriesAreDetectedAndRemoved) {
  const std::string object = object_bytes(3, 4000);
  const fs::path lookalike = built("lookalike.so", object);   // same bytes, elsewhere
  struct Damage {
    const char* what;
    std::function<void(const fs::path& entry)> apply;
  };
  const Damage damages[] = {
      {"one byte of the object changed",
       [](const fs::path& e) {
         const UniqueFd fd(::open((e / "object").c_str(), O_RDWR));
         ASSERT_TRUE(fd.valid());
         char byte = 0;
         ASSERT_EQ(::pread(fd.get(), &byte, 1, 1234), 1);
         byte = static_cast<char>(byte ^ 1);
         ASSERT_EQ(::pwrite(fd.get(), &byte, 1, 1234), 1);
       }},
      {"object truncated", [](const fs::path& e) { fs::resize_file(e / "object", 2000); }},
      {"object removed", [](const fs::path& e) { fs::remove(e / "object"); }},
      {"object replaced by a link to the same bytes",
       [&](const fs::path& e) {
         fs::remove(e / "object");
         fs::create_symlink(lookalike, e / "object");
       }},
      {"object replaced by a FIFO",
       [](const fs::path& e) {
         fs::remove(e / "object");
         ASSERT_EQ(::mkfifo((e / "object").c_str(), 0644), 0);
       }},
      {"hash file removed", [](const fs::path& e) { fs::remove(e / "object.sha256"); }},
      {"hash file rewritten", [](const fs::path& e) {
         fs::remove(e / "object.sha256");
         write_file(e / "object.sha256", sha256_hex("something else") + "\n");
       }},
      {"key file removed", [](const fs::path& e) { fs::remove(e / "key"); }},
  };
  int n = 0;
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    CompileCache c(root_);
    const KeyParts parts = parts_for("kernel " + std::to_string(n++));
    ASSERT_EQ(c.store(parts, built("k.so", object)).outcome, StoreOutcome::stored);
    const fs::path entry = entry_of(c, parts);
    // The test's write access (which no process of kevo's has).
    ASSERT_EQ(::chmod(entry.c_str(), 0755), 0);
    ASSERT_EQ(::chmod((entry / "object").c_str(), 0644), 0);
    d.apply(entry);
    ASSERT_EQ(::chmod(entry.c_str(), 0555), 0);

    const fs::path dest = work_ / "dest.so";
    const FetchResult f = c.fetch(parts, dest);
    EXPECT_EQ(f.outcome, FetchOutcome::corrupt) << f.detail;
    EXPECT_NE(f.detail.find("removed"), std::string::npos) << f.detail;
    EXPECT_FALSE(present_at(dest));
    EXPECT_FALSE(present_at(entry));
    EXPECT_EQ(dot_names(work_), std::vector<std::string>{});
    EXPECT_EQ(dot_names(root_), std::vector<std::string>{}) << "no trash left";
    EXPECT_EQ(c.stats().corrupt, 1u);
    EXPECT_EQ(c.stats().hits, 0u);

    EXPECT_EQ(c.fetch(parts, dest).outcome, FetchOutcome::miss);
    ASSERT_EQ(c.store(parts, built("k.so", object)).outcome, StoreOutcome::stored);
    ASSERT_TRUE(c.fetch(parts, dest).hit());
    EXPECT_EQ(read_file(dest), object);
    fs::remove(dest);
  }
}

TEST_F(CompileCacheTest, StoreReplacesADamagedEntryInItsWay) {
  CompileCache c(root_);
  const KeyParts parts = parts_for("kernel");
  ASSERT_EQ(c.store(parts, built("k.so", "old")).outcome, StoreOutcome::stored);
  const fs::path entry = entry_of(c, parts);
  ASSERT_EQ(::chmod(entry.c_str(), 0755), 0);
  fs::remove(entry / "key");
  const StoreResult r = c.store(parts, built("k.so", "new"));
  EXPECT_EQ(r.outcome, StoreOutcome::stored) << r.message;
  EXPECT_EQ(c.stats().corrupt, 1u);
  ASSERT_TRUE(c.fetch(parts, work_ / "out.so").hit());
  EXPECT_EQ(read_file(work_ / "out.so"), "new");
}

TEST_F(CompileCacheTest, EntryCap) {
  EXPECT_THROW(CompileCache(root_, CacheLimits{0, 100}), Failure);
  EXPECT_THROW(CompileCache(root_, CacheLimits{200, 100}), Failure);

  CompileCache c(root_, CacheLimits{1000, 100000});
  const KeyParts big = parts_for("big"), fits = parts_for("fits");
  const StoreResult r = c.store(big, built("big.so", object_bytes(1, 1001)));
  EXPECT_EQ(r.outcome, StoreOutcome::too_large);
  EXPECT_FALSE(r.kept());
  EXPECT_NE(r.message.find("1001 bytes"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("entry cap of 1000 bytes"), std::string::npos) << r.message;
  EXPECT_FALSE(present_at(entry_of(c, big)));
  EXPECT_EQ(dot_names(root_), std::vector<std::string>{});
  EXPECT_EQ(c.stats().too_large, 1u);
  EXPECT_EQ(c.stats().store_failures, 0u);
  EXPECT_EQ(c.fetch(big, work_ / "out.so").outcome, FetchOutcome::miss);

  EXPECT_EQ(c.store(fits, built("fits.so", object_bytes(2, 1000))).outcome, StoreOutcome::stored);
  EXPECT_TRUE(c.fetch(fits, work_ / "out.so").hit());
}

TEST_F(CompileCacheTest, TotalCapPrunesLeastRecentlyUsedFirst) {
  // Entries of one size E (object + key material + hash line); the cap holds
  // four and a half, so the fifth store prunes one (to 90% of the cap).
  const std::size_t object_size = 1000;
  const std::uint64_t e = object_size + key_material(parts_for("kernel 0")).size() + 65;
  CompileCache c(root_, CacheLimits{object_size, 4 * e + e / 2});
  auto store = [&](int i) {
    const StoreResult r = c.store(parts_for("kernel " + std::to_string(i)), built("k.so", object_bytes(i, object_size)));
    ASSERT_EQ(r.outcome, StoreOutcome::stored) << r.message;
  };
  auto present = [&](int i) { return present_at(entry_of(c, parts_for("kernel " + std::to_string(i)))); };
  auto use = [&](int i) { ASSERT_TRUE(c.fetch(parts_for("kernel " + std::to_string(i)), work_ / "out.so").hit()); };

  for (int i = 0; i < 4; ++i) store(i);
  EXPECT_EQ(c.usage().bytes, 4 * e);
  EXPECT_EQ(c.stats().entries_pruned, 0u);
  use(0);     // 0 is now more recent than 1, 2, 3
  store(4);   // over the cap: 1 goes
  EXPECT_TRUE(present(0));
  EXPECT_FALSE(present(1));
  EXPECT_TRUE(present(2) && present(3) && present(4));
  EXPECT_EQ(c.stats().entries_pruned, 1u);
  EXPECT_EQ(c.stats().bytes_pruned, e);
  EXPECT_EQ(c.usage().entries, 4u);
  EXPECT_EQ(c.usage().bytes, 4 * e);

  use(2);     // last uses now: 3, 0, 4, 2
  store(5);
  EXPECT_FALSE(present(3));
  EXPECT_TRUE(present(0) && present(2) && present(4) && present(5));
  EXPECT_EQ(c.stats().entries_pruned, 2u);
  EXPECT_EQ(c.stats().bytes_pruned, 2 * e);
}

TEST_F(CompileCacheTest, PruneKeepsTheEntryJustStored) {
  const std::uint64_t e = 1000 + key_material(parts_for("kernel 0")).size() + 65;
  CompileCache c(root_, CacheLimits{1000, e + e / 20});   // one entry is over 90% of the cap
  ASSERT_EQ(c.store(parts_for("kernel 0"), built("k.so", object_bytes(0, 1000))).outcome, StoreOutcome::stored);
  ASSERT_EQ(c.store(parts_for("kernel 1"), built("k.so", object_bytes(1, 1000))).outcome, StoreOutcome::stored);
  EXPECT_FALSE(present_at(entry_of(c, parts_for("kernel 0"))));
  EXPECT_TRUE(c.fetch(parts_for("kernel 1"), work_ / "out.so").hit());
  EXPECT_EQ(c.prune(), 0u) << "under the cap: nothing to do";
}

TEST_F(CompileCacheTest, LeftoversOfDeadProcessesAreSwept) {
  CompileCache c(root_);
  const fs::path old_tmp = root_ / ".tmp-dead-store", old_trash = root_ / ".trash-dead-prune", fresh = root_ / ".tmp-live";
  for (const fs::path& p : {old_tmp, old_trash, fresh}) {
    fs::create_directories(p);
    write_file(p / "object", "x");
    ASSERT_EQ(::chmod((p / "object").c_str(), 0444), 0);
    ASSERT_EQ(::chmod(p.c_str(), 0555), 0);
  }
  const timespec two_hours_ago[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, old_tmp.c_str(), two_hours_ago, 0), 0);
  ASSERT_EQ(::utimensat(AT_FDCWD, old_trash.c_str(), two_hours_ago, 0), 0);
  c.prune();
  EXPECT_FALSE(present_at(old_tmp));
  EXPECT_FALSE(present_at(old_trash));
  EXPECT_TRUE(present_at(fresh)) << "a store in progress is left alone";
}

TEST_F(CompileCacheTest, FilesAreReadOnlyAfterStore) {
  CompileCache c(root_);
  const KeyParts parts = parts_for("kernel");
  ASSERT_EQ(c.store(parts, built("k.so", "object")).outcome, StoreOutcome::stored);
  const fs::path entry = entry_of(c, parts);
  EXPECT_EQ(mode_of(entry), 0555u);
  for (const char* f : {"object", "key", "object.sha256"}) EXPECT_EQ(mode_of(entry / f), 0444u) << f;
  ASSERT_TRUE(c.fetch(parts, work_ / "out.so").hit());
  EXPECT_EQ(mode_of(work_ / "out.so"), 0444u);
  if (::geteuid() == 0) {
    std::cout << "[ NOTE     ] running as root, whom permission bits do not stop: checked the modes only\n";
    return;
  }
  errno = 0;
  EXPECT_LT(::open((entry / "object").c_str(), O_WRONLY), 0);
  EXPECT_EQ(errno, EACCES);
  EXPECT_LT(::open((entry / "new").c_str(), O_WRONLY | O_CREAT, 0644), 0);
  EXPECT_EQ(errno, EACCES);
}

TEST_F(CompileCacheTest, CopiesAcrossFileSystems) {
  struct stat a {}, b {};
  if (::stat(scratch_.path().c_str(), &a) != 0 || ::stat("/dev/shm", &b) != 0 || a.st_dev == b.st_dev)
    GTEST_SKIP() << "needs /dev/shm on another file system than " << scratch_.path();
  CompileCache c(root_);
  const KeyParts parts = parts_for("kernel");
  const std::string object = object_bytes(9, 70000);
  ASSERT_EQ(c.store(parts, built("k.so", object)).outcome, StoreOutcome::stored);
  const sandbox::ScratchDir other = sandbox::ScratchDir::create("/dev/shm", "kevo-test-cache");
  const fs::path dest = other.path() / "kernel.so";
  const FetchResult f = c.fetch(parts, dest);
  ASSERT_TRUE(f.hit()) << f.detail;
  EXPECT_EQ(read_file(dest), object);
  EXPECT_EQ(mode_of(dest), 0444u);
  EXPECT_EQ(dot_names(other.path()), std::vector<std::string>{});
}

TEST_F(CompileCacheTest, FetchIntoAMissingFolderThrows) {
  CompileCache c(root_);
  const KeyParts parts = parts_for("kernel");
  ASSERT_EQ(c.store(parts, built("k.so", "object")).outcome, StoreOutcome::stored);
  try {
    c.fetch(parts, work_ / "no-such-folder" / "k.so");
    FAIL() << "expected Failure";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(present_at(entry_of(c, parts))) << "the entry is not to blame";
}

// A failed store says which call failed and the errno it gave, leaves no
// temporary behind, and the build itself stays usable.
void expect_failed_store(const StoreResult& r, const CompileCache& c, const std::string& call, int err) {
  EXPECT_EQ(r.outcome, StoreOutcome::failed);
  EXPECT_FALSE(r.kept());
  EXPECT_NE(r.message.find(call), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(std::strerror(err)), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("Success"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(c.root().string()), std::string::npos) << r.message;
  EXPECT_EQ(c.stats().store_failures, 1u);
}

TEST_F(CompileCacheTest, FailedStoreOfAMissingFile) {
  CompileCache c(root_);
  expect_failed_store(c.store(parts_for("k"), work_ / "never-built.so"), c, "open", ENOENT);
}

TEST_F(CompileCacheTest, FailedStoreWhenTheRootIsNoDirectory) {
  CompileCache c(root_);
  ASSERT_TRUE(remove_tree(root_));
  write_file(root_, "a file where the cache was");
  expect_failed_store(c.store(parts_for("k"), built("k.so", "object")), c, "mkdtemp", ENOTDIR);
  fs::remove(root_);
}

// The disk filling up, as the file-size limit of the process simulates it:
// the object's write fails with EFBIG part way through.
TEST_F(CompileCacheTest, FailedStoreWhenTheDiskFills) {
  const fs::path object = built("big.so", object_bytes(1, 64 * 1024));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const UniqueFd from_child(pipe_fds[0]);
  UniqueFd to_parent(pipe_fds[1]);
  const pid_t pid = spawn([&] {
    CompileCache c(root_);
    const rlimit lim{16 * 1024, 16 * 1024};
    ::signal(SIGXFSZ, SIG_IGN);
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return 2;
    const StoreResult r = c.store(parts_for("k"), object);
    const std::string report = std::string(to_string(r.outcome)) + "|" + std::to_string(c.stats().store_failures) + "|" + r.message;
    if (::write(to_parent.get(), report.data(), report.size()) != static_cast<ssize_t>(report.size())) return 3;
    return 0;
  });
  to_parent.reset();
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(from_child.get(), buf, sizeof buf)) > 0;) report.append(buf, static_cast<std::size_t>(n));
  ASSERT_EQ(wait_for(pid), 0);
  EXPECT_EQ(report.substr(0, report.find('|', 7) + 1), "failed|1|") << report;
  EXPECT_NE(report.find("write"), std::string::npos) << report;
  EXPECT_NE(report.find(std::strerror(EFBIG)), std::string::npos) << report;
  EXPECT_EQ(report.find("Success"), std::string::npos) << report;
  EXPECT_EQ(dot_names(root_), std::vector<std::string>{}) << "the partial entry was removed";
  CompileCache c(root_);
  EXPECT_EQ(c.usage().entries, 0u);
}

// Unwritable for this user: mode 0555, or for root (whom modes do not stop)
// the immutable attribute.
TEST_F(CompileCacheTest, FailedStoreWhenTheRootIsUnwritable) {
  CompileCache c(root_);
  const UniqueFd dir(::open(root_.c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(dir.valid());
  int flags = 0;
  int expected = EACCES;
  if (::geteuid() == 0) {
    if (::ioctl(dir.get(), FS_IOC_GETFLAGS, &flags) != 0) GTEST_SKIP() << "root, and no file attributes here: " << std::strerror(errno);
    const int immutable = flags | FS_IMMUTABLE_FL;
    if (::ioctl(dir.get(), FS_IOC_SETFLAGS, &immutable) != 0)
      GTEST_SKIP() << "root, and the immutable attribute cannot be set: " << std::strerror(errno);
    expected = EPERM;
  } else {
    ASSERT_EQ(::chmod(root_.c_str(), 0555), 0);
  }
  const StoreResult r = c.store(parts_for("k"), built("k.so", "object"));
  if (::geteuid() == 0) ::ioctl(dir.get(), FS_IOC_SETFLAGS, &flags);
  else ::chmod(root_.c_str(), 0755);
  expect_failed_store(r, c, "mkdtemp", expected);
}

// Several processes (MPI ranks of one host) build the same source at once
// and store it: one store writes the entry, the others find it, and every
// one of them then fetches a verified copy.
TEST_F(CompileCacheTest, ConcurrentStoresOfOneKeyAllEndWithAVerifiedHit) {
  const KeyParts parts = parts_for("the same kernel everywhere");
  const std::string object = object_bytes(5, 200000);
  constexpr int kProcs = 6;
  for (int i = 0; i < kProcs; ++i) built("built-" + std::to_string(i) + ".so", object);
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  UniqueFd gate_read(gate[0]), gate_write(gate[1]);
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; ++i) {
    pids.push_back(spawn([&, i] {
      gate_write.reset();
      char c;
      if (::read(gate_read.get(), &c, 1) != 0) return 20;   // released when the parent closes its end
      CompileCache cache(root_);   // each creates the root if need be
      const StoreResult r = cache.store(parts, work_ / ("built-" + std::to_string(i) + ".so"));
      const fs::path dest = work_ / ("dest-" + std::to_string(i) + ".so");
      const FetchResult f = cache.fetch(parts, dest);
      if (!f.hit()) return 10;
      if (read_file(dest) != object) return 11;
      return r.outcome == StoreOutcome::stored ? 0 : r.outcome == StoreOutcome::already_stored ? 1 : 12;
    }));
  }
  gate_write.reset();
  int stored = 0, found = 0;
  for (pid_t p : pids) {
    const int rc = wait_for(p);
    EXPECT_TRUE(rc == 0 || rc == 1) << "child exit " << rc;
    stored += rc == 0;
    found += rc == 1;
  }
  EXPECT_EQ(stored, 1);
  EXPECT_EQ(found, kProcs - 1);
  CompileCache c(root_);
  EXPECT_TRUE(c.fetch(parts, work_ / "parent.so").hit());
  EXPECT_EQ(c.usage().entries, 1u);
  EXPECT_EQ(dot_names(root_), std::vector<std::string>{}) << "every losing store removed its temporary";
}

// One process stores entry after entry into a cache too small for them, so
// that nearly every store prunes; another fetches all the while. Every hit
// must hold exactly its own object; the rest are plain misses.
TEST_F(CompileCacheTest, FetchRacingWithPruneNeverReturnsAWrongOrPartialObject) {
  constexpr int kKernels = 24;
  constexpr std::size_t kSize = 48 * 1024;
  const std::uint64_t e = kSize + key_material(parts_for("kernel 10")).size() + 65;
  const CacheLimits limits{kSize, 6 * e};
  std::vector<std::string> objects;
  for (int i = 0; i < kKernels; ++i) {
    objects.push_back(object_bytes(100 + i, kSize));
    built("k" + std::to_string(i) + ".so", objects.back());
  }
  auto parts = [](int i) { return parts_for("kernel " + std::to_string(10 + i)); };
  const auto run_for = std::chrono::milliseconds(1500);

  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const UniqueFd from_child(pipe_fds[0]);
  UniqueFd to_parent(pipe_fds[1]);
  const pid_t pruner = spawn([&] {
    CompileCache c(root_, limits);
    const auto stop = std::chrono::steady_clock::now() + run_for;
    for (int i = 0; std::chrono::steady_clock::now() < stop; i = (i + 1) % kKernels)
      if (!c.store(parts(i), work_ / ("k" + std::to_string(i) + ".so")).kept()) return 3;
    const std::uint64_t pruned = c.stats().entries_pruned;
    return ::write(to_parent.get(), &pruned, sizeof pruned) == sizeof pruned ? 0 : 4;
  });
  to_parent.reset();

  CompileCache c(root_, limits);
  Rng r(1);
  int wrong = 0;
  const fs::path dest = work_ / "dest.so";
  const auto stop = std::chrono::steady_clock::now() + run_for;
  while (std::chrono::steady_clock::now() < stop) {
    const int i = static_cast<int>(r.below(kKernels));
    const FetchResult f = c.fetch(parts(i), dest);
    if (f.hit() && read_file(dest) != objects[static_cast<std::size_t>(i)]) ++wrong;
    if (f.outcome == FetchOutcome::corrupt || f.outcome == FetchOutcome::clash) ADD_FAILURE() << f.detail;
  }
  std::uint64_t pruned = 0;
  EXPECT_EQ(::read(from_child.get(), &pruned, sizeof pruned), static_cast<ssize_t>(sizeof pruned));
  EXPECT_EQ(wait_for(pruner), 0);
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(c.stats().hits, 0u);
  EXPECT_GT(c.stats().misses, 0u);
  EXPECT_GT(pruned, 0u);
  std::cout << "[ NOTE     ] " << c.stats().hits << " hits, " << c.stats().misses << " misses against " << pruned
            << " entries pruned\n";
}

}  // namespace
}  // namespace kevo::native
