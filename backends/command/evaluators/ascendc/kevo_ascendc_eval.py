#!/usr/bin/env python3
# =============================================================================
#  TEMPLATE -- NOT RUN HERE. kevo's development machines have no Ascend NPU
#  and no CANN toolkit; this file has never been executed against msopgen,
#  the CANN build, aclnn or torch_npu. It shows where those calls go in a
#  kevo command evaluator (docs/command-backend.md). Details marked
#  "UNCERTAIN" are CANN/torch_npu APIs as remembered from their
#  documentation and samples, not tested: check them against your CANN
#  release before trusting a verdict.
# =============================================================================
"""kevo command evaluator for Ascend C kernels on Ascend NPUs (template).

usage:
  kevo_ascendc_eval.py --compile SRC --out DIR --task-dir TASK
      generate an operator project with msopgen from the task, put the
      candidate's kernel in it, build it and install the custom OPP package
      into DIR (kevo's compile stage; cacheable)
  kevo_ascendc_eval.py            judge one request on stdin (one-shot: see
                                  README, "why not persistent")
  kevo_ascendc_eval.py --version  CANN, torch and torch_npu versions

The candidate is one Ascend C source file: the kernel entry

  extern "C" __global__ __aicore__ void <function>(GM_ADDR <buffer>..., GM_ADDR workspace, GM_ADDR tiling)

with one GM_ADDR per in/out buffer of the task in task order, reading the
task's scalars and buffer sizes from the tiling data (GET_TILING_DATA(t,
tiling); t.<scalar>, t.<buffer>_numel), and optionally
  #define KEVO_BLOCK_DIM <n>     the number of AI cores to launch (default 8)
The host side (op definition, tiling function) is generated here.
"""
import argparse
import ctypes
import glob
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import traceback

PROTOCOL = 1
DEFAULT_BLOCK_DIM = 8
# Where CANN lives; UNCERTAIN: set by CANN's set_env.sh as ASCEND_HOME_PATH
# (older: ASCEND_TOOLKIT_HOME).
CANN = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME") or \
    "/usr/local/Ascend/ascend-toolkit/latest"
# msopgen's compute unit and the op definition's SoC family. UNCERTAIN:
# spelled e.g. "ai_core-Ascend910B1" and "ascend910b"; match your chip
# (npu-smi info).
COMPUTE_UNIT = os.environ.get("KEVO_ASCEND_COMPUTE_UNIT", "ai_core-Ascend910B1")
SOC_FAMILY = os.environ.get("KEVO_ASCEND_SOC_FAMILY", "ascend910b")

# kevo dtype -> (msopgen json type, ge::DataType, aclDataType value, numpy, tiling C type)
# UNCERTAIN: msopgen spells float32 "float" (also accepted: "fp32" in some releases);
# aclDataType: ACL_FLOAT 0, ACL_INT32 3, ACL_INT64 9.
DTYPES = {
    "float32": ("float", "ge::DT_FLOAT", 0, "float32", "float"),
    "int32": ("int32", "ge::DT_INT32", 3, "int32", "int64_t"),
    "int64": ("int64", "ge::DT_INT64", 9, "int64", "int64_t"),
}
ACL_FORMAT_ND = 2   # UNCERTAIN: aclFormat ACL_FORMAT_ND


# ---- protocol output (CANN and torch_npu print to stdout; see README) --------
_PROTO = None


def protocol_stdout():
    global _PROTO
    if _PROTO is None:
        _PROTO = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _PROTO


def emit(obj):
    out = protocol_stdout()
    out.write(json.dumps(obj, allow_nan=False) + "\n")
    out.flush()


class Fatal(Exception):
    pass


class Verdict(Exception):
    def __init__(self, verdict):
        super().__init__(verdict.get("message", ""))
        self.verdict = verdict


# ---- names -------------------------------------------------------------------

def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[_\W]+", name) if p)


def op_names(function, digest):
    """A unique op type per build (reference and candidate are loaded into one
    process, each from its own vendor folder). Letters only: msopgen derives
    the kernel's snake_case name from the CamelCase op type, and digits make
    that derivation murky (UNCERTAIN)."""
    tag = "".join(chr(ord("a") + int(c, 16)) for c in digest[:8])
    op_type = "Kevo" + camel(function) + "Z" + tag
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", op_type).lower()
    return op_type, snake, "kevo_" + tag


