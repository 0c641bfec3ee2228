#!/usr/bin/env python3
"""A fake LLM server for kevo's tests: real HTTP on 127.0.0.1, speaking the
OpenAI Chat Completions (POST .../chat/completions) and Anthropic Messages
(POST .../messages) wire formats, with scripted replies and fault injection.

usage: fake_llm_server.py [--script FILE] [--log FILE] [--port-file FILE] [--port N]

The script is JSON: {"sequence": [B, ...], "default": B}. Request n (from 0)
gets sequence[n] while it lasts, then "default" (default: {"kind": "auto"}).
A behaviour B is an object with "kind":

  auto           reply to what the prompt asks: a kernel variant for a
                 rewrite/crossover prompt (rotating improve, improve,
                 compile_error, wrong, improve, no_code), a SEARCH/REPLACE edit
                 for a diff prompt (rotating good_diff, bad_diff), ranked
                 advice for a performance review, a JSON hint for parameter
                 tuning
  improve | compile_error | wrong | no_code | ambiguous | signature_change |
  good_diff | bad_diff | analysis | param_hint | bad_param_hint |
  launches_nothing | modifies_input | native | cpp | cuda | syntax_error |
  forbidden | raises
                 that variant of the parent kernel found in the prompt. For a
                 CUDA parent (it has a __global__) improve changes a launch
                 parameter of the bundled seeds, wrong flips a bit of the
                 first output from a kernel launched after the real work,
                 modifies_input does that to the first input, and
                 launches_nothing launches no kernel; the auto rotation then
                 is improve, improve, compile_error, wrong, improve,
                 launches_nothing, improve, modifies_input, no_code. For an
                 OpenCL command task (the prompt shows a signature starting
                 with __kernel) improve changes a #define of the parent's
                 kevo:params block to another value of the bundled OpenCL
                 seeds' search spaces (configs/tasks/opencl), compile_error
                 adds a syntax error, wrong adds 1.0f to the first output
                 element at the end of the kernel (// kevo-fake-bug); the
                 auto rotation then is improve, improve, compile_error, wrong,
                 improve, no_code
                 For a torch task (the prompt shows a Python program defining
                 class ModelNew; the bundled configs/tasks/torch) the code
                 replies are whole Python files: improve is a rewrite in
                 pure PyTorch that calls none of the reference's operations
                 (softmax from amax/exp/sum/div, scale_bias_relu from
                 addcmul/clamp_min, layernorm from mean and variance
                 arithmetic, linear_gelu keeping the allowed addmm with a
                 hand-written tanh GELU), native a load_inline extension
                 for softmax and scale_bias_relu (others: improve): C++ in
                 cpp_sources on the CPU (cpp), raw-pointer CUDA with the
                 binding in cpp_sources where the system prompt says
                 backend.torch.device "cuda" (cuda); the same text and name for
                 both tasks and every reply, so kevo's object cache
                 compiles it once; syntax_error a Python syntax error,
                 wrong a wrong answer (softmax without the row-max
                 subtraction: only the stress trials catch it), forbidden
                 a program that calls the reference's own operation, raises
                 a forward that raises (a traceback); repair answers with a
                 correct rewrite; good_diff edits the seed's return line
                 into the pure-PyTorch form, quoted without its indentation
                 (kevo re-indents it); the auto rotation then, counted
                 per task, is improve, native, syntax_error, wrong,
                 improve, forbidden, raises, improve, no_code
  text           {"text": "..."}: this reply verbatim
  status         {"status": 429, "retry_after": 2, "body": "..."}: an HTTP error
  stall          {"seconds": 5}: wait, then reply like auto
  truncate       a 200 whose body is cut short of its Content-Length
  invalid_json   a 200 with a body that is not JSON
  empty_choices  a 200 without choices / content
  refusal        a 200 carrying a refusal
  bad_bytes      an improve variant whose code carries a comment with bytes
                 that are not UTF-8 (raw in the body: overlong C0 80 and
                 E0 80 80, surrogate ED A0 80, F4 90 80 80 above U+10FFFF, a
                 truncated E2 82, a stray 80) and, JSON-escaped, NUL and a
                 terminal escape (ESC [2J)
  reset          close the connection without an answer (RST)

Every request is logged as one JSON line to --log, as its answer starts:
method, n, path, format, model, kind, has_key (whether an API key header
came; the key itself is never written), bytes, status (the HTTP status sent;
null for a reset), input_tokens and output_tokens (the usage a 200 reported;
0 otherwise; a stall is logged on arrival, with status null and no tokens);
with "log_content": true in the script also content (the last
message's text, for tests that check what a prompt carried).

GET .../models (the start-up probe) answers the script's "models" behaviour:
{"kind": "list", "ids": [...]} (the default, with no ids) or {"kind":
"status", "status": 401}; it is logged with method GET and does not advance n.

The bound port is printed on stdout as "PORT <n>" (and written to --port-file).

As a stand-in for llama-server under llm.local_server (tests/llm/local_server.sh)
it takes that server's arguments: --model FILE (must exist, else exit 2),
--host (127.0.0.1 only), --port, --threads; GET /health answers 503 until
--startup-delay seconds have passed, then 200; --exit-at-start CODE exits at
once; --pid-file FILE gets its PID.
"""
import argparse
import os
import json
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"n": 0, "code": 0, "diff": 0, "hint": 0}
SCRIPT = {"sequence": [], "default": {"kind": "auto"}}
LOG = None

# bad_bytes: the marker in the JSON text that the raw bytes replace.
BAD_MARK = "@@KEVO_BAD_BYTES@@"
BAD_BYTES = b"\xc0\x80|\xe0\x80\x80|\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82|\x80|"
CODE_ROTATION = ["improve", "improve", "compile_error", "wrong", "improve", "no_code"]
# A CUDA parent (a __global__ in it): the bugs models write on GPUs too.
CUDA_CODE_ROTATION = ["improve", "improve", "compile_error", "wrong", "improve", "launches_nothing",
                      "improve", "modifies_input", "no_code"]
