#!/usr/bin/env python3
"""The torch judge's device memory (backends/torch/python/kevo_torch_vmm.py),
on a real GPU: the judge's process allocates and exports it, another
process (its own CUDA context) maps it from the descriptor passed over a
socket with SCM_RIGHTS, as a host does; each side's writes are the other's
reads, and a second allocation maps as well (a host's memory grown). The
input mask: words the judge XORed with the keystream of a key are the
original words again once the other process XORs them with the keystream
it draws from the same key, in each context: with kevo_torch_mask's
one-pass kernel (the default; its words checked against the Python
Philox4x32-10 of the same module, at the span's start and end, past the
grid's first stride) and with torch's generator (KEVO_TORCH_MASK=generator,
kevo_torch_eval.keystream).

  vmm_test.py SOURCE_DIR

Exit 77 (skipped) without torch or a CUDA device.
"""
import os
import socket
import subprocess
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
PYDIR = os.path.join(SRC, "backends", "torch", "python")

CHILD = r"""
import os, socket, sys
sys.path.insert(0, sys.argv[1])
import torch
import kevo_torch_vmm as kv
import kevo_torch_eval as ke
import kevo_torch_mask as km
ke.torch = torch
sock = socket.socket(fileno=int(sys.argv[2]))
torch.cuda.set_device(0)
torch.empty(1, device="cuda")
gen = torch.Generator(device="cuda")
kernel = km.MaskKernel()
for _ in range(2):
    size, key, words, fused = [int(x) for x in sock.recv(64).decode().split()]
    _, fds, _, _ = socket.recv_fds(sock, 1, 1)
    m = kv.Mapped(fds[0], size, 0)
    seen = int(m.bytes[:1024].to(torch.int64).sum())        # the judge's pattern
    m.bytes[1024:2048].fill_(7)                              # the host's answer
    masked = m.bytes[8192:8192 + 8 * words].view(torch.int64)
    if fused:
        kernel.xor(masked.data_ptr(), masked.data_ptr(), words, key)
    else:
        masked.bitwise_xor_(ke.keystream(gen, key, torch.empty(words, dtype=torch.int64, device="cuda")))
    torch.cuda.synchronize()
    sock.sendall(("%d\n" % seen).encode().ljust(32))
    m.close()
"""


def known_answers(torch, km, kernel, key):
    """The kernel's keystream (XORed into zeros) against the module's Python
    Philox4x32-10: the first words, and the last of a count that is odd and
    takes more than one stride of the grid."""
    out = []
    words = 2 * km.MAX_BLOCKS * km.THREADS * 2 + 5
    zeros = torch.zeros(words + 2, dtype=torch.int64, device="cuda")
    ks = torch.full_like(zeros, 0x5A5A)
    kernel.xor(ks.data_ptr(), zeros.data_ptr(), words, key)
    torch.cuda.synchronize()
    def words_at(first, count):
        return [int(v) & ((1 << 64) - 1) for v in ks[first:first + count].tolist()]

    for first, count in ((0, 40), (words - 37, 37)):
        got, want = words_at(first, count), km.keystream_words(key, first, count)
        bad = [first + i for i in range(count) if got[i] != want[i]]
        if bad:
            out.append("the kernel's keystream differs from Python's at words %s (key %d)" % (bad[:8], key))
    if words_at(words, 2) != [0x5A5A, 0x5A5A]:
        out.append("the kernel wrote past its %d words: %s" % (words, words_at(words, 2)))
    # Spans of 1, 2 and 3 words: the single-word path, one pair, both.
    for count in (1, 2, 3):
        small = torch.full((count + 2,), 0x5A5A, dtype=torch.int64, device="cuda")
        src = torch.zeros(count + 2, dtype=torch.int64, device="cuda")
        kernel.xor(small.data_ptr(), src.data_ptr(), count, key)
        torch.cuda.synchronize()
        got = [int(v) & ((1 << 64) - 1) for v in small.tolist()]
        if got[:count] != km.keystream_words(key, 0, count) or got[count:] != [0x5A5A, 0x5A5A]:
            out.append("a span of %d words: %s" % (count, [hex(v) for v in got]))
    zero = int((ks[:words] == 0).sum())
    if zero > 2:
        out.append("the keystream has %d zero words of %d" % (zero, words))
    return out


