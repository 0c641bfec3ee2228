#!/usr/bin/env python3
"""How the torch judge reads a CPU host's outputs (backends/torch/python/
kevo_torch_eval.py: Judge.read_direct, Host.read_mem, Host.stop), on a real
child process: the values come from the child's memory (not the judge's
copy of it), once every thread of the child has stopped; a strided view is
read as the view; and a description the candidate's code forged (memory it
does not have, a view past its storage, another shape, not an object) is
the candidate's failure, never kevo's, while the reference's is kevo's.

  direct_read_test.py SOURCE_DIR

Exit 77 (skipped) when this Python cannot import torch.
"""
import json
import os
import signal
import sys
import time
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
try:
    import torch
except ImportError:
    print("SKIP: this Python cannot import torch")
    sys.exit(77)
import kevo_torch_eval as ev  # noqa: E402

ev.torch = torch


def describe(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return {"dtype": ev.dtype_name(t.dtype), "shape": list(t.shape), "stride": list(t.stride()),
            "offset": t.storage_offset(), "address": s.data_ptr(), "nbytes": s.nbytes()}


def reap(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


class DirectRead(unittest.TestCase):
    def setUp(self):
        # The child's tensor sits at the same address as the judge's copy
        # (fork); the child changes it, so only a read of the child's memory
        # sees the new values.
        self.y = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            self.y.mul_(-2.0)
            os.write(w, b"1")
            while True:
                time.sleep(1)
        os.close(w)
        os.read(r, 1)
        os.close(r)
        self.pid = pid
        self.addCleanup(reap, pid)
        side_r, side_w = os.pipe()
        self.addCleanup(os.close, side_r)
        self.addCleanup(os.close, side_w)
        self.host = ev.Host("candidate", pid, -1, side_r, {})
        self.judge = object.__new__(ev.Judge)
        self.expect = [{"shape": [3, 4], "dtype": "float32"}]

    def read(self, desc, expect="same", host=None):
        h = host or self.host
        h.desc = desc if isinstance(desc, bytes) else json.dumps(desc).encode()
        return self.judge.read_direct(h, self.expect if expect == "same" else expect, "a test call")

    def verdict(self, desc, expect="same", host=None):
        with self.assertRaises(ev.Verdict) as cm:
            self.read(desc, expect, host)
        return cm.exception.v

    def test_values_come_from_the_stopped_child(self):
        metas, got = self.read({"form": "single", "outputs": [describe(self.y)]})
        self.assertEqual(metas, self.expect)
        self.assertTrue(torch.equal(got[0], self.y * -2.0))
        self.assertTrue(self.host.stopped and self.host.waited)
        with open("/proc/%d/stat" % self.pid) as f:
            self.assertEqual(f.read().rsplit(")", 1)[1].split()[0], "T")

    def test_a_strided_view_is_read_as_the_view(self):
        self.expect = [{"shape": [4, 3], "dtype": "float32"}]
        _, got = self.read({"outputs": [describe(self.y.t())]})
        self.assertTrue(torch.equal(got[0], (self.y * -2.0).t()))

    def test_forged_descriptions_are_the_candidates_failure(self):
        d = describe(self.y)
        v = self.verdict({"outputs": [dict(d, address=4096)]})
        self.assertEqual(v["status"], "runtime_error")
        self.assertIn("does not have", v["message"])
        v = self.verdict({"outputs": [dict(d, nbytes=16)]})
        self.assertEqual(v["status"], "runtime_error")
        self.assertIn("past its storage", v["message"])
        v = self.verdict({"outputs": [dict(d, stride=[-4, 1])]})
        self.assertIn("description", v["message"])
        v = self.verdict({"outputs": [dict(d, address=1 << 64)]})   # (preadv's offset overflowed: internal_error)
        self.assertEqual(v["status"], "runtime_error")
        self.assertIsNone(self.host.read_mem(1 << 64, 4))
        v = self.verdict({"outputs": [dict(d, shape=[3, 4], stride=[1 << 20, 1], nbytes=1 << 24)]})
        self.assertIn("spread over", v["message"])
        self.assertEqual(self.verdict(b"[1]")["status"], "runtime_error")
        self.assertIn("not an object", self.verdict(b"not json")["message"])
        v = self.verdict({"outputs": [dict(d, shape=[4, 3], stride=[3, 1])]})
        self.assertEqual(v["status"], "wrong_answer")
        self.assertIn("has shape [4, 3]", v["message"])
        v = self.verdict({"outputs": [d, d]})
        self.assertIn("returned 2 output(s)", v["message"])
        v = self.verdict({"bad": "output 0 shares memory with input 0"})
        self.assertEqual(v["status"], "wrong_answer")

    def test_the_references_failure_is_kevos(self):
        ref = ev.Host("reference", self.pid, -1, self.host.viol_r, {})
        v = self.verdict({"outputs": [dict(describe(self.y), address=4096)]}, None, ref)
        self.assertEqual(v["status"], "internal_error")

    def test_a_child_that_ended_is_named_not_read(self):
        os.kill(self.pid, signal.SIGKILL)
        time.sleep(0.1)
        with self.assertRaises(ev.HostGone) as cm:
            self.read({"outputs": [describe(self.y)]})
        self.assertIn("killed by SIGKILL", cm.exception.why)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