def buffers(task):
    return [a for a in task["args"] if a["role"] != "scalar"]


def scalars(task):
    return [a for a in task["args"] if a["role"] == "scalar"]


# ---- compile stage -----------------------------------------------------------

def op_json(task, op_type):
    ins = [a for a in task["args"] if a["role"] == "in"]
    outs = [a for a in task["args"] if a["role"] == "out"]
    desc = lambda a: {"name": a["name"], "param_type": "required", "format": ["ND"], "type": [DTYPES[a["dtype"]][0]]}
    attr = [{"name": a["name"], "param_type": "required",
             "type": "float" if a["dtype"] == "float32" else "int"} for a in scalars(task)]
    return [{"op": op_type, "language": "cpp", "input_desc": [desc(a) for a in ins],
             "output_desc": [desc(a) for a in outs], "attr": attr}]


def host_sources(task, op_type, block_dim):
    """op_host/<snake>.cpp and <snake>_tiling.h: tiling data = every scalar
    (from the op's attributes) and every buffer's element count; block dim
    from the candidate. UNCERTAIN in detail: the gert/optiling APIs below are
    those of the CANN 7/8 Ascend C operator samples (AddCustom)."""
    fields = ["  TILING_DATA_FIELD_DEF(%s, %s);" % (DTYPES[a["dtype"]][4], a["name"]) for a in scalars(task)]
    fields += ["  TILING_DATA_FIELD_DEF(int64_t, %s_numel);" % a["name"] for a in buffers(task)]
    tiling_h = """#pragma once
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(%(op)sTilingData)
%(fields)s
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(%(op)s, %(op)sTilingData)
}  // namespace optiling
""" % {"op": op_type, "fields": "\n".join(fields)}
    sets = []
    for k, a in enumerate(scalars(task)):
        get = "GetFloat" if a["dtype"] == "float32" else "GetInt"
        sets.append("  tiling.set_%s(*attrs->%s(%d));" % (a["name"], get, k))
    ins = [a for a in task["args"] if a["role"] == "in"]
    outs = [a for a in task["args"] if a["role"] == "out"]
    for k, a in enumerate(ins):
        sets.append("  tiling.set_%s_numel(context->GetInputShape(%d)->GetStorageShape().GetShapeSize());" % (a["name"], k))
    for k, a in enumerate(outs):
        sets.append("  tiling.set_%s_numel(context->GetOutputShape(%d)->GetStorageShape().GetShapeSize());" % (a["name"], k))
    defs = []
    for a in ins:
        defs.append('    this->Input("%s").ParamType(REQUIRED).DataType({%s}).Format({ge::FORMAT_ND});' % (a["name"], DTYPES[a["dtype"]][1]))
    for a in outs:
        defs.append('    this->Output("%s").ParamType(REQUIRED).DataType({%s}).Format({ge::FORMAT_ND});' % (a["name"], DTYPES[a["dtype"]][1]))
    for a in scalars(task):
        defs.append('    this->Attr("%s").%s();' % (a["name"], "Float" if a["dtype"] == "float32" else "Int"))
    host_cpp = """#include "%(snake)s_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  %(op)sTilingData tiling;
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  (void)attrs;
%(sets)s
  context->SetBlockDim(%(block)d);
  tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
  context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  size_t* ws = context->GetWorkspaceSizes(1);
  ws[0] = platform.GetLibApiWorkSpaceSize();   // the system workspace of the Ascend C libraries
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
// The caller (aclnn, below) allocates the outputs: shapes are given, not inferred.
static ge::graphStatus InferShape(gert::InferShapeContext* context) { (void)context; return GRAPH_SUCCESS; }
}  // namespace ge

namespace ops {
class %(op)s : public OpDef {
 public:
  explicit %(op)s(const char* name) : OpDef(name) {
%(defs)s
    this->SetInferShape(ge::InferShape);
    this->AICore().SetTiling(optiling::TilingFunc);
    this->AICore().AddConfig("%(soc)s");
  }
};
OP_ADD(%(op)s);
}  // namespace ops
""" % {"op": op_type, "snake": re.sub(r"(?<!^)(?=[A-Z])", "_", op_type).lower(), "sets": "\n".join(sets),
       "block": block_dim, "defs": "\n".join(defs), "soc": SOC_FAMILY}
    return tiling_h, host_cpp


