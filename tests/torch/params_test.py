#!/usr/bin/env python3
"""A torch task's search space, end to end (docs/tasks.md#search_space):
`kevo run` with the parameter operators only on
tests/torch/tasks/params_softmax (device cpu: PyTorch code in chunks of
CHUNK rows), or params_softmax_triton (device cuda: a Triton kernel whose
launch, NUM_WARPS and ROWS per program, is the space, as an autotune list
would be), whose seed holds its parameters as a "# kevo:params" block of
module-level constants (on the CPU after a docstring and a `from
__future__` import). Asserted from the lineage: the parameter
operators made children at distinct points, none outside the restriction;
each child's source is the seed's with the block rewritten where it stood
(so the __future__ import stays legal) and its recorded point is the one its
block spells; and the judge ran what the block says: every point with
SHIFT "max" is correct and every point with SHIFT "none" (no max
subtraction) fails the stress trial as a wrong answer.

Without a GPU, where scripts/setup-triton.sh's Triton is installed, the
Triton task's seed is also compiled to PTX for sm_90 at every point of its
space (its block rewritten as kevo rewrites it), and each kernel's
`.reqntid` must be 32 x NUM_WARPS: the parameters reach Triton's launch.

  params_test.py KEVO PYTHON SOURCE_DIR WORK_DIR [DEVICE]

Exit 77 (skipped) when PYTHON cannot import torch.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "llm"))
import llm_lineage  # noqa: E402
from torch_test_args import args_or_skip  # noqa: E402

# Per task: the seed's point, and the points its restriction excludes.
EXPECTED = {
    "params_softmax": ({"CHUNK": 64, "SHIFT": "max"}, lambda p: p["CHUNK"] < 16 and p["SHIFT"] == "none"),
    "params_softmax_triton": ({"NUM_WARPS": 4, "ROWS": 1, "SHIFT": "max"}, lambda p: p["NUM_WARPS"] * p["ROWS"] > 16),
}
BLOCK = re.compile(r"^# kevo:params begin\n(.*?)^# kevo:params end\n", re.S | re.M)


def block_point(source):
    m = BLOCK.search(source)
    if not m:
        raise AssertionError("no params block in:\n" + source[:400])
    point = {}
    for line in m.group(1).splitlines():
        name, value = [x.strip() for x in line.split("=", 1)]
        point[name] = json.loads(value)
    return point


COMPILE_POINTS = r"""
import importlib.util, itertools, json, re, sys
import triton
from triton.backends.compiler import GPUTarget
seed_path, work = sys.argv[1], sys.argv[2]
seed = open(seed_path).read()
block = re.compile(r"^# kevo:params begin\n.*?^# kevo:params end\n", re.S | re.M)
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32", "rows": "i32", "cols": "i32", "BLOCK": "constexpr",
       "ROWS_PER": "constexpr", "SUB_MAX": "constexpr"}
done = 0
for warps, rows, shift in itertools.product([1, 2, 4, 8], [1, 2, 4], ["max", "none"]):
    if warps * rows > 16:
        continue
    text = block.sub("# kevo:params begin\nNUM_WARPS = %d\nROWS = %d\nSHIFT = %s\n# kevo:params end\n"
                     % (warps, rows, json.dumps(shift)), seed)
    path = "%s/seed_%d_%d_%s.py" % (work, warps, rows, shift)
    open(path, "w").write(text)
    spec = importlib.util.spec_from_file_location("seed_%d_%d_%s" % (warps, rows, shift), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (mod.NUM_WARPS, mod.ROWS, mod.SHIFT) == (warps, rows, shift)
    k = triton.compile(triton.compiler.ASTSource(mod.softmax_rows, signature=sig, constexprs={
        "BLOCK": 2048, "ROWS_PER": mod.ROWS, "SUB_MAX": mod.SHIFT == "max"}), target=GPUTarget("cuda", 90, 32),
        options={"num_warps": mod.NUM_WARPS})
    got = re.findall(r"\.reqntid (\d+)", k.asm["ptx"])
    assert got == [str(32 * warps)], (warps, rows, shift, got)
    done += 1
print("points compiled:", done)
"""


def compile_every_triton_point(python, src, work):
    """The Triton task's seed compiled at every point of its space (no GPU);
    False when scripts/setup-triton.sh's Triton is not there."""
    p = subprocess.run(["bash", os.path.join(src, "scripts", "setup-triton.sh"), "--site"], capture_output=True,
                       text=True)
    site = p.stdout.strip()
    if p.returncode != 0 or not os.path.isdir(os.path.join(site, "triton")):
        print("no Triton from scripts/setup-triton.sh: the Triton task's points are not compiled")
        return False
    seed = os.path.join(src, "tests", "torch", "tasks", "params_softmax_triton", "seed.py")
    out = os.path.join(work, "triton-points")
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([python, "-c", COMPILE_POINTS, seed, out], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=site, TRITON_CACHE_DIR=os.path.join(out, "cache")))
    print(p.stdout.strip(), p.stderr[-2000:] if p.returncode else "")
    if p.returncode != 0 or "points compiled: 22" not in p.stdout:
        raise AssertionError("the Triton task's seed does not compile at every point")
    return True


