#!/usr/bin/env python3
"""KernelBench problems as kevo torch tasks (docs/torch.md#kernelbench), and
a Triton kernel's autotune configurations as a task's search space
(docs/torch.md#search-space).

  kevo tasks import-kernelbench LEVEL_DIR --out OUT [--max-mb 256] [--only 1,2,23]
  (runs: kevo_torch_tasks.py import LEVEL_DIR --out OUT ...)
  kevo tasks triton-space FILE [--kernel NAME] [--product] [--json]
  (runs: kevo_torch_tasks.py triton-space FILE ...)

One task folder per problem file (NN_Name.py) of LEVEL_DIR: the file copied
unchanged as reference.py, a seed.py (the same program with Model renamed
ModelNew: the run's first candidate, judged at about 1x), and a task.json
that kevo writes:

* sizes: the module's integer globals that get_inputs()/get_init_inputs()
  read; when the working set (inputs, parameters and outputs, measured on
  torch's meta device) is over --max-mb, the largest sizes are halved until
  it fits (a "size overrides" note in the description says so);
* hidden shapes: the sizes changed to odd and to small values, each kept
  only if the reference still runs there (on the meta device);
* dtype and tolerance from the reference's outputs;
* bytes (and flops, where torch's flop counter finds a single product of
  sizes) as expressions over the sizes, found by running the reference with
  every size set to a distinct prime and factoring;
* signed inputs unless the reference then gives NaN or infinities (log,
  sqrt of [0, 1) inputs), and `degenerate` when every output is zero or a
  copy of an input on small real inputs (kevo refuses such tasks when a run
  prepares them);
* for levels 2 and 3, matrix products and convolutions in `allow` (a
  candidate may keep them in cuBLAS/cuDNN and fuse what is around them);
  level 1 candidates must replace every operation of the reference.

A problem that does not define Model, get_inputs and get_init_inputs, that
fails when run, or whose sizes cannot be overridden is reported with the
file and the reason, and no task is written for it. Exit 0: every problem
imported; 1: some were refused (the others are written); 2: bad usage.

triton-space reads FILE's syntax tree (nothing of it runs) for a kernel
decorated with @triton.autotune(configs=[triton.Config({...}, num_warps=..,
num_stages=..), ...]) and prints the `search_space` that spans those
configurations (each key a parameter, num_warps as NUM_WARPS and so on; the
values each key takes; a restriction naming the configurations when they
are not every combination, none with --product, which lets kevo search
every combination; the first one the seed point) and the
"# kevo:params" block to put in the seed, which then launches the kernel
with those constants instead of autotuning. Exit 0, or 2 with the file, the
line and the reason (no autotuned kernel, configurations computed at run
time, a key missing from some configurations).
"""
import argparse
import ast
import json
import math
import os
import re
import sys
import traceback
import types

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kevo_torch_common as kc  # noqa: E402  (the syntax-tree helpers)

PRIMES = [1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049, 1051, 1061, 1063, 1069, 1087, 1091, 1093, 1097, 1103,
          1109, 1117, 1123, 1129, 1151, 1153, 1163]
ALLOW_LIBRARY_OPS = ["aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
                     "aten::convolution", "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d",
                     "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
                     "aten::cudnn_convolution", "aten::cudnn_convolution_transpose"]


class Refused(Exception):
    pass


def load(path, sizes=None):
    with open(path, "r", encoding="utf-8") as f:
        src = f.read()
    mod = types.ModuleType("kevo_kb_problem")
    mod.__file__ = path
    exec(compile(src, os.path.basename(path), "exec"), mod.__dict__)
    if sizes:
        mod.__dict__.update(sizes)
    return mod


def size_globals(tree):
    """Module-level names bound to integer constants, and those of them that
    get_inputs / get_init_inputs / Model read."""
    ints = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            if isinstance(v, ast.Constant) and type(v.value) is int and v.value > 0:
                ints[node.targets[0].id] = v.value
    used = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for n in ast.walk(node):
                if isinstance(n, ast.Name) and n.id in ints:
                    used.add(n.id)
    return {k: v for k, v in ints.items() if k in used}


def check_defines(tree, path):
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if need not in names:
            raise Refused("%s: defines no %s at module level" % (path, need))