def run_logged(argv, cwd, log, timeout=None, env=None):
    try:
        p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, env=env)
    except FileNotFoundError:
        log.append("error: %s not found in PATH (source CANN's set_env.sh in the environment kevo gives "
                   "the compile: backend.command.env PATH)" % argv[0])
        return 127
    log.append("$ %s\n%s" % (" ".join(argv), p.stdout))
    return p.returncode


def compile_mode(src, out, task_dir):
    """kevo's compile stage: exit 0 with the build in OUT, or exit 1 with the
    compiler's output on stdout (kevo's compile_log, first 16 KiB)."""
    with open(os.path.join(task_dir, "task.json")) as f:
        task = json.load(f)
    for a in task["args"]:
        if a["role"] == "inout":
            print("error: inout argument '%s': this template maps in/out/scalar only" % a["name"])
            return 1
        if a["dtype"] not in DTYPES:
            print("error: dtype %s of '%s' has no Ascend C mapping here" % (a["dtype"], a["name"]))
            return 1
    with open(src, encoding="utf-8") as f:
        text = f.read()
    digest = hashlib.sha256(text.encode()).hexdigest()
    op_type, snake, vendor = op_names(task["function"], digest)
    m = re.search(r"^\s*#\s*define\s+KEVO_BLOCK_DIM\s+(\d+)", text, re.M)
    block_dim = int(m.group(1)) if m else DEFAULT_BLOCK_DIM
    if not re.search(r"\b%s\s*\(" % re.escape(task["function"]), text):
        print("error: the source does not define %s" % task["function"])
        return 1
    kernel = re.sub(r"\b%s(\s*\()" % re.escape(task["function"]), snake + r"\1", text)

    work = os.path.join(out, "work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = []
    with open(os.path.join(work, "op.json"), "w") as f:
        json.dump(op_json(task, op_type), f, indent=1)
    proj = os.path.join(work, "proj")
    # UNCERTAIN: msopgen gen -i JSON -c ai_core-<soc> -lan cpp -out DIR (CANN 7/8).
    if run_logged(["msopgen", "gen", "-i", os.path.join(work, "op.json"), "-c", COMPUTE_UNIT,
                   "-lan", "cpp", "-out", proj], work, log) != 0:
        print("\n".join(log)[-16000:])
        return 1
    tiling_h, host_cpp = host_sources(task, op_type, block_dim)
    with open(os.path.join(proj, "op_host", snake + "_tiling.h"), "w") as f:
        f.write(tiling_h)
    with open(os.path.join(proj, "op_host", snake + ".cpp"), "w") as f:
        f.write(host_cpp)
    with open(os.path.join(proj, "op_kernel", snake + ".cpp"), "w") as f:
        f.write(kernel)
    # The project's CMakePresets.json names the CANN path and the vendor
    # (UNCERTAIN: keys "ASCEND_CANN_PACKAGE_PATH" and "vendor_name" under
    # configurePresets[0].cacheVariables, each {"type", "value"}).
    presets_path = os.path.join(proj, "CMakePresets.json")
    with open(presets_path) as f:
        presets = json.load(f)
    cv = presets["configurePresets"][0]["cacheVariables"]
    cv["ASCEND_CANN_PACKAGE_PATH"]["value"] = CANN
    cv["vendor_name"]["value"] = vendor
    with open(presets_path, "w") as f:
        json.dump(presets, f, indent=2)
    if run_logged(["bash", "build.sh"], proj, log) != 0:
        # The ccec/bisheng errors of the kernel are in this log: the LLM's feedback.
        print("\n".join(log)[-16000:])
        return 1
    runs = glob.glob(os.path.join(proj, "build_out", "custom_opp_*.run"))
    if not runs:
        print("\n".join(log)[-16000:] + "\nerror: build.sh made no custom_opp_*.run")
        return 1
    opp = os.path.join(out, "opp")
    # UNCERTAIN: --install-path exists in CANN >= 7; older packages install
    # into $ASCEND_OPP_PATH/vendors only.
    if run_logged(["bash", runs[0], "--quiet", "--install-path=" + opp], proj, log) != 0:
        print("\n".join(log)[-16000:])
        return 1
    vendor_dir = os.path.join(opp, "vendors", vendor)
    lib = os.path.join(vendor_dir, "op_api", "lib", "libcust_opapi.so")
    if not os.path.isfile(lib):
        print("\n".join(log)[-16000:] + "\nerror: no %s after install" % lib)
        return 1
    ins = [a["name"] for a in task["args"] if a["role"] == "in"]
    outs = [a["name"] for a in task["args"] if a["role"] == "out"]
    with open(os.path.join(out, "kevo_build.json"), "w") as f:
        json.dump({"op_type": op_type, "vendor_dir": vendor_dir, "lib": lib, "source_sha256": digest,
                   "inputs": ins, "outputs": outs, "attrs": [a["name"] for a in scalars(task)],
                   "block_dim": block_dim}, f, indent=1)
    shutil.rmtree(os.path.join(proj, "build_out"), ignore_errors=True)   # keep the cache small
    # Warnings go to compile_log too.
    warnings = [l for l in "\n".join(log).splitlines() if "warning" in l.lower()]
    if warnings:
        print("\n".join(warnings)[-16000:])
    return 0


# ---- aclnn through ctypes ----------------------------------------------------

class AclnnOp:
    """Calls aclnn<Op>GetWorkspaceSize / aclnn<Op> of one build on torch_npu
    tensors. The generated aclnn API takes the inputs, then the attributes,
    then the outputs (UNCERTAIN: the order of CANN's generated
    aclnn_<op>.h; read it in <vendor>/op_api/include/)."""

    def __init__(self, build_dir, task, torch, torch_npu):
        with open(os.path.join(build_dir, "kevo_build.json")) as f:
            self.info = json.load(f)
        self.torch, self.torch_npu, self.task = torch, torch_npu, task
        # UNCERTAIN: aclCreateTensor/aclDestroyTensor live in libnnopbase.so.
        self.nnop = ctypes.CDLL(os.path.join(CANN, "lib64", "libnnopbase.so"), mode=ctypes.RTLD_GLOBAL)
        self.nnop.aclCreateTensor.restype = ctypes.c_void_p
        self.nnop.aclCreateTensor.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64, ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_int64), ctypes.c_int64, ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64, ctypes.c_void_p]
        self.nnop.aclDestroyTensor.argtypes = [ctypes.c_void_p]
        lib = ctypes.CDLL(self.info["lib"])
        op = self.info["op_type"]
        self.getws = getattr(lib, "aclnn%sGetWorkspaceSize" % op)
        self.run = getattr(lib, "aclnn%s" % op)
        attr_types = [ctypes.c_float if a["dtype"] == "float32" else ctypes.c_int64 for a in scalars(task)]
        self.getws.argtypes = ([ctypes.c_void_p] * len(self.info["inputs"]) + attr_types +
                               [ctypes.c_void_p] * len(self.info["outputs"]) +
                               [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_void_p)])
        self.getws.restype = ctypes.c_int
        self.run.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]
        self.run.restype = ctypes.c_int

    def tensor(self, t):
        dims = (ctypes.c_int64 * t.dim())(*t.shape)
        strides = (ctypes.c_int64 * t.dim())(*t.stride())
        dt = {"torch.float32": 0, "torch.int32": 3, "torch.int64": 9}[str(t.dtype)]
        return self.nnop.aclCreateTensor(dims, t.dim(), dt, strides, 0, ACL_FORMAT_ND, dims, t.dim(),
                                         ctypes.c_void_p(t.data_ptr()))

    def prepare(self, ins, attrs, outs):
        """Everything before the launch, outside any timed window: the acl
        tensors, the executor, the workspace. Returns the launch."""
        handles = [self.tensor(t) for t in ins] + [self.tensor(t) for t in outs]
        size, executor = ctypes.c_uint64(0), ctypes.c_void_p()
        attr_vals = [ctypes.c_float(v) if isinstance(v, float) else ctypes.c_int64(v) for v in attrs]
        rc = self.getws(*handles[:len(ins)], *attr_vals, *handles[len(ins):], ctypes.byref(size), ctypes.byref(executor))
        if rc != 0:
            raise RuntimeError("aclnn%sGetWorkspaceSize returned %d" % (self.info["op_type"], rc))
        ws = self.torch.empty(max(1, size.value), dtype=self.torch.uint8, device="npu")
        # UNCERTAIN: the raw aclrtStream of torch_npu's current stream.
        stream = self.torch_npu.npu.current_stream().npu_stream

        def launch():
            rc = self.run(ctypes.c_void_p(ws.data_ptr()), size.value, executor, ctypes.c_void_p(stream))
            if rc != 0:
                raise RuntimeError("aclnn%s returned %d" % (self.info["op_type"], rc))

        def release():
            for h in handles:
                self.nnop.aclDestroyTensor(h)
        return launch, release