def main():
    got = args_or_skip()
    if got is None:
        return 77
    kevo, python, src, work, device = got
    name = "params_softmax_triton" if device == "cuda" else "params_softmax"
    task = os.path.abspath(os.path.join(src, "tests", "torch", "tasks", name))
    seed_point, excluded = EXPECTED[name]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    config = {
        "name": "torch-params", "seed": 5, "tasks": [task], "out_dir": os.path.join(work, "runs"),
        "budget": {"evaluations_per_task": 12, "wall_seconds": 600},
        "island": {"population": 8, "elites": 2, "ordering": "deterministic", "in_flight": 2},
        "operators": [{"type": "param_mutation", "weight": 1.0}, {"type": "param_crossover", "weight": 0.5}],
        "backend": {"type": "torch", "torch": {"python": python, "device": device,
                                               "cache_dir": os.path.join(work, "cache"),
                                               "baselines": {"enabled": False}}},
        "progress": {"mode": "off"},
    }
    cfg = os.path.join(work, "config.json")
    with open(cfg, "w") as f:
        json.dump(config, f, indent=1)
    p = subprocess.run([kevo, "run", cfg, "--out", os.path.join(work, "run")], capture_output=True, text=True,
                       timeout=900)
    print(p.stdout[-3000:], p.stderr[-3000:])
    if p.returncode != 0:
        raise AssertionError("kevo run exited %d" % p.returncode)
    rows = llm_lineage.read(os.path.join(work, "run"))[0]
    with open(os.path.join(task, "seed.py")) as f:
        seed = f.read()
    seed_head, seed_tail = seed[:BLOCK.search(seed).start()], seed[BLOCK.search(seed).end():]

    judged = [r for r in rows if r["status"] not in ("pending", "duplicate", "invalid", "lost")]
    seeds = [r for r in judged if r["op"] == "seed"]
    assert len(seeds) == 1 and seeds[0]["status"] == "correct", [(r["op"], r["status"], r["message"]) for r in seeds]
    assert json.loads(seeds[0]["params"]) == seed_point, seeds[0]["params"]
    children = [r for r in judged if r["op"] in ("param_mutation", "param_crossover")]
    points = []
    for r in children:
        point = json.loads(r["params"])
        assert point == block_point(r["source"]), (r["id"], r["params"], r["source"][:300])
        assert r["source"] == seed_head + BLOCK.search(r["source"]).group(0) + seed_tail, (
            "candidate %d is not the seed with its block rewritten in place:\n%s" % (r["id"], r["source"][:400]))
        assert not excluded(point), ("a point the restriction excludes", r["id"], point)
        want = "correct" if point["SHIFT"] == "max" else "wrong_answer"
        assert r["status"] == want, (r["id"], point, r["status"], r["message"][:300])
        points.append(tuple(point[k] for k in sorted(point)))
        print("  %-40s %-13s %.3fx" % (r["params"], r["status"], r["speedup"]))
    print("children judged: %s" % sorted(points))
    assert len(points) >= 4, "only %d children judged" % len(points)
    assert len(set(points)) == len(points), "a point was judged twice: %s" % sorted(points)
    shifts = {json.loads(r["params"])["SHIFT"] for r in children}
    assert shifts == {"max", "none"}, "the children's SHIFT values: %s" % shifts
    if device != "cuda":
        compile_every_triton_point(python, src, work)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
