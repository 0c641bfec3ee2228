#!/usr/bin/env python3
"""`kevo tasks triton-space`: a Triton kernel's @triton.autotune
configurations as a torch task's search space (docs/torch.md#search-space).
No torch and no Triton needed: the file is read as a syntax tree.

  triton_space_test.py KEVO SOURCE_DIR WORK_DIR

* tests/torch/triton_space/autotuned.py (five configurations, one
  repeated, num_stages set in one only): the parameters, their values, the
  seed point and the block; the space written into a task (the seed the
  block above triton_space/body.py) loads with `kevo tasks`, which counts
  exactly the four distinct configurations as its points, and, with
  --product, every combination (18);
* bad input exits 2 naming the file, the line and what was expected:
  configurations computed at run time, a meta-parameter missing from one,
  no autotuned kernel, two without --kernel, a file that does not exist.
"""
import json
import os
import shutil
import subprocess
import sys


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def expect_error(kevo, path, text, *extra):
    p = run([kevo, "tasks", "triton-space", path] + list(extra))
    assert p.returncode == 2, (path, p.returncode, p.stdout, p.stderr)
    assert text in p.stderr, (text, p.stderr)
    assert p.stdout == "", p.stdout


def task_with(work, name, src, space, block):
    d = os.path.join(work, name)
    os.makedirs(d)
    ref_task = os.path.join(src, "tests", "torch", "tasks", "params_softmax_triton")
    shutil.copy(os.path.join(ref_task, "reference.py"), d)
    with open(os.path.join(ref_task, "task.json")) as f:
        manifest = json.load(f)
    manifest["name"] = name
    manifest["search_space"] = space
    with open(os.path.join(d, "task.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    with open(os.path.join(src, "tests", "torch", "triton_space", "body.py")) as f:
        body = f.read()
    with open(os.path.join(d, "seed.py"), "w") as f:
        f.write(block + body)
    return d


def space_points(kevo, d):
    p = run([kevo, "tasks", d, "--json"])
    assert p.returncode == 0, (p.stdout, p.stderr)
    return json.loads(p.stdout)[0]["space_points"]


def main():
    kevo, src, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    autotuned = os.path.join(src, "tests", "torch", "triton_space", "autotuned.py")
    p = run([kevo, "tasks", "triton-space", autotuned, "--json"])
    assert p.returncode == 0, (p.stdout, p.stderr)
    got = json.loads(p.stdout)
    assert got["kernel"] == "softmax_rows", got
    space = got["search_space"]
    assert space["params"] == [{"name": "ROWS_PER", "values": [1, 2, 4]}, {"name": "NUM_WARPS", "values": [2, 4, 8]},
                               {"name": "NUM_STAGES", "values": [2, 3]}], space["params"]
    assert space["seed_point"] == {"ROWS_PER": 1, "NUM_WARPS": 4, "NUM_STAGES": 3}, space["seed_point"]
    assert len(space["restrictions"]) == 1, space
    assert got["block"] == "# kevo:params begin\nROWS_PER = 1\nNUM_WARPS = 4\nNUM_STAGES = 3\n# kevo:params end\n", got
    # kevo's expression language reads the restriction: exactly the four
    # distinct configurations are points.
    assert space_points(kevo, task_with(work, "configs_only", src, space, got["block"])) == 4
    p = run([kevo, "tasks", "triton-space", autotuned, "--json", "--product"])
    assert p.returncode == 0, p.stderr
    product = json.loads(p.stdout)
    assert "restrictions" not in product["search_space"], product
    assert space_points(kevo, task_with(work, "product", src, product["search_space"], product["block"])) == 18
    # The text form holds the same space and block.
    p = run([kevo, "tasks", "triton-space", autotuned])
    assert p.returncode == 0 and got["block"] in p.stdout and '"restrictions"' in p.stdout, p.stdout

    with open(autotuned) as f:
        text = f.read()

    def variant(name, old, new):
        path = os.path.join(work, name)
        assert old in text, old
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        return path

    computed = variant("computed.py", "@triton.autotune(configs=CONFIGS,",
                       "@triton.autotune(configs=[triton.Config({'ROWS_PER': r}) for r in (1, 2)],")
    expect_error(kevo, computed, "computed.py:18: expected configs as a list of triton.Config(...) written out")
    missing = variant("missing.py", 'triton.Config({"ROWS_PER": 2}, num_warps=4),\n]',
                      'triton.Config({}, num_warps=4),\n]')
    expect_error(kevo, missing, "expected every configuration to set every meta-parameter (configs[4] has no ROWS_PER)")
    none = variant("none.py", "@triton.autotune(configs=CONFIGS, key=[\"cols\"])\n", "")
    expect_error(kevo, none, "expected a kernel decorated with @triton.autotune(configs=[...]) (none found)")
    two = variant("two.py", "\n\nclass ModelNew", "\n\n@triton.autotune(configs=CONFIGS, key=[])\n@triton.jit\n"
                  "def other(x_ptr, ROWS_PER: tl.constexpr):\n    pass\n\n\nclass ModelNew")
    expect_error(kevo, two, "expected one autotuned kernel, or --kernel NAME (found softmax_rows, other)")
    p = run([kevo, "tasks", "triton-space", two, "--kernel", "other", "--json"])
    assert p.returncode == 0 and json.loads(p.stdout)["kernel"] == "other", (p.stdout, p.stderr)
    expect_error(kevo, os.path.join(work, "absent.py"), "absent.py: expected a Python file holding an autotuned Triton kernel")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
