"""Triton candidates under kevo's sandbox (docs/torch.md#triton-candidates).

Triton compiles a kernel at its first launch: it runs `ptxas` on the PTX it
made, builds a C launcher for the kernel's signature with gcc, and keeps
every stage in files of its cache folder. A candidate's host may do none of
that under kevo's system-call policy (no exec, no file creation). So:

* **the zygote** (trusted, before any fork, no GPU) runs every probe Triton
  would otherwise run at a first launch (`ldconfig` for libcuda, `file` for
  the platform key, `ptxas --version` per architecture), builds and loads
  Triton's own `cuda_utils` module, builds and loads kevo's launcher
  (kevo_triton_launch.c: one module for every signature, for use in place
  of Triton's per-signature ones), and compiles one kernel of its own for no
  GPU, so that LLVM counts its signal handlers as installed before any
  fork, then takes them back (`warm_in_zygote`, `warm_compile`);
* **the candidate's host**, before the policy (`adapt_host`): Triton's
  cache lives in the process's memory (`MemoryCache`; the stages' "files"
  are read from it), and the `cubin` stage hands the PTX itself to the
  driver, which compiles it in the process (`cuModuleLoadData` takes PTX) in
  place of a `ptxas` run; kevo's launcher replaces Triton's there. The
  driver's own disk cache is off (`CUDA_CACHE_DISABLE`, set before the
  host's CUDA context).

All of it runs in the candidate's own process, which holds nothing of the
judge's: a candidate that changes any of it changes only what its own
kernels do, which the judge checks as it checks any kernel. The policy is
not loosened.
"""
import os
import pathlib
import sys

# Tested with Triton 3.6 (torch 2.11); another version is checked for the
# names used here and refused with the name that is missing.
SIGNATURE_CODES = {
    "constexpr": "-",
    "i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "l",
    "u1": "B", "u8": "B", "u16": "H", "u32": "I", "u64": "L",
    "fp16": "e", "bf16": "r", "fp32": "f", "f32": "f", "fp64": "d",
}

# Whether the zygote made Triton ready for sandboxed hosts, and if not, why.
STATE = {"ready": False, "why": "not prepared", "version": None}
_launch_module = None


def signature_codes(signature):
    """The launcher's codes for a kernel's signature (name -> type), tuples
    flattened in order; raises for what kevo's launcher cannot pass."""
    codes = []
    nested = False

    def walk(ty):
        nonlocal nested
        if isinstance(ty, tuple):
            nested = True
            for t in ty:
                walk(t)
            return
        if not isinstance(ty, str):
            raise RuntimeError("kevo's Triton launcher: an argument of type %r is not supported" % (ty,))
        if ty.startswith("*"):
            codes.append("p")
        elif ty in SIGNATURE_CODES:
            codes.append(SIGNATURE_CODES[ty])
        elif ty.startswith("tensordesc"):
            raise RuntimeError("kevo's Triton launcher: tensor descriptor arguments (%s) are not supported" % ty)
        else:
            raise RuntimeError("kevo's Triton launcher: an argument of type %s is not supported" % ty)

    for ty in signature.values():
        walk(ty)
    return "".join(codes), nested


def flatten_by(types, args):
    """The arguments in the order of signature_codes: a tuple argument
    flattened as its type is, anything else (a constexpr whose value is a
    tuple too) one item."""
    if len(types) != len(args):
        raise TypeError("the kernel takes %d arguments, %d were given" % (len(types), len(args)))
    out = []
    for ty, a in zip(types, args):
        if isinstance(ty, tuple):
            if not isinstance(a, (tuple, list)):
                raise TypeError("a tuple argument was given %r" % (a,))
            out.extend(flatten_by(list(ty), list(a)))
        else:
            out.append(a)
    return out