DIFF_ROTATION = ["good_diff", "bad_diff"]
IMPROVE_RULES = [
    ("#define THREADS 1", "#define THREADS 2"),
    ("#define UNROLL 1", "#define UNROLL 4"),
    ("#define VEC 1", "#define VEC 8"),
    ("#define UNROLL 2", "#define UNROLL 4"),
]


# The launch parameters of the bundled CUDA seeds (configs/tasks/cuda), each
# to a value of its task's search space.
CUDA_IMPROVE_RULES = [
    ("#define VEC 1", "#define VEC 4"),
    ("#define BLOCK 32", "#define BLOCK 256"),
    ("#define BLOCK 64", "#define BLOCK 256"),
    ("#define BLOCK 128", "#define BLOCK 512"),
    ("#define ITEMS 1", "#define ITEMS 4"),
    ("#define GRID_PER_SM 1", "#define GRID_PER_SM 4"),
]
# Where a CUDA bug's wrapper starts (repair cuts there).
CUDA_BUG = "// kevo-fake-bug\n"

# An OpenCL command task (its signature is a __kernel): the rotation, and the
# parameters of the bundled OpenCL seeds (configs/tasks/opencl/*/seed.cl),
# each to a value of its task's search space that keeps its restrictions
# (vadd: WG * VEC * ITEMS <= 16384; sgemm: TILE % WPT == 0, TILE * TILE /
# WPT <= 256). Applied within the // kevo:params block only.
OPENCL_CODE_ROTATION = ["improve", "improve", "compile_error", "wrong", "improve", "no_code"]
OPENCL_IMPROVE_RULES = [
    ("#define VEC 1", "#define VEC 4"),
    ("#define WG 64", "#define WG 128"),
    ("#define TILE 8", "#define TILE 16"),
    ("#define ITEMS 1", "#define ITEMS 4"),
    ("#define WG 32", "#define WG 64"),
    ("#define WPT 1", "#define WPT 2"),
    ("#define VEC 4", "#define VEC 8"),
    ("#define WPT 2", "#define WPT 4"),
    ("#define WG 128", "#define WG 256"),
]
OPENCL_BROKEN = "__constant int kevo_broken = ;   // kevo-fake-syntax-error\n"
OPENCL_BUG = "// kevo-fake-bug"
PARAMS_BEGIN, PARAMS_END = "// kevo:params begin", "// kevo:params end"


def opencl_signature(prompt):
    """(declaration, function, parameters) of the __kernel the prompt shows."""
    m = re.search(r"(__kernel\s+void\s+(\w+)\s*\(([^)]*)\))", prompt)
    if not m:
        return None
    params = [p.strip() for p in m.group(3).split(",") if p.strip()]
    return m.group(1), m.group(2), params


def is_opencl(prompt):
    return opencl_signature(prompt) is not None


def opencl_fenced(text):
    """The first fenced block holding a __kernel, whatever its language tag."""
    for m in re.finditer(r"```[\w+-]*\n(.*?)```", text, re.S):
        if "__kernel" in m.group(1):
            return m.group(1)
    return ""


def opencl_source(prompt):
    return parent_source(prompt) or opencl_fenced(prompt)


def opencl_fence(prompt):
    m = re.search(r"```([\w+-]*)\n[^`]*__kernel", prompt)
    return m.group(1) if m and m.group(1) else "cpp"


def opencl_improve(src, n):
    """Another value for one #define of the params block: a bundled seed's
    rule, else an integer parameter doubled (halved at 256), a power of two
    in [1, 256]; else a harmless program-scope constant."""
    a = src.find(PARAMS_BEGIN)
    b = src.find(PARAMS_END, a + 1) if a >= 0 else -1
    if a >= 0 and b > a:
        block = src[a:b]
        for k in range(len(OPENCL_IMPROVE_RULES)):
            old, new = OPENCL_IMPROVE_RULES[(n + k) % len(OPENCL_IMPROVE_RULES)]
            if re.search(re.escape(old) + r"\b", block):
                return src[:a] + re.sub(re.escape(old) + r"\b", new, block, count=1) + src[b:]
        ints = list(re.finditer(r"^#define ([A-Z][A-Z0-9_]*) (\d+)[ \t]*$", block, re.M))
        ints = [m for m in ints if int(m.group(2)) in (1, 2, 4, 8, 16, 32, 64, 128, 256)]
        if ints:
            m = ints[n % len(ints)]
            v = int(m.group(2))
            v = v * 2 if v < 256 else v // 2
            block = block[:m.start()] + "#define %s %d" % (m.group(1), v) + block[m.end():]
            return src[:a] + block + src[b:]
    return src + "\n__constant int kevo_fake_variant_%d = %d;\n" % (n, n)