# ---- inputs, comparison (the same protocol as the NKI template) --------------

def rng_for(np, seed, *path):
    words = [seed & 0xFFFFFFFFFFFFFFFF] + [int(hashlib.sha256(str(p).encode()).hexdigest()[:16], 16) for p in path]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(words)))


def draw(np, arg, dist, extents, rng):
    dtype = np.dtype(DTYPES[arg["dtype"]][3])
    d = dist or ({"kind": "uniform"} if dtype.kind == "f" else {"kind": "integers", "low": -100, "high": 100})
    kind = d.get("kind", "uniform")
    if kind == "uniform":
        v = rng.uniform(d.get("low", -1), d.get("high", 1), size=extents)
    elif kind == "normal":
        v = rng.normal(d.get("mean", 0), d.get("stddev", 1), size=extents)
    elif kind == "constant":
        v = np.full(extents, d["value"], dtype=np.float64)
    else:
        v = rng.integers(d["low"], d["high"], size=extents, endpoint=True)
    return np.ascontiguousarray(v.astype(dtype))


def make_inputs(np, req, shape, dists, rng_path):
    vals = {}
    for a in req["task"]["args"]:
        sa = shape["args"].get(a["name"], {})
        if a["role"] == "scalar":
            vals[a["name"]] = float(sa["value"]) if a["dtype"] == "float32" else int(sa["value"])
        elif a["role"] == "in":
            vals[a["name"]] = draw(np, a, dists.get(a["name"], a.get("distribution")), sa["extents"],
                                   rng_for(np, req["seed"], *rng_path, shape["label"], a["name"]))
    return vals