class KevoLauncher:
    """Triton's launcher interface (CudaLauncher in triton 3.6), served by
    kevo's one launcher module for every signature."""

    def __init__(self, src, metadata):
        self.signature = list(dict(src.signature).values())
        self.codes, self.nested = signature_codes(dict(src.signature))
        self.num_warps = int(metadata.num_warps)
        self.num_ctas = int(getattr(metadata, "num_ctas", 1))
        self.shared = int(metadata.shared)
        self.cooperative = bool(getattr(metadata, "launch_cooperative_grid", False))
        self.pdl = bool(getattr(metadata, "launch_pdl", False))
        self.global_scratch = (int(getattr(metadata, "global_scratch_size", 0) or 0),
                               int(getattr(metadata, "global_scratch_align", 1) or 1))
        self.profile_scratch = (int(getattr(metadata, "profile_scratch_size", 0) or 0),
                                int(getattr(metadata, "profile_scratch_align", 1) or 1))

    def __call__(self, gridX, gridY, gridZ, stream, function, _packed_metadata, launch_metadata, enter_hook,
                 exit_hook, *args):
        from triton.runtime import _allocation

        def scratch(size_align, allocator):
            size, align = size_align
            if size <= 0:
                return None
            return allocator.get()(gridX * gridY * gridZ * self.num_ctas * size, align, stream)

        if enter_hook is not None:
            enter_hook(launch_metadata)
        gs = scratch(self.global_scratch, _allocation._allocator)
        ps = scratch(self.profile_scratch, _allocation._profile_allocator)
        flat = tuple(flatten_by(self.signature, args)) if self.nested else args
        _launch_module.launch(gridX, gridY, gridZ, stream, function, self.num_warps, self.num_ctas, self.shared,
                              self.cooperative, self.pdl, gs, ps, self.codes, flat)
        if exit_hook is not None:
            exit_hook(launch_metadata)


# The zygote's one compile (warm_compile): a kernel of kevo's, for no GPU.
WARM_SOURCE = """import triton
import triton.language as tl


@triton.jit
def kevo_warm(x_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m, other=0.0)
    d = tl.where(m, x - tl.sum(x, axis=0) / n, 0.0)
    inv = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    e = tl.exp(d - tl.max(d, axis=0))
    tl.store(y_ptr + i, d * inv + e / tl.sum(e, axis=0), mask=m)
"""


def warm_compile():
    """One compile through every stage, for sm_90 without a GPU. Triton's
    LLVM installs its signal handlers (SIGSYS's among them) at a process's
    first compile; under the policy that rt_sigaction is a violation (seen
    on the H200: Triton candidates died of SIGSYS in their first call).
    Made here, LLVM counts them as installed in every fork and never
    installs them again; the dispositions before the compile are then put
    back (see below). It also loads LLVM's and MLIR's state once."""
    import linecache
    import types
    import triton
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget
    name = "kevo_triton_warm.py"
    linecache.cache[name] = (len(WARM_SOURCE), None, WARM_SOURCE.splitlines(True), name)
    mod = types.ModuleType("kevo_triton_warm")
    mod.__file__ = name
    exec(compile(WARM_SOURCE, name, "exec", dont_inherit=True), mod.__dict__)
    src = ASTSource(mod.kevo_warm, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "eps": "fp32",
                                    "BLOCK": "constexpr"}, {"BLOCK": 128})
    # A hit in Triton's cache folder compiles nothing, and LLVM's handlers
    # then come at the host's first compile: every zygote compiles. (On the
    # H200 only the first kevo run of a fresh machine had its Triton
    # candidates judged; every later one, whose zygote found the kernel in
    # the cache, had them die of SIGSYS: rt_sigaction, seen on the CPU.)
    from triton import knobs
    before = knobs.compilation.always_compile
    knobs.compilation.always_compile = True
    saved = _dispositions()
    try:
        triton.compile(src, target=GPUTarget("cuda", 90, 32))
    finally:
        knobs.compilation.always_compile = before
    # LLVM counts its handlers as installed from now on, in this process and
    # its forks, and never installs them again. The handlers themselves go:
    # on a crash one would put back every disposition it replaced, SIGSYS
    # among them, and under the policy that rt_sigaction is the violation
    # reported instead of the crash (a segfaulting extension would read
    # "rt_sigaction"). What was there before the compile comes back.
    changed = [sig for sig, raw in _dispositions().items() if _meaning(raw) != _meaning(saved[sig])]
    if SIGSYS not in changed:
        raise RuntimeError("the warm compile installed no SIGSYS handler (LLVM's): a host's first compile would")
    _restore(saved, changed)


