// A kernel host: the process that holds one side's code (a candidate, or
// the reference) and makes the calls its judge asks for. It is started by
// RemoteEndpoint as `<judge executable> --host ...`, in namespaces of its
// own where the kernel allows, and before it loads the library it makes its
// file system read-only, sets its limits, drops every capability, installs
// the allow-list seccomp policy and reports all of that to the judge on a
// pipe it then closes. It sees its own argument buffers (the arena) and
// nothing of the judge: no reference outputs, no expected values, no clock
// that counts, no result channel. Documented in docs/sandbox.md.
#pragma once

namespace kevo::native::judge {

// The host's main(): argv as RemoteEndpoint builds it (argv[1] == "--host").
// Descriptors: 3 the arena (memfd), 4 the report pipe.
[[noreturn]] void host_main(int argc, char** argv);

}  // namespace kevo::native::judge