def opencl_kernel_end(src, name):
    """The index of the closing brace of __kernel `name`'s body, or -1."""
    m = re.search(r"__kernel\s+void\s+%s\s*\(" % re.escape(name), src)
    if not m:
        return -1
    i = src.find("{", m.end())
    depth = 0
    while 0 <= i < len(src):
        if src.startswith("//", i):
            i = src.find("\n", i)
            continue
        if src.startswith("/*", i):
            i = src.find("*/", i) + 2 if src.find("*/", i) >= 0 else -1
            continue
        c = src[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def opencl_wrong(src, prompt):
    """Adds 1.0f to element 0 of the first output, written last by the
    work-item that owns it in the bundled seeds (global id 0, in every
    dimension), after its own write: a deterministic wrong answer."""
    sig = opencl_signature(prompt)
    if not sig:
        return src.replace("+", "-", 1)
    _, name, params = sig
    outs = [p for p in params if "*" in p and "const" not in p.replace("*", " ").split()]
    victim = (outs or [p for p in params if "*" in p] or ["out"])[0].replace("*", " ").split()[-1]
    end = opencl_kernel_end(src, name)
    if end < 0:
        return src.replace("+", "-", 1)
    line = "  if (get_global_id(0) == 0 && get_global_id(1) == 0) %s[0] += 1.0f;   %s\n" % (victim, OPENCL_BUG)
    return src[:end] + line + src[end:]


def opencl_repair(src):
    """Undoes opencl compile_error and wrong."""
    src = src.replace(OPENCL_BROKEN, "")
    return "".join(l for l in src.splitlines(True) if not l.rstrip().endswith(OPENCL_BUG))


def opencl_code_reply(variant, prompt, n):
    """A reply for an OpenCL parent, or None where the C/CUDA one serves."""
    src = opencl_source(prompt)
    fence = "```%s\n" % opencl_fence(prompt)
    if variant == "repair":
        return "The failure came from my last edit; fixed.\n\n" + fence + opencl_improve(opencl_repair(src), n) + "```\n"
    if variant == "improve":
        return "A faster variant: retuned the work-group shape.\n\n" + fence + opencl_improve(src, n) + "```\n"
    if variant == "compile_error":
        k = src.find("__kernel")
        bad = src[:k] + OPENCL_BROKEN + src[k:] if k >= 0 else OPENCL_BROKEN + src
        return "Try this.\n\n" + fence + bad + "```\n"
    if variant == "wrong":
        return "Fused the tail into the main loop.\n\n" + fence + opencl_wrong(src, prompt) + "```\n"
    if variant == "ambiguous":
        return "Option 1:\n" + fence + src + "```\nOption 2:\n" + fence + opencl_improve(src, n) + "```\n"
    if variant == "good_diff":
        for a, b in OPENCL_IMPROVE_RULES:
            if a in src:
                return "<<<<<<< SEARCH\n  %s  \n=======\n%s\n>>>>>>> REPLACE\n" % (a.replace(" ", "   "), b)
    return None


# ---- torch tasks (configs/tasks/torch): whole Python programs ----------------

TORCH_CODE_ROTATION = ["improve", "native", "syntax_error", "wrong", "improve", "forbidden", "raises", "improve",
                       "no_code"]
TORCH_TASKS = ("torch_softmax", "torch_scale_bias_relu", "torch_layernorm", "torch_linear_gelu")
TORCH_BROKEN = "kevo_broken = (1,   # kevo-fake-syntax-error\n"
TORCH_BUG = "# kevo-fake-bug"

TORCH_HEAD = "import torch\nimport torch.nn as nn\n"

# Each task: (__init__ parameters, __init__ body, forward parameters); the
# bodies mirror the reference's __init__ so that ModelNew holds the same
# parameters as Model (the judge seeds both alike).
TORCH_INIT = {
    "torch_softmax": ("", "", "x"),
    "torch_scale_bias_relu": (", features",
                              "        self.scale = nn.Parameter(torch.randn(features))\n"
                              "        self.bias = nn.Parameter(torch.randn(features))\n", "x"),
    "torch_layernorm": (", hidden",
                        "        self.norm = nn.LayerNorm(hidden, eps=1e-5)\n"
                        "        with torch.no_grad():\n"
                        "            self.norm.weight.copy_(torch.randn(hidden))\n"
                        "            self.norm.bias.copy_(torch.randn(hidden))\n", "x"),
    "torch_linear_gelu": (", in_features, out_features",
                          "        self.linear = nn.Linear(in_features, out_features)\n", "x"),
}

# forward bodies: correct in pure PyTorch without the reference's operations.
TORCH_GOOD = {
    "torch_softmax": ("        m = torch.amax(x, dim=1, keepdim=True)\n"
                      "        e = torch.exp(x - m)\n"
                      "        return e / torch.sum(e, dim=1, keepdim=True)\n"),
    "torch_scale_bias_relu": "        return torch.clamp_min(torch.addcmul(self.bias, x, self.scale), 0.0)\n",
    "torch_layernorm": ("        x64 = x.to(torch.float64)   # the mean of values near 100 needs it\n"
                        "        d = x64 - x64.mean(dim=-1, keepdim=True)\n"
                        "        var = (d * d).mean(dim=-1, keepdim=True)\n"
                        "        y = d * torch.rsqrt(var + 1e-5)\n"
                        "        return (y * self.norm.weight + self.norm.bias).to(x.dtype)\n"),
    "torch_linear_gelu": ("        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
                          "        return 0.5 * h * (1.0 + torch.tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)))\n"),
}
# ...wrong answers (the softmax one is right on plain inputs: only the
# stress trials, far from 0, catch it)...
TORCH_WRONG = {
    "torch_softmax": ("        e = torch.exp(x)   " + TORCH_BUG + "\n"
                      "        return e / torch.sum(e, dim=1, keepdim=True)\n"),
    "torch_scale_bias_relu": "        return torch.addcmul(self.bias, x, self.scale)   " + TORCH_BUG + "\n",
    "torch_layernorm": ("        mean = x.mean(dim=-1, keepdim=True)\n"
                        "        var = torch.var(x, dim=-1, keepdim=True, unbiased=True)   " + TORCH_BUG + "\n"
                        "        return (x - mean) * torch.rsqrt(var + 1e-5) * self.norm.weight + self.norm.bias\n"),
    "torch_linear_gelu": ("        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
                          "        return 0.5 * h * (1.0 + torch.erf(h * 0.7071067811865476))   " + TORCH_BUG + "\n"),
}
# ...and the reference's own operation called again (forbidden).
TORCH_FORBIDDEN = {
    "torch_softmax": "        return torch.softmax(x.contiguous(), dim=-1)\n",
    "torch_scale_bias_relu": "        return torch.relu(torch.addcmul(self.bias, x, self.scale))\n",
    "torch_layernorm": ("        return torch.nn.functional.layer_norm(x, (x.shape[-1],), self.norm.weight, "
                        "self.norm.bias, 1e-5)\n"),
    "torch_linear_gelu": ("        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
                          "        return torch.nn.functional.gelu(h, approximate=\"tanh\")\n"),
}
# The seeds' return lines (the reference's forward), which good_diff
# replaces by TORCH_GOOD's body.
TORCH_SEED_RETURN = {
    "torch_softmax": "return torch.softmax(x, dim=1)",
    "torch_scale_bias_relu": "return torch.relu(x * self.scale + self.bias)",
    "torch_layernorm": "return self.norm(x)",
    "torch_linear_gelu": 'return F.gelu(self.linear(x), approximate="tanh")',
}

# One C++ extension for the CPU, the same text and name in every reply and
# for both tasks: its object is compiled once per cache.
TORCH_CPP = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cmath>

torch::Tensor kevo_fake_softmax(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32, "softmax: a 2-D float32 tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t rows = xc.size(0), cols = xc.size(1);
  const float* in = xc.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = in + r * cols;
    float* b = out + r * cols;
    float m = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, a[c]);
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      b[c] = std::exp(a[c] - m);
      s += b[c];
    }
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t c = 0; c < cols; ++c) b[c] *= inv;
  }
  return y;
}

