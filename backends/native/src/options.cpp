// Options of the native pipeline: parsing (strict), defaults and the
// effective config. Declared in kevo/native/backend.hpp.
#include "kevo/native/backend.hpp"

#include "kevo/sandbox/runner.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace kevo::native {

namespace fs = std::filesystem;

std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "kevo").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "kevo").string();
  return {};
}

std::int64_t default_flush_kb() {
  // The largest cache level of cpu0 (sysfs sizes read like "32768K").
  std::int64_t best_level = -1, best_kb = 0;
  const fs::path base = "/sys/devices/system/cpu/cpu0/cache";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(base, ec)) {
    if (e.path().filename().string().rfind("index", 0) != 0) continue;
    std::ifstream lf(e.path() / "level"), sf(e.path() / "size");
    std::int64_t level = 0;
    std::string size;
    if (!(lf >> level) || !(sf >> size) || size.empty()) continue;
    std::int64_t kb = std::atoll(size.c_str());
    const char unit = size.back();
    if (unit == 'M') kb *= 1024;
    else if (unit == 'G') kb *= 1024 * 1024;
    else if (unit != 'K') kb /= 1024;   // plain bytes
    if (level > best_level || (level == best_level && kb > best_kb)) {
      best_level = level;
      best_kb = kb;
    }
  }
  // Capped: on servers with very large last-level caches a flush of twice
  // the cache would dominate the time per candidate (set timing.flush_kb).
  if (best_kb <= 0) return 64 * 1024;
  return std::min<std::int64_t>(2 * best_kb, 256 * 1024);
}

namespace {

int cores() {
  // This rank's share of the host (several ranks may share it).
  return usable_cores();
}

}  // namespace

NativeOptions parse_native_options(StrictObject& obj, NativeOptions defaults) {
  NativeOptions o = std::move(defaults);
  o.compiler = obj.string("compiler", o.compiler);
  if (o.compiler.empty() || sandbox::find_in_path(o.compiler).empty())
    obj.fail("compiler", "a C++ compiler found in PATH or given by path, such as \"c++\" (\"" + o.compiler +
                             "\" was not found)");
  o.flags = obj.strings("flags", o.flags);
  o.compile_jobs = static_cast<int>(obj.integer("compile_jobs", o.compile_jobs, 0, 1024));
  o.eval_jobs = static_cast<int>(obj.integer("eval_jobs", o.eval_jobs, 1, 1024));
  o.cache_dir = obj.has("cache_dir") ? obj.string("cache_dir") : default_cache_dir();
  o.worker = obj.string("worker", o.worker);
  if (auto c = obj.optional_object("cache")) {
    const std::int64_t entry = c->integer("max_entry_mb", static_cast<std::int64_t>(o.cache_limits.max_entry_bytes >> 20), 1,
                                          std::int64_t{1} << 20);
    const std::int64_t total = c->integer("max_total_mb", static_cast<std::int64_t>(o.cache_limits.max_total_bytes >> 20), 1,
                                          std::int64_t{1} << 30);
    if (total < entry) c->fail("max_total_mb", "an integer >= cache.max_entry_mb (" + std::to_string(entry) + ")");
    o.cache_limits.max_entry_bytes = static_cast<std::uint64_t>(entry) << 20;
    o.cache_limits.max_total_bytes = static_cast<std::uint64_t>(total) << 20;
    c->finish();
  }
  if (auto lim = obj.optional_object("limits")) {
    NativeLimits& l = o.limits;
    l.wall_seconds = lim->number("wall_seconds", l.wall_seconds, 0.1, 86400);
    l.cpu_seconds = lim->number("cpu_seconds", l.cpu_seconds, 0, 1e7);
    l.memory_mb = lim->integer("memory_mb", l.memory_mb, 64, std::int64_t{1} << 30);
    l.output_kb = lim->integer("output_kb", l.output_kb, 1, std::int64_t{1} << 20);
    l.open_files = static_cast<int>(lim->integer("open_files", l.open_files, 16, 1 << 20));
    l.processes = static_cast<int>(lim->integer("processes", l.processes, 8, 1 << 22));
    l.compile_wall_seconds = lim->number("compile_wall_seconds", l.compile_wall_seconds, 1, 86400);
    l.compile_memory_mb = lim->integer("compile_memory_mb", l.compile_memory_mb, 256, std::int64_t{1} << 30);
    l.file_mb = lim->integer("file_mb", l.file_mb, 1, std::int64_t{1} << 30);
    lim->finish();
  }
  if (auto cor = obj.optional_object("correctness")) {
    o.trials = static_cast<int>(cor->integer("trials", o.trials, 3, 1000));
    o.judge_threads = static_cast<int>(cor->integer("threads", o.judge_threads, 0, 256));
    cor->finish();
  }
  if (auto tim = obj.optional_object("timing")) {
    NativeTiming& t = o.timing;
    t.warmup = static_cast<int>(tim->integer("warmup", t.warmup, 0, 1000));
    t.min_repeats = static_cast<int>(tim->integer("min_repeats", t.min_repeats, 1, 1000000));
    t.max_repeats = static_cast<int>(tim->integer("max_repeats", t.max_repeats, 1, 1000000));
    if (t.max_repeats < t.min_repeats) tim->fail("max_repeats", "an integer >= timing.min_repeats (" +
                                                                   std::to_string(t.min_repeats) + ")");
    t.budget_seconds = tim->number("budget_seconds", t.budget_seconds, 0, 3600);
    t.flush_kb = tim->integer("flush_kb", t.flush_kb, 0, std::int64_t{1} << 30);
    t.max_iqr_fraction = tim->number("max_iqr_fraction", t.max_iqr_fraction, 0, 100);
    tim->finish();
  }
  if (auto sb = obj.optional_object("sandbox")) {
    o.seccomp = sb->boolean("seccomp", o.seccomp);
    o.namespaces = sb->boolean("namespaces", o.namespaces);
    o.scratch_dir = sb->string("scratch_dir", o.scratch_dir);
    sb->finish();
  }
  obj.finish();
  if (o.compile_jobs == 0) o.compile_jobs = cores();
  if (o.judge_threads == 0) o.judge_threads = std::max(1, cores() / std::max(o.eval_jobs, 1));
  if (o.timing.flush_kb == 0) o.timing.flush_kb = default_flush_kb();
  if (o.limits.cpu_seconds == 0) o.limits.cpu_seconds = o.limits.wall_seconds * cores();
  return o;
}