SIGSYS = 31
_SIGACTION_BYTES = 256   # at least glibc's struct sigaction; read and written back whole


def _dispositions():
    """signal -> the raw bytes of its current struct sigaction (1-31)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    out = {}
    for sig in range(1, 32):
        if sig in (9, 19):   # SIGKILL, SIGSTOP
            continue
        buf = ctypes.create_string_buffer(_SIGACTION_BYTES)
        if libc.sigaction(sig, None, buf) == 0:
            out[sig] = buf.raw
    return out


def _meaning(raw):
    """What a struct sigaction says (glibc's x86_64 layout: the handler,
    the first 64 signals of the mask, the flags but SA_RESTORER); the rest of
    its bytes are not always written."""
    flags = int.from_bytes(raw[136:140], "little") & ~0x04000000   # SA_RESTORER: glibc's, on every set
    return raw[0:16] + flags.to_bytes(4, "little")


def _restore(saved, signals):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for sig in signals:
        buf = ctypes.create_string_buffer(saved[sig], _SIGACTION_BYTES)
        if libc.sigaction(sig, buf, None) != 0:
            raise OSError(ctypes.get_errno(), "sigaction(%d)" % sig)


def warm_in_zygote(launcher_source):
    """In the zygote: Triton's probes run and its modules built now, so that
    no candidate's first launch needs an exec or a new file. Returns STATE;
    never raises (a machine without Triton judges without it)."""
    global _launch_module
    try:
        import triton
        from triton import knobs
        from triton.runtime import build
        from triton.backends.nvidia import driver as nd
        from triton.backends.nvidia import compiler as nc
        STATE["version"] = triton.__version__
        for owner, name in ((nd, "CudaUtils"), (nd, "CudaLauncher"), (nd, "libcuda_dirs"), (nd, "include_dirs"),
                            (nc, "get_ptxas_version"), (build, "compile_module_from_src"),
                            (build, "platform_key"), (knobs.cache, "manager_class"),
                            (knobs.runtime, "add_stages_inspection_hook")):
            if not hasattr(owner, name):
                raise RuntimeError("triton %s has no %s.%s" % (triton.__version__, owner.__name__
                                                                 if hasattr(owner, "__name__") else "knobs", name))
        nd.libcuda_dirs()
        build.platform_key()
        _ = knobs.nvidia.ptxas
        # The ptxas version is asked per architecture (CUDABackend.hash);
        # the zygote does not know the device's and must not ask the driver.
        for arch in (70, 72, 75, 80, 86, 87, 89, 90):
            nc.get_ptxas_version(arch)
        for arch in (100, 101, 103, 110, 120, 121):
            try:
                nc.get_ptxas_version(arch)
            except Exception:
                pass
        nd.CudaUtils()
        # Made once here; a later CudaUtils() (every driver makes one)
        # keeps this one instead of looking in the cache folder again.
        nd.CudaUtils.__init__ = lambda self: None
        with open(launcher_source) as f:
            src = f.read()
        _launch_module = build.compile_module_from_src(src=src, name="kevo_triton_launch",
                                                       include_dirs=list(nd.include_dirs), library_dirs=[],
                                                       libraries=["dl"])
        warm_compile()
        STATE.update(ready=True, why="")
    except Exception as e:   # noqa: BLE001 - any failure means: no Triton here
        STATE.update(ready=False, why="%s: %s" % (type(e).__name__, e))
    return STATE


MEMORY_ROOT = "/kevo-triton-memory/"
_files = {}
_groups = {}


def _memory_cache_class():
    from triton.runtime.cache import CacheManager

    class MemoryCache(CacheManager):
        """Triton's compile cache in the process's memory: the host may
        create no file. Paths under MEMORY_ROOT name its entries."""

        def __init__(self, key, override=False, dump=False):
            self.key = key
            self.off = bool(override or dump)

        def _path(self, filename):
            return MEMORY_ROOT + self.key + "/" + filename

        def get_file(self, filename):
            p = self._path(filename)
            return p if not self.off and p in _files else None

        def put(self, data, filename, binary=True):
            if not isinstance(data, bytes):
                data = str(data)
            p = self._path(filename)
            _files[p] = data
            return p

        def get_group(self, filename):
            return None if self.off else _groups.get(self._path(filename))

        def put_group(self, filename, group):
            _groups[self._path(filename)] = dict(group)
            return self._path(filename)

    return MemoryCache


def _read_memory(path):
    s = os.fspath(path)
    if s.startswith(MEMORY_ROOT):
        return True, _files[s]
    return False, None


def _ptx_for_the_driver(backend, stages, options, language, capability):
    """The cubin stage: the PTX itself, for the driver to compile in the
    process (cuModuleLoadData takes a NUL-terminated PTX image)."""
    def ptx_image(src, metadata):
        return src.encode() + b"\0"
    stages["cubin"] = ptx_image


def adapt_host():
    """In the candidate's host, after its CUDA context and before the
    policy: Triton's cache in memory, PTX to the driver, the driver made."""
    if not STATE["ready"]:
        return STATE
    import triton
    from triton.backends.nvidia import driver as nd
    compile_in_memory()
    # kevo's launcher here only: the judge's and the baselines' processes
    # (torch.compile's kernels) keep Triton's own.
    nd.CudaLauncher = KevoLauncher
    # The driver object, its device queries and target, now: their first
    # use imports and probes.
    triton.runtime.driver.active.get_current_target()
    _load_ptx_compiler()
    return STATE


