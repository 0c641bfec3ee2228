// Thin RAII over the MPI C API: one class per handle (the environment, a
// communicator, a request), move-only, destructors that never throw. Every
// call that can fail goes through check(), which throws kevo::Failure naming
// the call; communicators kevo creates use MPI_ERRORS_RETURN so that a lost
// peer is an error kevo can handle (flush, stop) instead of an abort.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kevo::mpi {

// Throws Failure("MPI_<what>: <error string>") unless rc == MPI_SUCCESS.
void check(int rc, const char* what);

// MPI_Init_thread / MPI_Finalize. A process started without mpirun or srun
// becomes a singleton world of one rank.
class Environment {
 public:
  Environment(int* argc, char*** argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  // After a fault (a lost rank) MPI_Finalize could wait forever on the dead
  // peer: the process then ends without it.
  void skip_finalize() { finalize_ = false; }
  // After a stop by a signal: everything is written, and mpirun, which is
  // ending the job itself, may never complete MPI_Finalize's exchange (Open
  // MPI's does not; it kills the ranks 1 s later). The process then ends
  // with `exit_code` once MPI_Finalize has taken `seconds`.
  void bound_finalize(double seconds, int exit_code) {
    finalize_bound_s_ = seconds;
    bound_exit_code_ = exit_code;
  }

 private:
  bool finalize_ = true;
  double finalize_bound_s_ = -1.0;
  int bound_exit_code_ = 0;
};

// An owned communicator (freed on destruction) or a borrowed one (WORLD).
class Comm {
 public:
  Comm() = default;
  static Comm world();                        // borrowed, errors returned
  Comm(Comm&& o) noexcept : comm_(o.comm_), owned_(o.owned_) { o.comm_ = MPI_COMM_NULL, o.owned_ = false; }
  Comm& operator=(Comm&& o) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;
  Comm split(int color, int key) const;        // MPI_Comm_split
  Comm split_shared() const;                   // ranks of one node (MPI_COMM_TYPE_SHARED)
  Comm dup() const;
  // Blocking collectives, used only outside the island loop (setup, shutdown).
  void barrier() const;
  void broadcast(std::string& text, int root) const;
  void broadcast(std::int64_t& value, int root) const;
  std::int64_t allreduce_max(std::int64_t value) const;

 private:
  Comm(MPI_Comm c, bool owned) : comm_(c), owned_(owned) {}
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
};

// A pending non-blocking operation. The destructor of an active request
// cancels it (a receive) or leaves it to complete (MPI_Request_free), never
// waiting, so a lost peer cannot hang a rank on its way out.
class Request {
 public:
  Request() = default;
  Request(Request&& o) noexcept : r_(o.r_) { o.r_ = MPI_REQUEST_NULL; }
  Request& operator=(Request&& o) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();

  MPI_Request* out() { return &r_; }           // for the MPI_I* call that starts it
  bool active() const { return r_ != MPI_REQUEST_NULL; }
  bool test();                                  // true when complete (or never started)

 private:
  void release() noexcept;
  MPI_Request r_ = MPI_REQUEST_NULL;
};

}  // namespace kevo::mpi
