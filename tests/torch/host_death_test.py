#!/usr/bin/env python3
"""What the torch judge says of a host it lost (backends/torch/python/
kevo_torch_eval.py: Host.death), on real child processes: one still
running stopped answering (it was reported as "exited with 0"), one that
exited says its status, one killed names the signal; and whose host it was
comes from the judge (HostGone.role), never from the host's words.

  host_death_test.py SOURCE_DIR
"""
import os
import signal
import sys
import time
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
import kevo_torch_eval as ev  # noqa: E402


def child(action):
    pid = os.fork()
    if pid == 0:
        if action == "sleep":
            time.sleep(30)
        elif action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3)
    return pid


class HostDeath(unittest.TestCase):
    def host(self, pid, role="candidate"):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        return ev.Host(role, pid, -1, r, {})

    def test_a_host_still_running_stopped_answering(self):
        pid = child("sleep")
        self.addCleanup(lambda: (os.kill(pid, signal.SIGKILL), os.waitpid(pid, 0)))
        why = self.host(pid).death("a correctness call")
        self.assertIn("stopped answering during a correctness call", why)
        self.assertNotIn("exited", why)

    def test_an_exit_and_a_signal_are_named(self):
        pid = child("exit")
        time.sleep(0.2)
        self.assertIn("exited with 3", self.host(pid).death("x"))
        pid = child("kill")
        time.sleep(0.2)
        self.assertIn("killed by SIGKILL", self.host(pid).death("x"))

    def test_whose_host_is_the_judges_knowledge(self):
        gone = self.host(os.getpid(), "candidate").gone("sandbox violation path: the reference's")
        self.assertEqual(gone.role, "candidate")
        self.assertEqual(self.host(os.getpid(), "reference").gone("x").role, "reference")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
