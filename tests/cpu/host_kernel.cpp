// A kernel host's library for tests/cpu/test_kernel_host.cpp: kevo's entry
// symbol with nothing to do. Built with KEVO_ABORT_ON_LOAD, its static
// constructor aborts, so that a test can tell what the host did before its
// library's code first ran.
#include <cstdlib>

#ifdef KEVO_ABORT_ON_LOAD
namespace {
struct AbortOnLoad {
  AbortOnLoad() { std::abort(); }
} abort_on_load;
}  // namespace
#endif

extern "C" void kevo_cpu_entry_v1(void* const*) {}