torch::Tensor kevo_fake_scale_bias_relu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "scale_bias_relu: float32");
  auto xc = x.contiguous();
  auto sc = scale.contiguous();
  auto bc = bias.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t features = xc.size(-1), n = xc.numel();
  const float* a = xc.data_ptr<float>();
  const float* s = sc.data_ptr<float>();
  const float* b = bc.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < n; i += features)
    for (int64_t f = 0; f < features; ++f) {
      const float v = a[i + f] * s[f] + b[f];
      out[i + f] = v > 0.0f ? v : 0.0f;
    }
  return y;
}
"""
# The same on a GPU (the system prompt names backend.torch.device "cuda"):
# raw-pointer CUDA without torch's headers, the tensor binding in C++.
TORCH_CU = r"""
#include <math.h>

__device__ float kevo_fake_block_reduce(float v, float* part, bool is_max) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  if (warp == 0) {
    v = lane < warps ? part[lane] : (is_max ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
      const float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
    if (lane == 0) part[0] = v;
  }
  __syncthreads();
  v = part[0];
  __syncthreads();
  return v;
}

__global__ void kevo_fake_softmax_kernel(const float* __restrict__ x, float* __restrict__ y, long cols) {
  __shared__ float part[32];
  const float* a = x + (long)blockIdx.x * cols;
  float* b = y + (long)blockIdx.x * cols;
  float m = -INFINITY;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, a[c]);
  m = kevo_fake_block_reduce(m, part, true);
  float s = 0.0f;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) s += expf(a[c] - m);
  s = kevo_fake_block_reduce(s, part, false);
  const float inv = 1.0f / s;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) b[c] = expf(a[c] - m) * inv;
}

__global__ void kevo_fake_sbr_kernel(const float* __restrict__ x, const float* __restrict__ s,
                                     const float* __restrict__ b, float* __restrict__ y, long n, long features) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    const long f = i % features;
    const float v = __fadd_rn(__fmul_rn(x[i], s[f]), b[f]);
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

void kevo_fake_softmax_launch(const float* x, float* y, long rows, long cols) {
  if (rows > 0) kevo_fake_softmax_kernel<<<(unsigned)rows, 256>>>(x, y, cols);
}