def real(x):
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def wrong(name, shape, trial, k, idx, want, got, msg, worst):
    v = {"status": "wrong_answer", "stage": "correctness", "message": msg,
         "max_abs_error": worst[0] if math.isfinite(worst[0]) else 0.0,
         "rel_l2_error": worst[1] if math.isfinite(worst[1]) else 0.0,
         "mismatch": {"arg": name, "shape": shape["label"], "trial": trial, "index": idx,
                      "expected": real(float(want)), "got": real(float(got))},
         "feedback": "Wrong answer: " + msg}
    if k >= 0:
        v["mismatch"]["flat_index"] = int(k)
    return v


def compare(np, req, shape, trial, name, want, got, worst, poison):
    tol = req["task"]["tolerance"]
    atol, rtol, rel_l2 = tol["atol"], tol["rtol"], tol["rel_l2"]
    where = "" if shape["kind"] == "hidden" else ", shape %s" % shape["label"]
    w = want.astype(np.float64).reshape(-1)
    g = got.astype(np.float64).reshape(-1)
    w_fin, g_fin = np.isfinite(w), np.isfinite(g)
    same_kind = np.where(w_fin, g_fin, (np.isnan(w) & np.isnan(g)) | (w == g))
    err = np.where(w_fin & g_fin, np.abs(g - w), 0.0)
    bad = ~same_kind | (err > atol + rtol * np.abs(np.where(w_fin, w, 0.0)))
    fin = w_fin & g_fin
    norm = max(np.linalg.norm(w[fin]) if fin.any() else 0.0, (atol or 1e-30) * math.sqrt(max(1, fin.sum())))
    rl2 = float((np.linalg.norm((g - w)[fin]) if fin.any() else 0.0) / norm)
    worst[0], worst[1] = max(worst[0], float(err.max()) if err.size else 0.0), max(worst[1], rl2)
    if bad.any() or rl2 > rel_l2:
        k = int(np.argmax(bad)) if bad.any() else int(np.argmax(err))
        idx = "[%s]" % ", ".join(str(int(i)) for i in np.unravel_index(k, want.shape))
        still = poison is not None and (np.isnan(g[k]) if isinstance(poison, float) else g[k] == poison)
        why = ("the element still holds the value outputs are pre-filled with" if still else
               "outside atol + rtol*|expected|" if bad.any() else "relative L2 error %.3g over %.3g" % (rl2, rel_l2))
        raise Verdict(wrong(name, shape, trial, k, idx, w[k], g[k],
                            "output '%s' differs from the reference at %s (%s%s): expected %.9g, got %.9g: %s" % (
                                name, idx, trial, where, w[k], g[k], why), worst))


