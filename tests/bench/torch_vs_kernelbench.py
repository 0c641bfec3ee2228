#!/usr/bin/env python3
"""kevo's torch backend against KernelBench's own evaluation path, side by
side on the same candidates (issue 18; docs/benchmarks.md#torch-backend-against-kernelbenchs-evaluation-issue-18).

  torch_vs_kernelbench.py KEVO KERNELBENCH_SRC [--quick] [--parts kevo,kernelbench,cv] [options]
  torch_vs_kernelbench.py KEVO KERNELBENCH_SRC --check     (no GPU needed)
  torch_vs_kernelbench.py --merge A.json B.json ...        (no GPU needed)

KERNELBENCH_SRC is a KernelBench checkout's `src` folder (holding the
package `kernelbench`). On one GPU, in one invocation:

1. kevo: `kevo tasks --prepare` once (timed apart), then one `kevo eval
   TASK FILES... TASK FILES... --json --seed 3` over every task (kevo builds
   all candidates in parallel and judges each as it is built).
2. KernelBench, as its users run it (scripts/eval_from_generations.py):
   its parallel pre-build (kernelbench.compile.batch_compile), then a fresh
   process per candidate calling kernelbench.eval.eval_kernel_against_ref
   with num_correct_trials=5, num_perf_trials=100, timing cuda_event, each
   with its own build_dir.
3. The timing CV of one honest candidate (tests/torch/gpu/softmax_cuda.py):
   K kevo judgements against K calls of KernelBench's cuda_event timing and
   K calls of triton.testing.do_bench in one process.

The report (candidates per GPU-minute and their ratio, the verdict table,
the CV) is printed and written as JSON to $OUT/torch_vs_kernelbench.json
when $OUT is set (--json PATH otherwise). Every subprocess has a timeout;
--budget-s stops starting new work past a wall-clock budget; --parts runs a
part alone and --merge joins the JSON files of separate runs into one report.

Where KernelBench's imports need packages the interpreter lacks (its package
imports LLM clients, pydantic and dotenv even for evaluation), the driver puts
minimal stand-ins on its PYTHONPATH, only for the modules that fail to
import, and the report names them (none is on KernelBench's evaluation path
but pydantic's BaseModel, used as a record with defaults).
"""
import argparse
import ast
import copy
import glob
import hashlib
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TASKS_DIR = os.path.join(REPO, "configs", "tasks", "torch")
TASK_ORDER = ["torch_softmax", "torch_scale_bias_relu", "torch_linear_gelu", "torch_layernorm"]
C = "tests/bench/torch_candidates/"

# What each candidate is, and what a sound evaluator should say. "expect" is
# one of the outcomes computed by outcome(): both pass, both reject,
# KernelBench passes, kevo rejects, kevo passes, KernelBench rejects.
CANDIDATES = [
    # torch_softmax
    dict(id="softmax_cuda", task="torch_softmax", path="tests/torch/gpu/softmax_cuda.py", kind="honest",
         expect="both pass", note="block per row, two passes"),
    dict(id="softmax_online", task="torch_softmax", path=C + "softmax_online.py", kind="honest",
         expect="both pass", note="online (max, sum) in one pass"),
    dict(id="softmax_warp", task="torch_softmax", path=C + "softmax_warp.py", kind="honest",
         expect="both pass", note="warp per row"),
    dict(id="side_stream", task="torch_softmax", path="tests/torch/gpu/side_stream.py", kind="timing cheat",
         expect="both pass", note="work on a side stream, no sync: cuda events time the launch only"),
    dict(id="softmax_cached_ptr", task="torch_softmax", path=C + "softmax_cached_ptr.py", kind="timing cheat",
         expect="KernelBench passes, kevo rejects",
         note="output cached by input data_ptr: KernelBench's timed calls reuse one input; kevo writes fresh "
              "inputs into the same buffer for every call, and the cached output is then wrong"),
    dict(id="softmax_calls_torch", task="torch_softmax", path=C + "softmax_calls_torch.py", kind="cheat",
         expect="KernelBench passes, kevo rejects", note="returns torch.softmax (the reference op)"),
    dict(id="softmax_fixed_shape", task="torch_softmax", path=C + "softmax_fixed_shape.py", kind="cheat",
         expect="KernelBench passes, kevo rejects", note="only the shape KernelBench tests (1024 x 4096)"),
    dict(id="softmax_no_max", task="torch_softmax", path=C + "softmax_no_max.py", kind="bug",
         expect="KernelBench passes, kevo rejects", note="no max subtraction: exp overflows near 100"),
    dict(id="softmax_tail4", task="torch_softmax", path=C + "softmax_tail4.py", kind="bug",
         expect="KernelBench passes, kevo rejects", note="drops the cols % 4 tail (odd sizes)"),
    # torch_scale_bias_relu
    dict(id="sbr_cuda", task="torch_scale_bias_relu", path="tests/torch/gpu/scale_bias_relu_cuda.py", kind="honest",
         expect="both pass", note="grid-stride elementwise"),
    dict(id="sbr_vec4", task="torch_scale_bias_relu", path=C + "sbr_vec4.py", kind="honest",
         expect="both pass", note="float4 when aligned, scalar otherwise"),
    dict(id="sbr_inplace", task="torch_scale_bias_relu", path=C + "sbr_inplace.py", kind="cheat",
         expect="KernelBench passes, kevo rejects", note="writes the result into the input and returns it"),
    dict(id="sbr_swapped_args", task="torch_scale_bias_relu", path=C + "sbr_swapped_args.py", kind="bug",
         expect="both reject", note="scale and bias swapped"),
    # torch_linear_gelu
    dict(id="lg_mm_epilogue", task="torch_linear_gelu", path=C + "lg_mm_epilogue.py", kind="honest",
         expect="both pass", note="cuBLAS mm + fused bias/GELU kernel"),
    dict(id="lg_tiled", task="torch_linear_gelu", path=C + "lg_tiled.py", kind="honest",
         expect="both pass", note="16x16 tiled GEMM with GELU epilogue"),
    dict(id="lg_no_bias", task="torch_linear_gelu", path=C + "lg_no_bias.py", kind="bug",
         expect="both reject", note="forgets the bias"),
    # torch_layernorm
    dict(id="ln_block", task="torch_layernorm", path=C + "ln_block.py", kind="honest",
         expect="both pass", note="block per row, two-pass variance"),
    dict(id="ln_warp", task="torch_layernorm", path=C + "ln_warp.py", kind="honest",
         expect="both pass", note="warp per row, two-pass variance"),
    dict(id="ln_sumsq", task="torch_layernorm", path=C + "ln_sumsq.py", kind="bug",
         expect="KernelBench passes, kevo rejects", note="E[x^2]-mean^2 cancels for rows near 100"),
    dict(id="ln_unbiased", task="torch_layernorm", path=C + "ln_unbiased.py", kind="bug",
         expect="both reject", note="divides by hidden - 1"),
]
QUICK_IDS = ["softmax_cuda", "softmax_no_max", "softmax_calls_torch", "softmax_cached_ptr"]
CV_ID = "softmax_cuda"
FORMAT = 1

T0 = time.monotonic()
RUNNING = set()   # process groups of the subprocesses running now (killed on SIGTERM)


class Stopped(Exception):
    pass


def on_stop(sig, frame):
    for pgid in list(RUNNING):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    raise Stopped("signal %d" % sig)


def log(msg):
    print("[%s +%7.1fs] %s" % (time.strftime("%H:%M:%S"), time.monotonic() - T0, msg), flush=True)


def num(v):
    """A verdict's number: kevo writes inf and nan as strings."""
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return float("nan")
    return float("nan")


def fmt_us(v):
    return "-" if v is None or not math.isfinite(v) or v <= 0 else ("%.1f" % v if v < 1e4 else "%.0f" % v)


def tail(text, n=3000):
    text = text or ""
    return text if len(text) <= n else "..." + text[-n:]


class Budget:
    def __init__(self, seconds):
        self.deadline = T0 + seconds if seconds and seconds > 0 else None

    def left(self):
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def cap(self, timeout):
        return max(1.0, min(timeout, self.left()))

    def spent(self, need=15.0):
        return self.left() < need


