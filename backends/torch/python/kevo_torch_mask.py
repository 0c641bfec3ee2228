"""The mask of a call's inputs on the GPU, in one pass (docs/torch.md, "on
the GPU"): the judge writes a host's inputs masked (every 64-bit word XORed
with a keystream drawn from a fresh key) and the host unmasks them in place
at the start of its call, inside the call's time on both sides.

The keystream is Philox4x32-10 (Salmon et al., "Parallel random numbers: as
easy as 1, 2, 3", SC 2011), keyed by the call's 64-bit key, its counter the
index of a pair of words: pair p's 128 bits are words 2p and 2p+1. One kernel
XORs it in as it goes, `dst[i] = src[i] ^ keystream[i]`: one read and one
write of the span, no keystream buffer. (The first design drew the keystream
into a buffer with torch's generator and XORed it in: two kernels and three
passes over the span; KEVO_TORCH_MASK=generator keeps it, for benchmarks
that compare the two, tests/bench/torch_unmask_cost.py.)

The kernel is PTX text made here and compiled by the driver in the process
(cuModuleLoadData), so that neither the judge nor a host needs a compiled
module or a compiler: a host loads it before its system-call policy. Its
launch goes through the driver too (ctypes, libcuda.so.1, which torch has
loaded in every process that uses the GPU), on torch's current stream: about
8 us of the CPU's on the H100 (a torch operation's launch from Python took
11 us there).

`philox4x32` and `keystream_words` are the same function in Python, for the
known-answer tests (tests/torch/mask_test.py, and on the GPU
tests/torch/vmm_test.py)."""
import ctypes
import os

M0, M1 = 0xD2511F53, 0xCD9E8D57   # Philox4x32's multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85   # its key schedule's increments
ROUNDS = 10
COUNTER_TAG = 0x6B65766F          # the counter's third word ("kevo"); the fourth is 0
THREADS = 256
MAX_BLOCKS = 8192                 # the kernel strides over pairs beyond these
MODES = ("fused", "generator")
U32 = 0xFFFFFFFF


def mode():
    """The mask's implementation, the same in the judge and its hosts (forks
    of one zygote that read it at import): "fused" (this module) unless
    KEVO_TORCH_MASK says "generator". Anything else is refused."""
    m = os.environ.get("KEVO_TORCH_MASK", "") or "fused"
    if m not in MODES:
        raise ValueError("KEVO_TORCH_MASK is %r; expected one of %s" % (m, ", ".join(MODES)))
    return m


def kernel_for_mode():
    """The mask's kernel, loaded into the current CUDA context, or None when
    KEVO_TORCH_MASK says "generator" (the judge and its hosts alike)."""
    return MaskKernel() if mode() == "fused" else None


# ---- the keystream in Python (the kernel's specification) -------------------------

def philox4x32(counter, key, rounds=ROUNDS):
    """Philox4x32 of a counter (4 words of 32 bits) under a key (2 words)."""
    c0, c1, c2, c3 = (int(v) & U32 for v in counter)
    k0, k1 = (int(v) & U32 for v in key)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + W0) & U32, (k1 + W1) & U32
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & U32, p1 & U32, ((p0 >> 32) ^ c3 ^ k1) & U32, p0 & U32
    return c0, c1, c2, c3


def keystream_words(key, first, count):
    """Words first..first+count-1 of a key's keystream, as unsigned 64-bit
    integers: word 2p is out0 | out1 << 32 of pair p, word 2p+1 out2 | out3
    << 32, the counter (p's low and high 32 bits, COUNTER_TAG, 0)."""
    key = int(key) & ((1 << 64) - 1)
    out = []
    for i in range(first, first + count):
        p = i >> 1
        o = philox4x32((p & U32, p >> 32, COUNTER_TAG, 0), (key & U32, key >> 32))
        out.append(o[0] | o[1] << 32 if i % 2 == 0 else o[2] | o[3] << 32)
    return out


# ---- the kernel --------------------------------------------------------------------

PTX_NEWEST = (9, 0)   # the newest target that PTX ISA 7.8 names


def ptx_target(major, minor):
    """The architecture the PTX names: the device's, or sm_90 for a newer
    one (PTX ISA 7.8 names none past it; the driver compiles PTX of an
    older target for any newer device, and a newer ISA would need a newer
    driver)."""
    return min((int(major), int(minor)), PTX_NEWEST)