def adapt_host_or_say_why():
    """adapt_host, or (a failure here must not fail the host of a candidate
    that does not use Triton) False with STATE's reason set."""
    try:
        adapt_host()
        return STATE["ready"]
    except Exception as e:   # noqa: BLE001
        STATE.update(ready=False, why="the host's Triton set-up failed: %s: %s" % (type(e).__name__, e))
        return False


def _load_ptx_compiler():
    """The driver loads its PTX compiler (libnvidia-ptxjitcompiler) at the
    first PTX it is given: that happens now, while the machine's library
    folders are still there, not inside a candidate's first call. A PTX of
    the device's own architecture (8.0: CUDA 12.0 drivers and later)."""
    import ctypes
    import torch
    major, minor = torch.cuda.get_device_capability()
    ptx = (".version 8.0\n.target sm_%d%d\n.address_size 64\n.visible .entry kevo_ptx_probe() { ret; }\n"
           % (major, minor)).encode() + b"\0"
    cuda = ctypes.CDLL("libcuda.so.1")
    module = ctypes.c_void_p()
    r = cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(ptx))
    if r != 0:
        raise RuntimeError("the driver could not compile a PTX for sm_%d%d (CUDA error %d)" % (major, minor, r))
    cuda.cuModuleUnload(module)


def compile_in_memory():
    """Triton's compile with no file and no ptxas: its cache in memory (the
    stages' "files" read from it) and the cubin stage's PTX left to the
    driver (tests/torch/triton_compile_test.py runs this under the policy
    without a GPU)."""
    from triton import knobs
    knobs.cache.manager_class = _memory_cache_class()
    knobs.runtime.add_stages_inspection_hook = _ptx_for_the_driver
    read_text, read_bytes = pathlib.Path.read_text, pathlib.Path.read_bytes

    def mem_read_text(self, *a, **k):
        hit, data = _read_memory(self)
        if hit:
            return data if isinstance(data, str) else data.decode()
        return read_text(self, *a, **k)

    def mem_read_bytes(self):
        hit, data = _read_memory(self)
        if hit:
            return data if isinstance(data, bytes) else data.encode()
        return read_bytes(self)

    pathlib.Path.read_text = mem_read_text
    pathlib.Path.read_bytes = mem_read_bytes


if __name__ == "__main__":
    print(signature_codes({"x": "*fp32", "n": "i32", "B": "constexpr", "s": "fp16", "t": ("i64", "*bf16")}))
    sys.exit(0)
