#!/usr/bin/env python3
"""What the torch judge says of a host that stalls in its set-up
(backends/torch/python/kevo_torch_eval.py: stalled_at, blocked_in): the
innermost Python frames from the stack that faulthandler dumped on the
side pipe, and the system call the host's threads are blocked in, read
from /proc. The stalled process here is a real one, stuck in a function
whose name the report must carry.

  stall_report_test.py SOURCE_DIR [LIBKEVO_PYHOST]
"""
import ctypes
import os
import re
import subprocess
import sys
import time
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
PYHOST_PATH = sys.argv[2] if len(sys.argv) > 2 else ""
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
import kevo_torch_eval as ev  # noqa: E402

STALLER = r'''
import faulthandler, os, sys, time
fd = int(sys.argv[1])
faulthandler.dump_traceback_later(0.3, exit=False, file=fd)
def waiting_for_the_private_root():
    time.sleep(60)
def set_up():
    waiting_for_the_private_root()
os.write(fd, b"stage private-root: binding /usr\n")
set_up()
'''


class StallReport(unittest.TestCase):
    def setUp(self):
        if PYHOST_PATH:
            ev.PYHOST = ctypes.PyDLL(PYHOST_PATH)
            ev.PYHOST.kevo_pyhost_syscall_name.restype = ctypes.c_int
            ev.PYHOST.kevo_pyhost_syscall_name.argtypes = [ctypes.c_long, ctypes.c_char_p, ctypes.c_int]
        r, w = os.pipe()
        self.proc = subprocess.Popen([sys.executable, "-c", STALLER, str(w)], pass_fds=[w])
        os.close(w)
        self.r = r

    def tearDown(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self.r)

    def side_text(self, wait=10.0):
        text = ""
        deadline = time.monotonic() + wait
        while "Thread" not in text or "set_up" not in text:
            if time.monotonic() > deadline:
                break
            os.set_blocking(self.r, False)
            try:
                chunk = os.read(self.r, 65536)
                text += chunk.decode()
            except BlockingIOError:
                time.sleep(0.05)
        return text

    def test_the_innermost_frames_of_the_stall_are_named(self):
        text = self.side_text()
        where = ev.stalled_at(text)
        self.assertTrue(where.startswith("waiting_for_the_private_root (<string>:"), where)
        self.assertIn("<- set_up (<string>:", where)
        self.assertEqual(where.count(" <- "), 2, where)   # three frames at most
        self.assertEqual(ev.stalled_at("stage flags\n"), "")   # no dump: nothing claimed

    def test_the_system_call_each_thread_waits_in_is_named(self):
        self.side_text()   # the child is in its sleep by now
        blocked = ev.blocked_in(self.proc.pid)
        self.assertTrue(blocked.startswith("; threads blocked in "), blocked)
        if PYHOST_PATH:
            # A name from the sandbox's table, not a bare number.
            self.assertRegex(blocked, r"threads blocked in [a-z_0-9]*[a-z_]")
        self.assertEqual(ev.blocked_in(2 ** 22 + 12345), "")   # no such process: nothing claimed


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