def run_proc(argv, timeout, env=None, cwd=None, on_line=None):
    """Runs argv in a session of its own; on timeout its whole process group
    gets SIGTERM, then SIGKILL. Output read as it comes (what a killed run
    printed is kept)."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             text=True, errors="replace", env=env, cwd=cwd, start_new_session=True)
    except OSError as e:
        return {"rc": None, "out": "", "err": "cannot start %s: %s" % (argv[0], e), "wall_s": 0.0, "timed_out": False}
    RUNNING.add(p.pid)
    out, err = [], []

    def pump(stream, sink, cb):
        for line in stream:
            sink.append(line)
            if len(sink) > 20000:
                del sink[:10000]
            if cb:
                try:
                    cb(line)
                except Exception as e:   # a progress callback must not stop the reading
                    log("progress callback failed: %r" % e)

    threads = [threading.Thread(target=pump, args=(p.stdout, out, on_line), daemon=True),
               threading.Thread(target=pump, args=(p.stderr, err, None), daemon=True)]
    for t in threads:
        t.start()
    timed_out = False
    try:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
            try:
                os.killpg(p.pid, signal.SIGKILL)   # what is left of its group
            except (ProcessLookupError, PermissionError):
                pass
    finally:
        RUNNING.discard(p.pid)   # on Stopped, on_stop has killed its group already
    for t in threads:
        t.join(timeout=10)
    return {"rc": p.returncode, "out": "".join(out), "err": "".join(err), "wall_s": time.monotonic() - t0,
            "timed_out": timed_out}


def repo_path(rel):
    return os.path.join(REPO, rel)


def selected(args):
    if args.only:
        ids = [s.strip() for s in args.only.split(",") if s.strip()]
        known = {c["id"] for c in CANDIDATES}
        bad = [i for i in ids if i not in known]
        if bad:
            sys.exit("unknown candidate id(s) %s; known: %s" % (", ".join(bad), ", ".join(sorted(known))))
        return [c for c in CANDIDATES if c["id"] in ids]
    if args.quick:
        return [c for c in CANDIDATES if c["id"] in QUICK_IDS]
    return list(CANDIDATES)


def tasks_of(cands):
    return [t for t in TASK_ORDER if any(c["task"] == t for c in cands)]


# ---- KernelBench's environment: stand-ins for what its imports need --------------

SHIMS = {
    "pydantic": '''"""Stand-in for pydantic, written by kevo's tests/bench/torch_vs_kernelbench.py