# ---- one request ---------------------------------------------------------------

class Device:
    """Both builds on the NPU, with poisoned outputs and the event clock."""

    def __init__(self, req, np, torch, torch_npu):
        self.req, self.np, self.torch = req, np, torch
        self.task = req["task"]
        self.ref = AclnnOp(req["reference"]["build"], self.task, torch, torch_npu)
        self.cand = AclnnOp(req["candidate"]["build"], self.task, torch, torch_npu) \
            if req["mode"] != "null" else None
        self.torch_npu = torch_npu
        # One float poison per judgement, an integer sentinel likewise.
        r = np.random.default_rng()
        self.poison_f = float("nan")
        self.poison_i = int(r.integers(-2 ** 30, 2 ** 30))
        # Flushes the L2 between timed calls (UNCERTAIN size: 910B L2 is 192 MB).
        self.flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device="npu")

    def outputs(self, shape):
        outs = {}
        for a in self.task["args"]:
            if a["role"] == "out":
                ext = shape["args"][a["name"]]["extents"]
                dt = getattr(self.torch, DTYPES[a["dtype"]][3])
                fill = self.poison_f if a["dtype"] == "float32" else self.poison_i
                outs[a["name"]] = self.torch.full(ext, fill, dtype=dt, device="npu")
        return outs

    def call(self, op, vals, shape, timed=False):
        torch = self.torch
        ins = {k: torch.from_numpy(v).to("npu") for k, v in vals.items() if hasattr(v, "shape")}
        outs = self.outputs(shape)
        attrs = [vals[a["name"]] for a in scalars(self.task)]
        launch, release = op.prepare([ins[n] for n in op.info["inputs"]], attrs, [outs[n] for n in op.info["outputs"]])
        ns = None
        try:
            if timed:
                self.flush.zero_()
                start = self.torch_npu.npu.Event(enable_timing=True)
                end = self.torch_npu.npu.Event(enable_timing=True)
                start.record()
                launch()
                end.record()
                end.synchronize()
                ns = start.elapsed_time(end) * 1e6   # ms -> ns
            else:
                launch()
                self.torch_npu.npu.synchronize()
        finally:
            release()
        for k, v in ins.items():   # inputs must come back unchanged
            if not self.np.array_equal(v.cpu().numpy(), vals[k], equal_nan=True):
                raise Verdict(wrong(k, shape, "input-modified", 0, "[0]", 0.0, 0.0,
                                    "input '%s' was modified by the kernel" % k, [0.0, 0.0]))
        return {k: v.cpu().numpy() for k, v in outs.items()}, ns