def main():
    try:
        import torch
    except ImportError:
        print("SKIP: no torch")
        return 77
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 77
    sys.path.insert(0, PYDIR)
    import kevo_torch_vmm as kv
    import kevo_torch_eval as ke
    import kevo_torch_mask as km
    ke.torch = torch
    gen = torch.Generator(device="cuda")
    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")
    kernel = km.MaskKernel()
    mine, theirs = socket.socketpair()
    child = subprocess.Popen([sys.executable, "-c", CHILD, PYDIR, str(theirs.fileno())], pass_fds=[theirs.fileno()])
    theirs.close()
    failures = []
    failures += known_answers(torch, km, kernel, ke.fresh_key())
    for round_, (nbytes, fused) in enumerate(((3 << 20, False), (48 << 20, True))):
        a = kv.Arena(nbytes, 0)
        if a.size < nbytes or a.bytes.numel() != a.size:
            failures.append("round %d: an arena of %d bytes for %d asked" % (round_, a.size, nbytes))
        a.bytes.zero_()
        a.bytes[:1024].fill_(round_ + 1)
        # An odd count: 2 MiB within the first arena; in the second, more
        # pairs than the kernel's grid covers in one stride.
        words = (1 << 18) + 1 if not fused else 2 * km.MAX_BLOCKS * km.THREADS + (1 << 20) + 3
        plain = torch.randn(2 * words, device="cuda").view(torch.int64)[:words].clone()
        key = ke.fresh_key()
        masked = a.bytes[8192:8192 + 8 * words].view(torch.int64)
        if fused:
            # As the judge does: laid out in its own memory, XORed into the arena.
            kernel.xor(masked.data_ptr(), plain.data_ptr(), words, key)
        else:
            masked.copy_(plain).bitwise_xor_(ke.keystream(gen, key, torch.empty(words, dtype=torch.int64,
                                                                                device="cuda")))
        same = int((masked == plain).sum())
        if same > words // 1000:
            failures.append("round %d: the mask left %d of %d words as they were" % (round_, same, words))
        torch.cuda.synchronize()
        mine.sendall(("%d %d %d %d" % (a.size, key, words, fused)).encode().ljust(64))
        socket.send_fds(mine, [b"a"], [a.fd])
        seen = int(mine.recv(32).decode().strip())
        if seen != 1024 * (round_ + 1):
            failures.append("round %d: the other process read %d, expected %d" % (round_, seen, 1024 * (round_ + 1)))
        answer = int(a.bytes[1024:2048].to(torch.int64).sum())
        if answer != 7 * 1024:
            failures.append("round %d: the judge read %d of the other process's writes, expected %d"
                            % (round_, answer, 7 * 1024))
        if not torch.equal(masked, plain):
            failures.append("round %d (%s): the other process's unmasking left %d of %d words wrong"
                            % (round_, "one pass" if fused else "generator", int((masked != plain).sum()), words))
        # A view as the judge takes its outputs: float32 at an offset.
        v = a.bytes[4096:4096 + 64].view(torch.float32)
        v.fill_(1.5)
        if float(v.sum()) != 24.0:
            failures.append("round %d: a float32 view of the arena reads %s" % (round_, float(v.sum())))
        a.close()
    if child.wait(timeout=120) != 0:
        failures.append("the mapping process exited %d" % child.returncode)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("device memory exported, mapped by another process, read and written both ways, masked inputs unmasked "
          "there (2 allocations; the one-pass mask and the generator's; the kernel's words are Philox4x32-10's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