void kevo_fake_sbr_launch(const float* x, const float* s, const float* b, float* y, long n, long features) {
  long blocks = (n + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  if (blocks < 1) blocks = 1;
  kevo_fake_sbr_kernel<<<(unsigned)blocks, 256>>>(x, s, b, y, n, features);
}
"""
TORCH_CU_BINDING = r"""
#include <torch/extension.h>

void kevo_fake_softmax_launch(const float* x, float* y, long rows, long cols);
void kevo_fake_sbr_launch(const float* x, const float* s, const float* b, float* y, long n, long features);

torch::Tensor kevo_fake_softmax(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "softmax: a 2-D float32 CUDA tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  kevo_fake_softmax_launch(xc.data_ptr<float>(), y.data_ptr<float>(), xc.size(0), xc.size(1));
  return y;
}

torch::Tensor kevo_fake_scale_bias_relu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "scale_bias_relu: a float32 CUDA tensor");
  auto xc = x.contiguous();
  auto sc = scale.contiguous();
  auto bc = bias.contiguous();
  auto y = torch::empty_like(xc);
  kevo_fake_sbr_launch(xc.data_ptr<float>(), sc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
                       xc.numel(), xc.size(-1));
  return y;
}
"""
TORCH_CPP_CALL = {
    "torch_softmax": "        return _ext.kevo_fake_softmax(x)\n",
    "torch_scale_bias_relu": "        return _ext.kevo_fake_scale_bias_relu(x, self.scale, self.bias)\n",
}


def torch_program(task, body, n, note, head_extra=""):
    init_params, init_body, fwd = TORCH_INIT[task]
    return (TORCH_HEAD + head_extra + "\n\nclass ModelNew(nn.Module):\n"
            '    """%s (kevo-fake variant %d)."""\n\n' % (note, n) +
            "    def __init__(self%s):\n        super().__init__()\n%s\n" % (init_params, init_body) +
            "    def forward(self, %s):\n" % fwd + body)


def torch_task(conversation):
    """The bundled torch task a conversation is about (its prompts name it)."""
    for name in TORCH_TASKS:
        if re.search(r"(?<![\w])%s(?![\w])" % name, conversation):
            return name
    return None


def torch_parent(text):
    """The first ```python block of `text` that defines class ModelNew (the
    reference program shown before it defines Model)."""
    for m in re.finditer(r"```(?:python|py)?\n(.*?)```", text, re.S):
        if re.search(r"^class ModelNew\b", m.group(1), re.M):
            return m.group(1)
    return ""


def is_torch(prompt):
    return bool(torch_parent(prompt)) or "class ModelNew" in prompt


def torch_on_gpu(conversation):
    """Whether the system prompt says the candidates run on a GPU."""
    return 'backend.torch.device "cuda"' in conversation


def torch_code_reply(variant, prompt, n, task, gpu=False):
    src = torch_parent(prompt)
    fence = "```python\n"
    if task is None:
        task = "torch_softmax"
    if variant == "native":
        variant = "cuda" if gpu else "cpp"
    if variant in ("cpp", "cuda") and task not in TORCH_CPP_CALL:
        variant = "improve"
    if variant == "compile_error":
        variant = "syntax_error"
    if variant == "signature_change":
        good = torch_program(task, TORCH_GOOD[task], n, "renamed").replace("class ModelNew", "class FastModel")
        return fence + good + "```\n"
    if variant in ("improve", "repair"):
        why = "The failure came from my last edit; fixed." if variant == "repair" else \
            "A rewrite that fuses the reference's steps and calls none of its operations."
        return why + "\n\n" + fence + torch_program(task, TORCH_GOOD[task], n, "pure PyTorch") + "```\n"
    if variant == "cpp":
        head = ("from torch.utils.cpp_extension import load_inline\n\nCPP = r\"\"\"" + TORCH_CPP + "\"\"\"\n\n"
                "_ext = load_inline(name=\"kevo_fake_cpu_kernels\", cpp_sources=CPP,\n"
                "                   functions=[\"kevo_fake_softmax\", \"kevo_fake_scale_bias_relu\"])\n")
        return ("A C++ kernel through load_inline (cpp_sources only, on the CPU).\n\n" + fence +
                torch_program(task, TORCH_CPP_CALL[task], n, "C++ through load_inline", head) + "```\n")
    if variant == "cuda":
        head = ("from torch.utils.cpp_extension import load_inline\n\nCPP = r\"\"\"" + TORCH_CU_BINDING + "\"\"\"\n\n"
                "CU = r\"\"\"" + TORCH_CU + "\"\"\"\n\n"
                "_ext = load_inline(name=\"kevo_fake_cuda_kernels\", cpp_sources=CPP, cuda_sources=CU,\n"
                "                   functions=[\"kevo_fake_softmax\", \"kevo_fake_scale_bias_relu\"])\n")
        return ("Raw-pointer CUDA with the tensor binding in cpp_sources.\n\n" + fence +
                torch_program(task, TORCH_CPP_CALL[task], n, "CUDA through load_inline", head) + "```\n")
    if variant == "syntax_error":
        base = src or torch_program(task, TORCH_GOOD[task], n, "pure PyTorch")
        k = base.find("class ModelNew")
        return "Try this.\n\n" + fence + base[:k] + TORCH_BROKEN + "\n" + base[k:] + "```\n"
    if variant == "wrong":
        return ("Dropped a pass over the row.\n\n" + fence +
                torch_program(task, TORCH_WRONG[task], n, "one pass fewer") + "```\n")
    if variant == "forbidden":
        return ("Simplified forward.\n\n" + fence +
                torch_program(task, TORCH_FORBIDDEN[task], n, "simplified") + "```\n")
    if variant == "raises":
        body = "        x = x.view(-1, x.shape[-1] + 1)   " + TORCH_BUG + "\n" + TORCH_GOOD[task]
        return "Flattened the input first.\n\n" + fence + torch_program(task, body, n, "flattened") + "```\n"
    if variant == "no_code":
        return "I would fuse the operations into one kernel and use one block per row."
    if variant == "ambiguous":
        good = torch_program(task, TORCH_GOOD[task], n, "pure PyTorch")
        return "Option 1:\n" + fence + good + "```\nOption 2:\n" + fence + good.replace("variant", "option") + "```\n"
    if variant == "good_diff":
        line = TORCH_SEED_RETURN[task]
        if line in src:
            # Quoted without its indentation: kevo moves the REPLACE part to
            # the depth of the line it replaces.
            body = "\n".join(l.strip() and l[8:] for l in TORCH_GOOD[task].splitlines())
            return "<<<<<<< SEARCH\n%s\n=======\n%s\n>>>>>>> REPLACE\n" % (line, body)
        for l in src.splitlines():
            m = re.search(r"\(kevo-fake variant (\d+)\)", l)
            if m:
                edited = l.replace(m.group(0), "(kevo-fake variant %d)" % (int(m.group(1)) + 1000))
                return "<<<<<<< SEARCH\n%s\n=======\n%s\n>>>>>>> REPLACE\n" % (l.strip(), edited.strip())
        first = src.splitlines()[0] if src else ""
        return "<<<<<<< SEARCH\n%s\n=======\n%s\n# tuned\n>>>>>>> REPLACE\n" % (first, first)
    if variant == "bad_diff":
        return "<<<<<<< SEARCH\n        return kevo_no_such_line(x)\n=======\n        return x\n>>>>>>> REPLACE\n"
    if variant == "analysis":
        return ("The program launches one torch operation per step, each a full pass over memory.\n"
                "1. Fuse the steps into one kernel that reads the input once.\n"
                "2. Keep the binding in cpp_sources unchanged and give the kernel raw pointers.\n"
                "3. Use one block per row with warp-shuffle reductions.\n")
    return None