def on_meta(torch):
    """Factory functions make tensors on the meta device (shapes, no memory):
    torch.device("meta") where torch has it (2.0), else a function mode that
    does the same."""
    if hasattr(torch.device, "__enter__"):
        return torch.device("meta")
    from torch.overrides import TorchFunctionMode
    factories = {getattr(torch, n) for n in ("rand", "randn", "randint", "zeros", "ones", "empty", "full", "tensor",
                                             "arange", "eye", "randperm", "linspace", "empty_strided") if hasattr(torch, n)}

    class Meta(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func in factories:
                kwargs["device"] = "meta"
            return func(*args, **kwargs)

    return Meta()


def meta_run(torch, path, sizes):
    """(input metas, output metas, parameter bytes, aten ops, flops or None)
    of the reference at `sizes`, on the meta device (no memory, no time)."""
    mod = load(path, sizes)
    with on_meta(torch):
        init = list(mod.get_init_inputs())
        model = mod.Model(*init)
        inputs = list(mod.get_inputs())
    inputs = [t.to("meta") if isinstance(t, torch.Tensor) else t for t in inputs]
    model = model.to("meta")
    flops = None
    try:
        from torch.utils.flop_counter import FlopCounterMode
        fc = FlopCounterMode(display=False)
        with fc, torch.no_grad():
            out = model(*inputs)
        flops = fc.get_total_flops()
    except ImportError:
        with torch.no_grad():
            out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    params = sum(p.numel() * p.element_size() for p in list(model.parameters()) + list(model.buffers()))
    def meta(t):
        return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "bytes": t.numel() * t.element_size()}
    return ([meta(t) for t in inputs if isinstance(t, torch.Tensor)], [meta(t) for t in outs if isinstance(t, torch.Tensor)],
            params, flops)


def working_set(torch, path, sizes):
    ins, outs, params, _ = meta_run(torch, path, sizes)
    return sum(m["bytes"] for m in ins) + sum(m["bytes"] for m in outs) + params


def shrink(torch, path, sizes, max_bytes):
    """Halves the largest dimension-like sizes until the working set fits."""
    sizes = dict(sizes)
    notes = []
    for _ in range(64):
        ws = working_set(torch, path, sizes)
        if ws <= max_bytes:
            return sizes, ws, notes
        candidates = sorted([k for k, v in sizes.items() if v >= 32], key=lambda k: -sizes[k])
        moved = False
        for k in candidates:
            trial = dict(sizes)
            trial[k] = sizes[k] // 2
            try:
                working_set(torch, path, trial)
            except Exception:
                continue
            notes.append("%s %d -> %d" % (k, sizes[k], trial[k]))
            sizes = trial
            moved = True
            break
        if not moved:
            raise Refused("%s: its working set (%.0f MB) cannot be brought under %.0f MB by halving its sizes"
                          % (path, ws / 2**20, max_bytes / 2**20))
    raise Refused("%s: its sizes could not be reduced to %.0f MB" % (path, max_bytes / 2**20))