because this interpreter has none. KernelBench's KernelExecResult is a
BaseModel used as a record: annotated fields with defaults, keyword
construction, attribute assignment."""
import copy


class BaseModel:
    def __init__(self, **kw):
        for klass in reversed(type(self).__mro__):
            for k in getattr(klass, "__annotations__", {}):
                if k not in kw and hasattr(klass, k):
                    setattr(self, k, copy.deepcopy(getattr(klass, k)))
        for k, v in kw.items():
            setattr(self, k, v)

    def _fields(self):
        names = []
        for klass in reversed(type(self).__mro__):
            for k in getattr(klass, "__annotations__", {}):
                if k not in names:
                    names.append(k)
        return names

    def model_dump(self):
        return {k: getattr(self, k, None) for k in self._fields()}

    def dict(self):
        return self.model_dump()

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in self.model_dump().items()))
''',
    "openai": '''"""Stand-in for openai (kevo's benchmark): KernelBench imports it for
generation; its evaluation never calls it."""


class OpenAI:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("openai is a stand-in here (kevo's benchmark): no LLM client")
''',
    "litellm": '''"""Stand-in for litellm (kevo's benchmark): imported by KernelBench for
generation, never called by its evaluation."""


def completion(*args, **kwargs):
    raise RuntimeError("litellm is a stand-in here (kevo's benchmark): no LLM client")
''',
    "dotenv": '''"""Stand-in for python-dotenv (kevo's benchmark): no .env is read."""


def load_dotenv(*args, **kwargs):
    return False
''',
    "tqdm": '''"""Stand-in for tqdm (kevo's benchmark): a progress bar that draws nothing."""


class tqdm:
    def __init__(self, iterable=None, total=None, **kwargs):
        self.iterable, self.total, self.n = iterable, total, 0

    def __iter__(self):
        for x in self.iterable or ():
            self.n += 1
            yield x

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        self.n += n

    def set_description(self, *args, **kwargs):
        pass

    def close(self):
        pass
''',
    "requests": '''"""Stand-in for requests (kevo's benchmark): KernelBench's eval module
imports it and does not use it."""
''',
}

PROBE = r'''
import inspect, json, sys, traceback
out = {"ok": False}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda_available"] = bool(torch.cuda.is_available())
    import kernelbench.eval as E
    import kernelbench.timing as T
    import kernelbench.compile as K
    out["ok"] = True
    out["eval_file"] = E.__file__
    out["eval_params"] = list(inspect.signature(E.eval_kernel_against_ref).parameters)
    out["timing_functions"] = [n for n in ("time_execution_with_cuda_event", "get_timing_stats",
                                           "time_execution_with_do_bench_interface") if hasattr(T, n)]
    out["has_batch_compile"] = hasattr(K, "batch_compile")
    out["device_default"] = repr(inspect.signature(E.eval_kernel_against_ref).parameters["device"].default)
except ModuleNotFoundError as e:
    out["missing"] = (e.name or "").split(".")[0]
    out["error"] = repr(e)
except BaseException as e:
    out["error"] = traceback.format_exc()[-3000:]
print("PROBE " + json.dumps(out))
'''

EVAL_PARAMS = ["original_model_src", "custom_model_src", "seed_num", "num_correct_trials", "num_perf_trials",
               "measure_performance", "timing_method", "verbose", "build_dir", "device", "backend", "precision"]


def kb_env(kb_src, shim_dir):
    env = dict(os.environ)
    parts = [os.path.abspath(kb_src)]
    if shim_dir:
        parts.append(shim_dir)   # after KernelBench, before site-packages; only modules that are missing
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def prepare_kernelbench(python, kb_src, shim_dir, budget):
    """Imports kernelbench.eval/timing/compile in a fresh interpreter, adding
    a stand-in for each missing module that SHIMS has. Returns the probe's
    answer with "shims" (the stand-ins used)."""
    os.makedirs(shim_dir, exist_ok=True)
    used = []
    probe = {"ok": False, "error": "not run"}
    for _ in range(len(SHIMS) + 1):
        r = run_proc([python, "-c", PROBE], budget.cap(180), env=kb_env(kb_src, shim_dir))
        line = [ln for ln in r["out"].splitlines() if ln.startswith("PROBE ")]
        if not line:
            probe = {"ok": False, "error": "the import probe printed nothing (rc %s%s): %s" % (
                r["rc"], ", timed out" if r["timed_out"] else "", tail(r["err"], 2000))}
            break
        probe = json.loads(line[-1][len("PROBE "):])
        if probe.get("ok"):
            break
        missing = probe.get("missing")
        if missing in SHIMS and missing not in used:
            with open(os.path.join(shim_dir, missing + ".py"), "w") as f:
                f.write(SHIMS[missing])
            used.append(missing)
            continue
        break
    probe["shims"] = used
    if probe.get("ok"):
        absent = [p for p in EVAL_PARAMS if p not in probe.get("eval_params", [])]
        probe["missing_eval_params"] = absent
    return probe


def kb_static_check(kb_src, source):
    """KernelBench's own static checker (run by its generation scripts, not by
    its evaluation), loaded from its file alone: it imports only re and typing."""
    path = os.path.join(kb_src, "kernelbench", "kernel_static_checker.py")
    if not os.path.isfile(path):
        return None
    import importlib.util
    spec = importlib.util.spec_from_file_location("kb_kernel_static_checker", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
        valid, errors, warnings = mod.validate_kernel_static(source, backend="cuda", precision="fp32")
        return {"valid": bool(valid), "errors": list(errors), "warnings": list(warnings)}
    except Exception as e:
        return {"valid": None, "errors": ["the checker raised %r" % e], "warnings": []}


# ---- the KernelBench driver (runs in a fresh process of its own) -------------------

def _jsonable(v, depth=0):
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, dict) and depth < 4:
        return {str(k): _jsonable(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)) and depth < 4:
        return [_jsonable(x, depth + 1) for x in v]
    s = str(v)
    return s if len(s) < 1500 else s[:1500] + "..."


def _result_dict(r):
    return {"compiled": bool(getattr(r, "compiled", False)), "correctness": bool(getattr(r, "correctness", False)),
            "runtime_ms": _jsonable(getattr(r, "runtime", -1.0)),
            "runtime_stats": _jsonable(getattr(r, "runtime_stats", {})),
            "ref_runtime_ms": _jsonable(getattr(r, "ref_runtime", -1.0)),
            "ref_runtime_stats": _jsonable(getattr(r, "ref_runtime_stats", {})),
            "metadata": _jsonable(getattr(r, "metadata", {}))}


def driver_main(argv):
    ap = argparse.ArgumentParser(prog="torch_vs_kernelbench.py --kb-driver")
    ap.add_argument("mode", choices=["eval", "prebuild", "cv"])
    ap.add_argument("--ref")
    ap.add_argument("--cand")
    ap.add_argument("--build-dir")
    ap.add_argument("--out", required=True)
    ap.add_argument("--config")
    ap.add_argument("--correct-trials", type=int, default=5)
    ap.add_argument("--perf-trials", type=int, default=100)
    ap.add_argument("--timing", default="cuda_event")
    ap.add_argument("--gpu-arch", default="Hopper")
    ap.add_argument("--k", type=int, default=10)
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    out = {}
    if a.mode == "prebuild":
        # KernelBench's CPU pre-build as scripts/eval_from_generations.py calls it (build_cache=True).
        with open(a.config) as f:
            cfg = json.load(f)
        total_work = [tuple(w) for w in cfg.pop("total_work")]
        from kernelbench import compile as kb_compile
        out["results"] = kb_compile.batch_compile(total_work, cfg)
        out["total_work"] = total_work
    elif a.mode == "eval":
        import torch
        from kernelbench import eval as kb_eval
        from kernelbench.utils import set_gpu_arch
        set_gpu_arch(a.gpu_arch.split(","))
        with open(a.ref) as f:
            ref_src = f.read()
        with open(a.cand) as f:
            cand_src = f.read()
        device = torch.device("cuda:0")
        try:
            r = kb_eval.eval_kernel_against_ref(
                original_model_src=ref_src, custom_model_src=cand_src, seed_num=42,
                num_correct_trials=a.correct_trials, num_perf_trials=a.perf_trials, measure_performance=True,
                timing_method=a.timing, verbose=False, build_dir=a.build_dir, device=device, backend="cuda",
                precision=torch.float32)
            if r is None:
                out["result"] = None
                out["error"] = ("eval_kernel_against_ref returned None (a lock-file error while building; "
                                "KernelBench's caller is to retry)")
            else:
                out["result"] = _result_dict(r)
        except Exception as e:
            # As scripts/eval_from_generations.py's evaluate_single_sample: recorded as not compiled.
            key = "cuda_error" if "CUDA error" in str(e) else "other_error"
            out["result"] = {"compiled": False, "correctness": False, "runtime_ms": -1.0, "ref_runtime_ms": -1.0,
                             "metadata": {key: _jsonable(str(e)), key + "_name": type(e).__name__}}
            out["exception"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
    else:   # cv
        import torch
        import triton.testing
        from kernelbench import eval as kb_eval
        from kernelbench import timing as kb_timing
        from kernelbench.utils import set_gpu_arch
        set_gpu_arch(a.gpu_arch.split(","))
        with open(a.ref) as f:
            ref_src = f.read()
        with open(a.cand) as f:
            cand_src = f.read()
        device = torch.device("cuda:0")
        torch.cuda.set_device(device)
        _, get_init_inputs, get_inputs = kb_eval.load_original_model_and_inputs(ref_src, {})
        ModelNew = kb_eval.load_custom_model(cand_src, {}, a.build_dir)
        with torch.no_grad():
            kb_eval.set_seed(42)
            init = [kb_eval._process_input_tensor(x, device, "cuda", torch.float32) for x in get_init_inputs()]
            kb_eval.set_seed(42)
            model = ModelNew(*init).to(device=device, dtype=torch.float32)
            kb_eval.set_seed(42)
            inputs = [kb_eval._process_input_tensor(x, device, "cuda", torch.float32) for x in get_inputs()]
            torch.cuda.synchronize(device)
            means, medians, reported = [], [], []
            for _ in range(a.k):
                times = kb_timing.time_execution_with_cuda_event(model, inputs, num_trials=a.perf_trials,
                                                                 verbose=False, device=device)
                means.append(sum(times) / len(times))
                medians.append(statistics.median(times))
                reported.append(kb_timing.get_timing_stats(times, device=device)["mean"])
            bench = [float(triton.testing.do_bench(lambda: model(*inputs))) for _ in range(a.k)]
        out.update({"cuda_event_mean_ms": means, "cuda_event_median_ms": medians, "cuda_event_reported_ms": reported,
                    "do_bench_ms": bench, "perf_trials": a.perf_trials, "device": torch.cuda.get_device_name(device),
                    "torch": torch.__version__, "triton": getattr(triton, "__version__", "?")})
    out["driver_seconds"] = time.monotonic() - t0
    with open(a.out, "w") as f:
        json.dump(out, f)
    return 0


# ---- kevo's path ---------------------------------------------------------------------

def kevo_common(args, cache_dir):
    sets = ["device=cuda", "python=" + args.python, "cache_dir=" + cache_dir, "run.wall_seconds=%d" % args.timeout]
    if args.no_sandbox:
        sets += ["sandbox.seccomp=false", "sandbox.namespaces=false"]
    sets += args.kevo_set
    return ["--set"] + sets


def parse_kevo_eval(stdout, files):
    """kevo eval --json: one file gives one (indented) JSON verdict; several
    give one line each, {"candidate", "verdict"}."""
    out, junk = {}, []
    if len(files) == 1:
        try:
            out[files[0]] = json.loads(stdout)
            return out, junk
        except ValueError:
            pass
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            j = json.loads(line)
        except ValueError:
            junk.append(line[:300])
            continue
        if isinstance(j, dict) and "candidate" in j and "verdict" in j:
            out[j["candidate"]] = j["verdict"]
        elif isinstance(j, dict) and "status" in j and len(files) == 1:
            out[files[0]] = j
    return out, junk


def judge_phases(v):
    """The judge's own account of where its seconds went (the line that
    KEVO_TORCH_JUDGE_PHASES makes it write to the verdict's output_tail)."""
    lines = [x for x in (v.get("output_tail") or "").splitlines() if x.startswith("kevo-torch-judge phases:")]
    # (without its " | at ..." moments: for tests/torch/judge_ahead_test.py)
    return lines[-1].split(":", 1)[1].split(" | at ")[0].strip() if lines else ""


def slim_verdict(v):
    keep = ["status", "stage", "message", "speedup", "cand_median_ns", "cand_iqr_ns", "ref_median_ns", "ref_iqr_ns",
            "repeats", "compile_seconds", "compile_cached", "max_abs_error", "rel_l2_error", "worker_seconds",
            "slot_seconds", "device"]
    s = {k: v.get(k) for k in keep if k in v}
    s["message"] = (s.get("message") or "")[:600]
    s["feedback"] = (v.get("feedback") or "")[:800]
    phases = judge_phases(v)
    if phases:
        s["judge_phases"] = phases
    if v.get("mismatch"):
        s["mismatch"] = v["mismatch"]
    return s


def kevo_part(args, cands, work, budget, res):
    cache = os.path.join(work, "kevo-cache")
    common = kevo_common(args, cache)
    tasks = tasks_of(cands)
    k = {"common": common, "tasks": {}, "note": "kevo eval prepares the task itself on every call (see report)"}
    res["kevo"] = k
    # The first prepare, timed apart (references built, null candidates and seed judged).
    log("kevo: prepare %d task(s) (kevo tasks --prepare)" % len(tasks))
    all_tasks = sorted(d for d in os.listdir(TASKS_DIR) if os.path.isfile(os.path.join(TASKS_DIR, d, "task.json")))
    targets = [TASKS_DIR] if sorted(tasks) == all_tasks else [os.path.join(TASKS_DIR, t) for t in tasks]
    prep = {"wall_s": 0.0, "runs": []}
    for tdir in targets:
        if budget.spent():
            prep["runs"].append({"target": tdir, "skipped": "budget"})
            continue
        r = run_proc([args.kevo, "tasks", tdir, "--prepare"] + common, budget.cap(300 + 120 * len(tasks)))
        prep["wall_s"] += r["wall_s"]
        prep["runs"].append({"target": tdir, "rc": r["rc"], "timed_out": r["timed_out"], "wall_s": r["wall_s"],
                             "stdout": tail(r["out"], 2000), "stderr": tail(r["err"], 3000)})
        log("kevo: prepare %s: rc %s%s in %.1f s" % (os.path.relpath(tdir, REPO), r["rc"],
                                                     " (timed out)" if r["timed_out"] else "", r["wall_s"]))
    k["prepare"] = prep
    # What the prepare left (the references built, the PCH), copied for each
    # --kevo-again eval, so that each starts where the first eval starts.
    snapshots = []
    for n in range(len(args.kevo_again)):
        snap = os.path.join(work, "kevo-cache-again-%d" % (n + 1))
        shutil.copytree(cache, snap, symlinks=True)
        snapshots.append(snap)
    # One `kevo eval` over every task's files (TASK FILE... TASK FILE...),
    # as KernelBench's pre-build takes all candidates at once: the builds of
    # all tasks run together and the judge takes each as it is built.
    argv = [args.kevo, "eval"]
    by_file, files = {}, []
    for task in tasks:
        tc = [c for c in cands if c["task"] == task]
        k["tasks"][task] = {"files": [c["id"] for c in tc], "verdicts": {}}
        argv.append(os.path.join(TASKS_DIR, task))
        for c in tc:
            by_file[repo_path(c["path"])] = (task, c["id"])
            files.append(repo_path(c["path"]))
            argv.append(repo_path(c["path"]))
    if budget.spent():
        k["eval"] = {"skipped": "budget"}
        log("kevo: eval skipped (budget)")
        return
    log("kevo: eval %d task(s), %d candidate(s) in one kevo eval" % (len(tasks), len(files)))

    def progress(line):
        if not line.startswith("{"):
            return
        j = json.loads(line)
        v = j.get("verdict", {})
        log("kevo:   %-22s %-14s %7.3fx  cand %s us  ref %s us  build %5.1f s  judge %5.1f s  %s" % (
            by_file.get(j.get("candidate"), (None, j.get("candidate")))[1], v.get("status"), num(v.get("speedup")),
            fmt_us(num(v.get("cand_median_ns")) / 1e3), fmt_us(num(v.get("ref_median_ns")) / 1e3),
            num(v.get("compile_seconds")), num(v.get("worker_seconds")),
            (v.get("message") or "")[:90].replace("\n", " ")))
        if judge_phases(v):
            log("kevo:     judge phases: " + judge_phases(v))

    # The tasks were prepared (timed apart, above): the eval skips the
    # tasks' checks.
    argv += ["--json", "--seed", "3", "--no-prepare"] + common
    env = dict(os.environ, KEVO_TORCH_JUDGE_PHASES="1")
    r = run_proc(argv, budget.cap(args.timeout + 120 + 20 * len(files)), env=env, on_line=progress)
    verdicts, junk = parse_kevo_eval(r["out"], files)
    for f, v in verdicts.items():
        task, cid = by_file.get(f, (None, f))
        if task:
            k["tasks"][task]["verdicts"][cid] = slim_verdict(v)
    k["eval"] = {"rc": r["rc"], "timed_out": r["timed_out"], "wall_s": r["wall_s"], "unparsed_stdout": junk[:20],
                 "stderr": tail(r["err"], 3000)}
    judged = [v.get("worker_seconds") for v in verdicts.values() if isinstance(v.get("worker_seconds"), (int, float))]
    log("kevo: %d/%d verdicts, rc %s%s, %.1f s, judge %.1f s summed" % (
        len(verdicts), len(files), r["rc"], " (timed out)" if r["timed_out"] else "", r["wall_s"], sum(judged)))
    k["builds"] = build_summary(cache)
    log("kevo: builds: %s" % json.dumps(k["builds"], sort_keys=True))
    for n, sets in enumerate(args.kevo_again):
        # The same eval again with other settings, side by side (the PCH
        # off, other build jobs), from a copy of the cache as the prepare
        # left it: no candidate of the first eval is in it.
        extra = [x for x in sets.split(",") if x]
        key = "eval_again_%d" % (n + 1)
        if budget.spent():
            k[key] = {"sets": extra, "skipped": "budget"}
            log("kevo: eval again with %s skipped (budget)" % " ".join(extra))
            continue
        cache2 = snapshots[n]
        argv2 = argv[:argv.index("--set")] + kevo_common(args, cache2) + extra
        log("kevo: the same eval again with %s (a cache of its own)" % " ".join(extra))
        r2 = run_proc(argv2, budget.cap(args.timeout + 120 + 20 * len(files)), env=env)
        v2, _ = parse_kevo_eval(r2["out"], files)
        k[key] = {"sets": extra, "rc": r2["rc"], "timed_out": r2["timed_out"], "wall_s": r2["wall_s"],
                  "verdicts": {by_file.get(f, (None, f))[1]: slim_verdict(v) for f, v in v2.items()},
                  "builds": build_summary(cache2), "stderr": tail(r2["err"], 3000)}
        same = sum(1 for f, v in v2.items() if f in verdicts and v.get("status") == verdicts[f].get("status"))
        judged = [v.get("worker_seconds") for v in v2.values() if isinstance(v.get("worker_seconds"), (int, float))]
        log("kevo: with %s: %d/%d verdicts (%d with the same status), rc %s%s, %.1f s, judge %.1f s summed; "
            "builds: %s" % (" ".join(extra), len(v2), len(files), same, r2["rc"],
                            " (timed out)" if r2["timed_out"] else "", r2["wall_s"], sum(judged),
                            json.dumps(k[key]["builds"], sort_keys=True)))


def build_summary(cache):
    """What the build stage's records (kevo-cache/command/*/kevo_build.json)
    say: the PCH built (by a reference's build, in the prepare, or by a
    candidate's), how many extensions were compiled with it, the longest
    wait for it, and the seconds of each candidate build that built
    extensions ("candidates" counts those)."""
    out = {"candidates": 0, "extensions": 0, "with_pch": 0, "pch_built_s": [], "pch_waited_max_s": 0.0,
           "pch_errors": [], "build_s": []}
    for path in sorted(glob.glob(os.path.join(cache, "command", "*", "kevo_build.json"))):
        try:
            with open(path) as f:
                b = json.load(f)
        except (OSError, ValueError):
            continue
        pch = b.get("pch") or {}
        if pch.get("built_seconds") is not None:
            out["pch_built_s"].append(pch["built_seconds"])
        if pch.get("error"):
            out["pch_errors"].append(pch["error"][:300])
        if b.get("role") != "candidate" or not b.get("extensions"):
            continue
        out["candidates"] += 1
        out["build_s"].append(b.get("seconds"))
        out["pch_waited_max_s"] = max(out["pch_waited_max_s"], pch.get("waited_seconds") or 0.0)
        for e in b.get("extensions", []):
            out["extensions"] += 1
            out["with_pch"] += 1 if e.get("pch") else 0
    return out


# ---- KernelBench's path --------------------------------------------------------------

def kernelbench_part(args, cands, work, budget, res):
    kbw = os.path.join(work, "kernelbench")
    shim_dir = os.path.join(kbw, "shims")
    b = {"kb_src": os.path.abspath(args.kb_src), "results": {}}
    res["kernelbench"] = b
    b["version"] = kb_version(args.kb_src)
    log("KernelBench: import probe (%s)" % args.kb_src)
    probe = prepare_kernelbench(args.python, args.kb_src, shim_dir, budget)
    b["probe"] = probe
    if not probe.get("ok"):
        log("KernelBench: kernelbench.eval does not import: %s" % (probe.get("error") or "")[-600:])
        return
    if probe.get("missing_eval_params"):
        log("KernelBench: eval_kernel_against_ref lacks parameters %s" % probe["missing_eval_params"])
        b["error"] = "eval_kernel_against_ref lacks %s" % probe["missing_eval_params"]
        return
    log("KernelBench: imports (torch %s, CUDA %s), stand-ins: %s" % (
        probe.get("torch"), probe.get("cuda_available"), ", ".join(probe["shims"]) or "none"))
    env = kb_env(args.kb_src, shim_dir)
    static = {}
    for c in cands:
        with open(repo_path(c["path"])) as f:
            static[c["id"]] = kb_static_check(args.kb_src, f.read())
    b["static_check"] = static

    # The layout scripts/eval_from_generations.py and kernelbench.compile expect.
    run_name = "kevo_vs_kb"
    runs_dir = os.path.join(kbw, "runs")
    build_root = os.path.join(kbw, "build")
    level = 1
    os.makedirs(os.path.join(runs_dir, run_name), exist_ok=True)
    work_items, where = [], {}
    for c in cands:
        pid = TASK_ORDER.index(c["task"]) + 1
        sid = [x["id"] for x in cands if x["task"] == c["task"]].index(c["id"])
        shutil.copyfile(repo_path(c["path"]), os.path.join(
            runs_dir, run_name, "level_%d_problem_%d_sample_%d_kernel.py" % (level, pid, sid)))
        work_items.append([pid, sid])
        where[c["id"]] = os.path.join(build_root, run_name, str(pid), str(sid))
    cfg = {"total_work": work_items, "verbose": False, "gpu_arch": args.kb_gpu_arch.split(","),
           "kernel_eval_build_dir": build_root, "run_name": run_name, "runs_dir": runs_dir, "level": level,
           "num_cpu_workers": args.kb_workers or os.cpu_count() or 4, "timeout": args.timeout}
    cfg_path = os.path.join(kbw, "prebuild.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    pre = {"wall_s": 0.0, "workers": cfg["num_cpu_workers"]}
    b["prebuild"] = pre
    if budget.spent():
        pre["skipped"] = "budget"
    else:
        log("KernelBench: pre-build of %d candidate(s) (kernelbench.compile.batch_compile, %d workers)" % (
            len(cands), cfg["num_cpu_workers"]))
        out_path = os.path.join(kbw, "prebuild.out.json")
        r = run_proc([args.python, os.path.abspath(__file__), "--kb-driver", "prebuild", "--config", cfg_path,
                      "--out", out_path], budget.cap(args.timeout + 120), env=env)
        pre.update({"rc": r["rc"], "timed_out": r["timed_out"], "wall_s": r["wall_s"], "stdout": tail(r["out"], 3000),
                    "stderr": tail(r["err"], 3000)})
        if os.path.isfile(out_path):
            with open(out_path) as f:
                pre["results"] = json.load(f).get("results")
        log("KernelBench: pre-build rc %s%s in %.1f s: %s" % (r["rc"], " (timed out)" if r["timed_out"] else "",
                                                              r["wall_s"], pre.get("results")))
    evals_wall = 0.0
    for i, c in enumerate(cands):
        e = {}
        b["results"][c["id"]] = e
        if budget.spent():
            e["skipped"] = "budget"
            continue
        out_path = os.path.join(kbw, "eval-%s.json" % c["id"])
        argv = [args.python, os.path.abspath(__file__), "--kb-driver", "eval",
                "--ref", os.path.join(TASKS_DIR, c["task"], "reference.py"), "--cand", repo_path(c["path"]),
                "--build-dir", where[c["id"]], "--out", out_path, "--correct-trials", str(args.kb_correct_trials),
                "--perf-trials", str(args.kb_perf_trials), "--timing", "cuda_event", "--gpu-arch", args.kb_gpu_arch]
        r = run_proc(argv, budget.cap(args.timeout), env=env)
        evals_wall += r["wall_s"]
        e.update({"rc": r["rc"], "timed_out": r["timed_out"], "wall_s": r["wall_s"], "stdout": tail(r["out"], 1500),
                  "stderr": tail(r["err"], 1500)})
        if os.path.isfile(out_path):
            with open(out_path) as f:
                d = json.load(f)
            e.update({k: v for k, v in d.items() if k in ("result", "error", "exception", "driver_seconds")})
        res_ = e.get("result") or {}
        log("KernelBench %2d/%d %-22s %s in %.1f s%s" % (
            i + 1, len(cands), c["id"], kb_summary(res_) if res_ else "no result (rc %s)" % r["rc"], r["wall_s"],
            " (timed out)" if r["timed_out"] else ""))
    b["evals_wall_s"] = evals_wall


def kb_version(kb_src):
    h = hashlib.sha256()
    for n in ("eval.py", "timing.py", "compile.py"):
        p = os.path.join(kb_src, "kernelbench", n)
        if os.path.isfile(p):
            with open(p, "rb") as f:
                h.update(f.read())
    return {"sha256_eval_timing_compile": h.hexdigest()[:16]}


def kb_us(result, key):
    v = num((result or {}).get(key, -1))
    return v * 1e3 if math.isfinite(v) and v > 0 else None


def kb_summary(r):
    if not r.get("compiled"):
        return "not compiled"
    if not r.get("correctness"):
        md = r.get("metadata") or {}
        why = md.get("correctness_issue") or md.get("runtime_error") or md.get("other_error") or ""
        return "incorrect %s" % str(why)[:80]
    return "correct, runtime %s us (ref %s us)" % (fmt_us(kb_us(r, "runtime_ms")), fmt_us(kb_us(r, "ref_runtime_ms")))


# ---- the CV of one honest candidate ---------------------------------------------------

def cv_part(args, work, budget, res):
    cand = next(c for c in CANDIDATES if c["id"] == CV_ID)
    task_dir = os.path.join(TASKS_DIR, cand["task"])
    path = repo_path(cand["path"])
    cv = {"candidate": cand["path"], "k": args.k, "kevo": [], "kernelbench": {}}
    res["cv"] = cv
    common = kevo_common(args, os.path.join(work, "kevo-cache"))
    # --cv-masks: the judge's GPU input mask (KEVO_TORCH_MASK), each mode's
    # judgements taken in turn, so that the series are side by side.
    masks = [m for m in args.cv_masks.split(",") if m]
    log("CV: %d kevo judgements of %s per input mask (%s)" % (args.k, cand["path"], ", ".join(masks)))
    for i in range(args.k):
        for mask in masks:
            if budget.spent():
                cv["kevo"].append({"skipped": "budget", "mask": mask})
                continue
            argv = [args.kevo, "eval", task_dir, path, "--json", "--seed", str(1000 + i)] + \
                (["--no-prepare"] if cv["kevo"] else []) + common
            r = run_proc(argv, budget.cap(args.timeout + 120), env=dict(os.environ, KEVO_TORCH_MASK=mask))
            v = parse_kevo_eval(r["out"], [path])[0].get(path, {})
            unmask = re.search(r"message and unmask of its inputs ([0-9.]+) us", json.dumps(v))
            item = {"rc": r["rc"], "timed_out": r["timed_out"], "wall_s": r["wall_s"], "status": v.get("status"),
                    "mask": mask, "cand_median_ns": num(v.get("cand_median_ns")),
                    "ref_median_ns": num(v.get("ref_median_ns")), "cand_iqr_ns": num(v.get("cand_iqr_ns")),
                    "repeats": v.get("repeats"), "ref_unmask_us": float(unmask.group(1)) if unmask else None,
                    "message": (v.get("message") or tail(r["err"], 300))[:300]}
            cv["kevo"].append(item)
            log("CV: kevo %d/%d (mask %s) %s cand %s us (ref %s us; its message and unmask %s us) in %.1f s%s" % (
                i + 1, args.k, mask, item["status"], fmt_us(item["cand_median_ns"] / 1e3),
                fmt_us(item["ref_median_ns"] / 1e3), item["ref_unmask_us"], r["wall_s"],
                "" if item["status"] == "correct" else ": rc %s %s" % (
                    r["rc"], item["message"][-160:].replace("\n", " "))))
    if budget.spent():
        cv["kernelbench"] = {"skipped": "budget"}
        return
    shim_dir = os.path.join(work, "kernelbench", "shims")
    probe = prepare_kernelbench(args.python, args.kb_src, shim_dir, budget)
    if not probe.get("ok"):
        cv["kernelbench"] = {"error": "kernelbench does not import: %s" % (probe.get("error") or "")[-800:]}
        return
    out_path = os.path.join(work, "cv-kernelbench.json")
    log("CV: %d x KernelBench cuda_event (%d trials) and %d x triton do_bench, one process" % (
        args.k, args.kb_perf_trials, args.k))
    argv = [args.python, os.path.abspath(__file__), "--kb-driver", "cv",
            "--ref", os.path.join(task_dir, "reference.py"), "--cand", path,
            "--build-dir", os.path.join(work, "kernelbench", "cv-build"), "--out", out_path,
            "--k", str(args.k), "--perf-trials", str(args.kb_perf_trials), "--gpu-arch", args.kb_gpu_arch]
    r = run_proc(argv, budget.cap(300 + 30 * args.k), env=kb_env(args.kb_src, shim_dir))
    kb = {"rc": r["rc"], "timed_out": r["timed_out"], "wall_s": r["wall_s"], "shims": probe.get("shims"),
          "stderr": tail(r["err"], 2000)}
    if os.path.isfile(out_path):
        with open(out_path) as f:
            kb.update(json.load(f))
    cv["kernelbench"] = kb
    log("CV: KernelBench process rc %s in %.1f s" % (r["rc"], r["wall_s"]))


# ---- the report ------------------------------------------------------------------------

def outcome(kevo_v, kb_r):
    if not kevo_v or kevo_v.get("status") in (None, "internal_error", "lost") or not kb_r:
        return "incomplete"
    k_pass = kevo_v["status"] == "correct"
    b_pass = bool(kb_r.get("compiled")) and bool(kb_r.get("correctness"))
    if k_pass and b_pass:
        return "both pass"
    if not k_pass and not b_pass:
        return "both reject"
    return "KernelBench passes, kevo rejects" if b_pass else "kevo passes, KernelBench rejects"


def sd_ratio(a, b, resamples=4000):
    sys.path.insert(0, HERE)
    try:
        from cv_compare import sd_ratio_interval
    finally:
        sys.path.pop(0)
    import random
    sa, sb = statistics.stdev(a), statistics.stdev(b)
    ratio = sa / sb if sb > 0 else float("inf")
    lo, hi = sd_ratio_interval(a, b, resamples, random.Random(1))
    return ratio, lo, hi


def report(res):
    lines = []
    p = lines.append
    meta = res.get("meta", {})
    cands = [c for c in CANDIDATES if c["id"] in meta.get("candidates", [c["id"] for c in CANDIDATES])]
    p("== kevo's torch backend against KernelBench's evaluation (issue 18) ==")
    env = meta.get("env", {})
    kb_sha = (res.get("kernelbench") or {}).get("version", {}).get("sha256_eval_timing_compile", "?")
    p("device: %s; torch %s, triton %s; %s; KernelBench %s (eval/timing/compile sha256 %s)" % (
        env.get("device", "?"), env.get("torch", "?"), env.get("triton", "?"), meta.get("kevo_version", "kevo ?"),
        meta.get("kb_src", "?"), kb_sha))
    if res.get("stopped"):
        p("STOPPED (%s): what follows is what was measured before" % res["stopped"])
    for part, err in (res.get("errors") or {}).items():
        p("part %s FAILED: %s" % (part, err.strip().splitlines()[-1][:300] if err.strip() else "?"))
    p("parts: %s; %d candidate(s) over %s%s" % (", ".join(meta.get("parts_run", [])), len(cands),
                                                 ", ".join(tasks_of(cands)), "; --quick" if meta.get("quick") else ""))
    kevo = res.get("kevo") or {}
    kb = res.get("kernelbench") or {}
    summary = {}

    # Throughput.
    p("")
    p("-- throughput: candidates judged per GPU-minute (one GPU, wall clock) --")
    k_rate = b_rate = None
    if kevo:
        prep = kevo.get("prepare", {})
        p("kevo: first prepare (kevo tasks --prepare, apart): %.1f s %s" % (
            prep.get("wall_s", 0.0), ["rc %s%s" % (r.get("rc"), " timed out" if r.get("timed_out") else "")
                                      for r in prep.get("runs", [])]))
        wall = judged = correct = 0
        one = kevo.get("eval")   # one kevo eval over every task (since 2026-12-04, third session)
        for t, e in kevo.get("tasks", {}).items():
            if not one and "wall_s" not in e:
                p("kevo: %-22s %s" % (t, e.get("skipped", "not run")))
                continue
            vs = e.get("verdicts", {})
            nc = sum(1 for v in vs.values() if v.get("status") == "correct")
            # kevo's own failures are no judgement of the candidate.
            nj = sum(1 for v in vs.values() if v.get("status") not in ("internal_error", "lost"))
            if one:
                p("kevo: %-22s %2d file(s), %2d verdict(s) (%d internal_error/lost), %2d correct+timed"
                  % (t, len(e.get("files", [])), len(vs), len(vs) - nj, nc))
            else:
                p("kevo: %-22s %2d file(s), %2d verdict(s) (%d internal_error/lost), %2d correct+timed, %6.1f s, rc %s%s"
                  % (t, len(e.get("files", [])), len(vs), len(vs) - nj, nc, e["wall_s"], e.get("rc"),
                     " TIMED OUT" if e.get("timed_out") else ""))
                wall += e["wall_s"]
            judged += nj
            correct += nc
        if one and "wall_s" in one:
            p("kevo: one kevo eval over every task: %.1f s, rc %s%s" % (
                one["wall_s"], one.get("rc"), " TIMED OUT" if one.get("timed_out") else ""))
            wall = one["wall_s"]
        elif one:
            p("kevo: eval %s" % one.get("skipped", "not run"))
        if wall > 0:
            k_rate = judged / (wall / 60.0)
            with_prep = judged / ((wall + prep.get("wall_s", 0.0)) / 60.0)
            p("kevo: %d judged (%d correct and timed) in %.1f s: %.2f candidates per GPU-minute "
              "(%.2f counting the first prepare too)" % (judged, correct, wall, k_rate, with_prep))
            p("      (the eval ran with --no-prepare: it built the tasks' references, from the cache, and "
              "skipped the tasks' checks, which the first prepare did)")
            summary["kevo"] = {"judged": judged, "correct_timed": correct, "wall_s": wall, "per_gpu_minute": k_rate,
                               "prepare_wall_s": prep.get("wall_s", 0.0), "per_gpu_minute_with_prepare": with_prep}
    if kb:
        probe = kb.get("probe", {})
        if not probe.get("ok"):
            p("KernelBench: not run: kernelbench.eval does not import: %s" % (probe.get("error") or "?")[-400:])
        else:
            if probe.get("shims"):
                p("KernelBench: stand-ins for modules this interpreter lacks: %s" % ", ".join(probe["shims"]))
            pre = kb.get("prebuild", {})
            p("KernelBench: pre-build (batch_compile, %s workers): %.1f s, rc %s%s, compiled %s" % (
                pre.get("workers"), pre.get("wall_s", 0.0), pre.get("rc"), " TIMED OUT" if pre.get("timed_out") else "",
                pre.get("results")))
            results = kb.get("results", {})
            ran = [e for e in results.values() if "wall_s" in e]
            # A process killed by a signal (the candidate crashed it) is a verdict in KernelBench's batch_eval;
            # one that timed out, or whose driver failed, is not.
            crashed = sum(1 for e in ran if not e.get("result") and isinstance(e.get("rc"), int) and e["rc"] < 0
                          and not e.get("timed_out"))
            judged = sum(1 for e in ran if e.get("result")) + crashed
            correct = sum(1 for e in ran if (e.get("result") or {}).get("correctness"))
            wall = pre.get("wall_s", 0.0) + kb.get("evals_wall_s", 0.0)
            p("KernelBench: %d fresh process(es), %.1f s; %d judged (%d correct and timed, %d crashed), "
              "%d without a verdict" % (len(ran), kb.get("evals_wall_s", 0.0), judged, correct, crashed,
                                        len(ran) - judged))
            if wall > 0:
                b_rate = judged / (wall / 60.0)
                p("KernelBench: %d judged in %.1f s (pre-build + evaluations): %.2f candidates per GPU-minute" % (
                    judged, wall, b_rate))
                summary["kernelbench"] = {"judged": judged, "correct_timed": correct, "wall_s": wall,
                                          "per_gpu_minute": b_rate, "prebuild_wall_s": pre.get("wall_s", 0.0)}
    if k_rate and b_rate:
        ratio = k_rate / b_rate
        p("ratio kevo / KernelBench: %.2fx (issue 18's target: at least 10x): %s" % (
            ratio, "met" if ratio >= 10 else "NOT met"))
        summary["ratio"] = ratio
        summary["target_met"] = ratio >= 10
        p("      (not the same work: kevo judges every visible, hidden and drawn shape with stress trials and times "
          "each call on fresh inputs; KernelBench runs 5 trials at one shape and times 100 calls on one input)")

    # Verdicts.
    p("")
    p("-- verdicts on the same candidates --")
    hdr = "%-20s %-12s %-14s %8s %9s | %-9s %9s %8s %-5s | %-32s %s" % (
        "candidate", "kind", "kevo", "speedup", "cand us", "KernelBench", "runtime us", "speedup", "stat.", "outcome",
        "as expected")
    p(hdr)
    p("-" * len(hdr))
    kv_all = {}
    for e in (kevo.get("tasks") or {}).values():
        kv_all.update(e.get("verdicts", {}))
    rows = []
    counts = {}
    for c in cands:
        kv = kv_all.get(c["id"])
        ke = (kb.get("results") or {}).get(c["id"]) or {}
        kr = ke.get("result")
        oc = outcome(kv, kr)
        counts[oc] = counts.get(oc, 0) + 1
        k_status = (kv or {}).get("status") or "-"
        k_speed = num((kv or {}).get("speedup")) if kv else float("nan")
        k_us = num((kv or {}).get("cand_median_ns")) / 1e3 if kv else float("nan")
        if kr is None:
            kb_word = "timed out" if ke.get("timed_out") else ("skipped" if ke.get("skipped") else "-")
        elif not kr.get("compiled"):
            kb_word = "no build"
        else:
            kb_word = "correct" if kr.get("correctness") else "wrong"
        b_us = kb_us(kr, "runtime_ms")
        b_ref = kb_us(kr, "ref_runtime_ms")
        b_speed = b_ref / b_us if b_us and b_ref else float("nan")
        st = (kb.get("static_check") or {}).get(c["id"])
        st_word = "-" if not st else ("ok" if st.get("valid") and not st.get("warnings") else
                                      ("warn" if st.get("valid") else "error"))
        expected = "yes" if oc == c["expect"] else ("?" if oc == "incomplete" else "NO (%s)" % c["expect"])
        p("%-20s %-12s %-14s %8s %9s | %-9s %9s %8s %-5s | %-32s %s" % (
            c["id"], c["kind"], k_status, "%.3fx" % k_speed if math.isfinite(k_speed) and k_speed > 0 else "-",
            fmt_us(k_us), kb_word, fmt_us(b_us), "%.3fx" % b_speed if math.isfinite(b_speed) else "-", st_word, oc,
            expected))
        rows.append({"id": c["id"], "task": c["task"], "kind": c["kind"], "note": c["note"], "expect": c["expect"],
                     "outcome": oc, "as_expected": oc == c["expect"], "kevo_status": k_status,
                     "kevo_message": (kv or {}).get("message", ""), "kevo_speedup": k_speed, "kevo_cand_us": k_us,
                     "kb_verdict": kb_word, "kb_runtime_us": b_us, "kb_ref_runtime_us": b_ref, "kb_speedup": b_speed,
                     "kb_excessive_speedup_flag": bool(((kr or {}).get("metadata") or {}).get("excessive_speedup")),
                     "kb_static_check": st})
    p("")
    p("outcomes: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    for r in rows:
        if r["kevo_status"] not in ("correct", "-") :
            p("  kevo on %-20s %s: %s" % (r["id"], r["kevo_status"], r["kevo_message"][:160].replace("\n", " ")))
    for c in cands:
        ke = (kb.get("results") or {}).get(c["id"]) or {}
        kr = ke.get("result")
        if kr and not (kr.get("compiled") and kr.get("correctness")):
            md = kr.get("metadata") or {}
            why = [str(md[k]) for k in ("compilation_error", "correctness_issue", "runtime_error", "cuda_error",
                                        "other_error", "max_difference") if md.get(k)]
            p("  KernelBench on %-13s %s: %s" % (c["id"], "not compiled" if not kr.get("compiled") else "incorrect",
                                                  "; ".join(why)[:160].replace("\n", " ")))
        elif ke and not kr and "wall_s" in ke:
            p("  KernelBench on %-13s no result: rc %s%s %s" % (c["id"], ke.get("rc"),
                                                                ", timed out" if ke.get("timed_out") else "",
                                                                (ke.get("error") or ke.get("stderr") or "")[-160:]))
    for r in rows:
        # (kevo's time is 0 where kevo gave no correct verdict: softmax_cached_ptr's wrong_answer)
        if r["kind"] == "timing cheat" and r["kb_runtime_us"] and math.isfinite(r["kevo_cand_us"]) and \
                r["kevo_cand_us"] > 0:
            p("  timing cheat %-18s KernelBench %s us (%.2fx%s) against kevo's %s us (%.2fx): KernelBench's time is "
              "%.2f of kevo's" % (r["id"], fmt_us(r["kb_runtime_us"]), r["kb_speedup"],
                                  ", flagged excessive" if r["kb_excessive_speedup_flag"] else "",
                                  fmt_us(r["kevo_cand_us"]), r["kevo_speedup"], r["kb_runtime_us"] / r["kevo_cand_us"]))
    p("  (stat. = KernelBench's static checker, which its generation scripts run and its evaluation does not: "
      "ok, warn(ings) or error)")
    summary["outcomes"] = counts
    summary["verdicts"] = rows

    # CV.
    cv = res.get("cv")
    if cv:
        p("")
        p("-- timing CV of %s (judgement to judgement) --" % cv.get("candidate"))
        series = []
        masks = []
        for x in cv.get("kevo", []):
            if x.get("mask", "fused") not in masks:
                masks.append(x.get("mask", "fused"))
        kv = []
        for mask in masks:
            got = [x for x in cv.get("kevo", []) if x.get("mask", "fused") == mask and x.get("status") == "correct"
                   and math.isfinite(x.get("cand_median_ns", float("nan")))]
            v = [x["cand_median_ns"] / 1e3 for x in got]
            if v:
                series.append(("kevo judgement cand_median" + ("" if masks == ["fused"] else " (mask %s)" % mask), v))
                kv = kv or v
            unmask = [x["ref_unmask_us"] for x in got if x.get("ref_unmask_us") is not None]
            if unmask:
                p("kevo (mask %s): the reference's message and unmask, median of %d judgements: %.1f us" % (
                    mask, len(unmask), statistics.median(unmask)))
        kbcv = cv.get("kernelbench") or {}
        if kbcv.get("cuda_event_mean_ms"):
            series.append(("kernelbench cuda_event mean of %s" % kbcv.get("perf_trials"),
                           [v * 1e3 for v in kbcv["cuda_event_mean_ms"]]))
        if kbcv.get("do_bench_ms"):
            series.append(("triton do_bench", [v * 1e3 for v in kbcv["do_bench_ms"]]))
        if kbcv.get("error") or kbcv.get("skipped"):
            p("KernelBench side: %s" % (kbcv.get("error") or kbcv.get("skipped")))
        elif kbcv and not kbcv.get("cuda_event_mean_ms"):
            p("KernelBench side: no timings (rc %s%s): %s" % (
                kbcv.get("rc"), ", timed out" if kbcv.get("timed_out") else "",
                (kbcv.get("stderr") or "").strip()[-300:]))
        cvs = {}
        for label, v in series:
            p("values_us (%s): %s" % (label, " ".join("%.3f" % x for x in v)))
        for label, v in series:
            if len(v) >= 2:
                m = statistics.mean(v)
                sd = statistics.stdev(v)
                cvs[label] = {"n": len(v), "mean_us": m, "sd_us": sd, "cv": sd / m if m else float("nan")}
                p("%-40s n=%-3d mean %9.3f us  SD %8.4f us  CV %.3f%%" % (label, len(v), m, sd, 100 * sd / m))
        ratios = {}
        if kv and len(kv) >= 3:
            for label, v in series[1:]:
                if label.startswith("kevo"):
                    continue
                if len(v) >= 3 and statistics.stdev(v) > 0:
                    ratio, lo, hi = sd_ratio(kv, v)
                    say = ("kevo's timings vary less" if hi < 1 else "kevo's timings vary more" if lo > 1 else
                           "not distinguishable at these counts")
                    p("SD ratio kevo / %s: %.2f (90%% bootstrap interval %.2f-%.2f): %s" % (label, ratio, lo, hi, say))
                    ratios[label] = {"ratio": ratio, "lo": lo, "hi": hi}
        walls = [x.get("wall_s", 0.0) for x in cv.get("kevo", []) if "wall_s" in x]
        if walls:
            p("(each kevo judgement is a whole `kevo eval`, its prepare included: %.1f s each on average; "
              "KernelBench's %d calls ran in one process in %.1f s)" % (
                  statistics.mean(walls), len(kbcv.get("cuda_event_mean_ms", [])), kbcv.get("wall_s", 0.0)))
        summary["cv"] = {"series": cvs, "sd_ratios": ratios}
    return "\n".join(lines), summary


# ---- --check ------------------------------------------------------------------------------

def check(args):
    ok = True
    out = []

    def say(good, what):
        out.append(("ok   " if good else "FAIL ") + what)
        return good

    sys.path.insert(0, os.path.join(REPO, "backends", "torch", "python"))
    try:
        import kevo_torch_common as KC
    except ImportError as e:
        KC = None
        out.append("note kevo's static checks not importable: %s" % e)
    for t in TASK_ORDER:
        tdir = os.path.join(TASKS_DIR, t)
        try:
            with open(os.path.join(tdir, "task.json")) as f:
                tj = json.load(f)
            with open(os.path.join(tdir, tj.get("reference", "reference.py"))) as f:
                tree = ast.parse(f.read())
            names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
            missing = {"Model", "get_inputs", "get_init_inputs"} - names
            ok &= say(tj.get("backend") == "torch" and not missing,
                      "task %s: backend %s, reference defines %s" % (t, tj.get("backend"), "all" if not missing
                                                                      else "no " + ", ".join(sorted(missing))))
        except (OSError, ValueError, SyntaxError) as e:
            ok &= say(False, "task %s: %s" % (t, e))
    seen = set()
    for c in CANDIDATES:
        path = repo_path(c["path"])
        if c["id"] in seen:
            ok &= say(False, "candidate id %s twice" % c["id"])
        seen.add(c["id"])
        try:
            with open(path) as f:
                src = f.read()
            compile(src, path, "exec")
            tree = ast.parse(src)
            has = any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
            doc = ast.get_docstring(tree) or ""
            first = next((ln.strip() for ln in src.splitlines() if ln.strip()), "")
            documented = bool(doc) or first.startswith("#")
            kevo_static = "not checked"
            if KC is not None:
                try:
                    t2 = KC.check_source(src, os.path.basename(path))
                    calls = KC.load_inline_calls(t2, os.path.basename(path))
                    kevo_static = "passes (%d load_inline call(s))" % len(calls)
                except Exception as e:
                    kevo_static = "%s: %s" % (type(e).__name__, e)
            st = kb_static_check(args.kb_src, src) if args.kb_src else None
            st_word = "-" if st is None else ("valid" if st["valid"] else "errors %s" % st["errors"]) + \
                ("" if not st or not st["warnings"] else ", warnings %s" % st["warnings"])
            ok &= say(has and documented and c["task"] in TASK_ORDER,
                      "candidate %-20s %s: compiles, %s, %s; kevo static checks: %s; KernelBench's static checker: %s"
                      % (c["id"], c["path"], "ModelNew" if has else "NO ModelNew",
                         "documented" if documented else "NO docstring", kevo_static, st_word))
        except (OSError, SyntaxError) as e:
            ok &= say(False, "candidate %s: %s" % (c["id"], e))
    if args.kb_src:
        work = tempfile.mkdtemp(prefix="kevo-kb-check-")
        try:
            probe = prepare_kernelbench(args.python, args.kb_src, os.path.join(work, "shims"), Budget(0))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if probe.get("ok"):
            good = not probe.get("missing_eval_params") and probe.get("has_batch_compile") and \
                "time_execution_with_cuda_event" in probe.get("timing_functions", [])
            ok &= say(good, "KernelBench imports under %s (torch %s, CUDA available %s; stand-ins: %s): "
                            "eval_kernel_against_ref(%s) device default %s; timing %s; batch_compile %s%s" % (
                                args.python, probe.get("torch"), probe.get("cuda_available"),
                                ", ".join(probe["shims"]) or "none", ", ".join(probe.get("eval_params", [])),
                                probe.get("device_default"), ", ".join(probe.get("timing_functions", [])),
                                probe.get("has_batch_compile"),
                                "; MISSING parameters %s" % probe["missing_eval_params"]
                                if probe.get("missing_eval_params") else ""))
        else:
            ok &= say(False, "KernelBench does not import under %s (stand-ins tried: %s): %s" % (
                args.python, ", ".join(probe.get("shims", [])) or "none", (probe.get("error") or "")[-1500:]))
    if args.kevo:
        if not os.path.isfile(args.kevo):
            out.append("skip kevo binary %s does not exist (kevo checks skipped)" % args.kevo)
        else:
            r = run_proc([args.kevo, "--version"], 60)
            ok &= say(r["rc"] == 0, "kevo --version: %s" % (r["out"].strip() or tail(r["err"], 300)))
            for t in TASK_ORDER:
                r = run_proc([args.kevo, "tasks", os.path.join(TASKS_DIR, t)], 120)
                ok &= say(r["rc"] == 0, "kevo tasks %s (validation, no prepare): rc %s %s" % (
                    t, r["rc"], tail(r["err"], 300).strip()))
    print("\n".join(out))
    print("check: %s" % ("every check passed" if ok else "SOME CHECKS FAILED"))
    return 0 if ok else 1


# ---- main -----------------------------------------------------------------------------------

def env_info(python, kevo):
    info = {}
    code = ("import json, torch\n"
            "d = {'torch': torch.__version__}\n"
            "try:\n"
            "    import triton\n"
            "    d['triton'] = triton.__version__\n"
            "except Exception as e:\n"
            "    d['triton'] = repr(e)\n"
            "d['device'] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'\n"
            "print(json.dumps(d))\n")
    r = run_proc([python, "-c", code], 120)
    try:
        info = json.loads(r["out"].strip().splitlines()[-1])
    except (ValueError, IndexError):
        info = {"error": tail(r["err"], 500)}
    return info


def write_json(res, path):
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=str)
    log("wrote %s" % path)


def merge(paths):
    res = {"format": FORMAT, "meta": {}, "merged_from": paths}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        m = d.get("meta", {})
        if not res["meta"]:
            res["meta"] = copy.deepcopy(m)
        else:
            res["meta"]["parts_run"] = sorted(set(res["meta"].get("parts_run", [])) | set(m.get("parts_run", [])))
            ids = set(res["meta"].get("candidates", [])) | set(m.get("candidates", []))
            res["meta"]["candidates"] = [c["id"] for c in CANDIDATES if c["id"] in ids]
        for part in ("kevo", "kernelbench", "cv"):
            if d.get(part):
                res[part] = d[part]
    return res


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--kb-driver":
        return driver_main(sys.argv[2:])
    try:
        sys.stdout.reconfigure(line_buffering=True)
    except AttributeError:
        pass
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kevo", nargs="?", help="the kevo executable (libkevo_pyhost and the torch scripts next to it)")
    ap.add_argument("kb_src", nargs="?", help="a KernelBench checkout's src folder (holding kernelbench/)")
    ap.add_argument("--quick", action="store_true", help="1 task, 4 candidates, K=3")
    ap.add_argument("--check", action="store_true",
                    help="validate candidates and tasks, import KernelBench, run kevo --version (no GPU)")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="join the JSON files of separate --parts runs")
    ap.add_argument("--parts", default="kevo,kernelbench,cv", help="comma-separated: kevo, kernelbench, cv")
    ap.add_argument("--only", help="comma-separated candidate ids (instead of all, or --quick's)")
    ap.add_argument("--k", type=int, help="judgements per series for the CV (10; 3 with --quick)")
    ap.add_argument("--cv-masks", default="fused", help="comma-separated: the judge's GPU input masks to time "
                    "the CV's judgements under, in turn (KEVO_TORCH_MASK: fused, generator)")
    ap.add_argument("--timeout", type=int, default=180,
                    help="seconds per candidate (KernelBench's eval_from_generations default, 180); kevo's "
                         "run.wall_seconds; the other timeouts derive from it")
    ap.add_argument("--budget-s", type=float, default=0, help="start no new step past this wall time (0: none)")
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch for kevo and KernelBench")
    ap.add_argument("--kevo-set", action="append", default=[], metavar="KEY=VALUE", help="more kevo --set options")
    ap.add_argument("--kevo-again", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                    help="after kevo's eval, the same eval again with these --set values and a cache of its own "
                         "(repeatable)")
    ap.add_argument("--kevo-no-pch-too", action="store_true", help="the same as --kevo-again build.pch=false")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="kevo with sandbox.seccomp=false sandbox.namespaces=false (docs/torch.md, status on the H200)")
    ap.add_argument("--kb-gpu-arch", default="Hopper", help="KernelBench's gpu_arch (set_gpu_arch), comma-separated")
    ap.add_argument("--kb-workers", type=int, default=0, help="KernelBench pre-build workers (default: the cores)")
    ap.add_argument("--kb-correct-trials", type=int, default=5)
    ap.add_argument("--kb-perf-trials", type=int, default=100)
    ap.add_argument("--work", help="scratch folder (default: a new temporary one, removed at the end)")
    ap.add_argument("--keep-work", action="store_true")
    ap.add_argument("--json", help="JSON report path (default $OUT/torch_vs_kernelbench.json when $OUT is set)")
    args = ap.parse_args()
    if args.kevo_no_pch_too:
        args.kevo_again.append("build.pch=false")
    json_path = args.json or (os.path.join(os.environ["OUT"], "torch_vs_kernelbench.json")
                              if os.environ.get("OUT") else None)

    if args.merge:
        res = merge(args.merge)
        text, summary = report(res)
        res["summary"] = summary
        print(text, flush=True)
        write_json(res, json_path)
        return 0
    if args.check:
        return check(args)
    if not args.kevo or not args.kb_src:
        ap.error("KEVO and KERNELBENCH_SRC are needed (or --merge)")
    args.kevo = os.path.abspath(args.kevo)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in parts if p not in ("kevo", "kernelbench", "cv")]
    if bad:
        ap.error("unknown part(s) %s" % bad)
    bad = [m for m in args.cv_masks.split(",") if m not in ("fused", "generator")]
    if bad or not args.cv_masks:
        ap.error("--cv-masks: expected fused and/or generator, comma-separated (got %r)" % args.cv_masks)
    if ("kevo" in parts or "cv" in parts) and not os.access(args.kevo, os.X_OK):
        ap.error("%s is not an executable" % args.kevo)
    if not os.path.isfile(os.path.join(args.kb_src, "kernelbench", "eval.py")):
        ap.error("%s holds no kernelbench/eval.py" % args.kb_src)
    if args.k is None:
        args.k = 3 if args.quick else 10
    cands = selected(args)
    budget = Budget(args.budget_s)
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="kevo-vs-kb-")
    os.makedirs(work, exist_ok=True)
    log("work folder %s; parts %s; %d candidate(s); K=%d; timeout %d s per candidate%s" % (
        work, ",".join(parts), len(cands), args.k, args.timeout,
        "; budget %.0f s" % args.budget_s if args.budget_s else ""))
    res = {"format": FORMAT, "meta": {
        "argv": sys.argv, "quick": args.quick, "parts_run": parts, "candidates": [c["id"] for c in cands],
        "k": args.k, "timeout_s": args.timeout, "kb_src": os.path.abspath(args.kb_src), "python": args.python,
        "started": time.strftime("%Y-%m-%d %H:%M:%S")}}
    r = run_proc([args.kevo, "--version"], 60) if os.path.isfile(args.kevo) else {"out": "", "rc": None}
    res["meta"]["kevo_version"] = r["out"].strip() or "kevo ?"
    res["meta"]["env"] = env_info(args.python, args.kevo)
    log("env: %s; %s" % (res["meta"]["env"], res["meta"]["kevo_version"]))
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    stopped = None
    try:
        try:
            for part in parts:
                try:
                    if part == "cv":
                        cv_part(args, work, budget, res)
                    elif part == "kevo":
                        kevo_part(args, cands, work, budget, res)
                    else:
                        kernelbench_part(args, cands, work, budget, res)
                except Stopped:
                    raise
                except Exception as e:   # one part failing must not lose the others' results
                    import traceback
                    log("part %s failed: %r" % (part, e))
                    res.setdefault("errors", {})[part] = traceback.format_exc()[-4000:]
                write_json(res, json_path)
        except Stopped as e:
            stopped = str(e)
            res["stopped"] = stopped
            log("stopped (%s): the report holds what was measured until then" % stopped)
        res["meta"]["wall_s"] = time.monotonic() - T0
        text, summary = report(res)
        res["summary"] = summary
        print("", flush=True)
        print(text, flush=True)
        write_json(res, json_path)
    finally:
        if not args.keep_work and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 143 if stopped else 0


if __name__ == "__main__":
    sys.exit(main())
