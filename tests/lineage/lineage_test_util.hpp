// gtest helpers for test_lineage: temporary folders, field-by-field candidate
// comparison, finding h5py / h5dump.
#pragma once

#include "lineage_test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <random>
#include <string>

namespace kevo_test {

// A fresh folder under the system temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("kevo-lineage-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void expect_same(const kevo::Candidate& want, const kevo::Candidate& got) {
  SCOPED_TRACE("candidate " + std::to_string(want.id));
  EXPECT_EQ(want.id, got.id);
  EXPECT_EQ(want.task, got.task);
  EXPECT_EQ(want.parent0, got.parent0);
  EXPECT_EQ(want.parent1, got.parent1);
  EXPECT_EQ(want.op, got.op);
  EXPECT_EQ(want.source, got.source);
  EXPECT_EQ(want.hash, got.hash);
  EXPECT_EQ(want.params_json, got.params_json);
  EXPECT_EQ(want.eval_seed, got.eval_seed);
  EXPECT_EQ(want.duplicate_of, got.duplicate_of);
  EXPECT_EQ(want.op_note, got.op_note);
  EXPECT_TRUE(same_double(want.t_created, got.t_created));
  EXPECT_TRUE(same_double(want.t_submitted, got.t_submitted));
  EXPECT_TRUE(same_double(want.t_finished, got.t_finished));
  const kevo::Verdict& a = want.verdict;
  const kevo::Verdict& b = got.verdict;
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.message, b.message);
  EXPECT_TRUE(same_double(a.compile_seconds, b.compile_seconds));
  EXPECT_EQ(a.compile_cached, b.compile_cached);
  EXPECT_EQ(a.compile_log, b.compile_log);
  EXPECT_TRUE(same_double(a.max_abs_error, b.max_abs_error));
  EXPECT_TRUE(same_double(a.rel_l2_error, b.rel_l2_error));
  ASSERT_EQ(a.mismatch.has_value(), b.mismatch.has_value());
  if (a.mismatch) {
    EXPECT_EQ(a.mismatch->arg, b.mismatch->arg);
    EXPECT_EQ(a.mismatch->shape, b.mismatch->shape);
    EXPECT_EQ(a.mismatch->trial, b.mismatch->trial);
    EXPECT_EQ(a.mismatch->flat_index, b.mismatch->flat_index);
    EXPECT_EQ(a.mismatch->index, b.mismatch->index);
    EXPECT_TRUE(same_double(a.mismatch->expected, b.mismatch->expected));
    EXPECT_TRUE(same_double(a.mismatch->got, b.mismatch->got));
  }
  EXPECT_TRUE(same_double(a.cand_median_ns, b.cand_median_ns));
  EXPECT_TRUE(same_double(a.cand_iqr_ns, b.cand_iqr_ns));
  EXPECT_TRUE(same_double(a.ref_median_ns, b.ref_median_ns));
  EXPECT_TRUE(same_double(a.ref_iqr_ns, b.ref_iqr_ns));
  EXPECT_EQ(a.repeats, b.repeats);
  EXPECT_TRUE(same_double(a.speedup, b.speedup));
  EXPECT_TRUE(same_double(a.worker_seconds, b.worker_seconds));
  EXPECT_TRUE(same_double(a.slot_seconds, b.slot_seconds));
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(a.signal, b.signal);
  EXPECT_EQ(a.max_rss_kb, b.max_rss_kb);
  EXPECT_EQ(a.output_tail, b.output_tail);
  EXPECT_EQ(a.feedback, b.feedback);
  EXPECT_EQ(a.profile, b.profile);
  EXPECT_EQ(a.device, b.device);
}

// Runs argv to completion; returns (exit code, stdout).
inline std::pair<int, std::string> run_capture(const std::vector<std::string>& argv, bool quiet_stderr = true) {
  Process p = Process::spawn(argv, quiet_stderr);
  std::string out = p.read_all();
  return {p.wait(), out};
}

// A Python interpreter that can import h5py: $KEVO_TEST_PYTHON, Debian's
// system python (where apt's python3-h5py lives), then python3 on PATH.
inline std::optional<std::string> python_with_h5py() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("KEVO_TEST_PYTHON")) candidates.emplace_back(env);
  candidates.emplace_back("/usr/bin/python3");
  candidates.emplace_back("python3");
  for (const auto& py : candidates) {
    try {
      if (run_capture({py, "-c", "import h5py"}).first == 0) return py;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

inline bool have_h5dump() {
  try {
    return run_capture({"h5dump", "--version"}).first == 0;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace kevo_test
