#!/usr/bin/env python3
"""The judge of kevo's torch backend (docs/torch.md#the-judge).

kevo starts it through its command backend (protocol 1,
docs/command-backend.md), one persistent process per evaluation slot:

  kevo_torch_eval.py --serve [--device cuda|cpu] [--pyhost LIB] [--no-seccomp] [--no-namespaces]
  kevo_torch_eval.py --probe           one JSON line: python, torch, triton, device

Processes (all kevo's code but the candidate's host):

* the **zygote** (this process, `--serve`): imports torch (and triton, and
  warms triton's probes) once and never touches the GPU, so that forks of it
  can; it reads one request line at a time and forks a judge for it.
* the **judge** (one per request, forked from the zygote): forks the two
  hosts before it touches the GPU, then owns everything that makes a
  verdict: it imports the task's reference module (trusted) for its
  get_inputs()/get_init_inputs(), draws fresh seeded inputs for every call,
  keeps their pristine copies, compares in float64, keeps the clock and
  writes the answer lines.
* the **reference host** (trusted): builds the task's Model and runs it.
* the **candidate host**: forked with kevo's sandbox (libkevo_pyhost:
  user, PID, mount, IPC and network namespaces, a private read-only root,
  no capabilities, the allow-list system-call policy), loads the candidate's
  prebuilt extensions and module, builds ModelNew and runs it. It holds
  nothing of the judge's: no reference, no expected outputs, no clock that
  counts, no result channel the engine reads. Its stdout is its stderr.

On the CPU the hosts see their inputs through a shared-memory file the
judge writes: a host's forward gets views of it, written while the host is
stopped, and the judge reads the outputs from the stopped host's memory,
where its reply says they are. On the GPU each host's inputs are views of
device memory the judge owns (kevo_torch_vmm: exported as a descriptor,
mapped by the host), written by the judge while the host is stopped, and
the host copies its outputs there right after each call, inside the
call's time. No step of the host's own but the timed call (and on the GPU
the prime before it, which is timed and charged) sees a call's inputs or
outputs. Calls are timed by the judge's clock around a round trip on the
host's socket (on the CPU from the host's SIGCONT until it has stopped
again), less the host's calibrated null round trip; the other host is
stopped (SIGSTOP) meanwhile.
"""
import argparse
import ctypes
import errno
import hashlib
import json
import math
import mmap
import os
import random
import re
import select
import signal
import socket
import struct
import sys
import time
import traceback
import types

PROCESS_T0 = time.monotonic()   # before torch's import: the engine's clock for a first request runs from here
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kevo_torch_common as kc  # noqa: E402
import kevo_torch_triton  # noqa: E402
import kevo_torch_mask as km  # noqa: E402

kv = None   # kevo_torch_vmm (the judge's device memory), imported by the zygote after torch

FORMAT = "kevo-torch-eval/1"
ALIGN = 256
MAX_MSG = 4 << 20
FEEDBACK_CAP = 3000
NULL_CALLS = 15
SPOT_ELEMENTS = 64   # elements of each output compared after every timed call on the CPU (Judge.spot_check)
# The spot checks' bound on the median error of the elements drawn
# (spot_far_off), in multiples of what the full comparison's relative L2
# bound allows an element's error to be in RMS.
SPOT_SLACK = 10.0
SETUP_SECONDS = 90.0   # a host's set-up: device, sandbox, the program's module
NEXT_READY_SECONDS = 30.0   # the longest a judgement's timing waits for the judge forked ahead to set up
FLUSH_BYTES = 256 << 20
# A probe of the GPU (a tiny kernel and a synchronize, on the judge's own
# context) that took no longer than 1.5 times its idle median plus this
# found no other context's work in its way (see Judge.drain).
PROBE_SLACK_NS = 5000
STEP_FLOOR_NS = 3000   # GPU: the least excess of a prime that is charged (prime_excess)
# GPU: a judgement that failed for want of device memory (the reference's or
# the judge's) while the candidate's process held at least this much beyond
# 8 times its memory of the judge's (inputs and outputs), freed when the
# judge killed it, is the candidate's memory_limit (Judge.blame_memory).
OOM_BLAME_BYTES = 1 << 30
OOM_WORDS = ("out of memory", "out_of_memory", "alloc_failed", "cublas_status_not_initialized",
             "cudnn_status_not_initialized", "cannot allocate memory")
# On the GPU neither side sleeps in the timed window (the C++ CUDA judge's
# lesson, docs/cuda.md#verdicts): after a load or a null call the host polls
# for the next request for HOST_SPIN_S before it blocks, and the judge polls
# for a call's answer for up to JUDGE_SPIN_S. A sleeping reader's wake-up
# (a futex or pipe wake, a CPU leaving an idle state) is tens of
# microseconds of noise against kernels of microseconds.
HOST_SPIN_S = 0.001
JUDGE_SPIN_S = 0.05
# ncu's raw page a verdict carries at most (kevo condenses it; a line of
# the protocol is limited by the config's output_kb)
PROFILE_CSV_CAP = 40000

torch = None          # imported by the zygote
PYHOST = None         # ctypes.PyDLL of libkevo_pyhost, or None


# ---- small helpers ----------------------------------------------------------------

def now_ns():
    return time.perf_counter_ns()


def quantile(values, q):
    v = sorted(values)
    if not v:
        return 0.0
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] * (1.0 - (pos - lo)) + v[hi] * (pos - lo)


def median_interval(values, z=1.96):
    """A distribution-free confidence interval of the median (about 95% at
    z = 1.96): the order statistics at ranks n/2 -+ z*sqrt(n)/2 (the
    binomial's normal approximation), clamped to the sample."""
    v = sorted(values)
    n = len(v)
    if n == 0:
        return 0.0, 0.0
    half = z * math.sqrt(n) / 2.0
    lo = max(1, int(math.floor(n / 2.0 - half)))        # 1-based ranks
    hi = min(n, int(math.ceil(1 + n / 2.0 + half)))
    return v[lo - 1], v[hi - 1]


def spread(values):
    """(IQR / median, half the median's interval / median) of timings."""
    m = quantile(values, 0.5)
    if m <= 0:
        return 0.0, 0.0
    lo, hi = median_interval(values)
    return (quantile(values, 0.75) - quantile(values, 0.25)) / m, (hi - lo) / (2.0 * m)


def is_unstable(cand_ns, ref_ns, topt):
    """A shape's timing is unstable when either side's median is not known
    well enough: its 95% interval wider than +-max_ci_fraction of it (the
    default rule), or (when set above 0) its IQR over max_iqr_fraction of it.
    On the GPU the IQR is about 30% of the median for every candidate (the
    host's round trip is in every sample) while the median of a few hundred
    pairs is known to a few percent: the IQR rule flagged, and re-timed,
    every GPU timing."""
    max_ci = float(topt.get("max_ci_fraction", 0.0) or 0.0)
    max_iqr = float(topt.get("max_iqr_fraction", 0.0) or 0.0)
    for xs in (cand_ns, ref_ns):
        iqr_frac, ci_frac = spread(xs)
        if (max_ci > 0 and ci_frac > max_ci) or (max_iqr > 0 and iqr_frac > max_iqr):
            return True
    return False


def unstable_rule(topt):
    """How the verdict names the stability rule that flagged a timing."""
    parts = []
    if float(topt.get("max_ci_fraction", 0.0) or 0.0) > 0:
        parts.append("the median's 95%% interval wider than +-%g%% of it" % (100 * float(topt["max_ci_fraction"])))
    if float(topt.get("max_iqr_fraction", 0.0) or 0.0) > 0:
        parts.append("IQR over %g%% of the median" % (100 * float(topt["max_iqr_fraction"])))
    return " or ".join(parts) or "no rule"


def derive_seed(*parts):
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(str(p).encode())
        h.update(b"\0")
    return int.from_bytes(h.digest(), "little") & ((1 << 62) - 1)


# The timing loop's recorded calls (the operations check): one in each
# stretch of this many pairs.
RECORD_STRIDE = 6


def record_points(rng, lo, hi):
    """Where the timing loop's recorded calls fall among pairs lo..hi-1: one
    at a random place in each stretch of RECORD_STRIDE pairs (the last
    stretch may be shorter)."""
    return {rng.randrange(a, min(a + RECORD_STRIDE, hi)) for a in range(lo, hi, RECORD_STRIDE)}


def fresh_key():
    """The key of one call's input mask (GPU): 63 random bits, never 0 (the
    key a call without freshly masked inputs is sent)."""
    return (int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)) | 1


def keystream(gen, key, out):
    """The mask of a call's inputs on the GPU with KEVO_TORCH_MASK=generator
    (the first design, kept for benchmarks; the default is kevo_torch_mask's
    one pass): `out` (int64) filled with 64 random bits a word, drawn from
    `key` by torch's counter-based generator, so that the judge's context and
    the host's draw the same words."""
    gen.manual_seed(key)
    return out.random_(-2 ** 63, None, generator=gen)


def xor_keystream(kernel, gen, dst, src, key, buf):
    """dst = src XOR key's keystream (int64 tensors of as many words; dst
    may be src), queued on the current stream: kevo_torch_mask's one pass
    (`kernel`), or with KEVO_TORCH_MASK=generator (`kernel` None) torch's
    generator `gen` drawing it into `buf` first. The judge masks with it
    (put_arena) and the host unmasks (unmask_into)."""
    if kernel is not None:
        kernel.xor(dst.data_ptr(), src.data_ptr(), src.numel(), key)
    else:
        torch.bitwise_xor(src, keystream(gen, key, buf), out=dst)


def cut(text, n=FEEDBACK_CAP):
    text = text if isinstance(text, str) else str(text)
    return text if len(text) <= n else text[:n] + "\n... (cut)"


def tail_lines(text, n=25):
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-n:])


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exact(fd, n, deadline):
    out = bytearray()
    while len(out) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError()
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                raise TimeoutError()
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise EOFError()
        out += chunk
    return bytes(out)


# Framing on a host's socket: one kind byte, then for 'j' and 'e' a 4-byte
# length and a JSON object. 'c' call, 'n' null call, 'd' done.
def send_kind(fd, kind, obj=None):
    if obj is None:
        write_all(fd, kind)
    else:
        body = json.dumps(obj).encode()
        write_all(fd, kind + struct.pack("<I", len(body)) + body)


def spin_until_readable(fd, seconds):
    """Polls fd (never sleeping) for up to `seconds`; True once readable."""
    end = time.perf_counter() + seconds
    while True:
        if select.select([fd], [], [], 0)[0]:
            return True
        if time.perf_counter() > end:
            return False


def recv_kind(fd, deadline=None):
    kind = read_exact(fd, 1, deadline)
    if kind in (b"j", b"e"):
        (n,) = struct.unpack("<I", read_exact(fd, 4, deadline))
        if n > MAX_MSG:
            raise ValueError("a message of %d bytes" % n)
        return kind, json.loads(read_exact(fd, n, deadline).decode("utf-8", "replace"))
    return kind, None


# ---- dtypes and shared memory ----------------------------------------------------

def dtype_name(dt):
    return str(dt).replace("torch.", "")


DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool",
               "complex64", "complex128")


def dtype_of(name):
    """A dtype by its name, from a fixed list (never an attribute named by
    a host's reply)."""
    if name not in DTYPE_NAMES:
        raise ValueError("not a dtype kevo's torch judge handles: %r" % (name,))
    return getattr(torch, name)


def tensor_bytes(shape, dtype_name_):
    n = 1
    for s in shape:
        n *= int(s)
    return n * torch.empty((), dtype=dtype_of(dtype_name_)).element_size()


class Shared:
    """A memfd both sides map; grown (ftruncate) by the judge, remapped by
    whoever needs more than it has mapped. A host maps the input file
    through a read-only descriptor (`writable` False), privately: the
    reference's host reads the same file, and a candidate's host that could
    write there could change what the reference computes on (attack
    native_write_inputs). A private mapping shows the judge's later writes
    (Linux shares a private mapping's pages with the file until the process
    writes one) and takes a host's own writes into its inputs as copies of
    its own, which the judge sees when it reads the inputs back."""

    def __init__(self, name, fd=None, writable=True):
        self.fd = fd if fd is not None else os.memfd_create(name, 0)
        self.writable = writable
        self.size = 0
        self.map = None

    def ensure(self, size):
        size = max(size, 4096)
        if os.fstat(self.fd).st_size < size:
            if not self.writable:
                raise RuntimeError("the judge's shared file holds %d bytes, a load needs %d"
                                   % (os.fstat(self.fd).st_size, size))
            os.ftruncate(self.fd, size)
        if self.map is None or self.size < size:
            # The old map is not closed: tensors over it may still be alive
            # (a host's bound inputs); it goes with the last of them.
            self.size = os.fstat(self.fd).st_size
            flags = mmap.MAP_SHARED if self.writable else mmap.MAP_PRIVATE
            self.map = mmap.mmap(self.fd, self.size, flags, mmap.PROT_READ | mmap.PROT_WRITE)

    def view(self, offset, shape, dtype_name_):
        nbytes = tensor_bytes(shape, dtype_name_)
        self.ensure(offset + nbytes)
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype_of(dtype_name_))
        t = torch.frombuffer(self.map, dtype=torch.uint8, count=nbytes, offset=offset)
        return t.view(dtype_of(dtype_name_)).view([int(s) for s in shape])


def mad(xs):
    """(median, median absolute deviation) of xs."""
    med = quantile(xs, 0.5)
    return med, quantile([abs(x - med) for x in xs], 0.5)


def prime_excess(diffs):
    """GPU: the primes' charge, from the paired differences (the candidate's
    prime less the reference's in the same pair: the same small kernel and
    the same switch of contexts, moments apart): their median when it
    clears three standard errors of a median (from the differences' MAD)
    and STEP_FLOOR_NS; else 0."""
    if not diffs:
        return 0.0
    med, spread = mad(diffs)
    stderr = 1.2533 * 1.4826 * spread / math.sqrt(len(diffs))
    return med if med > 3.0 * stderr and med > STEP_FLOOR_NS else 0.0


def step_floor(steps, ref_steps):
    """GPU: what each call is charged for a step of the host's that is part
    of every call's time on both sides (the copy of its outputs into the
    judge's memory, the unmask of its inputs): the shortfall of its step
    from the median of the reference's, so that no call's step counts as
    less than that median. A step the host did not report (None) counts as
    0, charged the whole median; with no reference step seen, nothing is
    charged. The rule behind store_floor and unmask_floor."""
    seen = [u for u in ref_steps if u is not None]
    if not seen:
        return [0.0] * len(steps)
    med = quantile(seen, 0.5)
    return [max(0.0, med - (u or 0.0)) for u in steps]


def store_floor(stores, ref_store):
    """GPU: what each call is charged on top of its output copy into the
    judge's memory (step_floor of the copy steps: the same bytes copied,
    and the host's own checks around the copy). A host that writes its
    outputs into the judge's memory itself and skips the step was correct
    at 1.14x against the honest 0.69x without the floor
    (native_arena_output, H200); with it, it saves no more than the copy
    kernel (work fused into the step, native_store_fused, is timed)."""
    return step_floor(stores, ref_store)


def without_copy(ref_ns, cand_ns, ref_store, cand_store):
    """GPU: both sides' calls (ns, the null round trip already out) less the
    median of the reference's copy steps (`ref_store`: its outputs copied
    into the judge's memory, the host's checks and an answer around the
    copy), each call's copy step counted as no less than that median
    (store_floor), on both sides alike. Returns (ref_ns, cand_ns, the
    candidate's floor per call).

    The same amount comes off every call of both sides; a candidate cannot
    gain by a shorter copy step of its own, since the floor charges each of
    its calls up to that median. The reference's calls get the same floor,
    so that an honest candidate, whose copy steps vary as the reference's
    do, is charged as the reference is: with the floor on the candidate's
    side alone, it was judged about 1% slower than an identical reference
    (charges_test WithoutCopy). (Only the copy comes off: a candidate's
    unmask step is its own process's to shorten, and with the reference's
    taken out of its time, every us shaved there would count against a far
    smaller base: a red team's reading.)"""
    step = quantile(ref_store, 0.5) if ref_store else 0.0
    ref_floor = store_floor(ref_store, ref_store) if ref_store else [0.0] * len(ref_ns)
    cand_floor = store_floor(cand_store, ref_store) if cand_store else [0.0] * len(cand_ns)
    if len(ref_floor) != len(ref_ns) or len(cand_floor) != len(cand_ns):
        raise ValueError("without_copy: %d/%d calls against %d/%d copy steps" % (
            len(ref_ns), len(cand_ns), len(ref_floor), len(cand_floor)))
    return ([max(1.0, r - step + f) for r, f in zip(ref_ns, ref_floor)],
            [max(1.0, c - step + f) for c, f in zip(cand_ns, cand_floor)], cand_floor)


def unmask_floor(ref_ns, cand_ns, ref_unmask, cand_unmask):
    """GPU: both sides' calls with each call's unmask step (from the call's
    message to the host's "u", after its inputs are unmasked and
    synchronized) counted as no less than the median of the reference's.
    Returns (ref_ns, cand_ns, the candidate's charge per call). A step the
    host did not report (None) counts as 0: charged the whole median.

    The unmask is the host's code, in the candidate's process: one that
    answered "u" at once and undid the mask inside its own kernel as it
    read its inputs (writing them back unmasked, as the judge checks)
    saved the launch from Python, a pass over its inputs and a
    synchronize, which every reference call pays (the twelfth session's red
    team, against the one-pass mask, whose keystream is a few lines of
    PTX). With the floor, work moved out of the step is timed where it
    went, and a step cut short is charged back up to the median. The
    reference's calls get the same floor, so that an honest candidate,
    whose steps vary as the reference's do, is charged as the reference is
    (as store_floor's copy)."""
    if len(ref_unmask) != len(ref_ns) or len(cand_unmask) != len(cand_ns):
        raise ValueError("unmask_floor: %d/%d calls against %d/%d unmask steps" % (
            len(ref_ns), len(cand_ns), len(ref_unmask), len(cand_unmask)))
    ref_f = step_floor(ref_unmask, ref_unmask)
    cand_f = step_floor(cand_unmask, ref_unmask)
    return ([r + f for r, f in zip(ref_ns, ref_f)], [c + f for c, f in zip(cand_ns, cand_f)], cand_f)


def layout(metas, start=0):
    """Offsets for tensors described by {"shape", "dtype"}."""
    off = start
    out = []
    for m in metas:
        off = (off + ALIGN - 1) // ALIGN * ALIGN
        out.append(off)
        off += tensor_bytes(m["shape"], m["dtype"])
    return out, off


# ---- numerics flags ----------------------------------------------------------------

def pin_flags(cuda):
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        m = torch.backends.cuda.matmul
        if hasattr(m, "allow_fp16_reduced_precision_reduction"):
            m.allow_fp16_reduced_precision_reduction = True   # torch's default
    try:
        torch.set_flush_denormal(False)
    except Exception:
        pass