def is_cuda(src):
    return "__global__" in src


def parent_source(prompt):
    m = re.search(r"```cpp\n(.*?)```", prompt, re.S)
    return m.group(1) if m else ""


def signature(prompt):
    m = re.search(r'(extern "C" void (\w+)\(([^)]*)\))', prompt)
    if not m:
        return None
    params = [p.strip() for p in m.group(3).split(",") if p.strip()]
    return m.group(1), m.group(2), params


def improve(src, n):
    rules = CUDA_IMPROVE_RULES if is_cuda(src) else IMPROVE_RULES
    for k in range(len(rules)):
        a, b = rules[(n + k) % len(rules)]
        if a in src:
            return src.replace(a, b, 1)
    return src + "\nstatic const int kevo_fake_variant_%d = %d;\n" % (n, n)


def wrong(src, prompt):
    sig = signature(prompt)
    if not sig:
        return src.replace("+=", "-=", 1)
    full, name, params = sig
    names = [p.replace("*", " ").split()[-1] for p in params]
    outs = [p for p in params if "*" in p and not p.startswith("const")]
    out = outs[0].replace("*", " ").split()[-1] if outs else None
    body = src.replace('extern "C" void %s(' % name, "static void %s_orig(" % name, 1)
    body += "\n%s {\n  %s_orig(%s);\n" % (full, name, ", ".join(names))
    if out:
        body += "  %s[0] = %s[0] * 1.5f + 1.0f;\n" % (out, out)
    return body + "}\n"


def cuda_bug(src, prompt, kind):
    """A CUDA kernel with one of the bugs models write on GPUs: the host
    function wrapped (the original renamed) so that after the real work a
    one-thread kernel flips a bit of the first output element (wrong), of
    the first input (modifies_input, against the task's rules), or nothing
    is launched at all (launches_nothing)."""
    sig = signature(prompt)
    if not sig:
        return src.replace("}", "}}", 1)   # no signature to wrap: a compile error
    full, name, params = sig
    names = [p.replace("*", " ").split()[-1] for p in params]
    ptrs = [p for p in params if "*" in p]
    outs = [p for p in ptrs if not p.startswith("const")]
    ins = [p for p in ptrs if p.startswith("const")]
    body = src.replace('extern "C" void %s(' % name, "static void %s_orig(" % name, 1)
    body += "\n" + CUDA_BUG
    if kind == "launches_nothing":
        body += "%s {\n" % full + "".join("  (void)%s;\n" % x for x in names) + "}\n"
        return body
    target = (ins if kind == "modifies_input" else outs) or ptrs
    victim = target[0].replace("*", " ").split()[-1]
    body += "__global__ void kevo_fake_spoil(unsigned char* p) { p[1] ^= 0x40; }\n"
    body += "%s {\n  %s_orig(%s);\n" % (full, name, ", ".join(names))
    body += "  kevo_fake_spoil<<<1, 1>>>((unsigned char*)(%s));\n}\n" % victim
    return body


def repair(src, prompt):
    """Undoes what compile_error, wrong and the CUDA bugs did to a kernel."""
    src = src.replace("static int kevo_broken = undeclared_symbol_xyz;\n", "")
    sig = signature(prompt)
    cut = src.rfind("\n" + CUDA_BUG)
    if sig and cut >= 0:
        src = src[:cut].replace("static void %s_orig(" % sig[1], 'extern "C" void %s(' % sig[1], 1)
        return src
    if sig and "%s_orig(" % sig[1] in src:
        full, name, _ = sig
        cut = src.rfind("\n" + full + " {")
        if cut >= 0:
            src = src[:cut + 1]
        src = src.replace("static void %s_orig(" % name, 'extern "C" void %s(' % name, 1)
    return src


def code_reply(variant, prompt, n, conversation=""):
    if is_torch(prompt):
        text = torch_code_reply(variant, prompt, n, torch_task(conversation or prompt),
                                torch_on_gpu(conversation))
        if text is not None:
            return text
    if is_opencl(prompt):
        text = opencl_code_reply(variant, prompt, n)
        if text is not None:
            return text
    src = parent_source(prompt)
    if variant == "repair":
        return "The failure came from my last edit; fixed.\n\n```cpp\n" + improve(repair(src, prompt), n) + "```\n"
    if variant == "improve":
        return "A faster variant: more parallel work per step.\n\n```cpp\n" + improve(src, n) + "```\n"
    if variant == "compile_error":
        bad = src.replace('extern "C"', "static int kevo_broken = undeclared_symbol_xyz;\nextern \"C\"", 1)
        return "Try this.\n\n```cpp\n" + bad + "```\n"
    if variant == "wrong" and is_cuda(src):
        return "Fused the epilogue into one launch.\n\n```cpp\n" + cuda_bug(src, prompt, "wrong") + "```\n"
    if variant == "wrong":
        return "Reordered the accumulation.\n\n```cpp\n" + wrong(src, prompt) + "```\n"
    if variant in ("launches_nothing", "modifies_input"):
        return "Restructured the launch.\n\n```cpp\n" + cuda_bug(src, prompt, variant) + "```\n"
    if variant == "no_code":
        return "I would restructure the loops for better locality, tile the inner loop and use OpenMP."
    if variant == "ambiguous":
        return "Option 1:\n```cpp\n" + src + "```\nOption 2:\n```cpp\n" + improve(src, n) + "```\n"
    if variant == "signature_change":
        sig = signature(prompt)
        changed = src.replace("int32_t", "int64_t") if sig else src
        return "```cpp\n" + changed + "```\n"
    if variant == "good_diff":
        for a, b in IMPROVE_RULES:
            if a in src:
                # Extra blanks: the client must match whitespace-tolerantly.
                return "<<<<<<< SEARCH\n  %s  \n=======\n%s\n>>>>>>> REPLACE\n" % (a.replace(" ", "   "), b)
        first = src.splitlines()[0] if src else ""
        return "<<<<<<< SEARCH\n%s\n=======\n%s\n// tuned\n>>>>>>> REPLACE\n" % (first, first)
    if variant == "bad_diff":
        return "<<<<<<< SEARCH\nfor (int nonexistent = 0; nonexistent < 1; ++nonexistent) {}\n=======\n// gone\n>>>>>>> REPLACE\n"
    if variant == "analysis":
        return ("1. Use all hardware threads with OpenMP over the outer loop.\n"
                "2. Unroll the inner loop by 4 to hide latency.\n3. Vectorise along contiguous memory.\n")
    if variant in ("param_hint", "bad_param_hint"):
        if variant == "bad_param_hint":
            return '```json\n{"values": {"NO_SUCH_PARAM": 3}}\n```'
        values = {}
        for m in re.finditer(r"^- (\w+): \[([^\]]*)\]", prompt, re.M):
            name, vals = m.group(1), [v.strip() for v in m.group(2).split(",")]
            if name == "restriction" or not vals:
                continue
            v = vals[(n + len(values)) % len(vals)]
            values[name] = int(v) if re.fullmatch(r"-?\d+", v) else v
        return "```json\n" + json.dumps({"values": values, "priorities": list(values)}) + "\n```\n"
    raise ValueError("unknown variant " + variant)


