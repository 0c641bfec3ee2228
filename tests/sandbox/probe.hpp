// The seccomp probe (kevo_seccomp_probe) run in the sandbox runner, and the
// check that it met a violation of the named system call: shared by the
// policy, CUDA-variant and spawner tests.
#pragma once

#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/scratch_dir.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kevo::test {

inline sandbox::Finished probe(const std::vector<std::string>& args, double wall_seconds = 20) {
  sandbox::Runner r;
  sandbox::Spec s;
  s.argv = {KEVO_SECCOMP_PROBE};
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.env = {"PATH=/usr/bin:/bin"};
  s.scratch_base = sandbox::default_scratch_base();
  s.limits.wall_seconds = wall_seconds;
  return r.run(std::move(s));
}

inline void expect_violation(const sandbox::Finished& f, const std::string& name) {
  EXPECT_EQ(f.outcome, sandbox::Outcome::exited) << f.output;
  EXPECT_EQ(f.exit_code, sandbox::kViolationExitCode) << f.output;
  ASSERT_EQ(f.output.rfind("violation ", 0), 0u) << f.output;
  const long nr = std::stol(f.output.substr(10));
  EXPECT_NE(sandbox::forbidden_syscall_name(nr).find(name), std::string::npos)
      << "syscall " << nr << " named '" << sandbox::forbidden_syscall_name(nr) << "'";
}

}  // namespace kevo::test
