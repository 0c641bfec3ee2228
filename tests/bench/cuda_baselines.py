#!/usr/bin/env python3
"""Library baselines and timing stability for the bundled CUDA tasks
(docs/benchmarks.md#cuda-backend). Needs a GPU, torch and triton.

  cuda_baselines.py table TASKS_DIR RUN_DIR   per task: reference, best evolved kernel (RUN_DIR/best),
                                              torch eager (cuBLAS for sgemm, TF32 off) and torch.compile,
                                              all timed with triton.testing.do_bench (median, ms)
  cuda_baselines.py cv TASKS_DIR K            do_bench CV over K runs on the axpy seed kernel
  cuda_baselines.py load_inline TASKS_DIR N [JOBS]   the KernelBench-style path: build N variants of
                                              the axpy seed with torch load_inline (JOBS builds at once),
                                              check and time each
Kernels are built with nvcc into shared objects and called through ctypes with
torch's device pointers, so both timers see the same kernels.
"""
import ctypes, json, os, re, subprocess, sys, tempfile, time
import torch
import triton.testing

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
TMP = tempfile.mkdtemp(prefix="kevo-baselines-")


def build(src_path, name):
    out = os.path.join(TMP, name + ".so")
    subprocess.run([NVCC, "-O3", "-std=c++17", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
                    "-o", out, src_path], check=True)
    return ctypes.CDLL(out)


def value(expr, dims):
    return eval(str(expr), {"__builtins__": {}}, dict(dims))  # our own manifests: names and numbers


def make_args(task, dims, gen):
    tensors, cargs = {}, []
    for a in task["args"]:
        if a["role"] == "scalar":
            v = value(a["value"], dims)
            cargs.append(ctypes.c_float(v) if a["dtype"] == "float32" else ctypes.c_int(int(v)))
            tensors[a["name"]] = v
            continue
        shape = [int(value(e, dims)) for e in a["shape"]]
        d = a.get("distribution", {})
        if a["role"] == "out":
            t = torch.full(shape, float("nan"), device="cuda")
        elif d.get("kind") == "normal":
            t = torch.randn(shape, device="cuda", generator=gen) * d.get("stddev", 1) + d.get("mean", 0)
        else:
            lo, hi = d.get("low", -1), d.get("high", 1)
            t = torch.rand(shape, device="cuda", generator=gen) * (hi - lo) + lo
        tensors[a["name"]] = t
        cargs.append(ctypes.c_void_p(t.data_ptr()))
    return tensors, cargs


def torch_op(name, t):
    f = {
        "axpy": lambda: torch.add(t["y"], t["x"], alpha=t["a"]),
        "softmax": lambda: torch.softmax(t["X"], dim=1),
        "rmsnorm": lambda: torch.nn.functional.rms_norm(t["X"], (t["C"],), t["w"], t["eps"]),
        "layernorm": lambda: torch.nn.functional.layer_norm(t["X"], (t["C"],), t["gamma"], t["beta"], t["eps"]),
        "reduce_sum": lambda: t["x"].sum(),
        "transpose": lambda: t["A"].t().contiguous(),
        "sgemm": lambda: torch.matmul(t["A"], t["B"]),
    }
    return f.get(name)


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def table(tasks_dir, run_dir):
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    for name in sorted(os.listdir(tasks_dir)):
        tdir = os.path.join(tasks_dir, name)
        if not os.path.isfile(os.path.join(tdir, "task.json")):
            continue
        task = json.load(open(os.path.join(tdir, "task.json")))
        dims = task["shapes"]["visible"][0]
        t, cargs = make_args(task, dims, gen)
        fn = task["function"]
        ref = getattr(build(os.path.join(tdir, task["reference"]), name + "-ref"), fn)
        row = {"task": name, "ref_ms": bench(lambda: ref(*cargs))}
        best = None
        for ext in (".cu", ".cpp"):
            p = os.path.join(run_dir, "best", name + ext)
            if os.path.isfile(p):
                src = open(p).read()
                cu = os.path.join(TMP, name + "-best.cu")
                open(cu, "w").write(src)
                best = getattr(build(cu, name + "-best"), fn)
        if best:
            row["best_ms"] = bench(lambda: best(*cargs))
        op = torch_op(name, t)
        if op:
            row["torch_ms"] = bench(op)
            if not os.environ.get("KEVO_TORCH_COMPILE"):
                op = None   # torch.compile costs tens of seconds per task: opt in
        if op:
            try:
                comp = torch.compile(op)
                comp()
                row["compile_ms"] = bench(comp)
            except Exception as e:  # torch.compile is optional
                row["compile_err"] = str(e)[:80]
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| task | reference ms | best evolved ms | torch eager ms | torch.compile ms | best vs ref | best vs torch |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        b = r.get("best_ms")
        tm = r.get("torch_ms")
        print("| %s | %.4f | %s | %s | %s | %s | %s |" % (
            r["task"], r["ref_ms"], "%.4f" % b if b else "-", "%.4f" % tm if tm else "-",
            "%.4f" % r["compile_ms"] if "compile_ms" in r else "-",
            "%.2fx" % (r["ref_ms"] / b) if b else "-", "%.2fx" % (tm / b) if b and tm else "-"))


