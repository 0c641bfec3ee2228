// The run's lifecycle phases driven one at a time, without a run
// (engine/include/kevo/engine/lifecycle.hpp): the run lock, the run
// directory a resume claims and one a fresh run chooses, the stop signal.
#include "kevo/core/error.hpp"
#include "kevo/engine/lifecycle.hpp"

#include "../core/test_util.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using kevo::InputError;
using namespace kevo::engine;

namespace {

void touch(const fs::path& p, const std::string& text = "x") { std::ofstream(p) << text; }

// A listing of everything below `dir` (names and sizes).
std::string listing(const fs::path& dir) {
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out += e.path().string() + (e.is_regular_file() ? " " + std::to_string(e.file_size()) : "") + "\n";
  return out;
}

}  // namespace

TEST(RunLock, ASecondLockOnTheSameFileIsAnInputError) {
  kevo::test::TempDir d;
  RunLock first(d.path() / "run.lock");
  EXPECT_TRUE(first.held());
  EXPECT_TRUE(first.created());
  EXPECT_THROW(RunLock(d.path() / "run.lock"), InputError);
}

TEST(RunLock, AbandonRemovesOnlyAFileItMade) {
  kevo::test::TempDir d;
  {
    RunLock made(d.path() / "run.lock");
    made.abandon();
    EXPECT_FALSE(made.held());
  }
  EXPECT_FALSE(fs::exists(d.path() / "run.lock"));
  touch(d.path() / "run.lock", "");
  {
    RunLock existing(d.path() / "run.lock");
    EXPECT_FALSE(existing.created());
    existing.abandon();
  }
  EXPECT_TRUE(fs::exists(d.path() / "run.lock"));
  // Abandoned, the lock is free again.
  EXPECT_NO_THROW(RunLock(d.path() / "run.lock"));
}

TEST(RunDirectory, AResumeOfABrokenDirectoryIsRefusedAndLeavesItAsItWas) {
  kevo::test::TempDir d;
  // No lineage/ at all.
  std::string before = listing(d.path());
  EXPECT_THROW(RunDirectory::claim_existing(d.path()), InputError);
  EXPECT_EQ(listing(d.path()), before);
  // lineage/ without a rank file.
  fs::create_directories(d.path() / "lineage");
  touch(d.path() / "lineage" / "notes.txt");
  touch(d.path() / "config.json", "{}");
  before = listing(d.path());
  try {
    RunDirectory::claim_existing(d.path());
    FAIL() << "an empty lineage/ was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lineage"), std::string::npos) << e.what();
  }
  EXPECT_EQ(listing(d.path()), before);
  // A rank file but no config.json.
  touch(d.path() / "lineage" / "rank-0000.h5");
  fs::remove(d.path() / "config.json");
  before = listing(d.path());
  try {
    RunDirectory::claim_existing(d.path());
    FAIL() << "a run directory without config.json was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(listing(d.path()), before);
}

TEST(RunDirectory, AClaimedDirectoryThatIsAbandonedKeepsNoLock) {
  kevo::test::TempDir d;
  fs::create_directories(d.path() / "lineage");
  touch(d.path() / "lineage" / "rank-0000.h5");
  touch(d.path() / "config.json", "{}");
  const std::string before = listing(d.path());
  {
    RunDirectory dir = RunDirectory::claim_existing(d.path());
    EXPECT_TRUE(fs::exists(d.path() / "run.lock"));
    // A second kevo cannot claim it meanwhile.
    EXPECT_THROW(RunDirectory::claim_existing(d.path()), InputError);
    dir.abandon();
  }
  EXPECT_EQ(listing(d.path()), before);
}

TEST(RunDirectory, AFreshRunRefusesADirectoryThatHoldsAnything) {
  kevo::test::TempDir d;
  Config config;
  touch(d.path() / "something");
  try {
    RunDirectory::choose_new(d.path().string(), config);
    FAIL() << "a non-empty --out was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "--out");
  }
  // An empty one is fine, and nothing is made before create().
  fs::create_directories(d.path() / "empty");
  RunDirectory fresh = RunDirectory::choose_new((d.path() / "empty").string(), config);
  EXPECT_TRUE(fs::is_empty(d.path() / "empty"));
  EXPECT_EQ(fresh.path(), d.path() / "empty");
}

TEST(StopSignal, RecordsTheFirstSignalAndWhenItCame) {
  StopSignal s;
  EXPECT_EQ(s.signal.load(), 0);
  s.note(SIGTERM);
  const auto when = s.unix_ns.load();
  EXPECT_GT(when, 0);
  s.note(SIGINT);
  EXPECT_EQ(s.signal.load(), SIGTERM);
  EXPECT_EQ(s.unix_ns.load(), when);
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGUSR1), "SIGUSR1");
}
