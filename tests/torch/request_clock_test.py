#!/usr/bin/env python3
"""The torch judge's clock for a request (backends/torch/python/
kevo_torch_eval.py: RequestLines): a request written while the zygote was
waiting starts its clock when it arrives; one already written (while the
zygote was busy) starts it when the zygote began to wait. Before, the
clock ran from the end of the previous judgement, so a candidate whose
build kept the engine busy for most of its wall budget was judged out of
time before its host was ready.

  request_clock_test.py SOURCE_DIR
"""
import os
import sys
import threading
import time
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
import kevo_torch_eval as ev  # noqa: E402


class RequestClock(unittest.TestCase):
    def setUp(self):
        self.r, self.w = os.pipe()
        self.lines = ev.RequestLines(self.r)

    def tearDown(self):
        for fd in (self.r, self.w):
            try:
                os.close(fd)
            except OSError:
                pass

    def test_a_request_written_later_starts_its_clock_when_it_arrives(self):
        waiting_since = time.monotonic()
        writer = threading.Timer(0.4, lambda: os.write(self.w, b'{"nonce": "a"}\n'))
        writer.start()
        line, started = self.lines.next(waiting_since)
        writer.join()
        self.assertEqual(line, b'{"nonce": "a"}\n')
        self.assertGreaterEqual(started - waiting_since, 0.35)

    def test_a_request_already_written_starts_its_clock_when_the_wait_began(self):
        os.write(self.w, b'{"nonce": "b"}\n')
        waiting_since = time.monotonic() - 5.0
        line, started = self.lines.next(waiting_since)
        self.assertEqual(line, b'{"nonce": "b"}\n')
        self.assertEqual(started, waiting_since)

    def test_two_requests_in_one_write_are_two_lines(self):
        os.write(self.w, b'{"n": 1}\n{"n": 2}\n')
        t0 = time.monotonic()
        self.assertEqual(self.lines.next(t0), (b'{"n": 1}\n', t0))
        t1 = time.monotonic()
        self.assertEqual(self.lines.next(t1), (b'{"n": 2}\n', t1))

    def test_a_line_in_two_pieces_keeps_the_clock_of_its_first(self):
        os.write(self.w, b'{"nonce": ')
        t0 = time.monotonic() - 2.0
        threading.Timer(0.2, lambda: os.write(self.w, b'"c"}\n')).start()
        self.assertEqual(self.lines.next(t0), (b'{"nonce": "c"}\n', t0))

    def test_the_end_of_the_input_is_an_empty_line(self):
        os.close(self.w)
        self.assertEqual(self.lines.next(time.monotonic())[0], b"")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
