#!/usr/bin/env python3
"""Library baselines of one CUDA task, timed the way kevo-cuda-worker times
candidates (docs/cuda.md#library-baselines).

kevo starts this script once per task when a CUDA run begins, in the sandbox
runner (own process group, wall-clock limit). It can be run by hand too:

  kevo_torch_baselines.py --probe            one JSON line: torch version, CUDA, device
  kevo_torch_baselines.py REQUEST.json       one JSON line: the task's baselines
  kevo_torch_baselines.py - < REQUEST.json

The request (written by kevo, backends/cuda/src/baselines.cpp) gives the
task's arguments with their extents and scalar values at every visible
shape, the input distributions, the tolerance, the reference source, the
nvcc command and the timing options. For the manifest's "torch" expression
(a Python expression over the argument names, evaluated with `torch`, `F`
(torch.nn.functional) and `math` in scope) the script measures torch eager
and torch.compile:

* inputs drawn from the task's distributions; TF32 off everywhere;
* before every timed call the L2 is flushed by a memset of
  max(2 x L2, 64 MiB, flush_bytes) bytes; CUDA events around the call on the
  current stream, then a device-wide synchronize before the host clock
  stops; host times are used when they exceed 1.5 x the event median + 20 us;
* warm-up calls first (torch.compile: the first call, which compiles, is
  timed apart as compile_seconds and excluded);
* adaptive repeats as in the worker: at least min_repeats; past
  budget_seconds the loop stops once the IQR is within 5% of the median, or
  at twice the budget, or at max_repeats; median and IQR in ms, summed over
  the visible shapes like the worker's times;
* each baseline's output is checked against the task's reference (built
  with nvcc and called through ctypes on the same device buffers) with the
  task's tolerance (docs/verdicts.md: atol + rtol * |want| per element and
  the relative L2 bound); when the reference cannot be built, against the
  expression evaluated in float64. A baseline outside the tolerance is
  reported with check "wrong: ..." and kevo leaves it out of the speedups.

Only the last stdout line is the result; everything else goes to stderr.
"""
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback

FORMAT = "kevo-baseline/1"


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def quantile(values, q):
    # The worker's definition (linear interpolation between order statistics).
    v = sorted(values)
    if not v:
        return 0.0
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    frac = pos - lo
    return v[lo] * (1.0 - frac) + v[hi] * frac


def probe():
    try:
        import torch
    except Exception as e:  # the caller turns this into a note
        emit({"format": FORMAT, "torch": None, "error": "import torch failed: %s" % str(e)[:300]})
        return
    out = {"format": FORMAT, "torch": torch.__version__, "cuda": bool(torch.cuda.is_available())}
    if out["cuda"]:
        out["device_name"] = torch.cuda.get_device_name()
    emit(out)


