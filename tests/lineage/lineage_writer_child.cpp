// Helper process for test_lineage (not a test itself).
//
//   lineage_writer_child write PATH COUNT FLUSH_RECORDS DELAY_US
//       creates PATH and appends make_candidate(0..COUNT-1) (COUNT 0: until
//       killed), DELAY_US microseconds apart, flushing every FLUSH_RECORDS
//       records or 50 ms; after every flush that returned it prints
//       "flushed N" (N rows on disk) on stdout; at the end "done N".
//   lineage_writer_child hold PATH SECONDS
//       opens PATH read-only the way a plain h5py/h5dump reader does (with a
//       file lock), prints "held", keeps it open for SECONDS, exits.
#include "kevo/lineage/h5.hpp"
#include "kevo/lineage/writer.hpp"
#include "lineage_test_support.hpp"

#include <sys/prctl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

int write_mode(const std::string& path, std::uint64_t count, std::size_t flush_records, long delay_us) {
  kevo::lineage::WriterOptions opt;
  opt.flush_records = flush_records;
  opt.flush_seconds = 0.05;
  auto writer = kevo::lineage::LineageWriter::create(path, kevo_test::make_run(), opt);
  writer.append(kevo::lineage::Event{kevo::lineage::EventKind::start, 0.0, -1, -1, -1, "child start"});
  std::uint64_t reported = 0;
  for (std::uint64_t id = 0; count == 0 || id < count; ++id) {
    writer.append(kevo_test::make_candidate(id));
    writer.maybe_flush();
    if (writer.flushes() != reported) {
      reported = writer.flushes();
      std::printf("flushed %llu\n", static_cast<unsigned long long>(writer.rows_written()));
      std::fflush(stdout);
    }
    if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  }
  writer.close();
  std::printf("done %llu\n", static_cast<unsigned long long>(writer.rows_written()));
  std::fflush(stdout);
  return 0;
}

int hold_mode(const std::string& path, double seconds) {
  kevo::h5::init();
  kevo::h5::File f = kevo::h5::open_file(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  std::printf("held\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Never outlive the test that started us.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && argc == 6)
      return write_mode(argv[2], std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10),
                        std::strtol(argv[5], nullptr, 10));
    if (mode == "hold" && argc == 4) return hold_mode(argv[2], std::strtod(argv[3], nullptr));
    std::fprintf(stderr, "usage: lineage_writer_child write PATH COUNT FLUSH_RECORDS DELAY_US | hold PATH SECONDS\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lineage_writer_child: %s\n", e.what());
    return 1;
  }
}