def ptx(major, minor):
    """The kernel kevo_mask_xor(dst, src, n, key) as PTX for a device of
    compute capability major.minor (ptx_target), which the driver compiles
    in the process."""
    major, minor = ptx_target(major, minor)
    lines = [
        ".version 7.8",
        ".target sm_%d%d" % (major, minor),
        ".address_size 64",
        "",
        ".visible .entry kevo_mask_xor(.param .u64 p_dst, .param .u64 p_src, .param .u64 p_n, .param .u64 p_key)",
        "{",
        "  .reg .pred %q<3>;",
        "  .reg .b32 %c<4>;",
        "  .reg .b32 %k<2>;",
        "  .reg .b32 %h<2>;",
        "  .reg .b32 %l<2>;",
        "  .reg .b32 %t<6>;",
        "  .reg .b64 %d<20>;",
        "  ld.param.u64 %d0, [p_dst];",
        "  ld.param.u64 %d1, [p_src];",
        "  ld.param.u64 %d2, [p_n];",
        "  ld.param.u64 %d3, [p_key];",
        "  cvta.to.global.u64 %d0, %d0;",
        "  cvta.to.global.u64 %d1, %d1;",
        "  add.u64 %d4, %d2, 1;",
        "  shr.u64 %d4, %d4, 1;",              # pairs = (n + 1) / 2
        "  mov.u32 %t0, %ctaid.x;",
        "  mov.u32 %t1, %ntid.x;",
        "  mov.u32 %t2, %tid.x;",
        "  mov.u32 %t3, %nctaid.x;",
        "  mul.wide.u32 %d5, %t0, %t1;",
        "  cvt.u64.u32 %d6, %t2;",
        "  add.u64 %d5, %d5, %d6;",            # p, this thread's first pair
        "  mul.wide.u32 %d7, %t3, %t1;",       # the grid's stride, in pairs
        "LOOP:",
        "  setp.ge.u64 %q0, %d5, %d4;",
        "  @%q0 bra DONE;",
        "  mov.b64 {%c0, %c1}, %d5;",          # counter: p (low, high), the tag, 0
        "  mov.u32 %%c2, %d;" % COUNTER_TAG,
        "  mov.u32 %c3, 0;",
        "  mov.b64 {%k0, %k1}, %d3;",          # key: low, high
    ]
    for r in range(ROUNDS):
        if r:
            lines += ["  add.u32 %%k0, %%k0, %d;" % W0, "  add.u32 %%k1, %%k1, %d;" % W1]
        lines += [
            "  mul.hi.u32 %%h0, %%c0, %d;" % M0,
            "  mul.lo.u32 %%l0, %%c0, %d;" % M0,
            "  mul.hi.u32 %%h1, %%c2, %d;" % M1,
            "  mul.lo.u32 %%l1, %%c2, %d;" % M1,
            "  xor.b32 %t4, %h1, %c1;",
            "  xor.b32 %c0, %t4, %k0;",            # c0 = hi1 ^ c1 ^ k0
            "  mov.b32 %c1, %l1;",                 # c1 = lo1
            "  xor.b32 %t5, %h0, %c3;",
            "  xor.b32 %c2, %t5, %k1;",            # c2 = hi0 ^ c3 ^ k1
            "  mov.b32 %c3, %l0;",                 # c3 = lo0
        ]
    lines += [
        "  mov.b64 %d8, {%c0, %c1};",          # word 2p
        "  mov.b64 %d9, {%c2, %c3};",          # word 2p + 1
        "  shl.b64 %d10, %d5, 4;",             # the pair's byte offset
        "  add.u64 %d11, %d1, %d10;",
        "  add.u64 %d12, %d0, %d10;",
        "  shl.b64 %d13, %d5, 1;",
        "  add.u64 %d13, %d13, 1;",            # word 2p + 1 ...
        "  setp.lt.u64 %q1, %d13, %d2;",       # ... is in the span
        "  @%q1 bra PAIR;",
        "  ld.global.u64 %d14, [%d11];",
        "  xor.b64 %d14, %d14, %d8;",
        "  st.global.u64 [%d12], %d14;",
        "  bra NEXT;",
        "PAIR:",
        "  ld.global.v2.u64 {%d14, %d15}, [%d11];",
        "  xor.b64 %d14, %d14, %d8;",
        "  xor.b64 %d15, %d15, %d9;",
        "  st.global.v2.u64 [%d12], {%d14, %d15};",
        "NEXT:",
        "  add.u64 %d5, %d5, %d7;",
        "  bra LOOP;",
        "DONE:",
        "  ret;",
        "}",
        "",
    ]
    return "\n".join(lines)


class MaskKernel:
    """kevo_mask_xor loaded into the calling thread's current CUDA context
    (torch's, once torch has used the device), launched through the driver.
    Its arguments' storage is made once; a launch sets them and calls
    cuLaunchKernel (a few us of Python)."""

    def __init__(self):
        import torch
        import kevo_torch_vmm as kv
        major, minor = torch.cuda.get_device_capability()
        self.lib, self.check = kv.driver(), kv.check
        self.module = ctypes.c_void_p()
        image = ptx(major, minor).encode() + b"\0"
        self.check(self.lib.cuModuleLoadData(ctypes.byref(self.module), image),
                   "loading the input mask's kernel for sm_%d%d" % (major, minor))
        self.function = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(self.function), self.module, b"kevo_mask_xor"),
                   "finding kevo_mask_xor in the input mask's module")
        self.args = (ctypes.c_uint64 * 4)()
        base = ctypes.addressof(self.args)
        self.arg_ptrs = (ctypes.c_void_p * 4)(*[base + 8 * i for i in range(4)])
        # torch's current stream as a raw handle: torch.cuda.current_stream()
        # makes a Stream object, 9.2 us a call on the H100, which doubled the
        # launch; the raw getter (what Triton's launches use) does not.
        self.device_index = torch.cuda.current_device()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._stream = (lambda: raw(self.device_index)) if raw is not None else (
            lambda: torch.cuda.current_stream().cuda_stream)

    def xor(self, dst_ptr, src_ptr, nwords, key):
        """dst[i] = src[i] ^ keystream(key)[i] for the nwords 64-bit words at
        src (dst may be src), on torch's current stream; queued, not waited
        for. Both addresses must be 16-byte aligned (the pairs' loads)."""
        if nwords <= 0:
            return
        if dst_ptr % 16 or src_ptr % 16:
            raise ValueError("the input mask's spans must be 16-byte aligned (0x%x, 0x%x)" % (dst_ptr, src_ptr))
        pairs = (nwords + 1) // 2
        blocks = min(MAX_BLOCKS, (pairs + THREADS - 1) // THREADS)
        a = self.args
        a[0], a[1], a[2], a[3] = dst_ptr, src_ptr, nwords, int(key) & ((1 << 64) - 1)
        r = self.lib.cuLaunchKernel(self.function, blocks, 1, 1, THREADS, 1, 1, 0, self._stream(), self.arg_ptrs, None)
        if r:
            self.check(r, "launching the input mask's kernel")