class Baselines:
    def __init__(self, req):
        import torch
        self.torch = torch
        self.req = req
        # TF32 off: the tasks are fp32 (the worker sets NVIDIA_TF32_OVERRIDE=0 too).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        # bf16 tasks accumulate in fp32; so must their torch baseline.
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        torch.set_float32_matmul_precision("highest")
        self.dev = torch.device("cuda", int(req.get("device", 0)))
        torch.cuda.set_device(self.dev)
        self.gen = torch.Generator(device=self.dev).manual_seed(int(req.get("seed", 1)) & ((1 << 63) - 1))
        self.dtypes = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32,
                       "int64": torch.int64, "bfloat16": torch.bfloat16}
        props = torch.cuda.get_device_properties(self.dev)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        t = req.get("timing", {})
        self.flush_bytes = max(int(t.get("flush_bytes", 0)), 2 * l2 if l2 > 0 else 256 << 20, 64 << 20)
        self.flush = torch.empty(self.flush_bytes, dtype=torch.uint8, device=self.dev)
        self.flush_round = 0
        self.warmup = max(int(t.get("warmup", 1)), 3)
        self.min_repeats = max(int(t.get("min_repeats", 10)), 10)
        self.max_repeats = max(int(t.get("max_repeats", 200)), self.min_repeats)
        self.budget = float(t.get("budget_seconds", 0.3))
        self.outputs = [a for a in req["args"] if a["role"] in ("out", "inout")]
        names = [a["name"] for a in req["args"]]
        scope = {"torch": torch, "F": torch.nn.functional, "math": math}
        self.fn = eval("lambda %s: (%s)" % (", ".join(names), req["expr"]), scope)
        self.ref = None
        self.ref_error = None

    # ---- inputs -----------------------------------------------------------
    def make_args(self, shape):
        torch = self.torch
        values = []
        for a in self.req["args"]:
            if a["role"] == "scalar":
                v = shape["values"][a["name"]]
                values.append(int(v) if a["dtype"].startswith("int") else float(v))
                continue
            ext = shape["extents"][a["name"]]
            dt = self.dtypes[a["dtype"]]
            if a["role"] == "out":
                t = torch.empty(ext, dtype=dt, device=self.dev)
                t.fill_(float("nan") if dt.is_floating_point else torch.iinfo(dt).min)
                values.append(t)
                continue
            d = a["dist"]
            kind, lo, hi = d["kind"], float(d["a"]), float(d["b"])
            if kind == "uniform":
                t = torch.empty(ext, dtype=torch.float64 if dt == torch.float64 else torch.float32, device=self.dev)
                t.uniform_(lo, hi, generator=self.gen)
            elif kind == "normal":
                t = torch.empty(ext, dtype=torch.float64 if dt == torch.float64 else torch.float32, device=self.dev)
                t.normal_(lo, hi, generator=self.gen)
            elif kind == "constant":
                t = torch.full(ext, lo, dtype=torch.float64, device=self.dev)
            else:  # integers, inclusive
                t = torch.randint(int(lo), int(hi) + 1, ext, generator=self.gen, device=self.dev, dtype=torch.int64)
            values.append(t.to(dt).contiguous())
        return values

    # ---- the task's reference through ctypes --------------------------------
    def build_reference(self, workdir):
        req = self.req
        so = os.path.join(workdir, "reference.so")
        # Static cudart: the object needs no library path; it shares the
        # device's primary context (and so the pointers) with torch.
        cmd = [req["nvcc"]] + list(req.get("nvcc_flags", [])) + [
            "-shared", "-Xcompiler", "-fPIC", "-cudart", "static", "-o", so, req["reference"], "-lcublas",
            # cuBLAS (bf16 GEMM reference) from the toolkit nvcc belongs to.
            "-Xlinker", "-rpath," + os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(req["nvcc"]))), "lib64")]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        if r.returncode != 0:
            raise RuntimeError("nvcc failed on the reference: " + r.stdout.decode(errors="replace")[-400:])
        lib = ctypes.CDLL(so)
        device = int(req.get("device", 0))
        if device != 0:
            # The object's own runtime starts on device 0; torch's buffers live on `device`.
            set_device = getattr(lib, "cudaSetDevice", None)
            if set_device is None or set_device(ctypes.c_int(device)) != 0:
                raise RuntimeError("cannot select device %d in the reference's runtime" % device)
        f = getattr(lib, req["function"])
        f.restype = None
        ctypes_of = {"float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int32,
                     "int64": ctypes.c_int64}
        f.argtypes = [ctypes.c_void_p if a["role"] != "scalar" else ctypes_of[a["dtype"]] for a in req["args"]]
        self.ref = f

    def reference_outputs(self, values):
        """The reference's outputs on copies of `values` (or the expression in float64)."""
        torch = self.torch
        if self.ref is not None:
            call = [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
            args = [v.data_ptr() if isinstance(v, torch.Tensor) else v for v in call]
            torch.cuda.synchronize()
            self.ref(*args)
            torch.cuda.synchronize()
            return [call[i] for i, a in enumerate(self.req["args"]) if a["role"] in ("out", "inout")]
        wide = [v.double() if isinstance(v, torch.Tensor) and v.dtype.is_floating_point else v for v in values]
        return self.as_outputs(self.fn(*wide))

    def as_outputs(self, result):
        res = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(res) != len(self.outputs):
            raise RuntimeError("the expression gives %d output(s); the task has %d (%s)" % (
                len(res), len(self.outputs), ", ".join(a["name"] for a in self.outputs)))
        return res

    def check(self, got, want):
        """'ok' or 'wrong: ...', with the worst errors (docs/verdicts.md)."""
        torch = self.torch
        tol = self.req["tolerance"]
        atol, rtol, rel_bound = float(tol["atol"]), float(tol["rtol"]), float(tol["rel_l2"])
        worst_abs, worst_rel = 0.0, 0.0
        problems = []
        for a, g, w in zip(self.outputs, self.as_outputs(got), want):
            if not isinstance(g, torch.Tensor):
                g = torch.tensor(g, device=self.dev)
            if g.numel() != w.numel():
                problems.append("%s has %d elements, want %d" % (a["name"], g.numel(), w.numel()))
                continue
            g = g.detach().reshape(-1).double()
            w = w.reshape(-1).double()
            finite = torch.isfinite(w)
            bad_nan = int((finite & ~torch.isfinite(g)).sum())
            diff = (g - w).abs()
            ok = (diff <= atol + rtol * w.abs()) | (g == w)
            n_bad = int((~ok).sum())
            d = diff[finite & torch.isfinite(g)]
            max_abs = float(d.max()) if d.numel() else 0.0
            floor = atol * math.sqrt(max(int(finite.sum()), 1)) if atol > 0 else 1e-30
            rel = float(d.norm()) / max(float(w[finite].norm()), floor) if d.numel() else 0.0
            worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, rel)
            if bad_nan:
                problems.append("%s: %d non-finite element(s)" % (a["name"], bad_nan))
            if n_bad:
                problems.append("%s: %d element(s) outside atol %g + rtol %g (max abs error %.3g)" % (
                    a["name"], n_bad, atol, rtol, max_abs))
            if rel > rel_bound:
                problems.append("%s: relative L2 error %.3g > %g" % (a["name"], rel, rel_bound))
        return ("ok" if not problems else "wrong: " + "; ".join(problems)), worst_abs, worst_rel

    # ---- timing -------------------------------------------------------------
    def time_calls(self, call):
        torch = self.torch
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)

        def once(ev, host):
            self.flush_round += 1
            self.flush.fill_(self.flush_round & 0xFF)   # evict the L2: every repeat starts cold
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            call()
            stop.record()
            torch.cuda.synchronize()   # device-wide: work on other streams counts
            t1 = time.perf_counter()
            ev.append(start.elapsed_time(stop))
            host.append((t1 - t0) * 1e3)

        for _ in range(self.warmup):
            once([], [])
        ev, host = [], []
        t_start = time.perf_counter()
        while len(ev) < self.max_repeats:
            once(ev, host)
            spent = time.perf_counter() - t_start
            if len(ev) >= self.min_repeats and spent >= self.budget:
                m = quantile(ev, 0.5)
                if quantile(ev, 0.75) - quantile(ev, 0.25) <= 0.05 * m or spent >= 2 * self.budget:
                    break
        me, mh = quantile(ev, 0.5), quantile(host, 0.5)
        series, clock = (host, "host") if mh > 1.5 * me + 0.02 else (ev, "events")
        return {"median_ms": quantile(series, 0.5), "iqr_ms": quantile(series, 0.75) - quantile(series, 0.25),
                "repeats": len(series), "clock": clock}

    def measure(self, fn, compile_first):
        """One baseline over every visible shape: times summed, checks combined."""
        torch = self.torch
        total = {"median_ms": 0.0, "iqr_ms": 0.0, "repeats": None, "clock": "events", "check": "ok",
                 "max_abs_error": 0.0, "rel_l2_error": 0.0}
        for shape in self.req["shapes"]:
            values = self.make_args(shape)
            want = self.reference_outputs(values)
            if compile_first and "compile_seconds" not in total:
                t0 = time.perf_counter()
                fn(*values)
                torch.cuda.synchronize()
                total["compile_seconds"] = time.perf_counter() - t0
            got = fn(*values)
            torch.cuda.synchronize()
            verdict, max_abs, rel = self.check(got, want)
            if total["check"] == "ok" and verdict != "ok":
                total["check"] = "%s (at %s)" % (verdict, shape["label"])
            total["max_abs_error"] = max(total["max_abs_error"], max_abs)
            total["rel_l2_error"] = max(total["rel_l2_error"], rel)
            del want, got
            t = self.time_calls(lambda: fn(*values))
            total["median_ms"] += t["median_ms"]
            total["iqr_ms"] += t["iqr_ms"]
            total["repeats"] = t["repeats"] if total["repeats"] is None else min(total["repeats"], t["repeats"])
            if t["clock"] == "host":
                total["clock"] = "host"
        return total


