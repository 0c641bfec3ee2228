// kevo_bench_lineage: cost of the lineage writer per candidate, as a run with
// the null backend would pay it (every candidate logged, ~1 KB sources, many
// repeated texts, a flush every 256 records or 2 s). Not a test: prints
//
//   records/s and us/record   (time inside append + maybe_flush + close)
//
// Usage: kevo_bench_lineage [--records N] [--source-bytes B] [--flush-records N]
//                           [--flush-seconds S] [--duplicates F] [--out FILE]
#include "kevo/core/hash.hpp"
#include "kevo/lineage/writer.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::uint64_t records = 200'000;
  std::size_t source_bytes = 1000;
  std::size_t flush_records = 256;
  double flush_seconds = 2.0;
  double duplicates = 0.1;   // fraction of candidates that repeat an earlier source
  std::string out;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) {
      std::fprintf(stderr, "kevo_bench_lineage: %s needs a value\n", k.c_str());
      std::exit(2);
    }
    ++i;
    if (k == "--records") a.records = std::strtoull(v, nullptr, 10);
    else if (k == "--source-bytes") a.source_bytes = std::strtoull(v, nullptr, 10);
    else if (k == "--flush-records") a.flush_records = std::strtoull(v, nullptr, 10);
    else if (k == "--flush-seconds") a.flush_seconds = std::strtod(v, nullptr);
    else if (k == "--duplicates") a.duplicates = std::strtod(v, nullptr);
    else if (k == "--out") a.out = v;
    else {
      std::fprintf(stderr, "kevo_bench_lineage: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

// A ~bytes-long kernel whose parameter block depends on `variant`.
std::string source(std::uint64_t variant, std::size_t bytes) {
  std::string s = "// kevo:params begin\n#define TILE_M " + std::to_string(8 << (variant % 4)) + "\n#define TILE_N " +
                  std::to_string(variant) + "\n// kevo:params end\n"
                  "extern \"C\" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {\n";
  while (s.size() + 2 < bytes) s += "  for (int i = 0; i < M; i += TILE_M) { C[i] += A[i] * B[i]; }\n";
  s.resize(bytes - 2);
  return s + "}\n";
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const std::filesystem::path path =
      a.out.empty() ? std::filesystem::temp_directory_path() / ("kevo-bench-lineage-" + std::to_string(::getpid()) + ".h5")
                    : std::filesystem::path(a.out);
  std::filesystem::remove(path);

  kevo::lineage::RunInfo run;
  run.tasks = {"sgemm", "softmax", "conv2d"};
  kevo::lineage::WriterOptions opt;
  opt.flush_records = a.flush_records;
  opt.flush_seconds = a.flush_seconds;

  Clock::duration in_writer{};
  const auto wall0 = Clock::now();
  auto t = Clock::now();
  auto w = kevo::lineage::LineageWriter::create(path, run, opt);
  in_writer += Clock::now() - t;

  static const char* const statuses_msg[] = {"", "correct: 1.85x", "wrong answer at C[3, 17]", "compile error"};
  std::uint64_t dup_every = a.duplicates > 0 ? static_cast<std::uint64_t>(1.0 / a.duplicates) : 0;
  kevo::Candidate c;
  for (std::uint64_t id = 0; id < a.records; ++id) {
    // What the engine would have made (not timed).
    const bool dup = dup_every && id > 0 && id % dup_every == 0;
    c.id = id;
    c.task = static_cast<std::uint32_t>(id % 3);
    c.parent0 = id > 0 ? static_cast<std::int64_t>(id - 1) : -1;
    c.op = id % 4 ? "param_mutation" : "param_crossover";
    c.source = source(dup ? id - 1 : id, a.source_bytes);
    c.hash = kevo::source_hash(c.source);
    c.params_json = "{\"TILE_M\":" + std::to_string(8 << (id % 4)) + "}";
    c.duplicate_of = dup ? static_cast<std::int64_t>(id - 1) : -1;
    c.verdict = {};
    c.verdict.status = dup ? kevo::Status::duplicate : static_cast<kevo::Status>(1 + id % 3);
    c.verdict.stage = kevo::Stage::done;
    c.verdict.message = statuses_msg[static_cast<int>(c.verdict.status) % 4];
    c.verdict.feedback = "median 1.23 ms over 30 repeats; try a larger TILE_M";
    c.verdict.speedup = 1.0 + static_cast<double>(id % 100) / 100.0;
    c.t_created = 1.75e9 + static_cast<double>(id) * 1e-4;

    t = Clock::now();
    w.append(c);
    w.maybe_flush(t);
    in_writer += Clock::now() - t;
  }
  t = Clock::now();
  w.close();
  in_writer += Clock::now() - t;
  const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  const double secs = std::chrono::duration<double>(in_writer).count();

  std::printf("records        %llu (source %zu B, %.0f%% duplicates, flush every %zu records or %.1f s)\n",
              static_cast<unsigned long long>(a.records), a.source_bytes, a.duplicates * 100.0, a.flush_records,
              a.flush_seconds);
  std::printf("writer time    %.3f s in append + maybe_flush + close (%.3f s wall with candidate generation)\n", secs,
              wall);
  std::printf("records/s      %.0f\n", static_cast<double>(a.records) / secs);
  std::printf("us/record      %.2f\n", secs * 1e6 / static_cast<double>(a.records));
  std::printf("flushes        %llu (%llu failed)\n", static_cast<unsigned long long>(w.flushes()),
              static_cast<unsigned long long>(w.failed_flushes()));
  std::printf("texts          %llu distinct\n", static_cast<unsigned long long>(w.texts_written()));
  std::printf("file           %.1f MB\n", static_cast<double>(std::filesystem::file_size(path)) / 1e6);
  if (a.out.empty()) std::filesystem::remove(path);
  return 0;
}
