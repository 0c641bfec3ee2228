#!/usr/bin/env python3
"""The GPU input mask's keystream (backends/torch/python/kevo_torch_mask.py)
without a GPU: its Python Philox4x32-10 against the published known-answer
vectors (Random123's kat_vectors), the words' layout (pair p's 128 bits as
words 2p and 2p+1), KEVO_TORCH_MASK refused when it names no mode, and the
kernel's PTX assembled by ptxas for sm_90 where ptxas is found (the PTX is
run against the same Python on the GPU by tests/torch/vmm_test.py).

  mask_test.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
import kevo_torch_mask as km  # noqa: E402

U = 0xFFFFFFFF


class Philox(unittest.TestCase):
    def test_known_answers(self):
        # Random123 1.09 kat_vectors, "philox4x32 10": counter, key, output.
        cases = [
            ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
            ((U, U, U, U), (U, U), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
            ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
             (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
        ]
        for counter, key, want in cases:
            self.assertEqual(km.philox4x32(counter, key), want)

    def test_fewer_rounds_differ(self):
        # The round count is a parameter; 7 rounds are not the 10 above.
        self.assertNotEqual(km.philox4x32((0, 0, 0, 0), (0, 0), rounds=7),
                            km.philox4x32((0, 0, 0, 0), (0, 0)))


class Words(unittest.TestCase):
    def test_pair_layout(self):
        key = 0x1234_5678_9ABC_DEF1
        for p in (0, 1, 77, (1 << 32) + 5):
            o = km.philox4x32((p & U, p >> 32, km.COUNTER_TAG, 0), (key & U, key >> 32))
            self.assertEqual(km.keystream_words(key, 2 * p, 2), [o[0] | o[1] << 32, o[2] | o[3] << 32])

    def test_an_odd_start_is_the_pairs_second_word(self):
        key = 99
        self.assertEqual(km.keystream_words(key, 5, 3), km.keystream_words(key, 4, 4)[1:])

    def test_keys_give_different_streams(self):
        a, b = km.keystream_words(3, 0, 16), km.keystream_words(5, 0, 16)
        self.assertEqual(sum(x == y for x, y in zip(a, b)), 0)
        self.assertEqual(len(set(a)), 16)

    def test_xor_twice_is_the_identity(self):
        key, plain = 0x7FFF_0000_1111_2223, [i * 0x0101_0101_0101_0101 for i in range(9)]
        ks = km.keystream_words(key, 0, len(plain))
        masked = [p ^ k for p, k in zip(plain, ks)]
        self.assertNotEqual(masked, plain)
        self.assertEqual([m ^ k for m, k in zip(masked, ks)], plain)


class Mode(unittest.TestCase):
    def setUp(self):
        self.saved = os.environ.pop("KEVO_TORCH_MASK", None)

    def tearDown(self):
        os.environ.pop("KEVO_TORCH_MASK", None)
        if self.saved is not None:
            os.environ["KEVO_TORCH_MASK"] = self.saved

    def test_default_is_the_one_pass_kernel(self):
        self.assertEqual(km.mode(), "fused")
        os.environ["KEVO_TORCH_MASK"] = ""
        self.assertEqual(km.mode(), "fused")

    def test_generator_is_accepted(self):
        os.environ["KEVO_TORCH_MASK"] = "generator"
        self.assertEqual(km.mode(), "generator")

    def test_anything_else_is_refused_with_the_modes(self):
        os.environ["KEVO_TORCH_MASK"] = "philox"
        with self.assertRaises(ValueError) as e:
            km.mode()
        self.assertIn("KEVO_TORCH_MASK is 'philox'", str(e.exception))
        self.assertIn("fused, generator", str(e.exception))


class Ptx(unittest.TestCase):
    def test_rounds_and_constants_in_the_text(self):
        text = km.ptx(9, 0)
        self.assertIn(".target sm_90", text)
        self.assertEqual(text.count("mul.hi.u32 %%h0, %%c0, %d;" % km.M0), km.ROUNDS)
        self.assertEqual(text.count("add.u32 %%k0, %%k0, %d;" % km.W0), km.ROUNDS - 1)
        self.assertIn("mov.u32 %%c2, %d;" % km.COUNTER_TAG, text)

    def test_newer_devices_get_the_newest_target_this_isa_names(self):
        self.assertIn(".target sm_90\n", km.ptx(10, 0))
        self.assertIn(".target sm_90\n", km.ptx(12, 0))
        self.assertIn(".target sm_86\n", km.ptx(8, 6))
        self.assertEqual(km.ptx(9, 0), km.ptx(10, 3))

    def test_ptxas_assembles_it(self):
        ptxas = shutil.which("ptxas") or next(
            (p for p in ("/usr/local/cuda/bin/ptxas",) if os.access(p, os.X_OK)), None)
        if not ptxas:
            self.skipTest("no ptxas here (the GPU test loads the PTX through the driver)")
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "mask.ptx")
            for major, minor in ((9, 0), (8, 0), (8, 6), (10, 0)):   # sm_100: sm_90's PTX compiled forward
                with open(src, "w") as f:
                    f.write(km.ptx(major, minor))
                r = subprocess.run([ptxas, "-arch=sm_%d%d" % (major, minor), src, "-o", os.path.join(d, "mask.cubin")],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