def run(req):
    import torch
    out = {"format": FORMAT, "task": req["task"], "expr": req["expr"], "torch": torch.__version__,
           "shapes": [s["label"] for s in req["shapes"]]}
    if not torch.cuda.is_available():
        out["error"] = "torch.cuda.is_available() is False"
        return out
    b = Baselines(req)
    out["device_name"] = torch.cuda.get_device_name(b.dev)
    with tempfile.TemporaryDirectory(prefix="kevo-baseline-") as work:
        try:
            b.build_reference(work)
            out["checked_against"] = "reference"
        except Exception as e:
            b.ref_error = str(e)
            out["checked_against"] = "float64 torch"
            out["reference_note"] = str(e)[-400:]
        with torch.no_grad():
            try:
                out["eager"] = b.measure(b.fn, False)
            except Exception as e:
                out["eager"] = {"error": ("%s: %s" % (type(e).__name__, e))[:600]}
            if req.get("compile", True):
                try:
                    out["compile"] = b.measure(torch.compile(b.fn), True)
                except Exception as e:  # inductor needs a C compiler and triton; report, do not fail
                    out["compile"] = {"error": ("%s: %s" % (type(e).__name__, e))[:600]}
    return out


def main(argv):
    if len(argv) == 2 and argv[1] == "--probe":
        probe()
        return 0
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    # "--fd=N": the request on descriptor N (kevo's sandbox runner passes it
    # on a socket, which cannot be opened by its /dev/fd path); "-": stdin.
    if argv[1].startswith("--fd="):
        with os.fdopen(int(argv[1][5:]), "r") as f:
            req = json.load(f)
    else:
        req = json.load(sys.stdin if argv[1] == "-" else open(argv[1]))
    try:
        emit(run(req))
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        emit({"format": FORMAT, "task": req.get("task"), "error": ("%s: %s" % (type(e).__name__, e))[:600]})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
