#!/usr/bin/env python3
"""The torch backend's adversarial suite (docs/torch.md#threat-model): every
candidate in tests/torch/adversarial, and native attacks from a load_inline
extension, judged by `kevo eval` (the real build stage, judge and sandbox),
each asserting the honest verdict; a fake API key in kevo's environment
never appears in anything kevo prints; after every attack the honest
candidate is still judged correct.

  adversarial_test.py KEVO PYTHON SOURCE_DIR WORK_DIR [DEVICE] [--only NAME,...]

Exit 77 (skipped) when PYTHON cannot import torch.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_test_args import verdicts_of  # noqa: E402

SECRET = "sk-kevo-fake-secret-7f3a9c2e"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--only")]
    only = set()
    for a in sys.argv[1:]:
        if a.startswith("--only="):
            only = set(a.split("=", 1)[1].split(","))
    kevo, python, src, work = args[:4]
    device = args[4] if len(args) > 4 else "cpu"
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        print("SKIP: %s cannot import torch" % python)
        return 77
    adv = os.path.join(src, "tests", "torch", "adversarial")
    softmax = os.path.join(src, "configs", "tasks", "torch", "torch_softmax")
    sbr = os.path.join(src, "configs", "tasks", "torch", "torch_scale_bias_relu")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # The source tree's root on PYTHONPATH (a user's broad entry): the
    # judge's interpreter then has it on sys.path, and a host's root must
    # still leave it out (native_find_task looks for a task manifest).
    env = dict(os.environ, OPENAI_API_KEY=SECRET, KEVO_TEST_SECRET_TOKEN=SECRET,
               PYTHONPATH=os.pathsep.join(p for p in (os.path.abspath(src), os.environ.get("PYTHONPATH")) if p))

    def judge(task, paths, wall=60, sets=()):
        """Judges the files in one `kevo eval` (one backend: its judge
        process serves them in turn): {path: verdict}."""
        argv = [kevo, "eval", task] + paths + ["--json", "--no-prepare", "--seed", "11",
                "--set", "device=" + device, "python=" + python, "cache_dir=" + os.path.join(work, "cache"),
                "run.wall_seconds=%d" % wall, "timing.budget_seconds=0.2", "timing.min_repeats=5"] + list(sets)
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=wall * len(paths) + 600)
        everything = p.stdout + p.stderr
        if SECRET in everything:
            raise AssertionError("the fake API key appears in kevo's output")
        if p.returncode != 0:
            raise AssertionError("kevo eval exited %d:\n%s" % (p.returncode, everything[-3000:]))
        return verdicts_of(p.stdout, paths)

    # name -> (task, statuses allowed, text the message must contain, extra check)
    def fast(v):
        return v["status"] != "correct" or v["speedup"] < 5.0

    def hidden_quiet(v):
        return "called with" not in v["feedback"] and "on a hidden test shape" in v["feedback"]

    def hidden_later_quiet(v):
        return "1001" not in v["feedback"] and "4099" not in v["feedback"] and "on a hidden test shape" in v["feedback"]

    cases = {
        "honest.py": (softmax, {"correct"}, "correct", None),
        "calls_reference_op.py": (softmax, {"forbidden"}, "aten::_softmax", None),
        "fallback_to_reference.py": (softmax, {"forbidden"}, "aten::_softmax", None),
        # Uses the reference's operation where the one recorded call was not,
        # or only in the timing: every correctness call is recorded, and one
        # call of the timing loop.
        "ops_by_call_count.py": (softmax, {"forbidden"}, "aten::_softmax", None),
        "ops_in_timing_only.py": (softmax, {"forbidden"}, "in a call of the timing loop", None),
        "memo_by_shape.py": (softmax, {"wrong_answer"}, "differs from the reference", None),
        "memo_by_sample.py": (softmax, {"correct", "wrong_answer"}, "", fast),
        # On the GPU the poisoned allocator makes it compute on every call
        # (correct, honest time); on the CPU large blocks come back as fresh
        # zero pages, so it never computes and is wrong from the first call.
        "detects_poison.py": (softmax, {"correct", "wrong_answer"}, "", fast),
        "returns_input.py": (softmax, {"wrong_answer"}, "shares memory with input", None),
        "modifies_input.py": (softmax, {"wrong_answer"}, "modified its input", None),
        # Its subclass cannot be made while the call's operations are
        # recorded (every correctness call is): runtime_error; without the
        # recording, the type check (wrong_answer).
        "lazy_subclass.py": (softmax, {"wrong_answer", "runtime_error"}, "", lambda v: v["status"] != "correct"),
        "no_max_subtraction.py": (softmax, {"wrong_answer"}, "stress large-mean", None),
        "visible_shape_only.py": (softmax, {"wrong_answer"}, "", None),
        # Its message keeps the traceback (the lineage); the feedback keeps
        # nothing it wrote at the hidden shape.
        "echo_hidden_shape.py": (softmax, {"runtime_error"}, "called with rows 1 cols 1", hidden_quiet),
        # Raises later, at a drawn shape, with every shape it saw: the
        # feedback keeps only kevo's words once the hidden shapes have run.
        "echo_hidden_later.py": (softmax, {"runtime_error"}, "", hidden_later_quiet),
        # A wrong answer there, whose values spell a hidden size: the same.
        "wrong_after_hidden.py": (softmax, {"wrong_answer"}, "", hidden_later_quiet),
        # Prints the hidden sizes it saw, then calls the reference's
        # operation: `forbidden`, its feedback kevo's finding without the
        # output.
        "forbidden_after_hidden.py": (softmax, {"forbidden"}, "aten::_softmax",
                                      lambda v: "1001" not in v["feedback"] and "4099" not in v["feedback"] and
                                      "shapes seen" not in v["feedback"] and "aten::_softmax" in v["feedback"]),
        "partial_write.py": (softmax, {"wrong_answer"}, "differs from the reference", None),
        "wrong_dtype.py": (softmax, {"wrong_answer"}, "dtype float64", None),
        "forges_result.py": (softmax, {"wrong_answer"}, "differs from the reference", None),
        "changes_numerics.py": (softmax, {"forbidden"}, "torch.set_float32_matmul_precision", None),
        "patches_timer.py": (softmax, {"forbidden"}, "imports time", None),
        "reaches_os.py": (softmax, {"forbidden"}, "reaches os", None),
        "dunder_escape.py": (softmax, {"forbidden"}, "the interpreter's internals", None),
        # Frames and code reached through a generator: the judge's locals
        # (is this call recorded?) and globals (a red team, 2026-12-07).
        "reads_judge_frame.py": (softmax, {"forbidden"}, "frames and code", None),
        # The same walk inside a format string's fields.
        "reads_frame_by_format.py": (softmax, {"forbidden"}, "format", None),
        # Python run from a string by torch.utils.benchmark.Timer.
        "runs_timer_stmt.py": (softmax, {"forbidden"}, "torch.utils.benchmark", None),
        # Python in a string annotation, evaluated by typing.get_type_hints.
        # (And, since a later red team, by its string annotation first.)
        "evaluates_annotation.py": (softmax, {"forbidden"}, "", lambda v: any(
            t in v["message"] for t in ("typing.get_type_hints", "a string in an annotation"))),
        # Methods named by strings in a torch.fx graph: the builtins.
        "fx_string_methods.py": (softmax, {"forbidden"}, "torch.fx", None),
        # getattr by name through functools.update_wrapper's `assigned`.
        "wraps_by_name.py": (softmax, {"forbidden"}, "functools.update_wrapper", None),
        # Attribute lookups by name in a match statement's class patterns.
        "match_class_attrs.py": (softmax, {"forbidden"}, "class pattern", None),
        # A second red team's reading the same day.
        "enum_convert.py": (softmax, {"forbidden"}, "_convert_", None),
        "reexported_torch.py": (softmax, {"forbidden"}, "torch.nn.functional.torch.fx", None),
        "pickle_by_dataloader.py": (softmax, {"forbidden"}, "python_multiprocessing", None),
        "global_enum_patch.py": (softmax, {"forbidden"}, "enum.global_enum", None),
        # Rules of that reading written as attacks afterwards (2026-12-07,
        # each judged correct with its rule taken out): numpy's unpickler,
        # a file read by path, a positional class pattern over dunder
        # strings; and a module from `from ... import` passed as a value.
        "pickle_by_numpy.py": (softmax, {"forbidden"}, "reaches np through torch.storage", None),
        "reads_file_by_path.py": (softmax, {"forbidden"}, "from_file", None),
        # Each refused by more than one rule, each alone (the first in the
        # tree's order names itself).
        "match_positional.py": (softmax, {"forbidden"}, "", lambda v: any(
            t in v["message"] for t in ("__match_args__", "class pattern", "defines __instancecheck__"))),
        "submodule_as_value.py": (softmax, {"forbidden"}, "", lambda v: any(
            t in v["message"] for t in ("uses the module torch.nn.functional as a value",
                                        "reaches torch through another object's attributes"))),
        # A third red team the same day: source run by dataclasses, a
        # function's parameter named self given torch.Tensor (its allclose
        # and equal replaced), torch reached through a module alias no file
        # of torch's names (torch.load's unpickler).
        "dataclass_field_exec.py": (softmax, {"forbidden"}, "imports dataclasses", None),
        "self_named_param.py": (softmax, {"forbidden"}, "a function that is no method of a class", None),
        "alias_module_load.py": (softmax, {"forbidden"}, "reaches torch through another object's attributes", None),
        # Its second reading, past the rules above: a method's self chosen
        # by enum's machinery, by a class laundered through a library or by
        # a decorator named torch that is not torch; private parts of a
        # parameter named self; string annotations evaluated by a library;
        # torch.ops through a module of torch's that imports it.
        "enum_missing_self.py": (softmax, {"forbidden"}, "in a class derived from enum.Enum", None),
        "class_by_type_before_param.py": (softmax, {"forbidden"}, "reads the method put, which changes its self", None),
        "fake_torch_no_grad.py": (softmax, {"forbidden"}, "a decorated method", None),
        "self_param_private_convert.py": (softmax, {"forbidden"}, "uses the attribute self._convert_", None),
        "self_param_forwardref_eval.py": (softmax, {"forbidden"}, "uses the attribute self._evaluate", None),
        "datapipe_argument_validation.py": (softmax, {"forbidden"}, "argument_validation", None),
        "ops_by_star_import.py": (softmax, {"forbidden"}, "uses the attribute ops", None),
        # Its third reading: enum calling a mixin's _missing_ with a foreign
        # self; Python run by torch.utils' tooling (a pickle, exec, a shell:
        # the sandbox refuses the shell's process first) and by setuptools'
        # entry points, under cpp_extension.
        "enum_mixin_missing.py": (softmax, {"forbidden"}, "derives Patch from Patcher", None),
        "exec_by_bottleneck_main.py": (softmax, {"forbidden"}, "imports from torch.utils.bottleneck.__main__", None),
        "import_by_entry_point.py": (softmax, {"forbidden"}, "reaches the module setuptools", None),
        "pickle_by_datapipe_decoder.py": (softmax, {"forbidden"}, "uses torch.utils.data", None),
        "shell_by_collect_env.py": (softmax, {"forbidden"}, "uses torch.utils.collect_env", None),
        "autotunes.py": (softmax, {"forbidden"}, "autotune", None),
        "modifies_parameters.py": (sbr, {"wrong_answer"}, "modified its parameters", None),
        "dynamic_load_inline.py": (softmax, {"compile_error"}, "must be constants", None),
        # A shell run by g++'s -wrapper flag read kevo's API key from its
        # ancestors' environments into the build log: flags are allow-listed.
        "build_wrapper.py": (softmax, {"compile_error"}, "may not pass", None),
        # builtins under another name (enum imports it as bltns): the second
        # red team's pure-Python escape, correct at 68x before.
        "builtins_by_another_name.py": (softmax, {"forbidden"}, "reaches the module builtins", None),
    }
    # Native attacks: one load_inline extension (built once, then from the
    # object cache) whose functions each try one thing a Python candidate
    # cannot; the candidate's forward calls one of them.
    native = {
        # The control of the no-gain check below: the same softmax, honestly.
        "honest": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
        "change_numerics": ({"forbidden"}, "float32_matmul_precision"),
        # The judge's host code changed from inside (the red team's escapes):
        # the judge checks the outputs a host reports against the
        # reference's and lays them out itself, and subtracts from a
        # candidate's calls no more null round trip than the reference's.
        "forge_store": ({"wrong_answer"}, "output(s)"),
        "null_inflate": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
        # Loads the GPU (or, on the CPU, a core) when it answers its own null
        # calls, so that the reference's calibration runs under load: the
        # hosts are stopped in turn, the GPU drained, the least calibration
        # taken. A thread it left may end it as a violation on the CPU.
        "null_load": ({"correct", "runtime_error"}, "", lambda v: v["speedup"] < 5.0),
        # Queues its work before its inputs are written (GPU; 1.21x against
        # the honest 0.51x through the load step of an earlier judge): the
        # judge waits for an idle GPU
        # before writing the inputs, and writes them masked (the key comes
        # with the call), so what it made before the call is another
        # call's softmax (or, done once the call has unmasked them, its work
        # is in the call).
        "bind_work": ({"wrong_answer", "correct"}, "", fast),
        # The red team's form: a wait for the judge's poison, written right
        # after the inputs, then the softmax: it sees only the mask (or the
        # GPU stays busy until the judge's timeout).
        "bind_poll": ({"wrong_answer", "timeout"}, ""),
        # The same wait, then a 2 ms spin in the turn that follows, the
        # reference's when it goes first: the judge waits for an idle GPU
        # after writing the inputs and charges the wait.
        "slow_reference": ({"correct", "timeout"}, "", fast),
        # Unmasks its inputs out of place, the judge's left masked (GPU):
        # every call's inputs are checked after it.
        "unmask_elsewhere": ({"wrong_answer"}, "its input"),
        # Unmasks in place without the host's synchronize after it (GPU):
        # right, and a little faster than the honest host by what the
        # reference's calls wait for the unmask (no_gain bounds it; its
        # speedup against native_honest's is the figure to read).
        "lean_unmask": ({"correct"}, "", fast),
        # Answers "u" at once and unmasks in its forward (GPU): each call's
        # unmask step counts as no less than the reference's median.
        "late_unmask": ({"correct"}, "", fast),
        # Its bind does no GPU work (its allocator unpoisoned): the waits
        # for an idle GPU are charged by their medians, never credited.
        "skip_bind_poison": ({"correct"}, "", fast),
        # Works in the prime before a timed call (GPU): the inputs are still
        # masked there (0.62x charged from the prime's excess before).
        "prime_fused": ({"wrong_answer"}, "timed call"),
        # Writes its outputs into the judge's memory and skips its copy
        # (GPU): it saves one copy of its outputs at most.
        "arena_output": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
        # Replies before its kernels are done (GPU): the judge reads the
        # outputs in its memory after the drain (half-written: wrong), and
        # each step's wait for an idle GPU is added to it.
        "early_reply": ({"correct", "wrong_answer"}, "", lambda v: v["status"] != "correct" or v["speedup"] < 3.0),
        "reply_not_an_object": ({"runtime_error"}, "not an object"),
        # Writes the answer to its next call ahead (the GPU red team: its
        # next call measured at nothing): a host that wrote before a
        # message is a protocol breach.
        "answer_ahead": ({"runtime_error"}, "wrote before"),
        "prime_answer": ({"runtime_error"}, "wrote before"),
        # Computes only when its outputs are copied for the judge (untimed
        # before: 70x): the copy is part of every call's time.
        "lazy_store": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
        # Writes into the input file the reference loads from too: every
        # host gets it read-only.
        "write_inputs": ({"runtime_error"}, "read-only here"),
        # Reads the judgement's secret (the timed inputs' key) from the
        # judge's memory that its host was forked with: drawn after the fork.
        "judge_secret": ({"runtime_error"}, "no judgement secret"),
        # Looks for the hidden shapes in its process (the judge's request,
        # which the host was forked with): the host is forked before its
        # judge reads the request.
        "read_request": ({"runtime_error"}, "no hidden shape in this process"),
        # The sizes of the judge's files in its process, at its first
        # call, in its exception: judged again below on a task with a
        # larger hidden shape, and the two feedbacks must be the same.
        "judge_file_sizes": ({"runtime_error"}, "judge files:"),
        # The fourth red team: replies of the wrong kind crashed the judge
        # into internal_error; a candidate that saw which timed call the
        # judge had read skipped the rest (11.37x).
        "state_not_text": ({"runtime_error"}, "protocol breach"),
        "flags_not_text": ({"runtime_error"}, "protocol breach"),
        # Names the shapes it ran at as the flags it changed (its state
        # reply): only torch's flags are names a host may report.
        "flags_spell": ({"runtime_error"}, "protocol breach"),
        "odd_violation": ({"runtime_error"}, ""),
        "skip_after_check": ({"correct", "wrong_answer", "runtime_error"}, "", lambda v: v["status"] != "correct" or
                             v["speedup"] < 3.0),
        # Replies of the host's that are not objects: protocol breaches, the
        # candidate's failure (internal_error before).
        "error_not_an_object": ({"runtime_error"}, "not an object"),
        "ready_not_an_object": ({"runtime_error"}, "not an object"),
        # Blames its own death on the reference (a forged violation line):
        # whose host died is the judge's knowledge.
        "blame_reference": ({"runtime_error"}, ""),
        # Work fused into the host's output copy (the same bytes read and
        # written as the copy, so no charge on an untimed copy saw it):
        # on the GPU the copy is part of every call's time; on the CPU there
        # is none (wrong_answer).
        "store_fused": ({"correct", "wrong_answer"}, "", fast),
        # Replies at once and works on in a thread of its own: the clock
        # runs until every thread of the host has stopped.
        "thread_after_reply": ({"correct", "wrong_answer", "runtime_error"}, "", lambda v: fast(v) and
                               (v["status"] != "correct" or v["speedup"] < 3.0)),
        # Takes the GPU's free memory into its allocator's cache (judged on
        # a softmax whose hidden shape is larger than the visible one, so
        # that the reference or the judge needs new memory there): the
        # judge ends its process and gives it memory_limit, not the
        # internal_error (kevo's fault) of the failed allocation.
        "fill_memory": ({"memory_limit"}, "held"),
        "kill_parent": ({"runtime_error"}, "sandbox violation"),
        "kill_all": ({"runtime_error"}, "sandbox violation"),
        "write_file": ({"runtime_error"}, "on '/tmp/kevo-torch-pwned'"),
        "open_socket": ({"runtime_error"}, "sandbox violation"),
        "fork_child": ({"runtime_error"}, "sandbox violation"),
        "ptrace_parent": ({"runtime_error"}, "sandbox violation"),
        # In a PID namespace of its own no other process has a number: the
        # calls fail (ESRCH) or the policy stops them.
        "prlimit_parent": ({"runtime_error"}, ""),
        "read_secrets": ({"runtime_error"}, "no secret"),
        # Looks through its root for a task manifest (hidden shapes): a
        # folder bound for the interpreter that held the source tree would
        # give them away.
        "find_task": ({"runtime_error"}, "no task manifest"),
        "exit_process": ({"runtime_error"}, "exited"),
        "segfault": ({"runtime_error"}, "SIGSEGV"),
        "hang": ({"timeout"}, "did not return"),
        # Hangs while its module loads, having written set-up steps on the
        # judge's side pipe: still its own timeout.
        "forge_stage": ({"timeout"}, "last set-up step: load)"),
    }
    if device == "cpu":
        # On the CPU a host binds its inputs (views of the judge's file) and
        # the judge reads its outputs from its memory: the attacks on the
        # load and store steps find none, and the description of the
        # outputs is what a forged host reply can touch.
        native.update({
            "prime_answer": ({"correct"}, "", lambda v: v["speedup"] < 5.0),   # no prime on the CPU
            # No prime, no masks, no device memory of the judge's on the
            # CPU: these compute honestly.
            "prime_fused": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "bind_work": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "bind_poll": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "slow_reference": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "fill_memory": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "unmask_elsewhere": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "lean_unmask": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "late_unmask": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "skip_bind_poison": ({"correct"}, "", lambda v: v["speedup"] < 5.0),
            "forge_store": ({"wrong_answer"}, "shares memory with input"),
            "lazy_store": ({"wrong_answer"}, "differs from the reference"),
            "describe_elsewhere": ({"runtime_error"}, "memory that the candidate's process does not have"),
        })
    if device == "cpu":
        native["huge_address"] = ({"runtime_error"}, "protocol breach")
        native["huge_bind"] = ({"runtime_error"}, "protocol breach")
    at_load = {"forge_stage", "ready_not_an_object", "flags_not_text"}   # called by the module's top level, not by forward
    with open(os.path.join(src, "tests", "torch", "native_attacks.cpp"), encoding="utf-8") as f:
        cpp = f.read()
    # Judged apart, in this order (below): state left for the next candidate.
    in_order = ["leave_state", "find_state"]
    for name in list(native) + in_order:
        body = ('import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n'
                'CPP = %s\n\next = load_inline(name="kevo_native_attacks", cpp_sources=[CPP], functions=%s)\n%s\n\n'
                'class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n'
                '    def forward(self, x):\n        return ext.%s(x)\n'
                % (json.dumps(cpp), json.dumps(sorted(list(native) + in_order)),
                   "ext.%s(torch.zeros(1))\n" % name if name in at_load else "", name))
        with open(os.path.join(work, "native_%s.py" % name), "w", encoding="utf-8") as f:
            f.write(body)
    # A file of the user's that holds the fake key, and a candidate whose
    # C++ source includes it: the compiler printed its first line in the
    # compile log (the feedback, the next prompt, the lineage) before the
    # build's reads were confined.
    notes = os.path.join(work, "notes")
    os.makedirs(notes)
    with open(os.path.join(notes, "api-key.txt"), "w", encoding="utf-8") as f:
        f.write(SECRET + "\n")
    with open(os.path.join(work, "include_secret.py"), "w", encoding="utf-8") as f:
        f.write('import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n'
                'CPP = %s\next = load_inline(name="kevo_include_secret", cpp_sources=[CPP], functions=["f"])\n\n\n'
                'class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n'
                '    def forward(self, x):\n        return ext.f(x)\n'
                % json.dumps('#include "%s"\ntorch::Tensor f(torch::Tensor x) { return x; }\n'
                             % os.path.join(notes, "api-key.txt")))
    # Attacks that do the honest work somewhere the judge might not time
    # (GPU): judged correct, each must be no faster than the same softmax
    # from the same extension called honestly (native_honest) in the same
    # batch by more than the noise between two judgements (half again, and
    # 0.05): on the H200, work in the load and the store steps of an
    # earlier judge was 2.5x and 2.2x the honest softmax, under the loose
    # 5x bound above. Not on the CPU, where those steps do not exist and two
    # judgements on a loaded 2-core machine differ by more.
    no_gain = {"native_%s.py" % n for n in ("arena_output", "store_fused", "lazy_store", "slow_reference", "bind_work",
                                              "skip_bind_poison", "lean_unmask", "late_unmask",
                                              "null_inflate", "null_load", "early_reply", "thread_after_reply")}
    if device == "cpu":
        no_gain = set()
    failures = []
    results = []
    def softmax_variant(name, edit):
        """A copy of the softmax task in the work folder, its manifest
        changed by `edit(spec)`: the copy's folder."""
        path = os.path.join(work, name)
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(softmax, path)
        with open(os.path.join(path, "task.json"), encoding="utf-8") as f:
            spec = json.load(f)
        spec["name"] = name
        edit(spec)
        with open(os.path.join(path, "task.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f, indent=2)
        return path

    def show(name, v, note=None):
        """One judged candidate in the output and the results."""
        if v:
            results.append((name, v["status"], v.get("speedup", 0.0), note or v["message"][:110]))
            print("%-34s %-14s %6.2fx  %s" % results[-1], flush=True)

    # The softmax with a hidden shape larger than the visible one (the
    # reference and the judge need new device memory there: fill_memory).
    grown = softmax_variant("torch_softmax_grown", lambda spec: spec["shapes"]["hidden"].append({"rows": 4096,
                                                                                                 "cols": 4096}))
    task_of = {"fill_memory": grown}
    todo = [(n, os.path.join(adv, n)) + cases[n] for n in cases] + \
        [("include_secret.py", os.path.join(work, "include_secret.py"), softmax, {"compile_error"}, "", None)] + \
        [("native_%s.py" % n, os.path.join(work, "native_%s.py" % n), task_of.get(n, softmax)) + native[n] +
         ((None,) if len(native[n]) == 2 else ()) for n in native]
    todo = [t for t in todo if not only or t[0] in only or t[0].replace(".py", "") in only or
            (t[0] == "native_honest.py" and any(n in no_gain or n + ".py" in no_gain for n in only))]
    by_task = {}
    for t in todo:
        by_task.setdefault(t[2], []).append(t)
    for task, items in sorted(by_task.items()):
        t0 = time.monotonic()
        try:
            verdicts = judge(task, [t[1] for t in items], wall=40)
        except Exception as e:
            failures.append("%s: %s" % (os.path.basename(task), e))
            continue
        print("%d candidates of %s judged in %.1f s" % (len(items), os.path.basename(task), time.monotonic() - t0))
        for name, path, _, allowed, text, extra in items:
            v = verdicts.get(path)
            if v is None:
                failures.append("%s: no verdict" % name)
                continue
            ok = v["status"] in allowed and (not text or text in v["message"] + "\n" + v["feedback"]) and \
                "got through" not in v["message"] + v["feedback"]
            if ok and extra is not None:
                ok = extra(v)
            show(name, v)
            if not ok:
                failures.append("%s: got %s (%s), expected %s%s" % (name, v["status"], v["message"][:300],
                                                                  sorted(allowed), " with '%s'" % text if text else ""))
        honest = verdicts.get(os.path.join(work, "native_honest.py"))
        for name, path, _, _, _, _ in items:
            v = verdicts.get(path)
            if honest and v and name in no_gain and v["status"] == "correct" and honest["status"] == "correct" and \
                    v["speedup"] > 1.5 * honest["speedup"] + 0.05:
                failures.append("%s: %.2fx, against the honest candidate's %.2fx in the same batch (work the "
                                "judge did not time)" % (name, v["speedup"], honest["speedup"]))
    # What the candidate's process holds of the judge's files at its first
    # call (their sizes) says nothing of the hidden shapes: the same attack
    # on the softmax (hidden shapes no larger than the visible one) and on
    # the copy with a 4096x4096 hidden shape fails with the same feedback.
    # The native judge's arena told such a shape by its size (the CPU red
    # team's arena_size_echo).
    if not only or "judge_file_sizes" in only or "native_judge_file_sizes" in only:
        jf = os.path.join(work, "native_judge_file_sizes.py")
        small, large = judge(softmax, [jf])[jf], judge(grown, [jf])[jf]
        show("judge_file_sizes (larger hidden)", large)
        if "judge files:" not in small["feedback"] or small["feedback"] != large["feedback"]:
            failures.append("native_judge_file_sizes.py: the feedback changed with the hidden shapes:\n%s\n---\n%s"
                            % (small["feedback"][:600], large["feedback"][:600]))
    # Times as a channel: time_channel.py spins in every call once it has
    # seen an input larger than any visible or drawn one (only the grown
    # copy's hidden 4096x4096 is). The hidden shapes ran before the timing,
    # so its timed median on the grown copy told the large hidden shape; the
    # timing now comes before them, and the two medians agree.
    if not only or "time_channel" in only or "time_channel.py" in only:
        tc = os.path.join(adv, "time_channel.py")
        small, large = judge(softmax, [tc])[tc], judge(grown, [tc])[tc]
        show("time_channel (softmax)", small)
        show("time_channel (larger hidden)", large)
        if small["status"] != "correct" or large["status"] != "correct":
            failures.append("time_channel.py: not judged correct (%s, %s)" % (small["message"][:200],
                                                                             large["message"][:200]))
        else:
            ratio = large["cand_median_ns"] / small["cand_median_ns"]
            print("time_channel.py: median %.2f ms with the softmax's hidden shapes, %.2f ms with a 4096x4096 one "
                  "(ratio %.2f)" % (small["cand_median_ns"] / 1e6, large["cand_median_ns"] / 1e6, ratio), flush=True)
            if ratio > 1.6:
                failures.append("time_channel.py: its timed median tells the hidden shape (%.2fx longer with the "
                                "4096x4096 hidden shape)" % ratio)
    # The inputs come from seeds keyed by a secret of each judgement: the
    # same candidate judged twice with the same --seed sees other values
    # (a candidate that knew the seed rebuilt every timed input and
    # precomputed the outputs: 36.6x). partial_write's first wrong element
    # quotes the expected value.
    if not only or "partial_write" in only or "partial_write.py" in only:
        pw = os.path.join(adv, "partial_write.py")
        first, second = judge(softmax, [pw])[pw], judge(softmax, [pw])[pw]
        if first["status"] != "wrong_answer" or first["message"] == second["message"]:
            failures.append("partial_write.py judged twice with one seed: the same inputs (%s | %s)"
                            % (first["message"][:160], second["message"][:160]))
    # The timing loop's length: a candidate slow only in its warm-up calls
    # (untimed, unchecked) cut its loop to min_repeats pairs; the loop now
    # follows the timed pairs too. Judged beside the honest softmax, with a
    # budget that fits many more pairs than min_repeats.
    if not only or any(n in only or n + ".py" in only for n in ("steers_warmup", "steers_then_reference_op",
                                                                "steers_then_skimps", "counts_then_reference_op")):
        hp, sp = os.path.join(adv, "honest.py"), os.path.join(adv, "steers_warmup.py")
        op = os.path.join(adv, "steers_then_reference_op.py")
        sk = os.path.join(adv, "steers_then_skimps.py")
        # counts_then_reference_op.py three times (each copy a judgement of
        # its own, a comment apart): one recorded call in the loop caught it
        # less than half the time, so the three were all caught about one
        # time in fifteen; the recorded call in each stretch of six pairs
        # catches each.
        with open(os.path.join(adv, "counts_then_reference_op.py")) as f:
            counts_source = f.read()
        counts = []
        for i in range(3):
            counts.append(os.path.join(work, "counts_then_reference_op_%d.py" % i))
            with open(counts[-1], "w") as f:
                f.write("# copy %d\n%s" % (i, counts_source))
        # Never timed again (max_ci_fraction 0): a second timing makes
        # fresh models, whose calls a candidate counts from one again. At
        # most 20 pairs: a steered loop is lengthened from 5 pairs to 20
        # (steers_then_skimps.py counts on it).
        got = judge(softmax, [hp, sp, op, sk] + counts, sets=["timing.budget_seconds=1.0", "timing.max_ci_fraction=0",
                                                             "timing.max_repeats=20"])
        h, st, ro, ski = got.get(hp), got.get(sp), got.get(op), got.get(sk)
        for c in counts:
            v = got.get(c)
            show(os.path.basename(c), v, v and "%d timed pairs" % v.get("repeats", 0))
            if not v or v["status"] != "forbidden" or "aten::_softmax" not in v["message"]:
                failures.append("%s: expected forbidden (aten::_softmax), got %s"
                                % (os.path.basename(c), str(v and (v["status"], v.get("repeats"), v["message"][:200]))))
        # The lengthened part of the loop has a full check of its own.
        if not ski or ski["status"] != "wrong_answer" or "timed call" not in ski["message"]:
            failures.append("steers_then_skimps.py: expected wrong_answer in a timed call, got %s"
                            % str(ski and (ski["status"], ski.get("repeats"), ski["message"][:200])))
        # The lengthened part of the loop has a recorded call of its own.
        if not ro or ro["status"] != "forbidden" or "aten::_softmax" not in ro["message"]:
            failures.append("steers_then_reference_op.py: expected forbidden (aten::_softmax), got %s"
                            % str(ro and (ro["status"], ro.get("repeats"), ro["message"][:200])))
        for name, v in (("honest.py (budget 1 s)", h), ("steers_warmup.py (budget 1 s)", st),
                        ("steers_then_reference_op.py", ro), ("steers_then_skimps.py", ski)):
            show(name, v, v and "%d timed pairs" % v.get("repeats", 0))
        if not h or not st or h["status"] != "correct" or st["status"] != "correct" or \
                st.get("repeats", 0) * 2 < h.get("repeats", 0) or st.get("speedup", 0.0) > 5.0:
            failures.append("steers_warmup.py: expected correct with at least half the honest softmax's timed pairs, "
                            "got %s against %s" % (st and (st["status"], st.get("repeats"), st["message"][:200]),
                                                   h and (h["status"], h.get("repeats"))))
    # The CPU's spot checks (every timed pair not compared in full): zeros
    # where the reference's values all lie below atol passed each element's
    # tolerance. On a softmax with the float32 tolerance of KernelBench
    # imports (atol 1e-3), one timed call answered with zeros.
    if not only or "zeros_below_atol" in only or "zeros_below_atol.py" in only:
        loose = softmax_variant("torch_softmax_loose",
                                lambda spec: spec.update(tolerance={"atol": 1e-3, "rtol": 1e-3, "rel_l2": 1e-4}))
        hp, zp = os.path.join(adv, "honest.py"), os.path.join(adv, "zeros_below_atol.py")
        got = judge(loose, [hp, zp], sets=["timing.budget_seconds=1.0", "timing.max_ci_fraction=0",
                                           "timing.max_repeats=20"])
        h, z = got.get(hp), got.get(zp)
        for name, v in (("honest.py (atol 1e-3)", h), ("zeros_below_atol.py", z)):
            show(name, v)
        if not h or h["status"] != "correct":
            failures.append("honest.py on the softmax with atol 1e-3: %s" % str(h and (h["status"], h["message"][:200])))
        if not z or z["status"] != "wrong_answer" or "timed call" not in z["message"]:
            failures.append("zeros_below_atol.py: expected wrong_answer in a timed call, got %s"
                            % str(z and (z["status"], z["message"][:200])))
    # State left for the next candidate through the judge's zygote, which
    # a crash does not replace (run.restart_on "breach"): leave_state marks
    # every shared mapping it may write and raises (a crash, so the zygote
    # is kept); find_state, judged next by the same zygote (one build at a
    # time keeps the order), finds no mark and computes honestly.
    if not only or any(x in only for n in in_order for x in (n, "native_" + n, "native_%s.py" % n)):
        paths = [os.path.join(work, "native_%s.py" % n) for n in in_order]
        got = judge(softmax, paths, sets=["build.jobs=1"])
        left, found = got.get(paths[0]), got.get(paths[1])
        for name, v in zip(in_order, (left, found)):
            show(name, v)
        if not left or left["status"] != "runtime_error" or "leave_state marked" not in left["message"]:
            failures.append("native_leave_state.py: expected its own runtime_error (a crash, the zygote kept), got %s"
                            % (left and (left["status"], left["message"][:300])))
        if not found or found["status"] != "correct":
            failures.append("native_find_state.py: expected correct (no mark of the candidate before), got %s"
                            % (found and (found["status"], found["message"][:300])))
    # GPU: the judge forked ahead sets itself up (CUDA contexts) while the
    # previous judgement runs. fill_memory takes the GPU's free memory in
    # its judgement; the honest candidate judged next by the same zygote
    # (in order: one build at a time) must still be judged correct, not fail
    # for want of memory in a host set up beside fill_memory.
    if device != "cpu" and (not only or "native_fill_memory" in only or "fill_memory" in only):
        paths = [os.path.join(work, "native_fill_memory.py"), os.path.join(work, "native_honest.py")]
        got = judge(grown, paths, wall=40, sets=["build.jobs=1"])
        filled, after = got.get(paths[0]), got.get(paths[1])
        for name, v in (("fill_memory, then", filled), ("honest, next", after)):
            show(name, v)
        if not filled or filled["status"] != "memory_limit":
            failures.append("native_fill_memory.py (then honest): expected memory_limit, got %s"
                            % (filled and (filled["status"], filled["message"][:300])))
        if not after or after["status"] != "correct":
            failures.append("native_honest.py after native_fill_memory.py in one evaluator: expected correct, got %s"
                            % (after and (after["status"], after["message"][:300])))
    # After every attack, the honest candidate still judged correct.
    v = judge(softmax, [os.path.join(adv, "honest.py")])[os.path.join(adv, "honest.py")]
    if v["status"] != "correct":
        failures.append("honest.py after the attacks: %s (%s)" % (v["status"], v["message"]))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("%d adversarial candidates, each judged as expected; no secret in any output" % len(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