def hidden_shapes(torch, path, sizes):
    """Other sizes the reference runs at: odd ones near the visible and small
    odd ones (checked on the meta device)."""
    out = []
    variants = [
        {k: (v - 1 if v > 2 and v % 2 == 0 else v) for k, v in sizes.items()},
        {k: (max(1, v // 5) | 1 if v >= 8 else v) for k, v in sizes.items()},
    ]
    for var in variants:
        if var == sizes or var in out:
            continue
        try:
            meta_run(torch, path, var)
        except Exception:
            # Sizes may be tied (heads * head_dim == dim): try changing one size at a time.
            for k in sizes:
                one = dict(sizes)
                one[k] = var[k]
                if one == sizes or one in out:
                    continue
                try:
                    meta_run(torch, path, one)
                    out.append(one)
                except Exception:
                    pass
            continue
        out.append(var)
    return out[:4]


def factor_monomial(value, primes_of):
    """value == c * prod(p_i^e_i) with a small integer c: (c, {name: e})."""
    if value is None or value <= 0 or int(value) != value:
        return None
    v = int(value)
    exps = {}
    for name, p in primes_of.items():
        while v % p == 0:
            v //= p
            exps[name] = exps.get(name, 0) + 1
    if v > 4096:
        return None
    return v, exps


def monomial_text(c, exps):
    parts = ([str(c)] if c != 1 else []) + ["*".join([n] * e) for n, e in sorted(exps.items())]
    return "*".join(parts) if parts else "1"


def derive_counts(torch, path, sizes):
    """bytes (and flops when a single product) as expressions over sizes."""
    names = sorted(sizes)
    if len(names) > len(PRIMES):
        return None, None
    primes_of = {n: PRIMES[i] for i, n in enumerate(names)}
    try:
        ins, outs, _, flops = meta_run(torch, path, primes_of)
    except Exception:
        return None, None
    terms = []
    for m in ins + outs:
        elem = m["bytes"] // max(1, math.prod(m["shape"])) if m["shape"] else m["bytes"]
        numel = math.prod(m["shape"]) if m["shape"] else 1
        f = factor_monomial(numel, primes_of)
        if f is None:
            return None, None
        terms.append((f[0] * elem, f[1]))
    merged = {}
    for c, e in terms:
        key = tuple(sorted(e.items()))
        merged[key] = merged.get(key, 0) + c
    bytes_expr = " + ".join(monomial_text(c, dict(k)) for k, c in sorted(merged.items(), key=lambda kv: -kv[1]))
    flops_expr = None
    fm = factor_monomial(flops, primes_of) if flops else None
    if fm and fm[1]:
        flops_expr = monomial_text(fm[0], fm[1])
    # Check at the real sizes.
    env = dict(sizes)
    try:
        ins2, outs2, _, fl2 = meta_run(torch, path, sizes)
        want = sum(m["bytes"] for m in ins2 + outs2)
        if eval(bytes_expr, {}, env) != want:
            bytes_expr = None
        if flops_expr and fl2 and eval(flops_expr, {}, env) != fl2:
            flops_expr = None
    except Exception:
        return None, None
    return bytes_expr, flops_expr


def small_real_check(torch, path, sizes, signed):
    """Runs the reference for real at `sizes` (small): (ok signed?, degenerate?)."""
    mod = load(path, sizes)
    torch.manual_seed(0)
    init = list(mod.get_init_inputs())
    model = mod.Model(*init)
    torch.manual_seed(1)
    inputs = list(mod.get_inputs())
    def run(xs):
        with torch.no_grad():
            o = model(*xs)
        return list(o) if isinstance(o, (tuple, list)) else [o]
    plain = run(inputs)
    signed_ok = True
    if signed:
        sx = [t * 2 - 1 if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
        so = run(sx)
        finite_plain = all(bool(torch.isfinite(o).all()) for o in plain if o.is_floating_point())
        finite_signed = all(bool(torch.isfinite(o).all()) for o in so if o.is_floating_point())
        signed_ok = finite_signed or not finite_plain
        if signed_ok:
            plain = so
            inputs = sx
    degenerate = False
    zeros = all(bool((o == 0).all()) for o in plain)
    first = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
    copy = first is not None and all(o.shape == first.shape and bool(torch.allclose(o.double(), first.double()))
                                     for o in plain)
    degenerate = zeros or copy
    return signed_ok, degenerate


def tolerance_for(dtype):
    if dtype in ("float16", "bfloat16"):
        return {"atol": 2e-2, "rtol": 2e-2, "rel_l2": 1e-2}
    if dtype == "float64":
        return {"atol": 1e-8, "rtol": 1e-8, "rel_l2": 1e-10}
    return {"atol": 1e-3, "rtol": 1e-3, "rel_l2": 1e-4}


def task_name(level_tag, stem):
    return re.sub(r"[^A-Za-z0-9_-]", "_", "kb%s_%s" % (level_tag, stem))[:100]


def seed_source(src):
    return ("# kevo's seed for this task: the reference program itself, as ModelNew (judged at about 1x;\n"
            "# the LLM operators rewrite it).\n" + re.sub(r"\bModel\b", "ModelNew", src))


def import_problem(torch, path, out_dir, level, args):
    with open(path, "r", encoding="utf-8") as f:
        src = f.read()
    try:
        tree = ast.parse(src, filename=path)
    except SyntaxError as e:
        raise Refused("%s:%s: not Python: %s" % (path, e.lineno, e.msg))
    check_defines(tree, path)
    sizes = size_globals(tree)
    notes = []
    try:
        ws0 = working_set(torch, path, sizes)
        visible, ws, shrunk = shrink(torch, path, sizes, args.max_mb * 2**20)
        if shrunk:
            notes.append("sizes reduced from KernelBench's (working set %.0f MB -> %.0f MB): %s"
                         % (ws0 / 2**20, ws / 2**20, ", ".join(shrunk)))
        hidden = hidden_shapes(torch, path, visible)
        _, outs, _, _ = meta_run(torch, path, visible)
        bytes_expr, flops_expr = derive_counts(torch, path, visible)
    except Refused:
        raise
    except Exception as e:
        raise Refused("%s: the reference fails when run (on the meta device): %s" % (
            path, traceback.format_exception_only(type(e), e)[-1].strip()))
    small = hidden[-1] if hidden else visible
    try:
        signed, degenerate = small_real_check(torch, path, small, True)
    except Exception as e:
        raise Refused("%s: the reference fails when run: %s" % (path, traceback.format_exception_only(type(e), e)[-1].strip()))
    dtype = outs[0]["dtype"] if outs else "float32"
    stem = os.path.splitext(os.path.basename(path))[0]
    name = task_name(level.replace("level", ""), stem)
    tdir = os.path.join(out_dir, name)
    os.makedirs(tdir, exist_ok=True)
    with open(os.path.join(tdir, "reference.py"), "w", encoding="utf-8") as f:
        f.write(src)
    with open(os.path.join(tdir, "seed.py"), "w", encoding="utf-8") as f:
        f.write(seed_source(src))
    level_no = re.sub(r"\D", "", level)
    doc = ast.get_docstring(next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")) or ""
    desc = ("KernelBench %s problem %s. %s Write ModelNew: the same interface as Model (constructed with "
            "get_init_inputs(), called with get_inputs()), its work done by your own kernels (CUDA through "
            "load_inline, or Triton). Outputs are %s." % (level, stem, " ".join(doc.split()), dtype))
    if notes:
        desc += " Note: " + "; ".join(notes) + "."
    manifest = {
        "name": name,
        "description": desc,
        "backend": "torch",
        "reference": "reference.py",
        "seed": "seed.py",
        "torch": {
            "sizes": sorted(visible),
            "inputs": {"signed": bool(signed)},
            "allow": ALLOW_LIBRARY_OPS if level_no in ("2", "3") else [],
            "level": "kernelbench/" + level,
            "degenerate": bool(degenerate),
        },
        "shapes": {"visible": [visible], "hidden": hidden},
        "tolerance": tolerance_for(dtype),
    }
    if bytes_expr:
        manifest["bytes"] = bytes_expr
    if flops_expr:
        manifest["flops"] = flops_expr
    with open(os.path.join(tdir, "task.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    return name, manifest


def cmd_import(args):
    import torch
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    src = os.path.abspath(args.level_dir)
    if not os.path.isdir(src):
        print("kevo: error: %s: expected a KernelBench level folder (holding NN_Name.py problem files)" % src,
              file=sys.stderr)
        return 2
    files = sorted(f for f in os.listdir(src) if f.endswith(".py") and re.match(r"^\d+_", f))
    if args.only:
        wanted = set(args.only.split(","))
        files = [f for f in files if f.split("_")[0] in wanted or os.path.splitext(f)[0] in wanted]
    if not files:
        print("kevo: error: %s: expected a KernelBench level folder (no NN_Name.py files in it)" % src, file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    level = os.path.basename(src.rstrip("/"))
    imported, refused = [], []
    for f in files:
        try:
            name, m = import_problem(torch, os.path.join(src, f), args.out, level, args)
            imported.append((f, name, m))
            flag = " (degenerate: kevo will refuse it)" if m["torch"]["degenerate"] else ""
            print("imported %-40s -> %s  sizes %s, %d hidden%s" % (f, name, m["shapes"]["visible"][0],
                                                                   len(m["shapes"]["hidden"]), flag))
        except Refused as e:
            refused.append((f, str(e)))
            print("refused  %-40s %s" % (f, e))
        sys.stdout.flush()
    print("%d imported into %s, %d refused" % (len(imported), args.out, len(refused)))
    return 0 if not refused else 1


# triton.Config's keyword arguments that are launch options: the parameter
# each becomes, and Triton's default for a configuration that omits it (None:
# no default kevo can fill in).
LAUNCH_OPTIONS = {"num_warps": ("NUM_WARPS", 4), "num_stages": ("NUM_STAGES", 3), "num_ctas": ("NUM_CTAS", 1),
                  "maxnreg": ("MAXNREG", None)}


class SpaceError(Exception):
    pass


def _chain(node):
    return kc._attr_chain(node) or ()


def _constant(node, where):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, (int, float)):
            return v
        if isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9_]+", v):
            return v
    raise SpaceError("%s: expected a number or a string of letters, digits and '_' (a search-space value), got %s"
                     % (where, ast.dump(node)[:80]))


def autotune_configs(tree, path, kernel=None):
    """(kernel name, [config dict], line) of the autotuned kernel of `tree`."""
    module_lists = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            module_lists[node.targets[0].id] = node.value
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if isinstance(dec, ast.Call) and _chain(dec.func)[-1:] == ("autotune",):
                found.append((node.name, dec))
    if kernel:
        found = [f for f in found if f[0] == kernel]
    if not found:
        raise SpaceError("%s: expected a kernel decorated with @triton.autotune(configs=[...])%s (none found)"
                         % (path, " named " + kernel if kernel else ""))
    if len(found) > 1:
        raise SpaceError("%s: expected one autotuned kernel, or --kernel NAME (found %s)" % (path, ", ".join(f[0] for f in found)))
    name, dec = found[0]
    where = "%s:%d" % (path, dec.lineno)
    configs = dec.args[0] if dec.args else next((k.value for k in dec.keywords if k.arg == "configs"), None)
    if isinstance(configs, ast.Name) and configs.id in module_lists:
        configs = module_lists[configs.id]
    if not isinstance(configs, (ast.List, ast.Tuple)):
        raise SpaceError("%s: expected configs as a list of triton.Config(...) written out (these are computed at run time; "
                         "list them)" % where)
    out = []
    for i, c in enumerate(configs.elts):
        at = "%s: configs[%d]" % (where, i)
        if not (isinstance(c, ast.Call) and _chain(c.func)[-1:] == ("Config",)):
            raise SpaceError("%s: expected a triton.Config(...) call" % at)
        kw = c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "kwargs"), None)
        if not isinstance(kw, ast.Dict) or any(not (isinstance(k, ast.Constant) and isinstance(k.value, str))
                                               for k in kw.keys):
            raise SpaceError("%s: expected its meta-parameters as a dict literal with string keys" % at)
        config = {k.value: _constant(v, "%s[%r]" % (at, k.value)) for k, v in zip(kw.keys, kw.values)}
        for k in c.keywords:
            if k.arg == "kwargs":
                continue
            if k.arg not in LAUNCH_OPTIONS:
                raise SpaceError("%s: expected a launch option kevo tunes (%s), got %s="
                                 % (at, ", ".join(LAUNCH_OPTIONS), k.arg))
            if not (isinstance(k.value, ast.Constant) and k.value.value is None):
                config[k.arg] = _constant(k.value, "%s: %s" % (at, k.arg))
        out.append(config)
    if not out:
        raise SpaceError("%s: expected at least one configuration" % where)
    return name, out, dec.lineno


def lit(v):
    """A search-space value as Python (and kevo's expressions) write it."""
    return json.dumps(v) if isinstance(v, str) else repr(v)


def triton_space(configs, path, product=False):
    """(search_space, block, names) spanning `configs`: only those points
    (a restriction naming them) unless `product`, every combination of the
    values they take."""
    meta = []
    for c in configs:
        for k in c:
            if k not in LAUNCH_OPTIONS and k not in meta:
                meta.append(k)
    for i, c in enumerate(configs):
        missing = [k for k in meta if k not in c]
        if missing:
            raise SpaceError("%s: expected every configuration to set every meta-parameter (configs[%d] has no %s)"
                             % (path, i, ", ".join(missing)))
    launch = [k for k in LAUNCH_OPTIONS if any(k in c for c in configs)]
    for k in launch:
        default = LAUNCH_OPTIONS[k][1]
        for i, c in enumerate(configs):
            if k not in c:
                if default is None:
                    raise SpaceError("%s: expected every configuration or none to set it (configs[%d] has no %s)" % (path, i, k))
                c[k] = default
    keys = meta + launch
    names = {k: LAUNCH_OPTIONS[k][0] if k in LAUNCH_OPTIONS else k for k in keys}
    clash = [k for k in meta if k in (v for v, _ in LAUNCH_OPTIONS.values())]
    if clash:
        raise SpaceError("%s: expected no meta-parameter named %s (the name kevo gives a launch option)" % (path, clash[0]))
    params = []
    for k in keys:
        values = []
        for c in configs:
            if c[k] not in values:
                values.append(c[k])
        if all(isinstance(v, (int, float)) for v in values):
            values.sort()
        elif any(isinstance(v, (int, float)) for v in values):
            raise SpaceError("%s: expected values of one kind per parameter (%s takes numbers and strings)" % (path, k))
        params.append({"name": names[k], "values": values})
    points = []
    for c in configs:
        p = tuple(c[k] for k in keys)
        if p not in points:
            points.append(p)
    space = {"params": params}
    full = 1
    for p in params:
        full *= len(p["values"])
    if len(points) < full and not product:
        space["restrictions"] = [" or ".join(
            "(" + " and ".join("%s == %s" % (names[k], lit(v)) for k, v in zip(keys, p)) + ")" for p in points)]
    first = points[0]
    space["seed_point"] = {names[k]: v for k, v in zip(keys, first)}
    block = "# kevo:params begin\n" + "".join(
        "%s = %s\n" % (names[k], lit(v)) for k, v in zip(keys, first)) + \
        "# kevo:params end\n"
    return space, block, names


def space_text(space):
    """The search space as JSON, a parameter per line."""
    lines = ["{", ' "params": [']
    lines += ["  %s%s" % (json.dumps(p), "," if i + 1 < len(space["params"]) else "") for i, p in enumerate(space["params"])]
    lines.append(" ],")
    if "restrictions" in space:
        lines.append(' "restrictions": %s,' % json.dumps(space["restrictions"]))
    lines.append(' "seed_point": %s' % json.dumps(space["seed_point"]))
    lines.append("}")
    return "\n".join(lines)


def cmd_triton_space(args):
    path = args.file
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print("kevo: error: %s: expected a readable Python file (%s)" % (path, e.strerror), file=sys.stderr)
        return 2
    try:
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as e:
            raise SpaceError("%s:%s: expected Python source (SyntaxError: %s)" % (path, e.lineno, e.msg))
        kernel, configs, line = autotune_configs(tree, path, args.kernel or None)
        space, block, names = triton_space(configs, path, args.product)
    except SpaceError as e:
        print("kevo: error: %s" % e, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"kernel": kernel, "line": line, "search_space": space, "block": block}, indent=1))
        return 0
    launch = ", ".join("%s=%s" % (k, names[k]) for k in names)
    print("# %s:%d: @triton.autotune of %s, %d configuration(s)" % (path, line, kernel, len(configs)))
    print("# task.json, \"search_space\":")
    print(space_text(space))
    print("# the seed: this block at module level (after any `from __future__` import),")
    print("# no @triton.autotune, and the launch given the constants: %s[grid](..., %s)" % (kernel, launch))
    print(block, end="")
    return 0


def main():
    ap = argparse.ArgumentParser(description="kevo's KernelBench importer (docs/torch.md#kernelbench)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    im = sub.add_parser("import")
    im.add_argument("level_dir")
    im.add_argument("--out", required=True)
    im.add_argument("--max-mb", type=float, default=256.0)
    im.add_argument("--only", default="", help="comma-separated problem numbers or stems")
    ts = sub.add_parser("triton-space")
    ts.add_argument("file")
    ts.add_argument("--kernel", default="")
    ts.add_argument("--json", action="store_true")
    ts.add_argument("--product", action="store_true")
    a = ap.parse_args()
    if a.cmd == "import":
        return cmd_import(a)
    if a.cmd == "triton-space":
        return cmd_triton_space(a)
    return 2


if __name__ == "__main__":
    sys.exit(main())