def cv_fresh(tasks_dir, k):
    """As kevo measures: each judgement in a fresh process (new context, new
    allocations), one do_bench median each; CV across the K processes."""
    ms = []
    for _ in range(k):
        out = subprocess.run([sys.executable, __file__, "cv", tasks_dir, "1"], capture_output=True, text=True, check=True)
        ms.append(float(re.search(r"mean of medians ([0-9.]+) us", out.stdout).group(1)))
    m = sum(ms) / k
    s = (sum((x - m) ** 2 for x in ms) / (k - 1)) ** 0.5
    print("do_bench on the axpy seed, one fresh process per run: %d runs, mean of medians %.2f us, CV %.3f%%"
          % (k, m, 100 * s / m))
    print("values_us (do_bench, fresh processes): " + " ".join("%.4f" % x for x in ms))


def cv(tasks_dir, k):
    tdir = os.path.join(tasks_dir, "axpy")
    task = json.load(open(os.path.join(tdir, "task.json")))
    t, cargs = make_args(task, task["shapes"]["visible"][0], torch.Generator(device="cuda").manual_seed(0))
    f = getattr(build(os.path.join(tdir, "seed.cu"), "axpy-seed"), "axpy")
    ms = [bench(lambda: f(*cargs)) for _ in range(k)]
    m = sum(ms) / k
    s = (sum((x - m) ** 2 for x in ms) / (k - 1)) ** 0.5 if k > 1 else 0.0
    print("do_bench on the axpy seed: %d runs, mean of medians %.2f us, CV %.3f%%" % (k, m * 1e3, 100 * s / m))
    print("values_us (do_bench, one process): " + " ".join("%.4f" % (x * 1e3) for x in ms))


_WRAPPER = """
torch::Tensor run(torch::Tensor x, torch::Tensor y, double a) {
  auto out = torch::empty_like(x);
  axpy(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), (float)a, (int32_t)x.numel());
  return out;
}
"""


def _variants(tasks_dir, n):
    """n distinct axpy kernels (search-space points of the seed) as load_inline sources."""
    seed = open(os.path.join(tasks_dir, "axpy", "seed.cu")).read()
    body = re.sub(r"// kevo:params begin.*?// kevo:params end\n", "", seed, flags=re.S)
    points = [(b, v, i) for b in (64, 128, 256, 512, 1024) for v in (1, 2, 4) for i in (1, 2, 4, 8)][:n]
    return [("kevo_axpy_%d_%d_%d" % (b, v, i),
             "#include <torch/extension.h>\n#define BLOCK %d\n#define VEC %d\n#define ITEMS %d\n%s\n%s" % (b, v, i, body, _WRAPPER))
            for b, v, i in points]


def _build(job):
    name, src, build_dir = job
    from torch.utils.cpp_extension import load_inline as li
    os.makedirs(build_dir, exist_ok=True)
    t0 = time.time()
    li(name=name, cpp_sources="torch::Tensor run(torch::Tensor x, torch::Tensor y, double a);", cuda_sources=src,
       functions=["run"], extra_cuda_cflags=["-O3", "-arch=sm_90"], build_directory=build_dir, verbose=False)
    return time.time() - t0


def load_inline(tasks_dir, n, jobs=1):
    """The KernelBench-style path: each candidate a torch extension built with
    load_inline (jobs builds at once, in separate processes, as a batch
    evaluator would), then loaded, checked against torch and timed with
    do_bench on the GPU one at a time. Prints candidates per minute."""
    import concurrent.futures, multiprocessing
    variants = _variants(tasks_dir, n)
    root = tempfile.mkdtemp(prefix="kevo-load-inline-")
    jobs_list = [(name, src, os.path.join(root, name)) for name, src in variants]
    t0 = time.time()
    # Builds first, in processes that never touch the GPU (spawned: no CUDA
    # state is forked).
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
        build_s = list(ex.map(_build, jobs_list))
    t_build = time.time() - t0
    x = torch.rand(1 << 24, device="cuda")
    y = torch.rand(1 << 24, device="cuda")
    for name, src, bdir in jobs_list:
        from torch.utils.cpp_extension import load_inline as li   # built above: only loads
        mod = li(name=name, cpp_sources="torch::Tensor run(torch::Tensor x, torch::Tensor y, double a);",
                 cuda_sources=src, functions=["run"], extra_cuda_cflags=["-O3", "-arch=sm_90"], build_directory=bdir,
                 verbose=False)
        for _ in range(5):   # correctness trials on fresh inputs, as KernelBench does
            xs, ys = torch.rand_like(x), torch.rand_like(y)
            assert torch.allclose(mod.run(xs, ys, 1.5), 1.5 * xs + ys)
        bench(lambda: mod.run(x, y, 1.5))
    dt = time.time() - t0
    print("load_inline path: %d candidates, %d build process(es): built in %.1f s (median %.1f s per build), "
          "built+checked+timed in %.1f s: %.2f candidates per minute"
          % (n, jobs, t_build, sorted(build_s)[len(build_s) // 2], dt, 60 * n / dt))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "table":
        table(sys.argv[2], sys.argv[3])
    elif mode == "cv_fresh":
        cv_fresh(sys.argv[2], int(sys.argv[3]))
    elif mode == "cv":
        cv(sys.argv[2], int(sys.argv[3]))
    elif mode == "load_inline":
        load_inline(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1)