def null_outputs(np, req, kind, vals, shape, reference):
    outs = {}
    first = next((vals[a["name"]] for a in req["task"]["args"] if a["role"] == "in"), None)
    for a in req["task"]["args"]:
        if a["role"] != "out":
            continue
        ext = shape["args"][a["name"]]["extents"]
        dt = np.dtype(DTYPES[a["dtype"]][3])
        if kind == "zeros":
            outs[a["name"]] = np.zeros(ext, dtype=dt)
        elif kind == "copy":
            flat = first.reshape(-1) if first is not None else np.zeros(1)
            outs[a["name"]] = flat[np.arange(int(np.prod(ext))) % flat.size].astype(dt).reshape(ext)
    if kind == "other_seed":
        other = dict(req, seed=(req["seed"] ^ 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
        outs = reference(make_inputs(np, other, shape, {}, ("null",)))
    return outs


def judge(req):
    nonce, task = req["nonce"], req["task"]
    for prog in ("reference", "candidate"):
        p = req.get(prog)
        if p and not (p.get("build") and os.path.isfile(os.path.join(p["build"], "kevo_build.json"))):
            raise Fatal("%s has no build: configure the compile stage (backend.command.compile)" % prog)
    # The custom OPP folders must be known before the runtime starts
    # (UNCERTAIN: ASCEND_CUSTOM_OPP_PATH is read at aclInit, i.e. at the
    # first torch_npu device use): hence one process per request.
    vendors = []
    for prog in ("candidate", "reference"):
        if req.get(prog):
            with open(os.path.join(req[prog]["build"], "kevo_build.json")) as f:
                vendors.append(json.load(f)["vendor_dir"])
    old = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
    os.environ["ASCEND_CUSTOM_OPP_PATH"] = ":".join(vendors + ([old] if old else []))
    try:
        import numpy as np
        import torch
        import torch_npu   # noqa: F401  (registers the "npu" device)
    except ImportError as e:
        raise Fatal("torch/torch_npu not importable: %s" % e)
    emit({"nonce": nonce, "event": "stage", "stage": "correctness"})
    try:
        dev = Device(req, np, torch, torch_npu)
    except (OSError, AttributeError, RuntimeError) as e:
        raise Fatal("cannot load the builds or the NPU: %s" % e)

    def reference(vals):
        return dev.call(dev.ref, vals, shape_of[0])[0]

    shape_of = [None]
    worst = [0.0, 0.0]
    mode = req["mode"]
    trials = [("trial %d" % (t + 1), {}) for t in range(int(req["trials"]))]
    trials += [("stress " + s["name"], s["inputs"]) for s in task.get("stress", [])]
    told_hidden = False
    for t, (trial, dists) in enumerate(trials):
        for shape in task["shapes"]:
            shape_of[0] = shape
            vals = make_inputs(np, req, shape, dists, (trial,))
            want = reference(vals)
            if mode != "null" and shape["kind"] == "hidden" and not told_hidden:
                # Before the candidate first runs at a hidden shape: kevo
                # then withholds the feedback of any failure, whose text
                # could carry the sizes (docs/command-backend.md, call events).
                told_hidden = True
                emit({"nonce": nonce, "event": "call", "shape": shape["label"]})
            try:
                if mode == "null":
                    got = null_outputs(np, req, req["null_kind"], vals, shape, reference)
                else:
                    got = dev.call(dev.cand, vals, shape)[0]
            except RuntimeError as e:   # an aclnn error code: the kernel faulted (AI core exception)
                msg = str(e) if shape["kind"] == "hidden" else "%s (shape %s)" % (e, shape["label"])
                raise Verdict({"status": "runtime_error", "stage": "correctness", "message": msg,
                               "feedback": "Runtime error: " + msg})
            for name, w in want.items():
                compare(np, req, shape, trial, name, w, got[name], worst, dev.poison_f)
            if t == 0 and mode != "null":
                again = dev.call(dev.cand, vals, shape)[0]
                for name, w in got.items():
                    compare(np, req, shape, "repeat-consistency", name, w, again[name], worst, dev.poison_f)

    verdict = {"status": "correct", "stage": "done", "max_abs_error": worst[0], "rel_l2_error": worst[1],
               "message": "correct", "feedback": "Correct on every shape.",
               "device": "Ascend NPU %s" % os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "0")}
    result = {"nonce": nonce, "event": "result", "verdict": verdict}
    if req["timing"] and mode != "null":
        emit({"nonce": nonce, "event": "stage", "stage": "timing"})
        opts = req["timing_options"]
        visible = [s for s in task["shapes"] if s["kind"] == "visible"]
        budget = float(opts["budget_seconds"]) / max(1, len(visible))
        timings = []
        for shape in visible:
            shape_of[0] = shape
            for k in range(int(opts["warmup"])):
                vals = make_inputs(np, req, shape, {}, ("warmup%d" % k,))
                dev.call(dev.ref, vals, shape, timed=True)
                dev.call(dev.cand, vals, shape, timed=True)
            ref_ns, cand_ns, spent, k = [], [], 0.0, 0
            while k < int(opts["max_repeats"]) and (k < int(opts["min_repeats"]) or spent < budget):
                vals = make_inputs(np, req, shape, {}, ("timing%d" % k,))   # fresh inputs every repeat
                order = (dev.ref, dev.cand) if k % 2 == 0 else (dev.cand, dev.ref)
                res = {}
                for op in order:   # alternating order
                    res[id(op)] = dev.call(op, vals, shape, timed=True)
                (want, r_ns), (got, c_ns) = res[id(dev.ref)], res[id(dev.cand)]
                for name, w in want.items():   # every timed output checked
                    compare(np, req, shape, "timed call %d" % (k + 1), name, w, got[name], [0.0, 0.0], dev.poison_f)
                ref_ns.append(r_ns)
                cand_ns.append(c_ns)
                spent += (r_ns + c_ns) * 1e-9
                k += 1
            q = lambda xs, p: float(np.percentile(xs, p))
            timings.append({"shape": shape["label"], "cand_median_ns": q(cand_ns, 50),
                            "cand_iqr_ns": q(cand_ns, 75) - q(cand_ns, 25), "ref_median_ns": q(ref_ns, 50),
                            "ref_iqr_ns": q(ref_ns, 75) - q(ref_ns, 25), "repeats": k})
        result["shape_timings"] = timings
        verdict["speedup"] = math.exp(sum(math.log(t["ref_median_ns"] / t["cand_median_ns"]) for t in timings) / len(timings))
        verdict["message"] = "correct; %.2fx" % verdict["speedup"]
        verdict["feedback"] = "Correct on every shape; %.2fx the reference." % verdict["speedup"]
    return result


def answer(text):
    try:
        req = json.loads(text)
    except ValueError as e:
        emit({"nonce": "?", "event": "fatal", "message": "request is not JSON: %s" % e})
        return False
    nonce = req.get("nonce", "?")
    if req.get("protocol") != PROTOCOL:
        emit({"nonce": nonce, "event": "fatal", "message": "protocol %r; this evaluator speaks %d" % (req.get("protocol"), PROTOCOL)})
        return False
    watchdog = threading.Timer(float(req.get("wall_seconds", 60)) + 10.0, lambda: os._exit(124))
    watchdog.daemon = True
    watchdog.start()
    try:
        emit(judge(req))
        return True
    except Verdict as v:
        emit({"nonce": nonce, "event": "result", "verdict": v.verdict})
        return True
    except Fatal as f:
        emit({"nonce": nonce, "event": "fatal", "message": str(f)})
        return False
    except Exception as e:
        traceback.print_exc()
        emit({"nonce": nonce, "event": "fatal", "message": "evaluator failure: %s: %s" % (type(e).__name__, e)})
        return False
    finally:
        watchdog.cancel()


def version():
    from importlib import metadata
    parts = ["kevo_ascendc_eval 1", "compute unit " + COMPUTE_UNIT]
    # UNCERTAIN: the toolkit's version file.
    for f in ("version.cfg", "ascend_toolkit_install.info"):
        p = os.path.join(CANN, f)
        if os.path.isfile(p):
            with open(p) as fh:
                parts.append("CANN " + " ".join(fh.read().split())[:200])
            break
    else:
        parts.append("CANN missing at " + CANN)
    for pkg in ("torch", "torch_npu"):
        try:
            parts.append("%s %s" % (pkg, metadata.version(pkg)))
        except metadata.PackageNotFoundError:
            parts.append(pkg + " missing")
    print("; ".join(parts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", metavar="SRC")
    ap.add_argument("--out", metavar="DIR")
    ap.add_argument("--task-dir")
    ap.add_argument("--version", action="store_true")
    a = ap.parse_args()
    if a.version:
        version()
        return 0
    if a.compile:
        if not (a.out and a.task_dir):
            ap.error("--compile needs --out and --task-dir")
        return compile_mode(a.compile, a.out, a.task_dir)
    protocol_stdout()
    return 0 if answer(sys.stdin.read()) else 3


if __name__ == "__main__":
    sys.exit(main())