def auto_variant(prompt, conversation=""):
    with LOCK:
        if "was judged and failed" in prompt:
            STATE["code"] += 1
            return "repair", STATE["code"]
        if "Performance review" in prompt:
            return "analysis", 0
        if "Parameter tuning" in prompt:
            STATE["hint"] += 1
            return "param_hint", STATE["hint"]
        if "SEARCH/REPLACE" in prompt:
            STATE["diff"] += 1
            return DIFF_ROTATION[(STATE["diff"] - 1) % len(DIFF_ROTATION)], STATE["diff"]
        STATE["code"] += 1
        if is_torch(prompt):
            # One rotation per task: which task's request comes first
            # depends on the judging of both, so a shared counter could
            # hand softmax's only 'wrong' (the stress-trial case) to the
            # other task.
            key = "torch:" + (torch_task(conversation or prompt) or "")
            STATE[key] = STATE.get(key, 0) + 1
            return TORCH_CODE_ROTATION[(STATE[key] - 1) % len(TORCH_CODE_ROTATION)], STATE["code"]
        elif is_opencl(prompt):
            rotation = OPENCL_CODE_ROTATION
        else:
            rotation = CUDA_CODE_ROTATION if is_cuda(parent_source(prompt)) else CODE_ROTATION
        return rotation[(STATE["code"] - 1) % len(rotation)], STATE["code"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as real providers
    # Headers and body go out in separate writes: with Nagle on, the body
    # waits for the client's delayed ACK (about 40 ms per request on a
    # reused connection).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def send_response(self, code, message=None):
        # Logged before the answer leaves, so a client that has its answer
        # finds the request in the log.
        if getattr(self, "entry", None) is not None:
            self.entry["status"] = code
            self.write_log()
        super().send_response(code, message)

    def write_log(self):
        if LOG and getattr(self, "entry", None) is not None:
            with LOCK:
                LOG.write(json.dumps(self.entry) + "\n")
                LOG.flush()
        self.entry = None

    def do_GET(self):
        self.entry = {"method": "GET", "path": self.path, "status": None,
                      "has_key": bool(self.headers.get("Authorization") or self.headers.get("x-api-key"))}
        try:
            if self.path == "/health":
                ready = time.time() >= READY_AT
                self.send_json(200 if ready else 503, {"status": "ok" if ready else "loading model"})
                return
            if not self.path.endswith("/models"):
                self.send_json(404, {"error": {"message": "no such endpoint " + self.path}})
                return
            b = SCRIPT.get("models", {"kind": "list"})
            if b.get("kind") == "status":
                self.send_json(int(b["status"]), {"error": {"message": b.get("body", "scripted error")}})
                return
            self.send_json(200, {"object": "list", "data": [{"id": i, "object": "model"} for i in b.get("ids", [])]})
        finally:
            self.write_log()

    def send_json(self, status, obj, extra=None, raw=None):
        body = json.dumps(obj).encode()
        if raw:
            body = body.replace(BAD_MARK.encode(), raw)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def reply(self, fmt, model, text, prompt_len, raw=None):
        usage_in, usage_out = max(1, prompt_len // 4), max(1, len(text) // 4)
        if getattr(self, "entry", None) is not None:
            self.entry["input_tokens"], self.entry["output_tokens"] = usage_in, usage_out
        if fmt == "openai":
            self.send_json(200, {"id": "fake", "object": "chat.completion", "model": model,
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out,
                                           "total_tokens": usage_in + usage_out}}, raw=raw)
        else:
            self.send_json(200, {"id": "fake", "type": "message", "role": "assistant", "model": model,
                                 "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                 "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}, raw=raw)

    def do_POST(self):
        self.entry = None
        try:
            self.post()
        finally:
            self.write_log()

    def post(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw_request = self.rfile.read(length)
        fmt = "anthropic" if self.path.endswith("/messages") else "openai"
        if not (self.path.endswith("/messages") or self.path.endswith("/chat/completions")):
            self.send_json(404, {"error": {"message": "no such endpoint " + self.path}})
            return
        try:
            req = json.loads(raw_request)
        except ValueError:
            self.send_json(400, {"error": {"message": "request is not JSON"}})
            return
        msgs = req.get("messages", [])
        last = msgs[-1]["content"] if msgs else ""
        # The kernel to vary: the latest code block of the conversation (a
        # repair turn's own message has none; the model's last reply does).
        prompt = last
        if not parent_source(last):
            for m in reversed(msgs):
                if parent_source(m.get("content") or ""):
                    prompt = last + "\n" + m["content"]
                    break
        # A torch program comes in a ```python fence (after the reference
        # program, which defines Model): the latest one defining ModelNew.
        if not torch_parent(last):
            for m in reversed(msgs):
                if torch_parent(m.get("content") or ""):
                    prompt = last + "\n" + m["content"]
                    break
        system = [req["system"]] if isinstance(req.get("system"), str) else []   # the Anthropic format
        conversation = "\n".join(system + [m.get("content") or "" for m in msgs if isinstance(m.get("content"), str)])
        # An OpenCL parent may come in a fence of another language.
        if is_opencl(prompt) and not opencl_source(prompt):
            for m in reversed(msgs):
                if opencl_fenced(m.get("content") or ""):
                    prompt = last + "\n" + m["content"]
                    break
        if not signature(prompt):
            for m in msgs:
                if signature(m.get("content") or ""):
                    prompt += "\n" + m["content"][:0] + signature(m["content"])[0]
                    break
        model = req.get("model", "?")
        with LOCK:
            n = STATE["n"]
            STATE["n"] += 1
        seq = SCRIPT.get("sequence", [])
        b = seq[n] if n < len(seq) else SCRIPT.get("default", {"kind": "auto"})
        kind = b.get("kind", "auto")
        has_key = bool(self.headers.get("Authorization") or self.headers.get("x-api-key"))
        entry = {"method": "POST", "n": n, "path": self.path, "format": fmt, "model": model, "kind": kind,
                 "has_key": has_key, "bytes": len(raw_request),
                 "max_tokens": req.get("max_tokens"), "turns": len(msgs),
                 "status": None, "input_tokens": 0, "output_tokens": 0}
        if SCRIPT.get("log_content"):
            entry["content"] = last if isinstance(last, str) else json.dumps(last)
        self.entry = entry
        if kind == "stall":
            # Logged on arrival: the client may give up before the answer.
            self.write_log()
            time.sleep(float(b.get("seconds", 5)))
            kind = "auto"
        if kind == "status":
            extra = {}
            if "retry_after" in b:
                extra["Retry-After"] = str(b["retry_after"])
            self.send_json(int(b["status"]), {"error": {"message": b.get("body", "scripted error")}}, extra)
            return
        if kind == "reset":
            # SO_LINGER 0: close() sends RST instead of FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if kind == "truncate":
            body = b'{"choices": [{"message": {"content": "```cpp\\nint x;'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) + 500))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if kind == "invalid_json":
            body = b"<html>502 gateway hiccup</html>"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if kind == "empty_choices":
            if fmt == "openai":
                self.send_json(200, {"id": "fake", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 0}})
            else:
                self.send_json(200, {"id": "fake", "content": [], "usage": {"input_tokens": 5, "output_tokens": 0}})
            return
        if kind == "refusal":
            if fmt == "openai":
                self.send_json(200, {"id": "fake", "choices": [{"index": 0, "message": {
                    "role": "assistant", "content": None, "refusal": "I can't help with that."},
                    "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
            else:
                self.send_json(200, {"id": "fake", "content": [{"type": "text", "text": ""}],
                                     "stop_reason": "refusal", "usage": {"input_tokens": 5, "output_tokens": 3}})
            return
        raw = None
        if kind == "text":
            text = b["text"]
        elif kind == "bad_bytes":
            text = code_reply("improve", prompt, n).replace(
                "```cpp\n", "```cpp\n// " + BAD_MARK + " nul:\x00 esc:\x1b[2J end\n", 1)
            raw = BAD_BYTES
        else:
            variant, k = auto_variant(prompt, conversation) if kind == "auto" else (kind, n)
            text = code_reply(variant, prompt, k, conversation)
        self.reply(fmt, model, text, len(raw_request), raw)


def main():
    global LOG, SCRIPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--script")
    ap.add_argument("--log")
    ap.add_argument("--port-file")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--model")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--unix", help="listen on a Unix-domain socket at this path instead of TCP (port file: 0)")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--startup-delay", type=float, default=0.0)
    ap.add_argument("--exit-at-start", type=int)
    ap.add_argument("--pid-file")
    a = ap.parse_args()
    global READY_AT
    if a.exit_at_start is not None:
        print("fake server: exiting at start as asked", file=sys.stderr, flush=True)
        return a.exit_at_start
    if a.model is not None and not os.path.isfile(a.model):
        print("fake server: no model file " + a.model, file=sys.stderr, flush=True)
        return 2
    if a.pid_file:
        with open(a.pid_file, "w") as f:
            f.write(str(os.getpid()))
    READY_AT = time.time() + a.startup_delay
    if a.script:
        with open(a.script) as f:
            SCRIPT = json.load(f)
    if a.log:
        LOG = open(a.log, "a")
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 1024
    if a.unix:
        import socketserver

        class UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True
            request_queue_size = 1024

            def get_request(self):
                conn, _ = self.socket.accept()
                return conn, ("unix", 0)   # (a peer of a Unix socket has no address)

        class UnixHandler(Handler):
            disable_nagle_algorithm = False   # (TCP_NODELAY: no such option on a Unix socket)

        if os.path.exists(a.unix):
            os.unlink(a.unix)
        srv = UnixHTTPServer(a.unix, UnixHandler)
        port = 0
    else:
        srv = ThreadingHTTPServer((a.host, a.port), Handler)
        port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(a.port_file + ".tmp", a.port_file)
    print("PORT %d" % port, flush=True)
    try:
        srv.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