nlohmann::json to_json(const NativeOptions& o) {
  const NativeLimits& l = o.limits;
  const NativeTiming& t = o.timing;
  return {
      {"compiler", o.compiler},
      {"flags", o.flags},
      {"compile_jobs", o.compile_jobs > 0 ? o.compile_jobs : cores()},
      {"eval_jobs", o.eval_jobs},
      {"cache_dir", o.cache_dir},
      {"worker", o.worker},
      {"cache",
       {{"max_entry_mb", o.cache_limits.max_entry_bytes >> 20}, {"max_total_mb", o.cache_limits.max_total_bytes >> 20}}},
      {"limits",
       {{"wall_seconds", l.wall_seconds},
        {"cpu_seconds", l.cpu_seconds > 0 ? l.cpu_seconds : l.wall_seconds * cores()},
        {"memory_mb", l.memory_mb},
        {"output_kb", l.output_kb},
        {"open_files", l.open_files},
        {"processes", l.processes},
        {"compile_wall_seconds", l.compile_wall_seconds},
        {"compile_memory_mb", l.compile_memory_mb},
        {"file_mb", l.file_mb}}},
      {"correctness",
       {{"trials", o.trials},
        {"threads", o.judge_threads > 0 ? o.judge_threads : std::max(1, cores() / std::max(o.eval_jobs, 1))}}},
      {"timing",
       {{"warmup", t.warmup},
        {"min_repeats", t.min_repeats},
        {"max_repeats", t.max_repeats},
        {"budget_seconds", t.budget_seconds},
        {"flush_kb", t.flush_kb > 0 ? t.flush_kb : default_flush_kb()},
        {"max_iqr_fraction", t.max_iqr_fraction}}},
      {"roofline",
       {{"peak_gflops", o.roofline.peak_gflops},
        {"peak_gbps", o.roofline.peak_gbps},
        {"floor_fraction", o.roofline.floor_fraction}}},
      {"sandbox", {{"seccomp", o.seccomp}, {"namespaces", o.namespaces}, {"scratch_dir", o.scratch_dir}}},
  };
}

}  // namespace kevo::native