def read_flags(cuda):
    f = {"default_dtype": str(torch.get_default_dtype())}
    if hasattr(torch, "get_float32_matmul_precision"):
        f["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    f["deterministic_algorithms"] = bool(torch.are_deterministic_algorithms_enabled())
    if cuda:
        f["backends.cuda.matmul.allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
        f["backends.cudnn.allow_tf32"] = bool(torch.backends.cudnn.allow_tf32)
        m = torch.backends.cuda.matmul
        for k in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
            if hasattr(m, k):
                f["backends.cuda.matmul." + k] = bool(getattr(m, k))
    return f


# ---- the host (reference or candidate) --------------------------------------------

class Recorder:
    """Records the aten operations of one forward (TorchDispatchMode)."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        rec = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
                name = getattr(func, "overloadpacket", func)
                rec.ops.add(str(name).replace("aten.", "aten::"))
                return func(*args, **(kwargs or {}))

        self.ops = set()
        self.mode = Mode()


def exec_module(path, name, source=None, globals_=None):
    if source is None:
        with open(path, "r", encoding="utf-8") as f:
            source = f.read()
    mod = types.ModuleType(name)
    mod.__file__ = os.path.basename(path)
    if globals_:
        mod.__dict__.update(globals_)
    # The text for tracebacks (the module runs from text, not from a file
    # this process could read).
    import linecache
    linecache.cache[os.path.basename(path)] = (len(source), None, source.splitlines(True), os.path.basename(path))
    code = compile(source, os.path.basename(path), "exec", dont_inherit=True)
    exec(code, mod.__dict__)
    return mod


# A host's set-up steps before it asks for its program (host_main's marks):
# a host that fails in one of them failed before any code of the
# candidate's reached it (its set-up forked again once already, run_request),
# which is kevo's failure or the machine's, never the candidate's (the
# twelfth session's red team: a failure to load the input mask's kernel
# would have been the candidate's runtime_error).
SETUP_STAGES = ("start", "mount-proc", "cuda-init", "triton", "private-root", "flags", "recorder", "arenas")


def set_up_failed(h, why):
    return "the candidate's process failed in its set-up, before its program was sent (its last set-up step: " \
        "%s; kevo's or the machine's failure, not the candidate's): %s" % (h.stage, why)


class HostState:
    def __init__(self, role, cuda, sync):
        self.role = role
        self.cuda = cuda
        self.sync = sync
        self.device = torch.device("cuda", 0) if cuda else torch.device("cpu")
        self.mod = None
        self.cls = None
        self.model = None
        self.params = None
        self.inputs = []
        self.outputs = None
        self.pinned = None
        self.recorder = None   # the op recorder (made before the policy on the GPU)
        self.recorded = set()  # the operations of the recorded calls since the judge last asked
        self.in_mem = None
        self.touch = None      # one element the prime adds to (serve_host, GPU)
        # On the CPU the host is "direct": its inputs are views of the
        # judge's file (host_bind) and the judge reads its outputs from its
        # memory (describe_outputs). On the GPU its inputs are views of
        # device memory the judge owns (host_bind_arena) and its outputs
        # are copied there right after each call (host_store_arena). No
        # load or store step on either.
        self.direct = not cuda
        self.input_spans = []
        self.arena = None        # GPU: the judge's device memory, mapped (kevo_torch_vmm.Mapped)
        self.sock = None         # GPU: the judge's socket as an object, for the descriptors (recv_fd)
        self.out_region = (0, 0)
        self.mask = None         # GPU: the masked span of the inputs, as int64 words (unmask_inputs)
        self.mask_words = None   # GPU, KEVO_TORCH_MASK=generator: the keystream's words (unmask_into)
        self.mask_gen = None
        self.mask_kernel = None  # GPU: kevo_torch_mask's kernel (unmask_into), loaded before the policy


def shim_load_inline(build_dir, extensions):
    """load_inline for the candidate's host: the build stage built every call
    already; this returns the module built for the same arguments."""
    import importlib.machinery
    import importlib.util
    by_key = {e["key"]: e for e in extensions}
    loaded = {}

    def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None, extra_cuda_cflags=None,
                    extra_ldflags=None, extra_include_paths=None, build_directory=None, verbose=False,
                    with_cuda=None, is_python_module=True, with_pytorch_error_handling=True, keep_intermediates=True):
        call = kc.normalise_load_inline({
            "name": name, "cpp_sources": cpp_sources, "cuda_sources": cuda_sources, "functions": functions,
            "extra_cflags": extra_cflags, "extra_cuda_cflags": extra_cuda_cflags, "extra_ldflags": extra_ldflags,
            "extra_include_paths": extra_include_paths, "with_pytorch_error_handling": with_pytorch_error_handling})
        key = kc.load_inline_key(call)
        if key in loaded:
            return loaded[key]
        e = by_key.get(key)
        if e is None:
            raise RuntimeError("load_inline('%s'): this call was not built by kevo's build stage (its arguments "
                               "differ from what the source says; they must be constants)" % name)
        # The judge opened the library (its path may be unreadable or absent
        # in this process's root); the loader reads it through the descriptor.
        path = "/proc/self/fd/%d" % e["fd"] if e.get("fd") is not None else os.path.join(build_dir, e["path"])
        loader = importlib.machinery.ExtensionFileLoader(e["name"], path)
        spec = importlib.util.spec_from_loader(e["name"], loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        loaded[key] = module
        return module

    return load_inline


def receive_program(sock_fd):
    """The program a host is to load, from the judge (send_program): a
    length with the descriptors of its libraries, then the JSON."""
    sock = socket.socket(fileno=os.dup(sock_fd))
    head, fds = b"", []
    try:
        while len(head) < 4:
            data, got, _, _ = socket.recv_fds(sock, 4 - len(head), 64)
            if not data:
                raise EOFError()
            head += data
            fds += got
    finally:
        sock.close()   # the duplicate only
    (n,) = struct.unpack("<I", head)
    program = json.loads(read_exact(sock_fd, n, None).decode())
    for e, fd in zip(program.get("extensions", []), fds):
        e["fd"] = fd
    return program


def host_main(role, sock_fd, in_fd, viol_fd, opts):
    """A host's life: set up, wait for its program, load it, then serve the
    judge's messages. A host is forked before its judge reads the request
    (the candidate's: Judge.run_request), so that nothing of the request
    (its hidden and drawn shapes) is in its memory; its program comes over
    its socket."""
    os.dup2(2, 1)   # what the program prints never reaches the protocol's stdout
    isolation = {}
    cuda = opts["device"] == "cuda"

    def mark(step):
        # The set-up step reached, for the judge's message should this
        # process stall or die before it is ready (the violation pipe; the
        # candidate's code has not run yet).
        try:
            os.write(viol_fd, ("stage %s\n" % step).encode())
        except OSError:
            pass

    # Should the set-up stall, where it stands goes to the judge on the same
    # pipe (the Python stack; cancelled before any program code runs).
    import faulthandler
    faulthandler.dump_traceback_later(SETUP_SECONDS / 3, exit=False, file=viol_fd)
    try:
        sandboxed = opts.get("isolate") and role == "candidate"
        mark("mount-proc" if sandboxed and os.getpid() == 1 else "start")
        if sandboxed and os.getpid() == 1:
            # A driver in a PID namespace of its own needs a /proc of it.
            buf = ctypes.create_string_buffer(1024)
            if PYHOST.kevo_pyhost_mount_proc(buf, len(buf)) != 0:
                raise RuntimeError("isolation: " + json.loads(buf.value.decode()).get("error", "?"))
        if sandboxed:
            # torch._dynamo, imported by the op recorder's first use, asks
            # getpass for the user to name its cache directory; in the
            # private root there is no passwd file, and glibc's lookup tries
            # the name service's socket first (a violation under the policy)
            # and then raises KeyError. The host names its user. Importing
            # dynamo also makes inductor's cache directory (os.makedirs,
            # exist_ok): it is pointed at "/", which exists in every root and
            # is read-only in the private one, so the import goes through and
            # nothing can be cached there (a directory that does not exist
            # failed the import with EROFS on the H200).
            os.environ["USER"] = os.environ["LOGNAME"] = "kevo-candidate"
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/"
        triton_ready = cuda and role == "candidate" and kevo_torch_triton.STATE["ready"]
        if triton_ready:
            # Triton's kernels reach the driver as PTX (kevo_torch_triton):
            # its compile cache would be a file.
            os.environ["CUDA_CACHE_DISABLE"] = "1"
        if cuda:
            # The device first, while the machine's files are still there.
            mark("cuda-init")
            torch.cuda.set_device(0)
            torch.empty(1, device="cuda")
            torch.cuda.synchronize()
            # The input mask's kernel: PTX that the driver compiles here,
            # while its PTX compiler's library can still be loaded.
            mask_kernel = km.kernel_for_mode()
        if role == "candidate":
            import importlib
            importlib.import_module("torch.utils.cpp_extension")   # after the device: see setup_zygote
        if triton_ready:
            mark("triton")
            triton_ready = kevo_torch_triton.adapt_host_or_say_why()
        if sandboxed:
            mark("private-root")
            isolation = isolate_self(opts, viol_fd)
        mark("flags")
        if role == "candidate" and os.environ.get("KEVO_TORCH_TEST_FAIL_HOST_SETUP"):
            # For tests (tests/torch/judge_ahead_test.py): the candidate's
            # host fails in its set-up, before any program is sent to it
            # (as when the GPU's memory is taken, or the input mask's
            # kernel does not load).
            raise RuntimeError("the test hook KEVO_TORCH_TEST_FAIL_HOST_SETUP")
        pin_flags(cuda)
        if not cuda:
            keep_heap()
        sync = torch._C._cuda_synchronize if cuda else (lambda: None)
        st = HostState(role, cuda, sync)
        if cuda:
            # The prime's kernel (serve_host), and the driver's functions
            # for the judge's memory (kevo_torch_vmm), before the policy.
            st.touch = torch.zeros(1, device=st.device)
            st.mask_kernel = mask_kernel
            kv.driver()
            st.sock = socket.socket(fileno=os.dup(sock_fd))   # for recv_fd
        if st.direct:
            # The judge reads this process's outputs from /proc/<pid>/mem,
            # which the kernel allows a process of the same user only while
            # this one is dumpable (forked from a zygote that is not). It
            # holds nothing of the judge's; the policy forbids it ptrace and
            # /proc of others, and its PID namespace hides them.
            ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)   # PR_SET_DUMPABLE
        if cuda and role == "candidate":
            # The op recorder's first use on the GPU imports hundreds of
            # torch's modules (dynamo, inductor, sympy), and something among
            # them makes system calls the policy forbids (a socket on the
            # H200): the recorder is made and used once here, before the
            # policy and before the program (a host set up ahead of its
            # request does this while the previous judgement runs), on the
            # kinds of work a candidate's forward does.
            mark("recorder")
            st.recorder = Recorder()
            with torch.no_grad(), st.recorder.mode:
                t = torch.ones(8, 8, device=st.device)
                (torch.exp(t - t.max(dim=1, keepdim=True).values) / t.sum(dim=1, keepdim=True)).relu_()
                with torch.cuda.stream(torch.cuda.Stream()):
                    (t @ t).add_(1)
            sync()
            st.recorder.ops.clear()
        mark("arenas")
        st.in_mem = Shared("in", in_fd, writable=False)
        # Until the judge has read its request (seconds, or as long as the
        # engine takes to make the next candidate), no stall report.
        mark("program")
        faulthandler.cancel_dump_traceback_later()
        program = receive_program(sock_fd)
        faulthandler.dump_traceback_later(SETUP_SECONDS / 3, exit=False, file=viol_fd)
        if program.get("uses_triton") and not triton_ready:
            send_kind(sock_fd, b"j", {"error": "the candidate uses Triton, which candidates cannot use here: %s" % (
                "no GPU" if not cuda else kevo_torch_triton.STATE["why"])})
            os._exit(0)
        if program["kind"] == "candidate":
            mark("extensions")
            import torch.utils.cpp_extension as ce
            shim = shim_load_inline(program["build"], program.get("extensions", []))
            ce.load_inline = shim
        if sandboxed and opts.get("seccomp"):
            mark("policy")
            lock = lockdown(opts, isolation, viol_fd)
            isolation.update(lock)
        st.pinned = read_flags(cuda)
        faulthandler.cancel_dump_traceback_later()
        mark("load")
        try:
            st.mod = exec_module(program["path"], "kevo_" + role, source=program.get("source"),
                                 globals_={"__name__": "kevo_" + role})
        except BaseException:
            send_kind(sock_fd, b"j", {"error": "loading %s raised:\n%s" % (
                os.path.basename(program["display"]), candidate_traceback())})
            os._exit(0)
        st.cls = getattr(st.mod, program["class"], None)
        if st.cls is None or not isinstance(st.cls, type):
            send_kind(sock_fd, b"j", {"error": "%s defines no class %s" % (program["display"], program["class"])})
            os._exit(0)
        changed = diff_flags(st.pinned, read_flags(cuda))
        send_kind(sock_fd, b"j", {"ready": True, "isolation": isolation, "flags_changed": changed})
    except BaseException:
        try:
            send_kind(sock_fd, b"j", {"error": "the %s host could not start:\n%s" % (role, tail_lines(traceback.format_exc()))})
        finally:
            os._exit(3)
    serve_host(st, sock_fd)
    os._exit(0)


def stalled_at(side):
    """The innermost frames of the Python stack that a stalled set-up dumped
    on the side pipe (faulthandler's format), as 'function (file:line) <- ...'."""
    frames = []
    for line in side.splitlines():
        line = line.strip()
        if line.startswith("Thread ") or line.startswith("Current thread"):
            frames = []
        elif line.startswith("File \""):
            m = re.match(r'File "([^"]*)", line (\d+) in (\S+)', line)
            if m:
                frames.append("%s (%s:%s)" % (m.group(3), os.path.basename(m.group(1)), m.group(2)))
    return " <- ".join(frames[:3])


def blocked_in(pid):
    """Where the kernel holds a stalled host's threads: '; blocked in
    mount (wait: ...)' from /proc (the judge is the host's parent)."""
    seen = []
    try:
        tids = sorted(os.listdir("/proc/%d/task" % pid), key=int)
    except OSError:
        return ""
    for tid in tids[:16]:
        try:
            with open("/proc/%d/task/%s/syscall" % (pid, tid)) as f:
                nr = f.read().split()[0]
            with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                wchan = f.read().strip()
        except (OSError, IndexError):
            continue
        name = "running (in no system call)" if nr == "running" else nr
        if nr.lstrip("-").isdigit() and PYHOST is not None and int(nr) >= 0:
            name = syscall_name(int(nr)) or nr
        item = "%s%s" % (name, " (%s)" % wchan if wchan and wchan != "0" else "")
        if item not in seen:
            seen.append(item)
    return "; threads blocked in " + ", ".join(seen) if seen else ""


def keep_heap():
    """CPU hosts (both, so that they are timed alike): large allocations from
    the heap, and freed memory kept there, so that a block the judge
    poisoned is what the next allocation of its size gets (glibc would
    otherwise map fresh zero pages for every large buffer)."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 1 << 30)   # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)   # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def candidate_traceback():
    """The traceback of the exception being handled, kept to the candidate's
    frames (and the exception line)."""
    etype, e, tb = sys.exc_info()
    frames = traceback.extract_tb(tb)
    keep = [f for f in frames if f.filename in ("candidate.py", "reference.py") or not f.filename.startswith(HERE)]
    text = "".join(traceback.format_list(keep[-12:])) + "".join(traceback.format_exception_only(etype, e))
    return tail_lines(text, 30)


def diff_flags(before, after):
    return sorted(k for k in before if after.get(k) != before[k])


def flag_names(xs, cuda):
    """Whether xs, a host's report of the numerics flags its candidate
    changed, names only flags that read_flags reads (the judge reads its
    own: the same torch). Names are the candidate's to write once its code
    runs in the host: a list of anything else spelled out the shapes it
    had seen in a `forbidden` verdict's feedback (the thirteenth session's
    red team; native_flags_spell)."""
    return texts(xs) and set(xs) <= set(read_flags(cuda))


def isolate_self(opts, stage_fd):
    """In a cloned host: a root of its own with the interpreter's trees and
    the program's folder, /proc of its PID namespace."""
    import glob
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix] + [p for p in sys.path if p] + list(opts.get("binds", []))
    if opts["device"] == "cuda":
        paths += glob.glob("/dev/nvidia*")
    kept, left_out = kc.sandbox_binds(paths, HERE)
    buf = ctypes.create_string_buffer(8192)
    PYHOST.kevo_pyhost_harden(opts["parent_ns"].encode(), json.dumps(kept).encode(), stage_fd, buf, len(buf))
    rep = json.loads(buf.value.decode() or "{}")
    if "error" in rep:
        raise RuntimeError("isolation: " + rep["error"])
    if left_out:
        rep.setdefault("notes", []).append("left out of the private root (they hold kevo's tree, the working "
                                           "folder or the home folder): " + ", ".join(left_out))
    return rep


def lockdown(opts, isolation, viol_fd):
    buf = ctypes.create_string_buffer(8192)
    policy = b"cuda" if opts["device"] == "cuda" else b"cpu"
    rc = PYHOST.kevo_pyhost_lockdown(policy, 1 if isolation.get("pid_ns") else 0, viol_fd,
                                     1 if opts.get("seccomp") else 0, buf, len(buf))
    rep = json.loads(buf.value.decode() or "{}")
    if rc != 0:
        raise RuntimeError("the system-call policy could not be installed: " + rep.get("error", "?"))
    return {k: v for k, v in rep.items() if k in ("caps_dropped", "seccomp")} | {
        "notes": isolation.get("notes", []) + rep.get("notes", [])}


def serve_host(st, fd):
    recorder = st.recorder
    spin = False
    while True:
        if spin:
            # A timed call follows a load at once (and a null call a null
            # call): polling, this host takes it without a wake-up.
            spin_until_readable(fd, HOST_SPIN_S)
            spin = False
        try:
            kind, msg = recv_kind(fd)
        except EOFError:
            os._exit(0)
        if kind in (b"c", b"r"):
            # "r": the same call with its aten operations recorded (every
            # correctness call and one timed-looking call of the timing
            # loop); the judge asks for their union ("recorded").
            # GPU: the message carries the key of its inputs' mask.
            key = struct.unpack("<Q", read_exact(fd, 8, None))[0] if st.cuda else 0
            try:
                unmask_inputs(st, key)
                if st.cuda:
                    # The unmask done (GPU): the judge's clock marks the end
                    # of the call's first step (the reference's median is
                    # in the timing's detail; nothing is computed from it).
                    write_all(fd, b"u")
                if kind == b"r":
                    if recorder is None:
                        recorder = Recorder()
                    recorder.ops.clear()
                    with torch.no_grad(), recorder.mode:
                        out = st.model(*st.inputs)
                    st.recorded.update(recorder.ops)
                else:
                    with torch.no_grad():
                        out = st.model(*st.inputs)
                st.sync()
                st.outputs = out
                if st.direct:
                    # Where the outputs are, with the reply: the judge reads
                    # them from this process's memory once it has stopped it.
                    body = json.dumps(describe_outputs(st, out)).encode()
                    write_all(fd, b"o" + struct.pack("<I", len(body)) + body)
                else:
                    write_all(fd, b"d")
            except BaseException as e:
                st.outputs = None
                send_kind(fd, b"e", {"error": candidate_traceback(), "oom": is_oom(e)})
                continue
            if st.cuda:
                # GPU: the outputs copied into the judge's memory at once,
                # a second reply that the judge times (host_store_arena);
                # in a recorded call its operations are recorded too (an
                # operation done there is the call's: native_store_fused
                # used the reference's own there, unrecorded).
                try:
                    if kind == b"r":
                        recorder.ops.clear()
                        with torch.no_grad(), recorder.mode:
                            stored = host_store_arena(st, out)
                        st.recorded.update(recorder.ops)
                    else:
                        stored = host_store_arena(st, out)
                    body = json.dumps(stored).encode()
                except BaseException as e:
                    body = json.dumps({"error": candidate_traceback(), "oom": is_oom(e)}).encode()
                write_all(fd, b"o" + struct.pack("<I", len(body)) + body)
            continue
        if kind == b"n":
            st.sync()
            write_all(fd, b"d")
            spin = st.cuda
            continue
        if kind == b"p":
            # The prime before a timed call (GPU): one small kernel in this
            # context, so that the GPU's switch from the judge's context is
            # paid here and not by the call's first kernel; then the call
            # is taken without a wake-up.
            st.touch.add_(1.0)
            st.sync()
            write_all(fd, b"d")
            spin = True
            continue
        if kind != b"j":
            os._exit(4)
        op = msg.get("op")
        try:
            if op == "init":
                reply = host_init(st, msg)
            elif op == "bind":
                reply = host_bind_arena(st, msg) if st.cuda else host_bind(st, msg)
            elif op == "ops":
                if recorder is None:
                    recorder = Recorder()
                unmask_inputs(st, int(msg.get("key") or 0))
                recorder.ops.clear()
                with torch.no_grad(), recorder.mode:
                    st.model(*st.inputs)
                st.sync()
                reply = {"ops": sorted(recorder.ops)}
            elif op == "recorded":
                reply = {"ops": sorted(st.recorded)}
                st.recorded.clear()
            elif op == "state":
                reply = {"flags_changed": diff_flags(st.pinned, read_flags(st.cuda)),
                         "params_changed": params_changed(st)}
            elif op == "exit":
                os._exit(0)
            else:
                reply = {"error": "unknown op %r" % op}
        except BaseException as e:
            reply = {"error": candidate_traceback(), "oom": is_oom(e)}
        send_kind(fd, b"j", reply)


def unmask_inputs(st, key):
    """GPU, first in a call: the judge wrote this call's inputs masked (each
    64-bit word of them XORed with a keystream drawn from a key of its own,
    Judge.put_arena) and sends the key with the call; the host unmasks them
    in place, inside the call's time on both sides. Until the call nothing
    of the candidate's can compute on them: work queued to run once they
    are written (attacks native_bind_work, native_bind_poll) or done in the
    prime (native_prime_fused) sees only the mask. Key 0: the inputs were
    not written again since the last call (a second pass on them)."""
    if not key or st.mask is None:
        return
    unmask_into(st, st.mask, key)
    # Done on the device before the forward begins: a forward that works on
    # a stream of its own without waiting for the current one (racy, but
    # right when inputs arrive synchronized) reads the inputs, not the mask.
    st.sync()


def unmask_into(st, dst, key):
    """dst (int64 words, as many as st.mask's; st.mask itself in place) =
    the masked inputs XORed with key's keystream, queued on the current
    stream: one pass of kevo_torch_mask's kernel, or (KEVO_TORCH_MASK=
    generator) the keystream drawn into a buffer and XORed in."""
    if st.mask_kernel is None and st.mask_gen is None:
        st.mask_gen = torch.Generator(device=st.device)
    xor_keystream(st.mask_kernel, st.mask_gen, dst, st.mask, key, st.mask_words)


def is_oom(e):
    return type(e).__name__ in ("OutOfMemoryError",) or "out of memory" in str(e).lower()


def host_init(st, msg):
    for k, v in msg.get("sizes", {}).items():
        if k in st.mod.__dict__ or st.role != "candidate":
            st.mod.__dict__[k] = v
    torch.manual_seed(msg["seed"])
    if st.cuda:
        torch.cuda.manual_seed_all(msg["seed"])
    st.model = None
    st.outputs = None
    st.inputs = []
    model = st.cls(*msg.get("init_inputs", []))
    if not isinstance(model, torch.nn.Module):
        return {"error": "%s(*get_init_inputs()) is not a torch.nn.Module" % st.cls.__name__}
    model = model.to(st.device)
    if hasattr(model, "eval"):
        model.eval()
    st.params_of = model
    if st.role == "compiled":
        # torch.compile's baseline (default inductor): compiled at its first call.
        model = torch.compile(model)
    st.model = model
    st.params = [(n, t.detach().clone()) for n, t in list(st.params_of.named_parameters()) +
                 list(st.params_of.named_buffers())]
    if st.cuda:
        st.sync()
    return {"ok": True, "parameters": len(st.params)}


def params_changed(st):
    out = []
    m = getattr(st, "params_of", None) or st.model
    current = dict(list(m.named_parameters()) + list(m.named_buffers())) if m is not None else {}
    for n, before in st.params or []:
        now = current.get(n)
        if now is None or now.shape != before.shape or not torch.equal(now.detach(), before):
            out.append(n)
    return out


def recv_fd(sock):
    """One byte with a descriptor attached (SCM_RIGHTS), on a host's socket
    (a socket object made before the policy: making one asks the kernel
    for its address, getsockname, which the policy forbids): what follows
    a message that says so (Host.request's `fd`)."""
    data, fds, _, _ = socket.recv_fds(sock, 1, 1)
    if data != b"a" or len(fds) != 1:
        for f in fds:
            os.close(f)
        raise RuntimeError("the judge's device memory did not come with its message")
    return fds[0]


def host_bind_arena(st, msg):
    """GPU: the inputs as views of device memory that the judge owns and
    writes each call's inputs into while this process is stopped (no load
    step: attacks native_load_fused, native_load_work); the outputs of each
    call are copied into the same memory, at `out_offset` (host_store_arena).
    A new allocation comes with its descriptor (kevo_torch_vmm)."""
    st.outputs = None
    st.inputs = []   # the old views go before a remap
    a = msg["arena"]
    if msg.get("fd"):
        fd = recv_fd(st.sock)
        if st.arena is not None:
            st.arena.close()
            st.arena = None
        st.arena = kv.Mapped(fd, a["size"], 0)
    if st.arena is None:
        return {"error": "no device memory of the judge's is mapped"}
    st.out_region = (int(a["out_offset"]), int(a["out_bytes"]))
    inputs = []
    for m in msg["inputs"]:
        if m["kind"] == "value":
            inputs.append(m["value"])
        else:
            inputs.append(arena_view(st.arena.bytes, m["offset"], m["shape"], m["dtype"]))
    st.inputs = inputs
    # The whole allocation: an output that is a view of it (of the output
    # region above all) is not a new tensor.
    st.input_spans = [(st.arena.va, st.arena.va + st.arena.size)]
    n = int(a.get("mask_bytes", 0)) // 8
    st.mask = st.arena.bytes[:n * 8].view(torch.int64) if n else None
    if n and st.mask_kernel is None and (st.mask_words is None or st.mask_words.numel() != n):
        st.mask_words = None
        st.mask_words = torch.empty(n, dtype=torch.int64, device=st.device)
    if msg.get("poison"):
        poison_allocator(st, msg.get("poison_bytes", 0))
    st.sync()
    return {"ok": True}


def arena_view(whole, offset, shape, dtype_name_):
    """A tensor of `shape` at byte `offset` of a uint8 tensor."""
    nbytes = tensor_bytes(shape, dtype_name_)
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype_of(dtype_name_), device=whole.device)
    return whole[offset:offset + nbytes].view(dtype_of(dtype_name_)).view([int(x) for x in shape])


def host_store_arena(st, out):
    """GPU, right after a call's reply: its outputs checked (exact type,
    device, no view of the judge's memory) and copied into the judge's
    memory at the output region's layout, then synchronized; the judge
    times this step (a host that does its work here is charged it) and
    reads the outputs there. {"need": n}: the region is too small."""
    outs, form, bad = checked_outputs(st, out)
    if bad:
        return {"bad": bad}
    metas = [{"shape": list(o.shape), "dtype": dtype_name(o.dtype)} for o in outs]
    start, room = st.out_region
    offs, end = layout(metas, start)
    if end - start > room:
        return {"need": end - start, "outputs": metas, "form": form}
    for o, m, off in zip(outs, metas, offs):
        arena_view(st.arena.bytes, off, m["shape"], m["dtype"]).copy_(o)
    st.sync()
    return {"outputs": metas, "form": form}


def host_bind(st, msg):
    """CPU: the inputs as views of the judge's input file, not copies: the
    judge writes each call's inputs there while this process is stopped, so
    that nothing of it runs while they are there but the timed call (no
    load step to do work in: attacks native_load_fused, native_load_work).
    Replies with the views' addresses, for the judge's read-back."""
    st.outputs = None
    st.inputs = []   # the old views go before a remap
    inputs = []
    for m in msg["inputs"]:
        if m["kind"] == "value":
            inputs.append(m["value"])
        else:
            inputs.append(st.in_mem.view(m["offset"], m["shape"], m["dtype"]))
    st.inputs = inputs
    st.input_spans = [storage_span(t) for t in inputs if isinstance(t, torch.Tensor) and t.numel() > 0]
    if msg.get("poison"):
        poison_allocator(st, msg.get("poison_bytes", 0))
    return {"ok": True, "addresses": [t.data_ptr() for t in inputs if isinstance(t, torch.Tensor)]}


def storage_span(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def output_defect(st, i, o, spans):
    """What makes output i unacceptable before its values are looked at, or
    None: not exactly a torch.Tensor, on another device, or sharing memory
    with an input."""
    if type(o) is not torch.Tensor:
        return "output %d is a %s, not a torch.Tensor%s" % (
            i, type(o).__name__, " (a subclass of it)" if isinstance(o, torch.Tensor) else "")
    if o.device.type != st.device.type:
        return "output %d is on %s, expected %s" % (i, o.device, st.device)
    if o.numel() > 0:
        a, b = storage_span(o)
        for j, (c, d) in enumerate(spans):
            if a < d and c < b:
                return "output %d shares memory with input %d (outputs must be new tensors)" % (i, j)
    return None


def checked_outputs(st, out):
    """A call's outputs as a list, its form, and the first defect of one of
    them (output_defect) or None."""
    outs, form = flat_outputs(out)
    for i, o in enumerate(outs):
        bad = output_defect(st, i, o, st.input_spans)
        if bad:
            return outs, form, bad
    return outs, form, None


def describe_outputs(st, out):
    """The outputs of a direct host's call as the judge reads them: for each,
    dtype, shape, strides, storage offset, the storage's address and size."""
    outs, form, bad = checked_outputs(st, out)
    if bad:
        return {"bad": bad}
    descs = []
    for o in outs:
        a, b = storage_span(o) if o.numel() > 0 else (0, 0)
        descs.append({"dtype": dtype_name(o.dtype), "shape": list(o.shape), "stride": list(o.stride()),
                      "offset": o.storage_offset(), "address": a, "nbytes": b - a})
    return {"form": form, "outputs": descs}


def poison_allocator(st, nbytes):
    """Freed blocks that hold NaN (0xFF bytes): outputs a candidate
    allocates with empty() and leaves unwritten read as NaN, not as zeros or
    the values of an earlier call."""
    nbytes = int(min(max(nbytes, 1 << 20), 1 << 32))
    try:
        blocks = [torch.full((nbytes,), 255, dtype=torch.uint8, device=st.device) for _ in range(2)]
        del blocks
    except RuntimeError:
        pass


def flat_outputs(out):
    if isinstance(out, (tuple, list)):
        return list(out), "sequence"
    return [out], "single"


# ---- the judge's handle on a host -----------------------------------------------

class HostGone(Exception):
    def __init__(self, why, status="runtime_error", role="candidate"):
        super().__init__(why)
        self.why = why
        self.status = status
        self.role = role   # whose host: the judge's own knowledge, never the host's words


class Host:
    def gone(self, why, status="runtime_error"):
        return HostGone(why, status, self.role)

    def __init__(self, role, pid, fd, viol_r, isolation_spawn):
        self.role = role
        self.pid = pid
        self.fd = fd
        self.viol_r = viol_r
        self.isolation = isolation_spawn
        self.stopped = False
        self.waited = False        # the stop seen by waitpid: every thread of the host is stopped
        self.null_ns = 0.0
        self.dead = None
        self.side = ""
        self.stage = ""
        self.violation = ""
        self.violation_path = ""   # the file a forbidden open named
        self.spin_s = 0.0          # JUDGE_SPIN_S on the GPU (Judge)
        self.desc = None           # a direct host's last call's outputs, as it described them (bytes)
        self.bound = None          # the inputs message a direct host is bound to (Judge.bind)
        self.reaped = None         # the wait status, when a stop's wait found the process ended
        self.mem_fd = None
        self.bound_addresses = None   # where a direct host's bind said its input views are
        self.arena = None          # GPU: the device memory the judge owns for this host (kevo_torch_vmm.Arena)
        self.out_need = 0          # GPU: the bytes its output region must hold (grown as calls show)
        self.store_ns = 0          # GPU: the last call's output copy into the judge's memory, on the judge's clock
        self.unmask_ns = None      # GPU: the last call's unmask of its inputs, on the judge's clock
        self.out_off = 0           # GPU: where its output region begins in that memory
        self.masked = False        # GPU: its calls carry the key of their inputs' mask (Judge.put_arena)
        self.key = 0               # GPU: the key of the inputs written last, sent with the next call only

    def cont(self):
        if self.stopped and self.reaped is None:
            os.kill(self.pid, signal.SIGCONT)
            self.stopped = False
            self.waited = False

    def stop(self, wait=False):
        """SIGSTOP; `wait`: until every thread of the process has stopped
        (a direct host's memory is read, and its inputs written, only then)."""
        if self.dead is not None or self.reaped is not None:
            return
        if not self.stopped:
            try:
                os.kill(self.pid, signal.SIGSTOP)
            except ProcessLookupError:
                return
            self.stopped = True
            self.waited = False
        while wait and not self.waited:
            try:
                pid, status = os.waitpid(self.pid, os.WUNTRACED)
            except ChildProcessError:
                return
            if pid and os.WIFSTOPPED(status):
                self.waited = True
            elif pid:
                self.reaped = status
                return

    def read_mem(self, address, n):
        """n bytes of the (stopped) host's memory at address, or None where
        the host has no such memory (EIO, EFAULT)."""
        if self.mem_fd is None:
            try:
                self.mem_fd = os.open("/proc/%d/mem" % self.pid, os.O_RDONLY | os.O_CLOEXEC)
            except OSError as e:
                raise HostGone("the judge cannot read its host's memory (/proc/%d/mem: %s); kevo's torch judge "
                               "on the CPU needs to (docs/torch.md#the-judge)" % (self.pid, e.strerror),
                               "internal_error", "judge")
        if not 0 <= address or address + n > (1 << 63) - 1:
            return None   # no process has memory there (preadv's offset would overflow)
        out = bytearray(n)
        view = memoryview(out)
        got = 0
        while got < n:
            try:
                k = os.preadv(self.mem_fd, [view[got:]], address + got)
            except OSError as e:
                if e.errno in (errno.EIO, errno.EFAULT):
                    return None
                if e.errno == errno.ESRCH:
                    raise self.gone(self.death("the judge's read of its outputs"))
                raise HostGone("the judge cannot read its host's memory (/proc/%d/mem: %s)" % (self.pid, e.strerror),
                               "internal_error", "judge")
            if k <= 0:
                return None
            got += k
        return out

    def death(self, during):
        """Why the host is gone (it ended during `during`)."""
        if self.dead is not None:
            return self.dead
        status = self.reaped
        for _ in range(200 if status is None else 0):
            try:
                pid, st = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid and not os.WIFSTOPPED(st):
                status = st   # (a process still running reads status 0: "exited with 0" before)
                self.reaped = st   # (kill() no longer signals its number, which may be reused)
                break
            time.sleep(0.005)
        self.read_side_channel()
        if self.violation:
            text = self.violation
            nr = text.rsplit(" ", 1)[-1]
            name = ""
            # ASCII digits only: "²".isdigit() is true and int("²") raises
            # (the red team's odd_violation crashed the judge so).
            if PYHOST is not None and re.fullmatch(r"[0-9]{1,5}", nr):
                name = syscall_name(int(nr))
            why = "sandbox violation: forbidden system call %s%s%s during %s" % (
                nr, " (%s)" % name if name else "", " on '%s'" % self.violation_path if self.violation_path else "",
                during)
        elif status is None:
            why = "the %s's process stopped answering during %s" % (self.role, during)
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            why = "the %s's process was killed by %s during %s" % (self.role, signal.Signals(sig).name, during)
            if sig == signal.SIGSYS:
                why = "sandbox violation (SIGSYS) during %s" % during
        else:
            why = "the %s's process exited with %d during %s (a kernel may not end its process)" % (
                self.role, os.WEXITSTATUS(status), during)
        self.dead = why
        return why

    def read_side_channel(self):
        """What the host wrote on its side pipe: the set-up steps it reached
        ("stage ..."), and the policy's line on a violation."""
        try:
            while True:
                r, _, _ = select.select([self.viol_r], [], [], 0)
                if not r:
                    break
                chunk = os.read(self.viol_r, 4096)
                if not chunk:
                    break
                self.side += chunk.decode("utf-8", "replace")
        except OSError:
            pass
        loaded = False
        for line in self.side.splitlines():
            # Once "stage load" is written the program's code runs: a step
            # after it is the candidate's forgery, never the host's.
            if line.startswith("stage ") and not loaded:
                self.stage = line[6:].strip()
                loaded = self.stage == "load"
            elif line.startswith("sandbox violation path: ") and self.violation and not self.violation_path:
                self.violation_path = line[len("sandbox violation path: "):].strip()[:200]
            elif line.startswith("sandbox violation") and not self.violation:
                self.violation = line.strip()

    def set_up(self, seconds):
        """Whether the host reached its wait for a program (its side pipe's
        "stage program") within `seconds`: a host forked ahead of its
        request (run_request) is then ready but for its program."""
        deadline = time.monotonic() + seconds
        while "stage program" not in self.side:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                r, _, _ = select.select([self.viol_r], [], [], left)
                if not r:
                    return False
                chunk = os.read(self.viol_r, 4096)
            except OSError:
                return False
            if not chunk:
                return False
            self.side += chunk.decode("utf-8", "replace")
        return True

    def nothing_waiting(self, what):
        """Before a message: no byte of the host's may be waiting on its
        socket. Nothing in a reply names the message it answers, so a host
        that wrote the answer to its next call ahead (in its prime, or
        after its last reply) had that call measured at nothing (the GPU
        red team's answer-ahead; attack native_answer_ahead)."""
        if select.select([self.fd], [], [], 0)[0]:
            self.kill()
            raise self.gone("protocol breach by the %s's process (it wrote before %s)" % (self.role, what))

    def request(self, obj, timeout, fd=None):
        """A message and its reply; `fd`: a descriptor sent after it (one
        byte with SCM_RIGHTS, recv_fd), for a message that says so."""
        self.cont()
        deadline = time.monotonic() + timeout
        self.nothing_waiting("a request")
        try:
            send_kind(self.fd, b"j", obj)
            if fd is not None:
                sock = socket.socket(fileno=os.dup(self.fd))
                try:
                    socket.send_fds(sock, [b"a"], [fd])
                finally:
                    sock.close()
            kind, reply = recv_kind(self.fd, deadline)
        except TimeoutError:
            self.kill()
            raise self.gone("the %s did not answer within %.1f s (%s)" % (self.role, timeout, obj.get("op")), "timeout")
        except (EOFError, OSError, ValueError, RecursionError):
            raise self.gone(self.death(obj.get("op", "a request")))
        if kind != b"j":
            self.kill()
            raise self.gone("protocol breach by the %s's process (%r)" % (self.role, kind))
        if not isinstance(reply, dict):
            # Every reply is an object: anything else is the host's code
            # changed from inside (a list crashed the judge into
            # internal_error, kevo's fault; attack native_reply_not_an_object).
            self.kill()
            raise self.gone("protocol breach by the %s's process (a reply that is not an object)" % self.role)
        return reply

    def call(self, timeout, during, record=False, stop=False, store=False):
        """One call on the bound inputs: (ok, ns on the judge's clock,
        error); `record`: its operations recorded (the host cannot tell
        from Python); `stop`: the host is stopped after its reply, and the
        clock runs until every thread of it has (a direct host that replied
        before its threads were done gains nothing: they are timed).
        A direct host's description of its outputs is kept in `desc`;
        `store` (GPU): after its reply the host copies its outputs into the
        judge's memory and replies again with their description (`desc`):
        the time returned runs to that second reply, and the copy's own
        share (from the first) is in `store_ns`. A masked host (GPU) says
        when its inputs are unmasked, before the forward: that step's share
        is in `unmask_ns` (None when the host did not say)."""
        deadline = time.monotonic() + timeout
        t0 = now_ns()
        self.cont()
        if not stop:
            t0 = now_ns()
        self.desc = None
        self.store_ns = None
        self.unmask_ns = None
        self.nothing_waiting("a call")
        msg = b"r" if record else b"c"
        if self.masked:
            msg += struct.pack("<Q", self.key)
            self.key = 0
        try:
            write_all(self.fd, msg)
            if self.spin_s:
                spin_until_readable(self.fd, self.spin_s)
            kind = read_exact(self.fd, 1, deadline)
            if kind == b"u" and self.masked:
                self.unmask_ns = now_ns() - t0
                if self.spin_s:
                    spin_until_readable(self.fd, self.spin_s)
                kind = read_exact(self.fd, 1, deadline)
            body = None
            if kind in (b"e", b"o"):
                (n,) = struct.unpack("<I", read_exact(self.fd, 4, deadline))
                if n > MAX_MSG:
                    self.kill()
                    raise self.gone("protocol breach by the %s's process" % self.role)
                body = read_exact(self.fd, n, deadline)
        except TimeoutError:
            self.kill()
            raise self.gone("the %s's forward did not return within %.1f s (%s)" % (self.role, timeout, during), "timeout")
        except (EOFError, OSError):
            raise self.gone(self.death(during))
        if stop:
            self.stop(wait=True)
            if self.reaped is not None:
                raise self.gone(self.death(during))
        t1 = now_ns()
        if kind == b"d" and store:
            try:
                if self.spin_s:
                    spin_until_readable(self.fd, self.spin_s)
                kind2 = read_exact(self.fd, 1, deadline)
                if kind2 != b"o":
                    self.kill()
                    raise self.gone("protocol breach by the %s's process (%r)" % (self.role, kind2))
                (n,) = struct.unpack("<I", read_exact(self.fd, 4, deadline))
                if n > MAX_MSG:
                    self.kill()
                    raise self.gone("protocol breach by the %s's process" % self.role)
                self.desc = read_exact(self.fd, n, deadline)
            except TimeoutError:
                self.kill()
                raise self.gone("the %s's outputs were not copied within %.1f s (%s)" % (self.role, timeout, during),
                                "timeout")
            except (EOFError, OSError):
                raise self.gone(self.death(during))
            t2 = now_ns()
            self.store_ns = t2 - t1
            return True, t2 - t0, None
        if kind == b"d":
            return True, t1 - t0, None
        if kind == b"o" and not store:
            self.desc = body
            return True, t1 - t0, None
        if kind == b"e":
            try:
                err = json.loads(body.decode("utf-8", "replace"))
            except (ValueError, RecursionError):
                err = None
            if not isinstance(err, dict) or not isinstance(err.get("error", ""), str):
                self.kill()
                raise self.gone("protocol breach by the %s's process (an error reply that is not an object "
                                "with a text)" % self.role)
            return False, t1 - t0, err
        self.kill()
        raise self.gone("protocol breach by the %s's process (%r)" % (self.role, kind))

    def prime(self, timeout):
        """GPU, right before a timed call: the host's prime (one small
        kernel in its context: the GPU's switch from the judge's context is
        paid here, not in the call), timed on the judge's clock."""
        deadline = time.monotonic() + timeout
        self.cont()
        self.nothing_waiting("its prime")
        t0 = now_ns()
        try:
            write_all(self.fd, b"p")
            if self.spin_s:
                spin_until_readable(self.fd, self.spin_s)
            kind = read_exact(self.fd, 1, deadline)
        except TimeoutError:
            self.kill()
            raise self.gone("the %s's process did not answer within %.1f s (the prime before a timed call)"
                            % (self.role, timeout), "timeout")
        except (EOFError, OSError):
            raise self.gone(self.death("the prime before a timed call"))
        if kind != b"d":
            self.kill()
            raise self.gone("protocol breach by the %s's process (%r)" % (self.role, kind))
        return now_ns() - t0

    def null_call(self, timeout, stop=False):
        """A call's round trip with no work, as `call` times it."""
        deadline = time.monotonic() + timeout
        t0 = now_ns()
        self.cont()
        if not stop:
            t0 = now_ns()
        self.nothing_waiting("a null call")
        try:
            write_all(self.fd, b"n")
            if self.spin_s:
                spin_until_readable(self.fd, self.spin_s)
            kind = read_exact(self.fd, 1, deadline)
        except (TimeoutError, EOFError, OSError):
            raise self.gone(self.death("a null call"))
        if kind != b"d":
            self.kill()
            raise self.gone("protocol breach by the %s's process" % self.role)
        if stop:
            self.stop(wait=True)
            if self.reaped is not None:
                raise self.gone(self.death("a null call"))
        return now_ns() - t0

    def send_program(self, program):
        """What the host loads: its source text (read here: a sandboxed host
        runs as another user in a root of its own, where the build folder
        may be unreadable) and descriptors of its prebuilt libraries."""
        program = dict(program)
        with open(program["path"], "r", encoding="utf-8", errors="replace") as f:
            program["source"] = f.read()
        fds, exts = [], []
        try:
            for e in program.get("extensions", []):
                fds.append(os.open(os.path.join(program["build"], e["path"]), os.O_RDONLY))
                exts.append(dict(e))
            program["extensions"] = exts
            body = json.dumps(program).encode()
            sock = socket.socket(fileno=os.dup(self.fd))
            try:
                socket.send_fds(sock, [struct.pack("<I", len(body))], fds)
            finally:
                sock.close()
            write_all(self.fd, body)
        except OSError as e:
            raise self.gone("the %s's process could not be given its program: %s" % (self.role, e.strerror or e))
        finally:
            for fd in fds:
                os.close(fd)

    def kill(self):
        if self.reaped is not None:
            return   # (its number may be another process's by now)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.dead is None:
            self.dead = "killed by the judge"

    def reap(self):
        """Killed and waited for: its device memory is the driver's again
        only once its process is gone."""
        self.kill()
        if self.reaped is None:
            try:
                self.reaped = os.waitpid(self.pid, 0)[1]
            except ChildProcessError:
                pass


def spawn_host(role, opts, in_mem):
    """Forks a host (through libkevo_pyhost's clone into namespaces for a
    sandboxed one) that sets itself up and waits for its program
    (Host.send_program). Returns a Host; the child never returns."""
    parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    viol_r, viol_w = os.pipe()
    sandboxed = role == "candidate" and opts.get("isolate")
    # The host gets the input file through a descriptor of its own that
    # can only read: no mapping of it, or of that descriptor, can write.
    in_ro = os.open("/proc/self/fd/%d" % in_mem.fd, os.O_RDONLY | os.O_CLOEXEC)
    report = {}
    if sandboxed:
        buf = ctypes.create_string_buffer(8192)
        ctypes.pythonapi.PyOS_BeforeFork()
        pid = PYHOST.kevo_pyhost_clone(1 if opts.get("namespaces", True) else 0, buf, len(buf))
        if pid == 0:
            ctypes.pythonapi.PyOS_AfterFork_Child()
        else:
            ctypes.pythonapi.PyOS_AfterFork_Parent()
            report = json.loads(buf.value.decode() or "{}")
            if pid < 0:
                raise RuntimeError("cannot start the candidate's host: %s" % report.get("error"))
    else:
        pid = fork_clean()
    if pid == 0:
        try:
            parent_sock.close()
            os.close(viol_r)
            keep = {0, 1, 2, child_sock.fileno(), in_ro, viol_w}
            for fd in list_fds():
                if fd not in keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
            host_main(role, child_sock.fileno(), in_ro, viol_w, opts)
        finally:
            os._exit(3)
    child_sock.close()
    os.close(viol_w)
    os.close(in_ro)
    fd = os.dup(parent_sock.fileno())
    parent_sock.close()
    return Host(role, pid, fd, viol_r, report)


RAW_FORK = False   # set by the zygote: True when a plain fork's child could not use CUDA


def fork_clean():
    """A fork whose child can use CUDA. torch registers a pthread_atfork
    handler that marks every child "in a bad fork" once the parent asked for
    the CUDA device count or arch flags, even without a context (some
    imports do). Where the zygote finds its forks so marked, this forks
    through libkevo_pyhost's clone, which runs no atfork handler (the
    child's glibc then keeps its parent's cached thread id: its raise()
    would signal the parent's thread; the judge and the hosts never raise).
    Otherwise a plain os.fork."""
    if PYHOST is None or not RAW_FORK:
        return os.fork()
    buf = ctypes.create_string_buffer(1024)
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = PYHOST.kevo_pyhost_clone(0, buf, len(buf))
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
        return 0
    ctypes.pythonapi.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError("fork: " + buf.value.decode())
    return pid


def list_fds():
    try:
        return [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


# ---- comparing --------------------------------------------------------------------

def widened(t):
    """float64, or complex128 for complex values: what comparisons run in."""
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


def errors(w, g):
    """|g - w| of two widened tensors, 0 where both are NaN or both the same
    infinity (equal, as far as the checks go); NaN where only one is."""
    diff = (g - w).abs()
    same = (torch.isnan(w) & torch.isnan(g)) | (torch.isinf(w) & (g == w))
    return torch.where(same, torch.zeros_like(diff), diff)


def norm2(x):
    """The L2 norm of a widened tensor (complex by modulus), scaled by its
    largest |value| first so that no square overflows or underflows
    (float64 values above about 1e154 made the norm infinite, and the
    relative L2 bound inf / inf, which no comparison fails). An infinite or
    NaN value gives inf or NaN."""
    if x.numel() == 0:
        return 0.0
    top = float(x.abs().max())
    if top == 0.0 or not math.isfinite(top):
        return top
    return top * float(torch.linalg.vector_norm(x / top))


def rms_of(t):
    """The RMS of a tensor's finite values (0 for none; complex by modulus)."""
    x = widened(t)
    x = x[torch.isfinite(x)]
    return norm2(x) / math.sqrt(x.numel()) if x.numel() else 0.0


def spot_far_off(want, got, tol, ref_rms):
    """(far, median error, bound) of the elements drawn from a timed call's
    output by a spot check, each element already within its tolerance.
    Per-element tolerances let an output whose values all lie below atol
    through as zeros; the relative L2 bound that catches it belongs to the
    full comparisons, which allow an RMS error of rel_l2 * max(RMS of the
    reference's values, atol). The median |got - want| over the elements
    drawn is far off above SPOT_SLACK times that, the scale being the
    largest of the reference's RMS in this timing's warm-up (`ref_rms`),
    the sample's and atol. For an output that passes the full comparison
    the median error is at most sqrt(2) times its RMS error (Markov's
    inequality), so the slack leaves room for a sample's luck. Positions
    where both sides are NaN, or the same infinity, count as equal (as in
    compare); NaN or an infinity the reference does not have, as far off."""
    w = widened(want)
    if w.numel() == 0:
        return False, 0.0, 0.0
    diff = errors(w, got.to(w.dtype)).nan_to_num(float("inf"), float("inf"))
    bound = SPOT_SLACK * tol["rel_l2"] * max(ref_rms, rms_of(want), tol["atol"])
    med = float(diff.median())
    return med > bound, med, bound


def compare(want, got, tol):
    """(ok, detail): got against want with atol + rtol*|want| per element
    and the relative L2 bound, in float64 on the judge's device."""
    if want.dtype.is_floating_point or want.dtype.is_complex:
        # Complex values compared as complex (their real parts alone let a
        # conjugate pass: a red team's finding), by modulus.
        w = widened(want)
        g = got.to(w.dtype)
        diff = errors(w, g)
        wabs = w.abs()
        bound = tol["atol"] + tol["rtol"] * wabs.nan_to_num(posinf=0.0, neginf=0.0)
        bad = (diff > bound) | torch.isnan(diff)
        finite = torch.isfinite(diff)
        max_abs = float(diff[finite].max()) if bool(finite.any()) else 0.0
        n = w.numel()
        wn = norm2(wabs.nan_to_num(0.0, 0.0, 0.0))
        dn = norm2(diff.nan_to_num(float("inf"), float("inf")))
        rel = dn / max(wn, tol["atol"] * math.sqrt(max(n, 1)), 1e-300)
    else:
        bad = got != want
        max_abs = float((got.to(torch.int64) - want.to(torch.int64)).abs().max()) if want.numel() else 0.0
        rel = 0.0 if not bool(bad.any()) else float("inf")
    nbad = int(bad.sum())
    detail = {"max_abs": max_abs, "rel_l2": rel}
    if nbad:
        flat = int(torch.nonzero(bad.reshape(-1))[0][0])
        idx = []
        rest = flat
        for s in reversed(want.shape):
            idx.append(rest % s if s else 0)
            rest = rest // s if s else 0
        we, ge = w.reshape(-1)[flat], g.reshape(-1)[flat]
        if we.dtype.is_complex:
            # A complex element is quoted by the part that differs more.
            part = torch.real if abs(float((ge - we).real)) >= abs(float((ge - we).imag)) else torch.imag
            we, ge = part(we), part(ge)
        detail.update({"flat": flat, "index": "[" + ", ".join(str(i) for i in reversed(idx)) + "]",
                       "expected": float(we), "got": float(ge), "bad": nbad})
        return False, detail
    if rel > tol["rel_l2"]:
        detail["rel_over"] = True
        return False, detail
    return True, detail


# ---- the judge -------------------------------------------------------------------

class NeedRoom(Exception):
    """The reference's outputs did not fit the room its host was given (GPU):
    grown, and its call repeated."""


class Verdict(Exception):
    def __init__(self, status, message, feedback="", stage="correctness", **extra):
        super().__init__(message)
        # kevo writes the feedback's first part from the message (and the
        # mismatch); `feedback` is what it lacks: a traceback, a log.
        self.v = {"status": status, "stage": stage, "message": cut(message, 600),
                  "feedback": cut(feedback) if feedback and feedback != message else ""}
        self.v.update(extra)


class PhaseClock:
    """Where a judgement's seconds went, for KEVO_TORCH_JUDGE_PHASES (a
    diagnostic: one line on the evaluator's stderr, which kevo keeps as the
    verdict's output_tail). Steps in order (mark) and time summed over
    repeated parts (part); names never hold a shape's sizes."""

    def __init__(self, since):
        self.t0 = time.monotonic()
        self.last = self.t0
        self.steps = [("wait", self.t0 - since)] if since is not None else []
        self.parts = {}
        self.scope = ""   # "timing." once the timing began: its parts apart
        # Moments on the system's monotonic clock (comparable between the
        # judges of one evaluator): when its set-up began and ended, when
        # its request was read, when its timing began, when it ended.
        self.at = {}


    def mark(self, name):
        now = time.monotonic()
        self.steps.append((name, now - self.last))
        self.last = now

    def add(self, name, seconds):
        name = self.scope + name
        self.parts[name] = self.parts.get(name, 0.0) + seconds

    def line(self):
        total = time.monotonic() - self.t0
        steps = " ".join("%s=%.3f" % kv for kv in self.steps)
        parts = " ".join("%s=%.3f" % kv for kv in sorted(self.parts.items()))
        at = " ".join("%s=%.6f" % kv for kv in sorted(self.at.items()))
        return "kevo-torch-judge phases: total=%.3f | %s | %s | at %s" % (total, steps, parts, at)


def timed_part(name):
    """A Judge method whose seconds are summed into the phase clock."""
    def wrap(f):
        def inner(self, *a, **k):
            t = time.monotonic()
            try:
                return f(self, *a, **k)
            finally:
                self.phases.add(name, time.monotonic() - t)
        inner.__name__ = f.__name__
        inner.__doc__ = f.__doc__
        return inner
    return wrap


class GpuKit:
    """The judge's own GPU set-up, made before its request is read when its
    hosts are forked ahead (run_request): the context, the L2 flush and probe
    buffers, the mask generator, and the kernels a judgement launches
    (comparison in float64, the keystream, input draws) loaded by a first
    launch on a few elements (CUDA loads a kernel at its first launch: the
    comparisons of a judgement's first trial took about 0.2 s on the H200).
    Nothing here depends on the request."""

    def __init__(self):
        torch.cuda.set_device(0)
        dev = torch.device("cuda", 0)
        self.flush_buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device=dev)
        self.probe_buf = torch.zeros(256, dtype=torch.float32, device=dev)
        self.mask_gen = torch.Generator(device=dev)
        props = torch.cuda.get_device_properties(0)
        self.device_name = "%s (%d SMs)" % (props.name, props.multi_processor_count)
        tol = {"atol": 1e-5, "rtol": 1e-5, "rel_l2": 1e-5}
        a = torch.randn(64, device=dev)
        torch.rand(64, device=dev)
        torch.randint(0, 8, (64,), device=dev)
        b = a.clone()
        b[3] = float("nan")
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            compare(a.to(dt), a.to(dt), tol)
            compare(a.to(dt), b.to(dt), tol)
        compare(a.to(torch.int64), a.to(torch.int64), tol)
        words = torch.empty(64, dtype=torch.int64, device=dev)
        self.mask_kernel = km.kernel_for_mode()
        xor_keystream(self.mask_kernel, self.mask_gen, words, words, fresh_key(), torch.empty_like(words))
        self.flush_buf.zero_()
        self.probe_buf.add_(1.0)
        torch.cuda.synchronize()


class Judge:
    def __init__(self, req, opts, out, waiting_since=None, spare=None, trusted=(), gpu=None, next_ready=None):
        self.phases = PhaseClock(waiting_since)
        self.req = req
        # (Host, its output file, the input file): the candidate's host,
        # forked before the request was read (run_request).
        self.spare = spare
        # The reference's host forked blank before the request, and the
        # judge's GPU set-up made then (GpuKit): a judge forked ahead
        # (serve) did that while the previous judgement ran.
        self.trusted = list(trusted)
        self.gpu = gpu
        # The pipe on which the judge forked ahead of this one says it is
        # set up: its processes start their CUDA contexts, which must not
        # overlap this judgement's timing (Judge.timing waits for it).
        self.next_ready = next_ready
        self.beside_setup = None   # seconds waited for the judge ahead, when its set-up outlasted them
        self.opts = opts
        self.out = out
        self.nonce = req["nonce"]
        self.mode = req["mode"]
        self.task = req["task"]
        self.tol = self.task["tolerance"]
        self.seed = int(req["seed"])
        self.trials = max(1, int(req.get("trials", 3)))
        self.cuda = opts["device"] == "cuda"
        # CPU: hosts read their inputs in place and the judge reads their
        # outputs from their memory (host_bind, read_direct); GPU: hosts
        # read their inputs in device memory the judge owns and copy their
        # outputs there (host_bind_arena, host_store_arena, read_arena).
        self.direct = not self.cuda
        self.in_device_memory = self.cuda
        self.pending = []   # GPU: the tensors of the inputs last drawn (what put() writes)
        self.last_inputs = None   # the inputs message of what the input file holds now
        self.spot_scales = []     # the RMS of each of the reference's outputs in a timing's warm-up (CPU)
        self.info = kc.torch_section(self.task["dir"])
        # The engine's wall clock runs from when it wrote the request, which
        # may have waited in the pipe while this process imported torch: the
        # judge's deadline counts from when it began to wait for a request.
        self.started = time.monotonic() if waiting_since is None else min(waiting_since, time.monotonic())
        self.at_shape = None   # the shape whose correctness trials are running
        self.last_hidden = None   # the last hidden shape whose trials have begun
        self.forbid_ops = None   # the reference's own operations (check_ops)
        self.check_ops_enabled = False
        # The inputs of the correctness trials and the timed calls are drawn
        # from seeds keyed by a secret of this judgement that never reaches a
        # host: the request's seed is known to whoever knows the run (and a
        # model's parameters are seeded from it, as the reference's are), so
        # inputs derived from it alone could be rebuilt by the candidate.
        # Drawn when first used, after the hosts are forked (a host forked
        # from this process holds a copy of its memory: the red team read
        # the secret there and rebuilt every timed input, 35x).
        self._secret = None
        self.prime_notes = []  # GPU: work charged from the candidate's primes, per shape
        self.timing_details = {}   # GPU: per shape, what the steps around the timed calls took (feedback)
        self.floor_notes = []  # GPU: copy steps charged up to the reference's, per shape (store_floor)
        self.unmask_notes = []  # GPU: unmask steps charged up to the reference's, per shape (unmask_floor)
        self.deadline = self.started + max(5.0, float(req.get("wall_seconds", 60)) - 3.0)
        self.hosts = []
        self.idle_probe_ns = 0.0   # GPU: measured before the candidate's code loads, and when timing starts
        self.drain_timed_out = False
        self.timing_started = False
        self.call_timeout = 60.0
        self.mask_gen = None        # GPU: the judge's generator of the input masks (put_arena; KEVO_TORCH_MASK=generator)
        self.mask_kernel = None     # GPU: kevo_torch_mask's kernel, which masks them in one pass (put_arena)
        self._scratch = {}   # GPU: the judge's buffers for the input masks (scratch)
        self.busy_notes = []   # GPU: waits for the candidate's work while it was stopped, charged, per shape
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.ref_ops = None
        self.isolation = {}

    # -- answer lines
    def emit(self, obj):
        obj = dict(obj)
        obj["nonce"] = self.nonce
        write_all(1, (json.dumps(obj) + "\n").encode())

    def stage(self, s):
        self.emit({"event": "stage", "stage": s})

    def left(self):
        return max(0.5, self.deadline - time.monotonic())

    # -- programs
    def candidate_program(self):
        cand = self.req.get("candidate") or {}
        if self.mode == "self_check":
            return {"kind": "reference", "path": self.info["reference"], "display": "the reference",
                    "class": "Model", "build": None}
        build = cand.get("build")
        meta = {}
        if build:
            try:
                meta = kc.read_json(os.path.join(build, "kevo_build.json"))
            except (OSError, ValueError):
                raise Verdict("internal_error", "the build stage left no kevo_build.json in " + build, stage="compile")
        if meta.get("forbidden"):
            raise Verdict("forbidden", meta["forbidden"], stage="compile")
        path = cand.get("source")
        if meta.get("role") == "reference":
            return {"kind": "reference", "path": self.info["reference"], "display": "the reference",
                    "class": "Model", "build": None}
        return {"kind": "candidate", "path": path, "display": "candidate.py", "class": "ModelNew", "build": build,
                "extensions": meta.get("extensions", []), "uses_triton": meta.get("uses_triton", False)}

    def is_seed(self, program):
        try:
            with open(program["path"], "r", encoding="utf-8") as f:
                a = f.read()
            with open(self.info["seed"], "r", encoding="utf-8") as f:
                b = f.read()
            return a == b
        except OSError:
            return False

    # -- the reference module in the judge: inputs and init inputs
    def load_reference(self):
        self.ref_mod = exec_module(self.info["reference"], "kevo_judge_reference")
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(self.ref_mod, name):
                raise Verdict("internal_error", "the task's reference defines no %s" % name)

    def set_sizes(self, dims):
        for k, v in dims.items():
            self.ref_mod.__dict__[k] = int(v)

    def init_inputs(self):
        vals = list(self.ref_mod.get_init_inputs())
        try:
            json.dumps(vals)
        except TypeError:
            raise Verdict("internal_error", "the task's get_init_inputs() returns values that are not numbers, "
                                            "strings or lists of them")
        return vals

    @timed_part("draw")
    def draw_inputs(self, seed, stress=None):
        torch.manual_seed(seed)
        if self.cuda:
            torch.cuda.manual_seed_all(seed)
        if self.cuda and hasattr(torch.device, "__enter__"):
            with torch.device(self.device):
                vals = list(self.ref_mod.get_inputs())
        else:
            vals = list(self.ref_mod.get_inputs())
        out = []
        signed = self.info["signed"]
        for i, v in enumerate(vals):
            if isinstance(v, torch.Tensor):
                t = v.to(self.device).contiguous()
                if t.dtype.is_floating_point and (signed is True or (isinstance(signed, list) and i in signed)):
                    t = t * 2 - 1
                if stress is not None and t.dtype.is_floating_point:
                    t = t * float(stress.get("scale", 1.0)) + float(stress.get("shift", 0.0))
                out.append(t)
            else:
                out.append(v)
        return out

    def input_message(self, inputs):
        """Where the inputs go in the input file (grown to hold them), and
        the values that are not tensors: what a host's load or bind gets."""
        metas = [{"shape": list(t.shape), "dtype": dtype_name(t.dtype)} for t in inputs if isinstance(t, torch.Tensor)]
        offs, end = layout(metas)
        if not self.in_device_memory:
            self.in_mem.ensure(end)
        msg = []
        k = 0
        for t in inputs:
            if isinstance(t, torch.Tensor):
                msg.append({"kind": "tensor", "offset": offs[k], "shape": metas[k]["shape"], "dtype": metas[k]["dtype"]})
                k += 1
            else:
                msg.append({"kind": "value", "value": v_json(t)})
        return msg

    def fill_inputs(self, inputs, msg):
        if self.in_device_memory:
            # Written into each host's memory by put(), with the host stopped.
            self.pending = [t for t in inputs if isinstance(t, torch.Tensor)]
            self.last_inputs = msg
            return
        tensors = [m for m in msg if m["kind"] == "tensor"]
        for t, m in zip([t for t in inputs if isinstance(t, torch.Tensor)], tensors):
            self.in_mem.view(m["offset"], m["shape"], m["dtype"]).copy_(t)
        if self.cuda:
            torch.cuda.synchronize()
        self.last_inputs = msg

    @timed_part("write_inputs")
    def write_inputs(self, inputs):
        msg = self.input_message(inputs)
        self.fill_inputs(inputs, msg)
        return msg

    def put(self, h, inputs_msg, poison_bytes=0, force=True):
        """Gives a host the inputs last drawn: on the CPU its bind (views of
        the file, which holds them; unless it is bound to the same places
        already and `force` is off), on the GPU put_arena."""
        if self.in_device_memory:
            return self.put_arena(h, inputs_msg, poison_bytes)
        op = {"op": "bind", "inputs": inputs_msg}
        if poison_bytes:
            op.update(poison=True, poison_bytes=poison_bytes)
        if self.direct and not force and not poison_bytes and h.bound == inputs_msg:
            return {"ok": True}
        h.bound = None
        r = h.request(op, self.left())
        if self.direct and "error" not in r:
            h.bound = inputs_msg
            h.bound_addresses = r.get("addresses")
        return r

    def put_arena(self, h, inputs_msg, poison_bytes=0):
        """GPU: the host's inputs written into device memory that the judge
        owns and the host maps (kevo_torch_vmm), with the host stopped:
        bound to the inputs' places first (a new allocation, with its
        descriptor, when the old one is too small), then stopped, then the
        inputs written and the output region poisoned (0xFF: NaN), from
        the judge's context. Nothing of the host runs between those writes
        and its next call but the prime before a timed call, which is
        timed (time_shape). The inputs are self.pending (fill_inputs)."""
        tens = [m for m in inputs_msg if m["kind"] == "tensor"]
        in_end = max([m["offset"] + tensor_bytes(m["shape"], m["dtype"]) for m in tens] or [0])
        mask_bytes = (in_end + 7) // 8 * 8
        out_off = (in_end + ALIGN - 1) // ALIGN * ALIGN
        need = out_off + max(h.out_need, ALIGN)
        fd, old = None, None
        if h.arena is None or h.arena.size < need:
            old = h.arena
            try:
                h.arena = kv.Arena(need, torch.cuda.current_device())
            except RuntimeError as e:
                raise Verdict("internal_error", "the judge could not allocate device memory for the %s's process: %s"
                              % (h.role, e))
            fd = h.arena.fd
            h.bound = None
        out_bytes = h.arena.size - out_off
        if h.bound != inputs_msg or poison_bytes or fd is not None:
            op = {"op": "bind", "inputs": inputs_msg, "fd": fd is not None,
                  "arena": {"size": h.arena.size, "out_offset": out_off, "out_bytes": out_bytes,
                            "mask_bytes": mask_bytes}}
            if poison_bytes:
                op.update(poison=True, poison_bytes=poison_bytes)
            r = h.request(op, self.left(), fd=fd)
            if old is not None:
                old.close()
            if "error" in r:
                return r
            h.bound = inputs_msg
        h.out_off = out_off
        h.stop(wait=True)
        if h.reaped is not None:
            raise h.gone(h.death("taking its inputs"))
        # Nothing may run on the GPU now: both hosts are stopped and their
        # last steps drained. Work that does was queued to run by itself
        # (a kernel polling the judge's memory, a stream waiting on a value
        # in it: attacks native_bind_poll, native_slow_reference), to work
        # on the inputs as they are written or to slow the other side's
        # turn: the judge waits until the GPU is idle, before the writes and
        # after them, and charges the wait to the candidate's next timed
        # call (time_shape), or gives it a timeout.
        busy = self.idle_check("before the inputs of %s's call were written" % h.role)
        # Masked (unmask_inputs), the key sent with the call: laid out in
        # the judge's own memory and XORed into the host's, which never
        # holds them unmasked before the call (work of the candidate's that
        # escaped the idle check could have copied them between a write and
        # the mask: the GPU red team).
        h.key = fresh_key()
        if mask_bytes:
            plain = self.scratch("plain", mask_bytes, torch.uint8)
            if sum(tensor_bytes(m["shape"], m["dtype"]) for m in tens) < mask_bytes:
                # Gaps between the inputs (alignment, the last word's
                # tail): zeros, not an earlier layout's inputs.
                plain.zero_()
            for t, m in zip(self.pending, tens):
                arena_view(plain, m["offset"], m["shape"], m["dtype"]).copy_(t)
            buf = None if self.mask_kernel is not None else self.scratch("mask", mask_bytes // 8, torch.int64)
            xor_keystream(self.mask_kernel, self.mask_gen, h.arena.bytes[:mask_bytes].view(torch.int64),
                          plain.view(torch.int64), h.key, buf)
        h.arena.bytes[out_off:out_off + min(out_bytes, max(h.out_need, ALIGN))].fill_(255)
        torch.cuda.synchronize()
        busy += self.idle_check("after the inputs of %s's call were written" % h.role)
        return {"ok": True, "busy_ns": busy}

    def scratch(self, name, n, dtype):
        """A buffer of the judge's of n elements, kept under `name` while n
        repeats: where a host's inputs are laid out unmasked ("plain") and
        the keystream ("mask"), put_arena (which zeroes "plain" when the
        inputs leave gaps in it: they would otherwise carry whatever the
        judge's allocator held there, which the host sees unmasked: the
        twelfth session's red team)."""
        t = self._scratch.get(name)
        if t is None or t.numel() != n:
            self._scratch[name] = None   # (the old one freed first)
            t = self._scratch[name] = torch.empty(n, dtype=dtype, device=self.device)
        return t

    def idle_check(self, when):
        """GPU, every host stopped: the ns the GPU stayed busy with work of
        another context's (beyond one idle probe; 0 when the first probe
        finds it idle). Only the candidate's work can be there (the
        reference's steps are synchronized and drained): a GPU still busy
        after the call timeout is the candidate's timeout."""
        dt = self.probe()
        if dt <= 1.5 * self.idle_probe_ns + PROBE_SLACK_NS:
            return 0
        timeout = min(self.call_timeout, max(0.1, self.left()))
        busy = dt - self.idle_probe_ns + self.drain(timeout)
        if self.drain_timed_out:
            what = "while every process of the judgement was stopped (%s): work of the candidate's left queued " \
                   "or running by itself" % when
            if not any(h.role == "candidate" for h in self.hosts):
                raise Verdict("internal_error", "the GPU stayed busy for %.1f s %s" % (timeout, what))
            raise Verdict("timeout", "the GPU stayed busy for more than %.1f s %s" % (timeout, what),
                          stage="timing" if self.timing_started else "correctness")
        return busy

    def present(self, hosts, inputs, poison_bytes=0):
        """The inputs of a call of the timing loop, where the hosts take
        them: each host bound to their places while its views still hold
        the last call's inputs, stopped (every thread of it), then the
        inputs written (CPU: into the file both hosts view; GPU: into each
        host's device memory, put_arena): nothing of a host runs while
        they are there but its timed call (and on the GPU the prime before
        it)."""
        msg = self.input_message(inputs)
        if self.in_device_memory:
            self.fill_inputs(inputs, msg)
        busy = {}
        for h in hosts:
            # (CPU: no poison in the timing loop; every call's outputs
            # are sampled, spot_check.)
            r = self.put(h, msg, poison_bytes if self.in_device_memory else 0, force=False)
            if "error" in r:
                raise Verdict("internal_error" if h.role == "reference" else "runtime_error",
                              "the %s's process could not take its inputs: %s" % (h.role, last_line(r["error"])),
                              r["error"], stage="timing")
            busy[h] = r.get("busy_ns", 0)
            h.stop(wait=True)
        if not self.in_device_memory:
            self.fill_inputs(inputs, msg)
        return busy

    def parse_desc(self, h, expect, where):
        """A direct host's description of its last call's outputs (its reply,
        describe_outputs), checked: [(dtype name, shape, strides, storage
        offset, address, numel)] once the host has stopped. The candidate's
        code can forge it: it must be the reference's outputs (`expect`:
        their number, dtypes and shapes), within what it says is their
        storage and dense enough that the judge reads no more than a few
        times their bytes (a view spread over pages the candidate never
        wrote let it see, from those pages, which call the judge had read:
        the red team's skip_after_check)."""
        h.stop(wait=True)
        if h.reaped is not None:
            raise h.gone(h.death(where))
        bad = self.desc_error(h, where)
        try:
            d = json.loads(h.desc.decode("utf-8", "replace")) if h.desc is not None else None
        except (ValueError, RecursionError):
            d = None
        if not isinstance(d, dict):
            raise bad("protocol breach by the %s's process (a description of its outputs that is not an object)"
                      % h.role, True)
        if "bad" in d:
            raise bad(str(d["bad"])[:500])
        outs = d.get("outputs")
        if not isinstance(outs, list):
            raise bad("protocol breach by the %s's process (no list of outputs)" % h.role, True)
        if expect is not None and len(outs) != len(expect):
            raise bad("forward returned %d output(s), the reference returns %d" % (len(outs), len(expect)))
        parsed = []
        for i, m in enumerate(outs):
            if not isinstance(m, dict):
                raise bad("protocol breach by the %s's process (output %d described by no object)" % (h.role, i), True)
            dt, shape, stride = m.get("dtype"), m.get("shape"), m.get("stride")
            off, addr, nb = m.get("offset"), m.get("address"), m.get("nbytes")
            if (dt not in DTYPE_NAMES or not isinstance(shape, list) or not isinstance(stride, list) or
                    len(shape) != len(stride) or
                    not all(type(x) is int and 0 <= x < (1 << 62) for x in shape + stride + [off, addr, nb])):
                raise bad("protocol breach by the %s's process (output %d's description)" % (h.role, i), True)
            if expect is not None:
                e = expect[i]
                if dt != e["dtype"]:
                    raise bad("output %d has dtype %s, the reference's has %s" % (i, dt, e["dtype"]))
                if shape != [int(x) for x in e["shape"]]:
                    raise bad("output %d has shape %s, the reference's has %s" % (i, shape, e["shape"]))
            esize = torch.empty((), dtype=dtype_of(dt)).element_size()
            numel = 1
            for n in shape:
                numel *= n
            if numel:
                last = off + sum((n - 1) * st for n, st in zip(shape, stride))
                if (last + 1) * esize > nb:
                    raise bad("protocol breach by the %s's process (output %d reaches past its storage)" % (h.role, i),
                              True)
                if (last + 1 - off) * esize > 4 * numel * esize + (1 << 20):
                    raise bad("output %d is a view spread over %d bytes for %d elements (return a contiguous tensor)"
                              % (i, (last + 1 - off) * esize, numel))
            parsed.append((dt, shape, stride, off, addr, numel))
        return parsed

    def desc_error(self, h, where):
        def bad(msg, breach=False):
            if h.role == "reference":
                return Verdict("internal_error", "the reference's outputs (%s): %s" % (where, msg))
            return Verdict("runtime_error" if breach else "wrong_answer", "%s (%s)" % (msg, where))
        return bad

    def read_direct(self, h, expect, where):
        """The outputs of a direct host's last call, read from its memory
        once it has stopped: (metas, tensors); the values are whatever that
        memory holds after the call, and the comparison decides."""
        bad = self.desc_error(h, where)
        metas, tensors = [], []
        for i, (dt, shape, stride, off, addr, numel) in enumerate(self.parse_desc(h, expect, where)):
            dtype = dtype_of(dt)
            esize = torch.empty((), dtype=dtype).element_size()
            if numel == 0:
                t = torch.empty(shape, dtype=dtype)
            else:
                span = (sum((n - 1) * st for n, st in zip(shape, stride)) + 1) * esize
                raw = h.read_mem(addr + off * esize, span)
                if raw is None:
                    raise bad("output %d is described at memory that the %s's process does not have" % (i, h.role),
                              True)
                flat = torch.frombuffer(raw, dtype=torch.uint8).view(dtype)
                t = torch.as_strided(flat, shape, stride, 0).clone()
            metas.append({"shape": shape, "dtype": dt})
            tensors.append(t)
        return metas, tensors

    def read_arena(self, h, expect, where, clone=True):
        """GPU: the outputs of a host's last call, as it copied them into the
        judge's memory (host_store_arena): (metas, tensors), read at the
        judge's own layout of the reference's outputs (`expect`; for the
        reference, of what its reply says). {"need": n} from the
        reference: its output region is grown and the caller repeats the
        call (NeedRoom)."""
        bad = self.desc_error(h, where)
        try:
            d = json.loads(h.desc.decode("utf-8", "replace")) if h.desc is not None else None
        except (ValueError, RecursionError):
            d = None
        if not isinstance(d, dict):
            raise bad("protocol breach by the %s's process (a reply on its outputs that is not an object)" % h.role,
                      True)
        if "error" in d:
            msg = str(d["error"])
            if h.role == "reference":
                raise Verdict("internal_error", "the reference's outputs could not be copied (%s): %s"
                              % (where, last_line(msg)), msg)
            raise Verdict("memory_limit" if d.get("oom") is True else "runtime_error",
                          "the candidate's outputs could not be copied (%s): %s" % (where, last_line(msg)), msg)
        if "bad" in d:
            raise bad(str(d["bad"])[:500])
        outs = d.get("outputs")
        if not isinstance(outs, list) or not all(
                isinstance(m, dict) and m.get("dtype") in DTYPE_NAMES and isinstance(m.get("shape"), list) and
                all(type(x) is int and 0 <= x < (1 << 62) for x in m["shape"]) for m in outs):
            raise bad("protocol breach by the %s's process (its outputs' description)" % h.role, True)
        metas = [{"shape": m["shape"], "dtype": m["dtype"]} for m in outs]
        if expect is not None:
            if len(metas) != len(expect):
                raise bad("forward returned %d output(s), the reference returns %d" % (len(metas), len(expect)))
            for i, (m, e) in enumerate(zip(metas, expect)):
                if m["dtype"] != e["dtype"]:
                    raise bad("output %d has dtype %s, the reference's has %s" % (i, m["dtype"], e["dtype"]))
                if m["shape"] != [int(x) for x in e["shape"]]:
                    raise bad("output %d has shape %s, the reference's has %s" % (i, m["shape"], e["shape"]))
        offs, end = layout(metas, h.out_off)
        if "need" in d or end > h.arena.size:
            if h.role == "reference" and type(d.get("need")) is int and 0 < d["need"] < (1 << 40):
                h.out_need = max(h.out_need, d["need"])
                raise NeedRoom()
            raise bad("protocol breach by the %s's process (outputs that do not fit the room given)" % h.role, True)
        h.out_need = max(h.out_need, end - h.out_off)
        tensors = []
        for m, off in zip(metas, offs):
            t = arena_view(h.arena.bytes, off, m["shape"], m["dtype"])
            tensors.append(t.clone() if clone else t)
        return metas, tensors

    def check_inputs_arena(self, h, s, trial_name):
        """GPU: after a call, a host's inputs in the judge's memory are the
        inputs last drawn (self.pending): unmasked, and not written to."""
        tens = [m for m in self.last_inputs if m["kind"] == "tensor"]
        for i, (t, m) in enumerate(zip(self.pending, tens)):
            if not same_bits(t, arena_view(h.arena.bytes, m["offset"], m["shape"], m["dtype"])):
                raise Verdict("wrong_answer", "the candidate's input %d after %s at %s is not its input (written "
                              "to, or left masked: a host unmasks its inputs in place before forward)"
                              % (i, trial_name, self.shown(s)))

    def read_inputs_arena(self, h, inputs_msg):
        """GPU: a host's inputs as they are in the judge's memory after its
        call (a candidate that writes into them is wrong)."""
        return [arena_view(h.arena.bytes, m["offset"], m["shape"], m["dtype"]).clone()
                for m in inputs_msg if m["kind"] == "tensor"]

    def spot_check(self, ref, cand, expect, s, k, rng):
        """Every timed call on the CPU, after its pair: SPOT_ELEMENTS
        elements of each output, drawn now (after the call), read from both
        stopped hosts and compared. A candidate that skips the work of some
        timed calls (its output an earlier call's) is caught at the first
        it skips: with two checked calls a candidate that saw which call the
        judge had read skipped the rest (the red team: 11.37x against the
        same kernel's 0.47x)."""
        where = "timed call %d at %s" % (k + 1, self.shown(s))
        mine = self.parse_desc(cand, expect, where)
        theirs = self.parse_desc(ref, None, where)
        for i, ((dt, shape, stride, off, addr, numel), (_, _, rstride, roff, raddr, _)) in enumerate(zip(mine, theirs)):
            if numel == 0:
                continue
            dtype = dtype_of(dt)
            esize = torch.empty((), dtype=dtype).element_size()
            picks = sorted(rng.sample(range(numel), min(numel, SPOT_ELEMENTS)))
            wants, gots, where_at = bytearray(), bytearray(), []
            for flat in picks:
                idx, rest = [], flat
                for n in reversed(shape):
                    idx.append(rest % n)
                    rest //= n
                idx.reverse()
                where_at.append(idx)
                got = cand.read_mem(addr + (off + sum(a * b for a, b in zip(idx, stride))) * esize, esize)
                want = ref.read_mem(raddr + (roff + sum(a * b for a, b in zip(idx, rstride))) * esize, esize)
                if want is None:
                    raise Verdict("internal_error", "the reference's output %d could not be read (%s)" % (i, where))
                if got is None:
                    raise self.desc_error(cand, where)(
                        "output %d is described at memory that the candidate's process does not have" % i, True)
                wants += want
                gots += got
            w = torch.frombuffer(wants, dtype=torch.uint8).view(dtype)
            g = torch.frombuffer(gots, dtype=torch.uint8).view(dtype)
            ok, d = compare(w, g, self.tol)
            if not ok and "flat" in d:   # (the relative L2 bound is the full comparisons')
                raise Verdict("wrong_answer", "the output of a timed call is wrong: output %d at %s: expected %.9g, "
                              "got %s (%s)" % (i, where_at[d["flat"]], d["expected"], fmt_num(d["got"]), where),
                              stage="timing")
            # Every element within its tolerance, and yet the values far
            # off: zeros where the reference's values all lie below atol
            # (a red team's reading; attack zeros_below_atol.py).
            if dtype.is_floating_point or dtype.is_complex:
                far, med, bound = spot_far_off(w, g, self.tol, self.spot_scales[i] if i < len(self.spot_scales) else 0.0)
                if far:
                    raise Verdict("wrong_answer", "the output of a timed call is wrong: output %d at %s: the %d "
                                  "elements drawn are off by %s in the median (at most %s passes), though each is "
                                  "within atol %g + rtol %g of its value" % (
                                      i, where, len(picks), fmt_num(med), fmt_num(bound), self.tol["atol"],
                                      self.tol["rtol"]), stage="timing")

    def read_inputs_direct(self, h, inputs_msg, where):
        """A direct host's inputs as its process holds them now (its writes
        into them are copies of its own: Shared), at the addresses its bind
        reported."""
        addrs = h.bound_addresses
        tens = [m for m in inputs_msg if m["kind"] == "tensor"]
        if not isinstance(addrs, list) or len(addrs) != len(tens) or not all(type(a) is int and a >= 0 for a in addrs):
            raise Verdict("runtime_error", "protocol breach by the %s's process (where its inputs are)" % h.role)
        out = []
        for a, m in zip(addrs, tens):
            n = tensor_bytes(m["shape"], m["dtype"])
            raw = h.read_mem(a, n) if n else bytearray()
            if raw is None:
                raise Verdict("runtime_error", "protocol breach by the %s's process (its inputs are not where it "
                              "said, %s)" % (h.role, where))
            out.append(torch.frombuffer(raw, dtype=torch.uint8).view(dtype_of(m["dtype"])).view(m["shape"])
                       if n else torch.empty(m["shape"], dtype=dtype_of(m["dtype"])))
        return out

    def flush(self):
        if self.cuda:
            self.flush_buf.zero_()
            torch.cuda.synchronize()

    def probe(self):
        t0 = now_ns()
        self.probe_buf.add_(1.0)
        torch.cuda.synchronize()
        return now_ns() - t0

    def calibrate_probe(self):
        """The time of one probe on a GPU that only the judge uses (both
        hosts stopped, their work done)."""
        if not self.cuda:
            return 0.0
        for h in self.hosts:
            h.stop()
        return quantile([self.probe() for _ in range(NULL_CALLS)], 0.5)

    def drain(self, timeout):
        """What a host's reply left on the GPU, in ns. A host's reply says
        its work is done, but a host is the candidate's process: one that
        replies with its kernels still queued would have them run during
        the judge's flush or the other side's timed call (its own call
        measured as launches only, the reference's slowed). Contexts of two
        processes share the GPU by time slices, and a probe from the judge's
        context waits while another context's work runs: the judge probes
        until a probe is as fast as on an idle GPU and returns the time
        beyond one idle probe. That time also holds what any host's step
        costs the next probe (the GPU switching back to the judge's
        context): the reference's drains, an honest host's, measure it, and
        a candidate's step is charged its drain beyond the median of the
        reference's (time_shape)."""
        self.drain_timed_out = False
        if not self.cuda:
            return 0.0
        deadline = time.monotonic() + timeout
        total = 0
        while True:
            dt = self.probe()
            total += dt
            if dt <= 1.5 * self.idle_probe_ns + PROBE_SLACK_NS:
                break
            if time.monotonic() > deadline:
                self.drain_timed_out = True
                break
        return total - self.idle_probe_ns

    # -- the run
    def run(self):
        try:
            v, timings = self.judge()
        except Verdict as e:
            v, timings = e.v, None
        except HostGone as e:
            # A host that died or hung outside a guarded call: the
            # candidate's fault, or the judge's when it was the reference.
            # (Whose host it was, not what the message says: a candidate's
            # own violation line naming "the reference's" path made its
            # death kevo's fault.)
            if e.role == "reference":
                v = {"status": "internal_error", "stage": "correctness", "message": e.why, "feedback": e.why}
            else:
                v = {"status": e.status, "stage": "correctness", "message": e.why, "feedback": e.why}
            timings = None
        except Exception:
            v, timings = {"status": "internal_error", "stage": "correctness",
                          "message": "the torch judge failed: " + traceback.format_exc().strip().splitlines()[-1],
                          "feedback": cut(traceback.format_exc())}, None
        try:
            if self.cuda and v["status"] == "internal_error":
                # The judge forked ahead done with its set-up first: its
                # allocations would move the free memory the blame reads.
                self.wait_for_next()
                v = self.blame_memory(v)
        finally:
            # Reaped before the verdict goes out: the next judgement must
            # not find their device memory taken (the GPU red team: a
            # candidate that took the free memory before its end failed the
            # next judgement's allocations).
            for h in self.hosts + self.trusted:
                h.kill()
            for h in self.hosts + self.trusted:
                h.reap()
        if self.device_name:
            v["device"] = self.device_name
        if os.environ.get("KEVO_TORCH_JUDGE_PHASES"):
            self.phases.mark("end")
            self.phases.at["end"] = time.monotonic()
            write_all(2, (self.phases.line() + "\n").encode())
        if v["status"] not in ("correct", "internal_error") and self.at_shape is not None \
                and self.at_shape["kind"] == "hidden":
            # The failure was at a hidden shape: kevo then gives the prompt
            # nothing the candidate wrote or computed there (its traceback
            # and values could spell out the sizes); the message stays for
            # the lineage.
            v["failed_shape"] = self.at_shape["label"]
            v["feedback"] = ""
        elif v["status"] not in ("correct", "internal_error", "forbidden") and self.last_hidden:
            # Later (at a drawn shape, in the timing) the same, whatever the
            # failure (but `forbidden`, whose message is kevo's: the
            # operation it used): what the candidate wrote or computed could hold the
            # hidden sizes it saw (the red team recorded them and raised
            # them at a drawn shape: echo_hidden_later; red team 22 put one
            # into a wrong value, which the mismatch quotes:
            # wrong_after_hidden). The verdict names the last hidden shape
            # that ran, so that kevo's feedback withholds the candidate's
            # text and values as for a failure there; the message (the
            # lineage) says where it failed.
            v["failed_shape"] = self.last_hidden
            v["feedback"] = ""
            v["message"] += " (after the hidden shapes ran: the feedback withholds what the candidate wrote)"
        if v["status"] == "correct" or v["status"] == "wrong_answer":
            v.setdefault("max_abs_error", finite_or_text(self.max_abs))
            v.setdefault("rel_l2_error", finite_or_text(self.max_rel))
        if v["status"] == "internal_error":
            # The judge's own failure (or the task's): not a verdict an
            # evaluator may give; kevo records internal_error.
            self.emit({"event": "fatal", "message": cut(v["message"] + "\n" + v.get("feedback", ""), 1800)})
            return
        line = {"event": "result", "verdict": v}
        if timings is not None:
            line["shape_timings"] = timings
        if self.isolation:
            line["isolation"] = self.isolation
        self.emit(line)

    device_name = ""

    def blame_memory(self, v):
        """GPU: a judgement that failed for want of device memory, the
        reference's or the judge's (kevo's fault as it stands), while the
        candidate's process held memory: the judge kills that process, and
        when that frees OOM_BLAME_BYTES or more the verdict is the
        candidate's memory_limit (attack native_fill_memory: a candidate
        that took the GPU's free memory made the reference's next
        allocation fail, internal_error, and its own failure no verdict)."""
        text = (v.get("message", "") + "\n" + v.get("feedback", "")).lower()
        cand = next((h for h in self.hosts if h.role == "candidate"), None)
        # (Libraries name it their own way: cuBLAS and cuDNN fail to make a
        # handle, or to allocate, when the device's memory is gone.)
        if cand is None or not any(w in text for w in OOM_WORDS):
            return v
        # What an honest candidate's process holds: its context, the
        # judge's keystream buffer, its allocator's poisoned blocks and
        # its own tensors, all of a size with its inputs and outputs (its
        # memory of the judge's holds one of each): blamed only beyond it.
        honest = OOM_BLAME_BYTES + 8 * (cand.arena.size if cand.arena is not None else 0)
        try:
            torch.cuda.synchronize()
            free0 = torch.cuda.mem_get_info()[0]
            cand.reap()
            free1, total = torch.cuda.mem_get_info()
            for _ in range(20):   # (up to 1 s for the driver to take it back)
                if free1 - free0 >= honest:
                    break
                time.sleep(0.05)
                free1, total = torch.cuda.mem_get_info()
        except Exception:
            return v
        freed = free1 - free0
        if freed < honest:
            return v
        return {"status": "memory_limit", "stage": v.get("stage", "correctness"),
                "message": "the GPU ran out of memory while the candidate's process held %.1f GiB of its %.1f GiB "
                           "(freed when the judge ended it): %s" % (freed / 2 ** 30, total / 2 ** 30,
                                                                   last_line(v.get("message", ""))),
                "feedback": "the candidate's process held %.1f GiB of device memory, which left too little for "
                            "the reference or the judge; a candidate may not hold memory it does not need"
                            % (freed / 2 ** 30)}

    def judge(self):
        program = None
        if self.mode in ("judge", "self_check"):
            program = self.candidate_program()
        elif self.mode == "baseline":
            # torch.compile(Model) in the candidate's place; without compile,
            # a second eager Model (eager is then timed against itself).
            compiled = self.opts.get("compile", True)
            program = {"kind": "reference", "path": self.info["reference"], "class": "Model", "build": None,
                       "display": "torch.compile(Model)" if compiled else "Model",
                       "role": "compiled" if compiled else "eager"}
        # Hosts first: forked before this process touches the GPU. The
        # candidate's was forked before the request was read (run_request):
        # it holds nothing of it, its hidden and drawn shapes above all.
        spare, self.in_mem = self.spare or (None, Shared("kevo-inputs"))
        ref_prog = {"kind": "reference", "path": self.info["reference"], "display": "the reference", "class": "Model",
                    "build": None}
        cand = None
        role = (program or {}).get("role", "candidate")
        if program is not None and role == "candidate" and spare is not None:
            cand, spare = spare, None
        elif program is not None:
            # torch.compile's baseline (trusted code, not sandboxed; kevo
            # measures baselines with --baselines, a judge of its own), or
            # no spare: forked now, which a process that has used CUDA
            # cannot do.
            if self.gpu is not None:
                if spare is not None:
                    spare.kill()
                raise Verdict("internal_error", "this judge made its GPU set-up before its request and cannot fork "
                              "a %s host now (baselines are measured with --baselines)" % role)
            cand = spawn_host(role, dict(self.opts, isolate=self.opts.get("isolate") and role == "candidate"),
                              self.in_mem)
        if spare is not None:
            spare.kill()
        if cand is not None:
            self.hosts.append(cand)
            self.isolation = cand.isolation
            if not self.cuda:
                cand.send_program(program)
        ref = self.trusted.pop(0) if self.trusted else spawn_host("reference", dict(self.opts, isolate=False),
                                                                     self.in_mem)
        for h in self.trusted:
            h.kill()
            h.reap()
        self.trusted = []
        self.hosts.append(ref)
        ref.send_program(ref_prog)
        self.phases.mark("hosts")
        self.device = torch.device("cuda", 0) if self.cuda else torch.device("cpu")
        if self.cuda:
            for h in self.hosts:
                h.spin_s = JUDGE_SPIN_S
                h.masked = True
            # Made before the request when this judge was forked ahead; now
            # otherwise (every host is forked by now).
            kit = self.gpu or GpuKit()
            self.flush_buf, self.probe_buf = kit.flush_buf, kit.probe_buf
            self.mask_gen, self.mask_kernel, self.device_name = kit.mask_gen, kit.mask_kernel, kit.device_name
            # The idle probe, measured before the candidate's program is
            # sent: no code of the candidate's has run yet, so no kernel of
            # it can be resident to slow these probes (and so loosen every
            # later check of an idle GPU: drain, idle_check).
            self.idle_probe_ns = quantile([self.probe() for _ in range(NULL_CALLS)], 0.5)
            if cand is not None:
                cand.send_program(program)
            self.phases.mark("gpu_setup")
        pin_flags(self.cuda)
        self.load_reference()
        self.phases.mark("reference_module")
        self.stage("correctness")
        for h in self.hosts:
            self.wait_ready(h)
        self.phases.mark("programs_loaded")
        if self.mode == "null":
            return self.judge_null(ref), None
        if self.mode == "baseline":
            return self.baseline(ref, cand), None
        seed_exempt = self.mode == "self_check" or program["kind"] == "reference" or self.is_seed(program)
        # (No task operation to forbid: nothing to record.)
        self.check_ops_enabled = not seed_exempt and bool(self.info["forbid_reference_ops"])
        self.correctness(ref, cand, ("visible", "drawn"))
        self.phases.mark("correctness")
        timings = None
        if self.req.get("timing"):
            self.stage("timing")
            timings = self.timing(ref, cand)
            self.phases.mark("timing")
        if self.shapes(("hidden",)):
            self.stage("correctness")
            self.correctness(ref, cand, ("hidden",))
            self.phases.mark("correctness_hidden")
        if timings is not None:
            sp = geomean([t["ref_median_ns"] / t["cand_median_ns"] for t in timings])
            msg = "correct; %.2fx the reference (eager PyTorch)" % sp
            unstable = [t["shape"] for t in timings if t.get("unstable")]
            v = {"status": "correct", "stage": "done", "message": msg, "speedup": sp,
                 "feedback": self.timing_feedback(timings)}
            if self.prime_notes:
                v["message"] += "; its primes took longer than the reference's (the same small kernel): " + \
                    ", ".join(self.prime_notes)
            if self.busy_notes:
                v["message"] += "; the GPU was busy with its work while its process was stopped (work queued to " \
                    "run by itself), charged to its calls: " + ", ".join(self.busy_notes)
            if self.floor_notes:
                v["message"] += "; its output copies took less than the reference's (the same bytes), charged up " \
                    "to them: " + ", ".join(self.floor_notes)
            if self.unmask_notes:
                v["message"] += "; its unmask of its inputs took less than the reference's (the same bytes), " \
                    "charged up to it: " + ", ".join(self.unmask_notes)
            if unstable:
                v["message"] += "; timing unstable on %s (%s, after a re-timing)" % (
                    ", ".join(unstable), unstable_rule(self.req["timing_options"]))
            if self.beside_setup is not None:
                v["message"] += "; timed beside the next judgement's set-up (not done after %g s of waiting)" % (
                    self.beside_setup)
            if self.req.get("profile") and program is not None and program["kind"] == "candidate":
                v.update(self.profile(program))
                self.phases.mark("profile")
            return v, timings
        return {"status": "correct", "stage": "correctness", "message": "correct (not timed)",
                "feedback": "correct on every shape and trial"}, None

    def profile(self, program):
        """ncu on the candidate's kernels at the first visible shape, in a
        sandbox of its own (kevo_torch_profile.py; docs/torch.md#profiler):
        {"profile_ncu_csv": ncu's raw page}, which kevo condenses, or
        {"profile": why there is none}. The verdict stands either way."""
        ncu = self.opts.get("ncu")
        if not self.cuda or not ncu:
            return {}
        seconds = min(float(self.opts.get("profile_seconds", 120.0)), self.left() - 5.0)
        if seconds < 10:
            return {"profile": "profiler: no time left in this judgement for ncu (%.0f s)" % max(0.0, seconds)}
        with open(program["path"], "r", encoding="utf-8", errors="replace") as f:
            source = f.read()
        with open(self.info["reference"], "r", encoding="utf-8", errors="replace") as f:
            reference = f.read()
        shape = self.shapes(["visible"])[0]
        fds, exts = [], []
        try:
            for e in program.get("extensions", []):
                fd = os.open(os.path.join(program["build"], e["path"]), os.O_RDONLY)
                fds.append(fd)
                exts.append(dict(e, fd=fd))
            spec = {"ncu": ncu, "python": sys.executable, "pyhost": self.opts.get("pyhost", ""),
                    "namespaces": self.opts.get("namespaces", True), "source": source,
                    "reference_source": reference, "extensions": exts, "dims": shape["dims"],
                    # A seed of its own: the target may write ncu's page,
                    # which the profile quotes (the judgement's seed is not
                    # for the prompt).
                    "seed": int.from_bytes(os.urandom(8), "little") >> 1, "device": "cuda"}
            import subprocess
            p = subprocess.Popen([sys.executable, "-s", os.path.join(HERE, "kevo_torch_profile.py"), "--launch"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 pass_fds=fds, start_new_session=True)
        except OSError as e:
            return {"profile": "profiler: could not start: %s" % (e.strerror or e)}
        finally:
            for fd in fds:
                os.close(fd)
        try:
            out, err = p.communicate(json.dumps(spec).encode(), timeout=seconds)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.communicate()
            return {"profile": "profiler: ncu did not finish within %.0f s (profile.wall_seconds)" % seconds}
        text = out.decode("utf-8", "replace")
        lines = text.splitlines()
        start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
        if p.returncode == 0 and start is not None:
            table = "\n".join(ln for ln in lines[start:] if not ln.startswith("=="))
            if len(table) > PROFILE_CSV_CAP:
                table = table[:PROFILE_CSV_CAP].rsplit("\n", 1)[0]   # whole rows only
            return {"profile_ncu_csv": table}
        said = [ln for ln in (err.decode("utf-8", "replace") + "\n" + text).splitlines()
                if ln.startswith(("==ERROR==", "==WARNING==", "kevo-profile:")) or "Error" in ln]
        return {"profile": "profiler: ncu exited %d without a report: %s" % (
            p.returncode, cut(" | ".join(said[-4:]) or last_line(err.decode("utf-8", "replace")), 400))}

    def wait_ready(self, h):
        limit = min(self.left(), SETUP_SECONDS)
        try:
            kind, msg = recv_kind(h.fd, time.monotonic() + limit)
        except TimeoutError:
            h.read_side_channel()
            # Before the candidate's code loads, a stall is the judge's
            # problem (its sandbox on this machine), not the candidate's.
            status = "timeout" if h.stage == "load" else "internal_error"
            where = "" if h.stage == "load" else (stalled_at(h.side) + blocked_in(h.pid)).strip("; ")
            h.kill()
            raise Verdict(status, "the %s's process did not get ready within %.0f s (its last set-up step: %s%s)"
                          % (h.role, limit, h.stage or "none", "; stalled in " + where if where else ""))
        except (EOFError, OSError, ValueError, RecursionError):
            why = h.death("loading the program")
            if h.role == "candidate" and h.stage in SETUP_STAGES:
                raise Verdict("internal_error", set_up_failed(h, why))
            raise Verdict("runtime_error", why)
        if not isinstance(msg, dict) or not isinstance(msg.get("error", ""), str) or \
                not isinstance(msg.get("isolation") or {}, dict) or \
                not isinstance((msg.get("isolation") or {}).get("notes", []), list) or \
                not flag_names(msg.get("flags_changed") or [], self.cuda):
            # The candidate's module can rewrite the host's code as it loads
            # (a list here crashed the judge into internal_error).
            h.kill()
            status = "runtime_error" if h.role == "candidate" else "internal_error"
            raise Verdict(status, "protocol breach by the %s's process (a ready message that is not an object)"
                          % h.role)
        if "error" in msg:
            status = "runtime_error" if h.role == "candidate" else "internal_error"
            h.read_side_channel()
            if h.role == "candidate" and h.stage in SETUP_STAGES:
                raise Verdict("internal_error", set_up_failed(h, last_line(msg["error"])), msg["error"])
            raise Verdict(status, last_line(msg["error"]), msg["error"])
        if msg.get("isolation"):
            merged = dict(h.isolation)
            merged.update({k: v for k, v in msg["isolation"].items() if k != "notes"})
            merged["notes"] = h.isolation.get("notes", []) + msg["isolation"].get("notes", [])
            h.isolation = merged
            if h.role == "candidate":
                self.isolation = merged
        if msg.get("flags_changed") and h.role == "candidate":
            raise Verdict("forbidden", "the candidate changed torch's numerics settings when it was loaded: %s"
                          % ", ".join(msg["flags_changed"]))

    # -- correctness
    @property
    def secret(self):
        if self._secret is None:
            if not self.hosts:
                raise RuntimeError("the judgement's secret was asked for before its hosts were forked")
            self._secret = os.urandom(16).hex()
        return self._secret

    def shapes(self, kinds):
        return [s for s in self.task["shapes"] if s["kind"] in kinds]

    def shown(self, s):
        return "a hidden shape" if s["kind"] == "hidden" else s["label"]

    @timed_part("init")
    def init_both(self, ref, cand, s, seed):
        self.set_sizes(s["dims"])
        init = self.init_inputs()
        msg = {"op": "init", "sizes": s["dims"], "init_inputs": init, "seed": seed}
        for h in (ref, cand):
            if h is not None:
                h.bound = None   # a host's init drops its inputs
        r = ref.request(msg, self.left())
        if "error" in r:
            raise Verdict("internal_error", "the reference's Model(*get_init_inputs()) failed at %s: %s" % (
                s["label"], last_line(r["error"])), r["error"])
        if cand is not None:
            c = cand.request(msg, self.left())
            if "error" in c:
                raise Verdict("memory_limit" if c.get("oom") else "runtime_error",
                              "ModelNew(*get_init_inputs()) raised at %s: %s" % (self.shown(s), last_line(c["error"])),
                              c["error"])

    @timed_part("run_ref")
    def run_ref(self, ref, inputs_msg, trial_name, s):
        for _ in range(2):
            r = self.put(ref, inputs_msg)
            if "error" in r:
                raise Verdict("internal_error", "the reference could not load its inputs: " + last_line(r["error"]),
                              r["error"])
            ok, _, err = ref.call(self.left(), "the reference's call", store=self.in_device_memory)
            if not ok:
                raise Verdict("internal_error", "the reference raised at %s %s: %s" % (
                    s["label"], trial_name, last_line(err["error"])), err["error"])
            where = "%s %s" % (s["label"], trial_name)
            try:
                metas, outs = (self.read_arena if self.in_device_memory else self.read_direct)(ref, None, where)
            except NeedRoom:
                continue   # its memory grown at the next put
            return {"outputs": metas}, outs
        raise Verdict("internal_error", "the reference's outputs did not fit the room it asked for (%s %s)"
                      % (s["label"], trial_name))

    @timed_part("run_cand")
    def run_cand(self, cand, inputs_msg, expect, poison_bytes, s, trial_name, check_inputs):
        """A correctness call: (outputs, the inputs as the host holds them
        after it when `check_inputs`, else None)."""
        if self.in_device_memory:
            cand.out_need = max(cand.out_need, layout(expect)[1])
        r = self.put(cand, inputs_msg, max(1, poison_bytes))
        if "error" in r:
            raise Verdict("memory_limit" if r.get("oom") else "runtime_error",
                          "the candidate's process could not load its inputs: " + last_line(r["error"]), r["error"])
        ok, _, err = cand.call(self.call_timeout, "a correctness call at %s %s" % (self.shown(s), trial_name),
                               record=self.check_ops_enabled, store=self.in_device_memory)
        if not ok:
            raise Verdict("memory_limit" if err.get("oom") else "runtime_error",
                          "forward raised at %s %s: %s" % (self.shown(s), trial_name, last_line(err["error"])),
                          err["error"])
        where = "at %s %s" % (self.shown(s), trial_name)
        if self.in_device_memory:
            got = self.read_arena(cand, expect, where)[1]
            return got, self.read_inputs_arena(cand, inputs_msg) if check_inputs else None
        got = self.read_direct(cand, expect, where)[1]
        return got, self.read_inputs_direct(cand, inputs_msg, where) if check_inputs else None

    @timed_part("compare")
    def check_outputs(self, want, got, s, trial_name):
        for i, (w, g) in enumerate(zip(want, got)):
            ok, d = compare(w, g, self.tol)
            self.max_abs = max(self.max_abs, d["max_abs"] if math.isfinite(d["max_abs"]) else 0.0)
            if math.isfinite(d["rel_l2"]):
                self.max_rel = max(self.max_rel, d["rel_l2"])
            if ok:
                continue
            where = "%s %s" % (self.shown(s), trial_name)
            if d.get("rel_over"):
                msg = "output %d differs from the reference at %s: relative L2 error %.3g over %.3g" % (
                    i, where, d["rel_l2"], self.tol["rel_l2"])
                mm = None
            else:
                msg = "output %d differs from the reference at %s: %s expected %.9g, got %s (%d elements wrong; " \
                      "max abs error %.3g)" % (i, where, d["index"], d["expected"], fmt_num(d["got"]), d["bad"], d["max_abs"])
                mm = {"arg": "output %d" % i, "shape": s["label"], "trial": trial_name, "flat_index": d["flat"],
                      "index": d["index"], "expected": finite_or_text(d["expected"]), "got": finite_or_text(d["got"])}
            extra = {"max_abs_error": finite_or_text(d["max_abs"]), "rel_l2_error": finite_or_text(d["rel_l2"])}
            if mm:
                extra["mismatch"] = mm
            raise Verdict("wrong_answer", msg, **extra)

    @timed_part("state")
    def check_state(self, cand, s, trial_name):
        st = cand.request({"op": "state"}, self.left())
        if "error" in st:
            raise Verdict("runtime_error", "the candidate's state could not be read: " + last_line(str(st["error"])))
        if not flag_names(st.get("flags_changed") or [], self.cuda) or not texts(st.get("params_changed") or []):
            raise Verdict("runtime_error", "protocol breach by the candidate's process (a state reply that is not "
                                           "lists of names, or names flags that torch does not have)")
        if st.get("flags_changed"):
            raise Verdict("forbidden", "the candidate changed torch's numerics settings: %s (at %s %s)" % (
                ", ".join(st["flags_changed"]), self.shown(s), trial_name))
        if st.get("params_changed"):
            raise Verdict("wrong_answer", "the candidate modified its parameters or buffers in forward: %s (at %s %s)"
                          % (", ".join(st["params_changed"][:5]), self.shown(s), trial_name))

    def correctness(self, ref, cand, kinds):
        """The trials on the shapes of `kinds`: the visible and drawn ones
        before the timing, the hidden ones after it (until then the
        candidate's process has seen no hidden size, so the times a correct
        verdict's feedback reports cannot depend on one)."""
        ops_checked = False
        inputs_msg = s = None
        self.call_timeout = min(self.left(), 60.0)
        for s in self.shapes(kinds):
            self.at_shape = s
            if s["kind"] == "hidden":
                self.last_hidden = s["label"]
                # Before the candidate's model is made at this size: from
                # here on kevo withholds the candidate's output from the
                # feedback of any failure, a `forbidden` one included (its
                # message, kevo's, stays): forbidden_after_hidden.py printed
                # the hidden sizes and then called the reference's operation.
                self.emit({"event": "call", "shape": s["label"]})
            model_seed = derive_seed(self.seed, "model", s["label"])
            self.init_both(ref, cand, s, model_seed)
            trials = [("trial %d" % (t + 1), None) for t in range(self.trials)] + \
                [("stress " + x["name"], x) for x in self.info["stress"]]
            for trial, (trial_name, stress) in enumerate(trials):
                inputs = self.draw_inputs(derive_seed(self.secret, self.seed, s["label"], trial_name), stress)
                inputs_msg = self.write_inputs(inputs)
                rst, want = self.run_ref(ref, inputs_msg, trial_name, s)
                expect = rst["outputs"]
                poison_bytes = sum(tensor_bytes(m["shape"], m["dtype"]) for m in expect)
                got, back = self.run_cand(cand, inputs_msg, expect, poison_bytes, s, trial_name, True)
                self.check_outputs(want, got, s, trial_name)
                originals = [t for t in inputs if isinstance(t, torch.Tensor)]
                for i, (a, b) in enumerate(zip(originals, back)):
                    if a.shape != b.shape or not same_bits(a, b):
                        raise Verdict("wrong_answer", "the candidate modified its input %d (at %s %s)" % (
                            i, self.shown(s), trial_name))
                self.check_state(cand, s, trial_name)
                if trial == 0 and s["kind"] == "visible" and not ops_checked:
                    ops_checked = True
                    # Repeat consistency on the same inputs.
                    got2, _ = self.run_cand(cand, inputs_msg, expect, poison_bytes, s, "repeat-consistency", False)
                    self.check_outputs(want, got2, s, "repeat-consistency")
        # The operations of every correctness call (one recorded call, the
        # third of the first model, let a candidate that counted its calls
        # use the reference's own operation in all the others).
        if self.check_ops_enabled and s is not None:
            # Not a failure at a shape: a `forbidden` verdict keeps kevo's
            # finding after the hidden shapes too (their call events told
            # kevo to drop the candidate's output).
            self.at_shape = None
            self.check_ops(ref, cand, inputs_msg, s)
        self.at_shape = None

    @timed_part("check_ops")
    def check_ops(self, ref, cand, inputs_msg, s, during=""):
        """The reference's own operations (recorded once, on the inputs last
        written) against those of the candidate's recorded calls since the
        last check."""
        if self.forbid_ops is None:
            self.put(ref, inputs_msg)
            key, ref.key = ref.key, 0
            r = ref.request({"op": "ops", "key": key}, self.left())
            if "error" in r:
                raise Verdict("internal_error", "recording the reference's operations failed: " + last_line(r["error"]))
            self.forbid_ops = {op for op in r["ops"] if op not in NEUTRAL_OPS} - set(self.info["allow"])
        forbid = self.forbid_ops
        c = cand.request({"op": "recorded"}, self.left())
        if not forbid:
            return
        if "error" in c or not isinstance(c.get("ops"), list):
            raise Verdict("runtime_error", "the candidate's process did not report its recorded operations")
        used = sorted(set(str(o) for o in c["ops"]) & forbid)
        if used:
            allowed = sorted(self.info["allow"])
            raise Verdict("forbidden", "the candidate calls %s, the reference's own operation%s that this task asks "
                          "to replace%s%s" % (", ".join(used), "s" if len(used) > 1 else "",
                                             " (it allows: %s)" % ", ".join(allowed) if allowed else "", during))

    # -- null candidates (conformance)
    def judge_null(self, ref):
        kind = self.req.get("null_kind")
        for s in self.shapes(("visible", "hidden", "drawn")):
            model_seed = derive_seed(self.seed, "model", s["label"])
            self.init_both(ref, None, s, model_seed)
            for trial in range(self.trials):
                trial_name = "trial %d" % (trial + 1)
                inputs = self.draw_inputs(derive_seed(self.seed, s["label"], trial))
                inputs_msg = self.write_inputs(inputs)
                _, want = self.run_ref(ref, inputs_msg, trial_name, s)
                if kind == "zeros":
                    got = [torch.zeros_like(w) for w in want]
                elif kind == "copy":
                    first = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
                    got = [copy_into(first, w) for w in want]
                else:
                    other = self.draw_inputs(derive_seed(self.seed ^ 0x5EED, s["label"], trial))
                    _, got = self.run_ref(ref, self.write_inputs(other), trial_name, s)
                try:
                    self.check_outputs(want, got, s, trial_name)
                except Verdict as e:
                    return e.v
        return {"status": "correct", "stage": "correctness", "message": "the null candidate %s matches the reference"
                % kind, "feedback": ""}

    # -- torch eager and torch.compile (docs/torch.md#baselines)
    def baseline(self, ref, cand):
        self.call_timeout = min(self.left(), 900.0)
        check = "ok"
        compile_s = None
        for s in self.shapes(("visible",)):
            self.init_both(ref, cand, s, derive_seed(self.seed, "model", s["label"]))
            inputs_msg = self.write_inputs(self.draw_inputs(derive_seed(self.seed, s["label"], "baseline")))
            rst, want = self.run_ref(ref, inputs_msg, "trial 1", s)
            if self.in_device_memory:
                cand.out_need = max(cand.out_need, layout(rst["outputs"])[1])
            self.put(cand, inputs_msg)
            t0 = time.monotonic()
            ok, _, err = cand.call(self.call_timeout, "torch.compile's first call", store=self.in_device_memory)
            if compile_s is None:
                compile_s = time.monotonic() - t0
            if not ok:
                what = "torch.compile(Model)" if self.opts.get("compile", True) else "Model"
                return {"error": what + " raised: " + last_line(err["error"])}
            try:
                got = (self.read_arena if self.in_device_memory else self.read_direct)(
                    cand, rst["outputs"], "torch.compile's first call")[1]
                self.check_outputs(want, got, s, "trial 1")
            except Verdict as e:
                check = "wrong: " + e.v["message"]
        timings = self.timing(ref, cand)
        eager = {"median_ms": sum(t["ref_median_ns"] for t in timings) / 1e6,
                 "iqr_ms": sum(t["ref_iqr_ns"] for t in timings) / 1e6, "check": "ok",
                 "repeats": min(t["repeats"] for t in timings)}
        if not self.opts.get("compile", True):
            return {"eager": eager, "shape_timings": timings}
        comp = {"median_ms": sum(t["cand_median_ns"] for t in timings) / 1e6,
                "iqr_ms": sum(t["cand_iqr_ns"] for t in timings) / 1e6, "check": check,
                "repeats": min(t["repeats"] for t in timings), "compile_seconds": round(compile_s or 0.0, 3)}
        return {"eager": eager, "compile": comp, "shape_timings": timings}

    def run_baseline(self, compile_note=None):
        try:
            out = self.judge()[0]
            if compile_note and "error" not in out:
                out["compile"] = {"error": compile_note}
        except Verdict as e:
            out = {"error": e.v["message"]}
        except Exception:
            out = {"error": "the baseline run failed: " + traceback.format_exc().strip().splitlines()[-1]}
        finally:
            for h in self.hosts:
                h.kill()
        line = {"format": FORMAT, "baselines": out, "torch": torch.__version__, "device_name": self.device_name}
        write_all(1, (json.dumps(line) + "\n").encode())

    # -- timing
    def wait_for_next(self):
        """Before the timing: the judge forked ahead of this one (serve)
        done with its set-up (CUDA contexts made, kernels loaded), or gone,
        so that none of it runs beside the timed calls."""
        if self.next_ready is None:
            return
        # KEVO_TORCH_TEST_NEXT_READY_SECONDS: shorter, for
        # tests/torch/judge_ahead_test.py.
        limit = float(os.environ.get("KEVO_TORCH_TEST_NEXT_READY_SECONDS") or NEXT_READY_SECONDS)
        try:
            r, _, _ = select.select([self.next_ready], [], [], limit)
            if r:
                os.read(self.next_ready, 16)   # ready, or its end of file: gone
            else:
                # Not ready yet: timed beside it rather than stalled (a
                # stuck set-up would make this judgement a timeout), and
                # the verdict says so.
                self.beside_setup = limit
        except OSError:
            pass
        finally:
            os.close(self.next_ready)
            self.next_ready = None

    def timing(self, ref, cand):
        self.wait_for_next()
        self.phases.mark("wait_for_next")
        self.phases.at["timing"] = time.monotonic()
        topt = self.req["timing_options"]
        out = []
        self.timing_started = True
        self.phases.scope = "timing."
        for h in (ref, cand):
            h.null_ns = self.calibrate(h)
        self.phases.mark("calibrate")
        # The least of this and the calibration before the candidate's code
        # ran (judge): a candidate's kernel left resident would have made
        # this one slow, and every later probe's bound with it.
        self.idle_probe_ns = min(self.calibrate_probe(), self.idle_probe_ns or float("inf"))
        for s in self.shapes(("visible",)):
            result = self.time_shape(ref, cand, s, topt, 1)
            self.phases.mark("time_shape")
            if result.pop("unstable_now"):
                result = self.time_shape(ref, cand, s, topt, 2)
                self.phases.mark("time_shape_again")
                result["unstable"] = result.pop("unstable_now")
            charged = result.pop("prime_charged_ns", 0.0)
            if charged:
                self.prime_notes.append("%.1f us charged at %s" % (charged / 1e3, s["label"]))
            charged = result.pop("busy_charged_ns", 0.0)
            if charged:
                self.busy_notes.append("%.1f us at %s" % (charged / 1e3, s["label"]))
            charged = result.pop("floor_charged_ns", 0.0)
            if charged:
                self.floor_notes.append("%.1f us at %s" % (charged / 1e3, s["label"]))
            charged = result.pop("unmask_charged_ns", 0.0)
            if charged:
                self.unmask_notes.append("%.1f us at %s" % (charged / 1e3, s["label"]))
            detail = result.pop("detail", None)
            if detail:
                self.timing_details[s["label"]] = detail
            out.append(result)
        return out

    def turn(self, h, is_cand, s, during, call_name, record=False):
        """One side's turn in the timing loop (present() bound the host and
        wrote its inputs while it was stopped). CPU: its call, the clock
        from SIGCONT to its reply and until every thread of it has stopped
        again. GPU: the L2 flush, its prime, its call (the clock from the
        message to its reply), its output copy (h.store_ns), the drain,
        then the host stopped. Returns the prime's, the call's and the
        drain's ns; a call that raised is the candidate's verdict, or
        kevo's fault when it is the reference's."""
        timeout = self.call_timeout if is_cand else self.left()
        if self.direct:
            prime_ns = drain_ns = 0
            ok, ns, err = h.call(timeout, "%s at %s" % (call_name, self.shown(s)), record=record, stop=True)
        else:
            self.flush()
            prime_ns = h.prime(timeout)
            ok, ns, err = h.call(timeout, "%s at %s" % (call_name, self.shown(s)), record=record, store=True)
            # Stopped before the drain: a host left running could launch
            # work once the probes saw an idle GPU (the GPU red team).
            h.stop(wait=True)
            if h.reaped is not None:
                raise h.gone(h.death("%s at %s" % (call_name, self.shown(s))))
            drain_ns = self.drain(timeout)
        if not ok and not is_cand:
            raise Verdict("internal_error", "the reference raised during %s: %s" % (during, last_line(err["error"])),
                          stage="timing")
        if not ok:
            raise Verdict("memory_limit" if err.get("oom") else "runtime_error", "forward raised during %s at %s: %s"
                          % (during, self.shown(s), last_line(err["error"])), err["error"], stage="timing")
        return prime_ns, ns, drain_ns

    def calibrate(self, h):
        # The other host stopped first: a candidate left running (its last
        # step a request) spun threads while the reference's null calls
        # were measured (the red team's null_spin; no gain measured, but the
        # one stretch of the timing where it ran unwatched).
        for other in self.hosts:
            if other is not h:
                other.stop(wait=self.direct)
        samples = []
        for _ in range(NULL_CALLS):
            samples.append(h.null_call(self.left(), stop=self.direct))
        h.stop()
        # The lower quartile, and (time_shape) the least over calibrations:
        # what is subtracted from every timed call must not be inflated by
        # a moment of load. With the median of one calibration, a
        # calibration that ran while the host's cores were building other
        # candidates (70 ms instead of 1 ms on the H200, kevo eval over four
        # tasks) subtracted more than whole calls: the reference's median
        # became 1 ns and honest candidates "0.00x" (or the candidate's
        # 7 us against 150 us).
        return quantile(samples, 0.25)

    def time_shape(self, ref, cand, s, topt, attempt):
        model_seed = derive_seed(self.seed, "model", s["label"])
        self.init_both(ref, cand, s, model_seed)
        warm = max(1, int(topt["warmup"]))
        inputs_msg = self.write_inputs(self.draw_inputs(derive_seed(self.secret, self.seed, s["label"], "warm", attempt)))
        rst, warm_outs = self.run_ref(ref, inputs_msg, "warm-up", s)
        expect = rst["outputs"]
        # The scale of the reference's values, for the spot checks' bound
        # (CPU: on the GPU every timed call is compared in full).
        self.spot_scales = [] if self.in_device_memory else [
            rms_of(o) if o.dtype.is_floating_point or o.dtype.is_complex else 0.0 for o in warm_outs]
        # Warm-up (untimed): whole pairs as the loop below makes them (fresh
        # inputs drawn and written, each side flushed, loaded, called and
        # drained), so that what a pair costs sizes the loop to
        # budget_seconds. Sized by the calls alone, the loop took 5-10 times
        # its budget where drawing and copying the inputs cost more than the
        # calls (on the H200, 370-400 pairs of about 12 ms for a 0.5 s
        # budget: most of a candidate's 10 s of judging).
        if self.in_device_memory:
            cand.out_need = max(cand.out_need, layout(expect)[1])
        # The least pair: the first pays first-call costs (on the H200 the
        # mean of two sized the loop to about half its budget, too few
        # pairs to know a median to 5%, and the shape was timed again).
        pairs = []
        for w in range(warm):
            t0 = time.monotonic()
            self.present((ref, cand), self.draw_inputs(
                derive_seed(self.secret, self.seed, s["label"], "warm", attempt, w)))
            for h in (ref, cand):
                self.turn(h, h is cand, s, "the warm-up", "a warm-up call")
            pairs.append(time.monotonic() - t0)
        per_pair = max(1e-4, min(pairs))
        self.drain(self.call_timeout)   # nothing of the warm-up runs into the first timed step
        for h in (ref, cand):
            h.null_ns = min(h.null_ns, self.calibrate(h))   # calibrate: the least of two moments
        budget = float(topt["budget_seconds"]) * attempt

        def pairs_for(seconds_per_pair):
            return max(2, int(min(max(int(topt["min_repeats"]) * attempt, budget / seconds_per_pair),
                                  int(topt["max_repeats"]) * attempt)))

        n = pairs_for(per_pair)
        # The warm-up calls are the candidate's and unchecked: one that was
        # slow only there cut the loop to min_repeats pairs, a noisier median
        # (attack steers_warmup.py). When the timed pairs, which the
        # candidate pays for, show the warm-up to have been more than half
        # again slower, the loop is lengthened once to what they fit in the
        # budget (its last pair checked as the last always is).
        lengthened = False
        pair_s = []
        rng = random.Random(derive_seed(self.secret, self.seed, "check", s["label"], attempt))
        checked = {n - 1, rng.randrange(0, n - 1)}
        spot_rng = random.Random(derive_seed(self.secret, self.seed, "spot", s["label"], attempt))
        # One more candidate call, at a random place in the loop and made as
        # the timed ones are (its own fresh inputs), has its operations
        # recorded: a candidate that tells its correctness calls from the
        # timed ones (by counting models or calls) may use the reference's
        # own operation only where nothing records. Its time is not used.
        # One in each stretch of RECORD_STRIDE pairs (at a random place in
        # it): a candidate that used the reference's operation in the later
        # part of the loop (counting its calls), where one recorded call
        # fell less than half the time, is caught wherever that part spans
        # a stretch (counts_then_reference_op.py).
        recording = self.check_ops_enabled and cand is not None
        recorded = record_points(rng, 0, n) if recording else set()
        cand_ns, ref_ns = [], []
        cand_prime, ref_prime = [], []
        drains = {"ref_call": [], "cand_call": []}
        cand_store, ref_store = [], []
        ref_unmask, cand_unmask = [], []
        busied = []
        poison_bytes = sum(tensor_bytes(m["shape"], m["dtype"]) for m in expect)
        k = -1
        while True:
            k += 1
            if k == n and not lengthened:
                lengthened = True
                more = pairs_for(max(1e-4, quantile(pair_s, 0.5)))
                if more * 2 > n * 3:
                    # The lengthened part gets a recorded call of its own:
                    # a candidate that knew how many pairs were planned
                    # (min_repeats, after its slow warm-up) used the
                    # reference's operation only past them, where the
                    # recorded call never fell (steers_then_reference_op.py:
                    # correct at 0.99x against the honest 0.47x).
                    if recording:
                        recorded |= record_points(rng, n, more)
                    # And a full comparison at a random place (CPU; on the
                    # GPU every pair is compared): a candidate that knew
                    # where the added pairs lay skimped on all but the last,
                    # which the spot checks let through where the error was
                    # within each element's tolerance (steers_then_skimps.py;
                    # the red team's finding).
                    if more - 1 > n:
                        checked.add(rng.randrange(n, more - 1))
                    n = more
                    checked.add(n - 1)
            if k >= n:
                break
            if k in recorded:
                # Fresh inputs for each (inputs seen before would tell it).
                seed = derive_seed(self.secret, self.seed, s["label"], "record", attempt, k)
                self.present((cand,), self.draw_inputs(seed), poison_bytes)
                self.turn(cand, True, s, "timing", "a timed call", record=True)
            # A pair's time as a warm-up pair's was measured: drawing its
            # inputs, writing them, both turns (not the recorded call).
            t_pair = time.monotonic()
            inputs = self.draw_inputs(derive_seed(self.secret, self.seed, s["label"], "time", attempt, k))
            # Fresh inputs for every pair, written while both hosts are
            # stopped (present): no step of a host's but its timed call (on
            # the GPU, and the prime before it) sees them. Every timed call
            # is poisoned alike (GPU: its output region and the allocator's
            # free blocks), checked or not.
            busy = self.present((ref, cand), inputs, poison_bytes)
            # Each side in turn (random order). GPU: the L2 flush (the
            # judge's context), its prime, its call, its output copy into
            # the judge's memory, then the judge waits for what the host
            # left on the GPU when it replied (drain), so that no work of
            # one side runs in the other's measurement; the candidate is
            # charged its drains and output copies beyond the reference's
            # and its primes beyond the reference's (below). The prime sits
            # right before the call so that the call does not pay the GPU's
            # switch from the judge's context to the host's (on the H200
            # about 150 us, which both sides' calls paid when the judge
            # flushed right before them, pulling every speedup towards 1).
            order = (ref, cand) if rng.random() < 0.5 else (cand, ref)
            for h in order:
                prime_ns, ns, drain_ns = self.turn(h, h is cand, s, "timing", "a timed call")
                (ref_prime if h is ref else cand_prime).append(prime_ns)
                drains["cand_call" if h is cand else "ref_call"].append(drain_ns)
                if self.in_device_memory:
                    (ref_store if h is ref else cand_store).append(h.store_ns)
                    (ref_unmask if h is ref else cand_unmask).append(h.unmask_ns if h.masked else None)
                # The null round trip subtracted from a candidate's call is
                # never more than the reference's: the candidate's own null
                # replies are its process's to delay (a host whose null
                # calls were slowed had its timed calls shrunk to nothing).
                null = ref.null_ns if h is ref else min(cand.null_ns, ref.null_ns)
                (ref_ns if h is ref else cand_ns).append(max(1.0, ns - null))
            # The GPU's waits while every host was stopped (put_arena), the
            # reference's and the candidate's: charged below.
            busied.append((busy[ref], busy[cand]))
            # What the pair cost as a warm-up pair does (the checks below
            # are the judge's, and cost a compared pair 10 times the rest on
            # the CPU).
            pair_s.append(time.monotonic() - t_pair)
            try:
                if self.in_device_memory:
                    # GPU: every timed call's outputs, in the judge's memory,
                    # against the reference's for the same inputs.
                    where = "timed call %d at %s" % (k + 1, self.shown(s))
                    want = self.read_arena(ref, None, where, clone=False)[1]
                    got = self.read_arena(cand, expect, where, clone=False)[1]
                    self.check_outputs(want, got, s, "timed call %d" % (k + 1))
                    # And its inputs, unmasked in place as the host's code
                    # does in every call (a candidate that skipped the
                    # unmask and fused it into its kernel saved a pass over
                    # its inputs that the reference pays: the GPU red team).
                    self.check_inputs_arena(cand, s, "timed call %d" % (k + 1))
                elif k not in checked:
                    self.spot_check(ref, cand, expect, s, k, spot_rng)
                else:
                    # CPU: the outputs as they are in each stopped host's
                    # memory (no store step to do work in: native_store_fused).
                    want = self.read_direct(ref, None, "a timed call at %s" % s["label"])[1]
                    got = self.read_direct(cand, expect, "a timed call at %s" % self.shown(s))[1]
                    self.check_outputs(want, got, s, "timed call %d" % (k + 1))
            except NeedRoom:
                raise Verdict("internal_error", "the reference's outputs grew during the timing at %s" % s["label"],
                              stage="timing")
            except Verdict as e:
                e.v["stage"] = "timing"
                if e.v["status"] == "wrong_answer" and \
                        not e.v["message"].startswith(("the output of a timed call", "the candidate's input")):
                    e.v["message"] = "the output of a timed call is wrong: " + e.v["message"]
                raise
        if self.cuda:
            # The copy of the outputs into the judge's memory, as the
            # reference's calls took it (median), taken out of both sides'
            # calls (without_copy): with it in, a 22.5 us softmax measured
            # 284 us on the H200 and every short kernel's speedup was
            # pulled towards 1. A candidate's own copy step is in its time
            # and counts as no less than that median (store_floor), so work
            # moved into it is timed (native_store_fused) and a skipped one
            # saves nothing (native_arena_output); the reference's calls
            # get the same floor, so that an honest candidate is not
            # charged for the spread of its copy steps alone.
            ref_ns, cand_ns, floor = without_copy(ref_ns, cand_ns, ref_store, cand_store)
            # And each call's unmask step counts as no less than the
            # reference's median, on both sides (unmask_floor): a candidate
            # that answered at once and undid the mask in its own kernel
            # saved a pass and a synchronize that every reference call pays.
            ref_ns, cand_ns, unmask_charge = unmask_floor(ref_ns, cand_ns, ref_unmask, cand_unmask)
            # Each candidate call is charged its drain beyond the median of
            # the reference's (what an honest host's reply costs the next
            # probe). Every call's time on both sides runs to its outputs
            # copied into the judge's memory (Host.call), so no work can
            # hide after the call (a forward fused into an untimed copy
            # was correct at 1.14x against the honest 0.53x:
            # native_store_fused); a candidate's copy step shorter than the
            # reference's median is charged up to it (store_floor: a host
            # that skipped the step saved the host's checks and the copy,
            # native_arena_output).
            # A candidate's drain counts from no less than the reference's
            # shortest: one whose call left the GPU no switch back to pay
            # (its work done elsewhere) was credited the reference's whole
            # median drain, more than an honest call (the GPU red team).
            base = quantile(drains["ref_call"], 0.5)
            least = min(drains["ref_call"])
            cand_ns = [max(1.0, c + max(d, least) - base) for c, d in zip(cand_ns, drains["cand_call"])]
            # The waits for an idle GPU while every host was stopped, before
            # and after its inputs were written (put_arena): the median of
            # the candidate's beyond the median of the reference's, charged
            # to each of its calls, never credited (the first probe after a
            # host's bind pays the GPU's switch back to the judge's context
            # on both sides; a per-call credit paid a candidate whose bind
            # did no GPU work the reference's switch: the GPU red team).
            # Work of the candidate's queued to run by itself is waited for
            # there (the reference's code queues none).
            busy_charge = max(0.0, quantile([c for _, c in busied], 0.5) - quantile([r for r, _ in busied], 0.5))
            cand_ns = [c + busy_charge for c in cand_ns]
        cm, rm = quantile(cand_ns, 0.5), quantile(ref_ns, 0.5)
        ciqr = quantile(cand_ns, 0.75) - quantile(cand_ns, 0.25)
        riqr = quantile(ref_ns, 0.75) - quantile(ref_ns, 0.25)
        # GPU: a candidate whose primes take clearly longer than the
        # reference's (the same small kernel, in a pair moments apart) did
        # work there, where its inputs are already written (attack
        # native_prime_fused): the excess is charged to its calls
        # (prime_excess). CPU: no prime (zeros).
        charged = prime_excess([c - r for c, r in zip(cand_prime, ref_prime)])
        out = {"shape": s["label"], "cand_median_ns": cm + charged, "cand_iqr_ns": ciqr, "ref_median_ns": rm,
               "ref_iqr_ns": riqr, "repeats": n,
               "unstable_now": is_unstable([c + charged for c in cand_ns], ref_ns, topt)}
        if charged:
            out["prime_charged_ns"] = charged
        if self.cuda and busy_charge > STEP_FLOOR_NS:
            out["busy_charged_ns"] = busy_charge
        if self.cuda and quantile(floor, 0.5) > STEP_FLOOR_NS:
            out["floor_charged_ns"] = quantile(floor, 0.5)
        if self.cuda and quantile(unmask_charge, 0.5) > STEP_FLOOR_NS:
            out["unmask_charged_ns"] = quantile(unmask_charge, 0.5)
        if self.cuda:
            # What the GPU's steps around the calls took (medians, us): in
            # the feedback, not in the protocol's timings.
            ru = [u for u in ref_unmask if u is not None]
            cu = [u for u in cand_unmask if u is not None]
            out["detail"] = "taken out of both sides' calls: the reference's copy of the outputs %.1f us " \
                "(the candidate's %.1f us); still in them: the reference's message and unmask of its inputs " \
                "%s us (the candidate's %s us, counted as no less); primes before the calls (not in the " \
                "times): candidate %.1f us, reference %.1f us" % (
                    quantile(ref_store, 0.5) / 1e3, quantile(cand_store, 0.5) / 1e3,
                    "%.1f" % (quantile(ru, 0.5) / 1e3) if ru else "?",
                    "%.1f" % (quantile(cu, 0.5) / 1e3) if cu else "none reported",
                    quantile(cand_prime, 0.5) / 1e3, quantile(ref_prime, 0.5) / 1e3)
        if recorded:
            self.check_ops(ref, cand, self.last_inputs, s, " (in a call of the timing loop)")
        return out

    def timing_feedback(self, timings):
        lines = []
        for t in timings:
            lines.append("%s: candidate %.1f us, reference %.1f us (%.2fx), %d timed calls each" % (
                t["shape"], t["cand_median_ns"] / 1e3, t["ref_median_ns"] / 1e3,
                t["ref_median_ns"] / t["cand_median_ns"], t["repeats"]))
            if t["shape"] in self.timing_details:
                lines.append("  (" + self.timing_details[t["shape"]] + ")")
        return "\n".join(lines)


# Operations that move or make memory, never compute the task: a candidate
# may call them whatever the reference calls.
NEUTRAL_OPS = frozenset({
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::zeros", "aten::zeros_like", "aten::ones",
    "aten::ones_like", "aten::full", "aten::full_like", "aten::fill_", "aten::zero_", "aten::copy_", "aten::clone",
    "aten::contiguous", "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias",
    "aten::as_strided", "aten::expand", "aten::permute", "aten::transpose", "aten::t", "aten::unsqueeze",
    "aten::squeeze", "aten::slice", "aten::select", "aten::detach", "aten::alias", "aten::lift_fresh",
    "aten::_to_copy", "aten::to", "aten::resize_", "aten::set_", "aten::split", "aten::split_with_sizes",
    "aten::chunk", "aten::unbind", "aten::flatten", "aten::unflatten", "aten::new_empty", "aten::new_zeros",
    "aten::new_empty_strided", "aten::new_full", "aten::new_ones", "aten::narrow", "aten::view_as",
    "aten::expand_as", "aten::is_same_size", "aten::size", "aten::stride", "aten::numel", "aten::dim",
    "aten::_local_scalar_dense", "aten::item", "aten::arange", "aten::scalar_tensor", "aten::lift",
})


def same_bits(a, b):
    """Bitwise equality (NaN payloads and signed zeros count)."""
    if a.numel() == 0:
        return b.numel() == 0
    return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


def copy_into(src, like):
    n = like.numel()
    flat = src.reshape(-1).to(like.dtype) if src is not None else torch.zeros(1, dtype=like.dtype, device=like.device)
    reps = (n + flat.numel() - 1) // max(flat.numel(), 1)
    return flat.repeat(max(reps, 1))[:n].reshape(like.shape).to(like.device)


def texts(xs):
    """Whether xs is a list of strings (what a host reports as names)."""
    return isinstance(xs, list) and all(isinstance(x, str) for x in xs)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def last_line(text):
    """The last non-empty line (an exception's message)."""
    lines = [l for l in str(text).strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else "?"


def fmt_num(x):
    return repr(x) if math.isfinite(x) else str(x)


def finite_or_text(x):
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def v_json(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [v_json(x) for x in v]
    return float(v)


# ---- the zygote --------------------------------------------------------------------

def setup_zygote(args):
    global torch, PYHOST
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    index = os.environ.get("KEVO_DEVICE_INDEX", "0")
    if args.device == "cuda":
        if visible:
            ids = [v for v in visible.split(",") if v.strip()]
            i = int(index) if index.isdigit() else 0
            os.environ["CUDA_VISIBLE_DEVICES"] = ids[i] if i < len(ids) else ids[-1]
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = index
        # The driver's cache of compiled PTX (files under the user's home)
        # off for the judge and every host: the input mask's kernel is PTX
        # compiled in each process, and a candidate run without isolation,
        # as the same user, could otherwise leave a compiled image there
        # for the reference's unmask (the twelfth session's red team). It
        # is a few ms a process.
        os.environ["CUDA_CACHE_DISABLE"] = "1"
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(k, "1")
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    for k in ("TRITON_INTERPRET", "TRITON_ALWAYS_COMPILE", "TRITON_KERNEL_OVERRIDE", "TRITON_PTXAS_PATH",
              "TRITON_KERNEL_DUMP", "TORCH_COMPILE_DEBUG"):
        os.environ.pop(k, None)
    import torch as t
    torch = t
    global kv
    import kevo_torch_vmm
    kv = kevo_torch_vmm
    import torch.nn  # noqa: F401
    import torch.nn.functional  # noqa: F401
    # Not torch.utils.cpp_extension: its import asks for the CUDA device
    # count, which initialises the driver, and no fork of a process whose
    # driver is initialised can use the GPU. The candidate's host imports it.
    import importlib.machinery  # noqa: F401
    from torch.utils import _python_dispatch  # noqa: F401
    torch.set_num_threads(1)
    # The op recorder's first use imports hundreds of torch's modules
    # (dynamo, inductor, sympy): 5-9 s on the H200 with torch 2.11, paid by
    # every judgement's hosts when they recorded first (the candidate's as
    # it loaded, the reference's at the operations check). Used once here,
    # on the CPU, it is paid once per zygote, and every host is forked with
    # those modules (0.16-0.19 s for a host's first use on the GPU then;
    # CUDA stays uninitialised: tests/bench/torch_host_setup.py measures
    # both, and the check below refuses a zygote that touched the driver).
    warm = Recorder()
    with torch.no_grad(), warm.mode:
        t = torch.ones(8, 8)
        (torch.exp(t - t.max(dim=1, keepdim=True).values) / t.sum(dim=1, keepdim=True)).relu_()
        (t @ t).add_(1)
    # Triton's probes and modules, made here so that a sandboxed host's
    # first launch needs no exec and no new file (kevo_torch_triton; none of
    # it asks the driver: the check below holds for it too).
    if args.device == "cuda":
        kevo_torch_triton.warm_in_zygote(os.path.join(HERE, "kevo_triton_launch.c"))
    if args.device == "cuda" and torch.cuda.is_initialized():
        raise RuntimeError("CUDA was initialised in the zygote: its forks could not use the GPU")
    import warnings
    warnings.filterwarnings("ignore", message=".*multi-threaded, use of fork.*")
    global RAW_FORK
    RAW_FORK = args.device == "cuda" and fork_would_be_bad()
    if args.pyhost:
        PYHOST = load_pyhost(args.pyhost)
        PYHOST.kevo_pyhost_non_dumpable()
        buf = ctypes.create_string_buffer(512)
        PYHOST.kevo_pyhost_namespace_ids(buf, len(buf))
        return buf.value.decode()
    return ""


def load_pyhost(path):
    """libkevo_pyhost (the sandbox for candidate hosts) with its functions'
    types: the zygote's PYHOST."""
    lib = ctypes.PyDLL(path)
    for fn in ("kevo_pyhost_clone", "kevo_pyhost_harden", "kevo_pyhost_lockdown", "kevo_pyhost_non_dumpable",
               "kevo_pyhost_namespace_ids", "kevo_pyhost_syscall_name", "kevo_pyhost_mount_proc"):
        getattr(lib, fn).restype = ctypes.c_int
    lib.kevo_pyhost_syscall_name.argtypes = [ctypes.c_long, ctypes.c_char_p, ctypes.c_int]
    return lib


def syscall_name(nr):
    """The name of system call `nr` ("" when PYHOST does not know it)."""
    buf = ctypes.create_string_buffer(256)
    PYHOST.kevo_pyhost_syscall_name(nr, buf, len(buf))
    return buf.value.decode()


def fork_would_be_bad():
    """Whether a plain fork of this process could not use CUDA (torch's
    bad-fork mark)."""
    check = getattr(torch._C, "_cuda_isInBadFork", None)
    if check is None:
        return False
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, b"1" if check() else b"0")
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    bad = os.read(r, 1) == b"1"
    os.close(r)
    return bad


class RequestLines:
    """The engine's request lines from a descriptor, each with the moment
    the judge's clock for it starts: when it arrived, if this process was
    waiting for it; else when this process began to wait (it was written
    while this process was busy, importing torch or ending the previous
    judgement, and the engine's own clock for it runs since it was written).
    Counting from when the previous judgement ended charged a candidate the
    time the engine then spent elsewhere (building it, under load: a
    candidate's host judged out of time before it was ready)."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = bytearray()

    def next(self, waiting_since):
        """(line, started); line is b"" at the end of the input."""
        started = waiting_since
        while not self.buf.endswith(b"\n"):
            if not self.buf and not select.select([self.fd], [], [], 0)[0]:
                select.select([self.fd], [], [])   # nothing of it written yet: wait for it
                started = time.monotonic()
            # A byte at a time: nothing past this line is read (the next
            # request is the next judge's, forked before it reads).
            chunk = os.read(self.fd, 1)
            if not chunk:
                break
            self.buf += chunk
        line, self.buf = bytes(self.buf), bytearray()
        return line, started


def say_ready(ready_w):
    """To the judge before this one (its timing waits for it): this one's
    set-up is done, nothing of it runs on the GPU any more."""
    if ready_w is None:
        return
    try:
        os.write(ready_w, b"r")
    except OSError:
        pass
    os.close(ready_w)


def give_up_ahead(hosts, ready_w, done_w):
    """A judge forked ahead whose set-up failed: its hosts ended, it says
    so (b"F") and reads no request; the zygote forks another judge once the
    previous judgement has ended and reaped its hosts (serve)."""
    for h in hosts:
        h.kill()
        h.reap()
    say_ready(ready_w)
    os.write(done_w, b"F")


def run_request(opts, waiting_since, done_w, ready_w=None, next_ready=None):
    """One judgement, in a judge forked before anything of its request was
    read: it forks its hosts (blank: set up, waiting for their programs:
    the candidate's, sandboxed, and the reference's), makes its own GPU
    set-up (GpuKit), says so on
    ready_w, then reads the request (one line, a byte at a time, so that
    nothing of the next is read: the zygote never reads a request, and no
    host is forked from a process that did), then judges. The zygote forks
    the next judge as soon as this one has read its request (serve), so that
    all of this set-up (about a second on the H200: three CUDA contexts, the
    op recorder's first use, the judge's first kernels) runs while the
    previous judgement does, not before this one. Tells the zygote on
    done_w: b"E" at the end of the input, b"N" and the nonce once read,
    b"R" once answered; b"F" when it was forked ahead and a host's set-up
    failed (it then reads no request)."""
    in_mem = Shared("kevo-inputs")
    spare, trusted, failed, gpu = None, [], None, None
    t_setup = time.monotonic()
    try:
        spare = spawn_host("candidate", dict(opts, isolate=opts.get("isolate")), in_mem)
        trusted = [spawn_host("reference", dict(opts, isolate=False), in_mem)]
    except Exception as e:
        # Still read and answer the request (kevo's failure, named), so that
        # a host that cannot start never leaves the engine waiting.
        failed = "the candidate's host could not be started: %s" % e
    ahead = ready_w is not None

    def blank_hosts():
        return ([spare] if spare else []) + trusted
    if ahead and not failed and os.environ.get("KEVO_TORCH_TEST_FAIL_AHEAD_SETUP"):
        # For tests (tests/torch/judge_ahead_test.py): the set-up of a judge
        # forked ahead fails, as when the candidate judged beside it filled
        # the GPU's memory.
        spare.kill()
    if failed and ahead:
        # A judge forked ahead that cannot start its hosts: the one forked
        # after the previous judgement answers its request, naming the
        # failure.
        give_up_ahead(blank_hosts(), ready_w, done_w)
        return
    if not failed:
        # Every host set up but for its program (CUDA contexts made), then
        # the judge's own GPU set-up, all before ready_w. (Its GPU set-up
        # only once its hosts are ready: a judge forked ahead whose host
        # failed, the GPU's memory taken by the candidate judged beside it,
        # then ends without having held memory of its own there, which the
        # memory blame of that judgement would count.)
        ok = all(h.set_up(SETUP_SECONDS) for h in [spare] + trusted)
        if not ok and ahead:
            # A host whose set-up failed (the candidate of the judgement
            # running beside it filled the GPU's memory, say): the judge
            # forked after that judgement sets itself up then, and names
            # what fails if it fails again.
            give_up_ahead([spare] + trusted, ready_w, done_w)
            return
        if not ok:
            # Forked again (this judge has not touched the GPU); one that
            # fails again reports its set-up's last step when its program
            # is sent (Judge.wait_ready).
            for h in [spare] + trusted:
                h.kill()
                h.reap()
            spare, trusted = None, []
            try:
                spare = spawn_host("candidate", dict(opts, isolate=opts.get("isolate")), in_mem)
            except Exception as e:
                failed = "the candidate's host could not be started: %s" % e
        elif opts["device"] == "cuda":
            try:
                gpu = GpuKit()
            except Exception:
                gpu = None   # made after the request (Judge.judge)
    if ready_w is not None and os.environ.get("KEVO_TORCH_TEST_SLOW_SETUP"):
        # For tests (tests/torch/judge_ahead_test.py): a set-up that ends
        # well after the previous judgement's timing would have begun, had
        # it not waited for it.
        time.sleep(float(os.environ["KEVO_TORCH_TEST_SLOW_SETUP"]))
    setup_s = time.monotonic() - t_setup
    say_ready(ready_w)
    try:
        line, started = RequestLines(0).next(time.monotonic() if waiting_since is None else waiting_since)
    except BaseException:
        for h in blank_hosts():
            h.kill()
        raise
    if not line.strip():
        for h in blank_hosts():
            h.kill()
        os.write(done_w, b"E" if not line else b"S")
        return
    try:
        req = json.loads(line)
        nonce = req["nonce"]
        if not isinstance(nonce, str):
            raise TypeError()
    except (ValueError, KeyError, TypeError):
        for h in blank_hosts():
            h.kill()
        write_all(1, (json.dumps({"event": "fatal", "nonce": "", "message": "unreadable request"}) + "\n").encode())
        os.write(done_w, b"S")
        return
    os.write(done_w, b"N" + nonce.encode("utf-8", "replace").replace(b"\n", b" ") + b"\n")
    if failed:
        for h in blank_hosts():
            h.kill()
        write_all(1, (json.dumps({"nonce": nonce, "event": "fatal", "message": failed}) + "\n").encode())
        os.write(done_w, b"R")
        return
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    judge = Judge(req, opts, None, started, spare=(spare, in_mem), trusted=trusted, gpu=gpu, next_ready=next_ready)
    # The set-up made before the request (its hosts' and its GPU's), in the
    # phase line apart: with the judge forked ahead it ran beside the
    # previous judgement.
    judge.phases.add("setup_before_request", setup_s)
    judge.phases.at.update({"setup_start": t_setup, "setup_done": t_setup + setup_s, "request": time.monotonic()})
    judge.run()
    os.write(done_w, b"R")


def start_judge(opts, waiting_since, ready_w):
    """Forks a judge (run_request). It says on ready_w when it is set up;
    it gets the read end of a new pipe on which the judge forked after it
    will say so. Returns (pid, done_r, the new pipe's write end, for that
    next judge)."""
    done_r, done_w = os.pipe()
    next_r, next_w = os.pipe()
    try:
        pid = fork_clean()
    except OSError:
        for fd in (done_r, done_w, next_r, next_w):
            os.close(fd)
        raise
    if pid == 0:
        try:
            os.close(done_r)
            os.close(next_w)
            run_request(opts, waiting_since, done_w, ready_w, next_r)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(0)
    os.close(done_w)
    os.close(next_r)
    if ready_w is not None:
        os.close(ready_w)
    return pid, done_r, next_w


def read_until_request(done_r):
    """What a judge said on its done pipe until it read its request (b"N",
    the nonce and a line end) or said it read none (b"E", b"S"; b"F": its
    set-up ahead failed), or ended."""
    said = b""
    while not (said.startswith(b"N") and b"\n" in said) and not said.startswith((b"E", b"S", b"F")):
        chunk = os.read(done_r, 4096)
        if not chunk:
            break
        said += chunk
    return said


def serve(args):
    parent_ns = setup_zygote(args)
    opts = {"device": args.device, "isolate": bool(args.pyhost) and not (args.no_namespaces and args.no_seccomp),
            "namespaces": not args.no_namespaces, "seccomp": not args.no_seccomp, "parent_ns": parent_ns, "binds": [],
            "ncu": args.ncu, "profile_seconds": args.profile_seconds, "pyhost": args.pyhost}
    cur = start_judge(opts, PROCESS_T0, None)
    while True:
        pid, done_r, next_w = cur
        said = read_until_request(done_r)
        nxt = None
        if said.startswith(b"N") and b"\n" in said:
            # Its request read: the next judge is forked now and sets itself
            # up (hosts, CUDA contexts) while this one judges; this one's
            # timing waits until that is done (Judge.wait_for_next).
            try:
                nxt = start_judge(opts, None, next_w)
            except OSError:
                # No judge ahead (a fork that failed): the next one is forked
                # after this one ends, as below.
                os.close(next_w)
                nxt = None
        else:
            os.close(next_w)
        while True:
            chunk = os.read(done_r, 4096)
            if not chunk:
                break
            said += chunk
        os.close(done_r)
        _, status = os.waitpid(pid, 0)
        if said.startswith(b"E"):
            return 0
        if not said:
            # The judge ended before it read a request (killed, or its set-up
            # raised): the next one forks after a pause, not in a tight loop.
            time.sleep(0.2)
        if said.startswith(b"N") and not said.endswith(b"R"):
            nonce = said[1:].split(b"\n", 1)[0].decode("utf-8", "replace")
            why = ("signal %d" % os.WTERMSIG(status)) if os.WIFSIGNALED(status) else ("exit %d" % os.WEXITSTATUS(status))
            write_all(1, (json.dumps({"nonce": nonce, "event": "fatal",
                                      "message": "the torch judge process ended without a result (%s)" % why}) + "\n").encode())
        cur = nxt or start_judge(opts, time.monotonic(), None)


def probe(args):
    out = {"format": FORMAT, "python": sys.version.split()[0]}
    try:
        import torch as t
        out["torch"] = t.__version__
        # kevo remembers a probe that passed until this file changes (a
        # torch upgraded in place is probed again).
        out["torch_version_file"] = os.path.join(os.path.dirname(os.path.abspath(t.__file__)), "version.py")
        out["cuda"] = bool(t.cuda.is_available()) if args.device == "cuda" else False
        if out["cuda"]:
            out["device_name"] = t.cuda.get_device_name()
    except Exception as e:
        out["torch"] = None
        out["error"] = "import torch failed: %s" % e
    try:
        import triton
        out["triton"] = triton.__version__
    except Exception:
        out["triton"] = None
    try:
        out["mask"] = km.mode()
    except ValueError as e:
        out["error"] = str(e)
    print(json.dumps(out))
    return 0 if out.get("torch") and "error" not in out else 1


def main():
    ap = argparse.ArgumentParser(description="kevo's torch judge (docs/torch.md)")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--pyhost", default="", help="libkevo_pyhost.so (the sandbox for candidate hosts)")
    ap.add_argument("--no-seccomp", action="store_true")
    ap.add_argument("--no-namespaces", action="store_true")
    ap.add_argument("--ncu", default="", help="ncu, for the profiles that requests ask for (docs/torch.md#profiler)")
    ap.add_argument("--profile-seconds", type=float, default=120.0, help="one profile's limit")
    ap.add_argument("--baselines", action="store_true", help="time torch eager and torch.compile of the task in "
                    "the request on stdin (one JSON line out)")
    ap.add_argument("--no-compile", action="store_true", help="with --baselines: torch eager only")
    a = ap.parse_args()
    if a.probe:
        return probe(a)
    if a.baselines:
        parent_ns = setup_zygote(a)
        req = json.loads(sys.stdin.readline())
        # torch before 2.0 has no torch.compile: eager alone, and a note.
        no_compile = None if hasattr(torch, "compile") else "torch %s has no torch.compile" % torch.__version__
        opts = {"device": a.device, "isolate": False, "namespaces": False, "seccomp": False, "parent_ns": parent_ns,
                "binds": [], "compile": not a.no_compile and no_compile is None}
        Judge(req, opts, None).run_baseline(compile_note=None if a.no_compile else no_compile)
        return 0
    if a.serve:
        return serve(a)
    ap.error("--serve or --probe")


if __name__ == "__main__":
    sys.exit(main())
