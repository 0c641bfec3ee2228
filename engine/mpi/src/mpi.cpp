#include "kevo/mpi/mpi.hpp"

#include "kevo/core/error.hpp"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

namespace kevo::mpi {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Failure(std::string("MPI_") + what + ": " + std::string(text, static_cast<std::size_t>(len)));
}

Environment::Environment(int* argc, char*** argv) {
  int flag = 0;
  MPI_Initialized(&flag);
  if (flag) throw Failure("MPI is already initialised");
  int provided = 0;
  // The engine makes itself non-dumpable (a backend that runs candidate
  // code does, docs/sandbox.md), and Open MPI's shared-memory transport
  // copies between ranks with process_vm_readv, which a non-dumpable peer
  // refuses: ranks on one host copy through shared memory instead, unless
  // the user chose a mechanism.
  ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  ::setenv("OMPI_MCA_btl_sm_single_copy_mechanism", "none", 0);
  // MPI_Init may install signal handlers of its own (Open MPI's singleton
  // replaces SIGUSR1's): the handlers the program chose before stay, so
  // that its stop signals (SIGINT, SIGTERM, SIGUSR1: docs/islands.md#stopping)
  // keep stopping it.
  const int kept[] = {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP, SIGPIPE};
  struct sigaction before[sizeof kept / sizeof kept[0]];
  for (std::size_t i = 0; i < sizeof kept / sizeof kept[0]; ++i) ::sigaction(kept[i], nullptr, &before[i]);
  // FUNNELED: only the main thread calls MPI; backends may run helper threads.
  check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "Init_thread");
  for (std::size_t i = 0; i < sizeof kept / sizeof kept[0]; ++i)
    if (before[i].sa_handler != SIG_DFL) ::sigaction(kept[i], &before[i], nullptr);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

Environment::~Environment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Unwinding from an error: the other ranks may be waiting in a collective,
  // and MPI_Finalize could wait for them forever. Leaving without it makes
  // mpirun/srun end the job.
  if (std::uncaught_exceptions() > 0) return;
  if (!finalize_ || finalized) return;
  if (finalize_bound_s_ >= 0.0) {
    const int code = bound_exit_code_;
    const auto bound = std::chrono::duration<double>(finalize_bound_s_);
    std::thread([code, bound] {
      std::this_thread::sleep_for(bound);
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(code);
    }).detach();
  }
  MPI_Finalize();
}

Comm Comm::world() { return Comm(MPI_COMM_WORLD, false); }

Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = o.comm_;
    owned_ = o.owned_;
    o.comm_ = MPI_COMM_NULL;
    o.owned_ = false;
  }
  return *this;
}

Comm::~Comm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

int Comm::rank() const {
  int r = 0;
  check(MPI_Comm_rank(comm_, &r), "Comm_rank");
  return r;
}

int Comm::size() const {
  int n = 0;
  check(MPI_Comm_size(comm_, &n), "Comm_size");
  return n;
}

Comm Comm::split(int color, int key) const {
  MPI_Comm c = MPI_COMM_NULL;
  check(MPI_Comm_split(comm_, color, key, &c), "Comm_split");
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return Comm(c, true);
}

Comm Comm::split_shared() const {
  MPI_Comm c = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c), "Comm_split_type");
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return Comm(c, true);
}

Comm Comm::dup() const {
  MPI_Comm c = MPI_COMM_NULL;
  check(MPI_Comm_dup(comm_, &c), "Comm_dup");
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return Comm(c, true);
}

void Comm::barrier() const { check(MPI_Barrier(comm_), "Barrier"); }

void Comm::broadcast(std::string& text, int root) const {
  std::int64_t n = static_cast<std::int64_t>(text.size());
  broadcast(n, root);
  text.resize(static_cast<std::size_t>(n));
  if (n > 0) check(MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, root, comm_), "Bcast");
}

void Comm::broadcast(std::int64_t& value, int root) const {
  check(MPI_Bcast(&value, 1, MPI_INT64_T, root, comm_), "Bcast");
}

std::int64_t Comm::allreduce_max(std::int64_t value) const {
  std::int64_t out = 0;
  check(MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_MAX, comm_), "Allreduce");
  return out;
}

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    release();
    r_ = o.r_;
    o.r_ = MPI_REQUEST_NULL;
  }
  return *this;
}

Request::~Request() { release(); }

void Request::release() noexcept {
  if (r_ == MPI_REQUEST_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Never wait here: a peer may be gone. Freeing an active request lets MPI
  // complete it (or drop it at finalize) without us.
  MPI_Request_free(&r_);
  r_ = MPI_REQUEST_NULL;
}

bool Request::test() {
  if (r_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  check(MPI_Test(&r_, &done, MPI_STATUS_IGNORE), "Test");
  return done != 0;
}

}  // namespace kevo::mpi
