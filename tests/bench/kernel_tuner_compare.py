#!/usr/bin/env python3
"""kevo's parameter evolution against Kernel Tuner's search strategies, on the
same measured tables (docs/benchmarks.md#against-kernel-tuner).

  kernel_tuner_compare.py [TABLE] [--seeds 100] [--strategies a,b,...] [--jobs N]

TABLE (default build-bench/search-table.json, from scripts/bench_search.sh)
holds {"task": {"POINT_KEY": seconds}}; its sidecar TABLE.meta.json lists
the incorrect points. For every task, this script

1. writes a Kernel Tuner cache file holding every point of the table (time in
   ms; a point the sidecar calls incorrect as a RuntimeFailedConfig) and
   gives Kernel Tuner the task's own restrictions, checked to select exactly
   the table's points (else a restriction that does), so Kernel Tuner never
   proposes a point the table lacks;
2. runs each strategy in simulation mode (tune_kernel(simulation_mode=True,
   cache=...)) once per seed, with max_fevals = the number of valid points
   and the strategy's default options otherwise. Seeding: Python's `random`
   and numpy's global state get the seed; scipy's LatinHypercube (bayes_opt's
   initial sample, diff_evo's population), which seeds itself from fresh
   entropy, gets a generator drawn from numpy's seeded state; the hash seed
   and BLAS threads are fixed, so a seed gives the same run every time.
   bayes_opt's default method decides from the wall clock whether to refit
   its model (when evaluations take longer than 5 x a prediction); its clock
   is given the time a real evaluation of the task took while the table was
   measured, so it refits as it would live (--bo-wall-clock: leave it);
3. counts, in the order Kernel Tuner evaluated them, the distinct
   configurations up to and including the first whose time is <= (1 +
   tolerance) x the table's best. Invalid configurations (restrictions) never
   reach the runner and repeats are not counted: the same rule as kevo's
   (judged candidates in commit order, the seed point included, duplicates
   excluded). A run that ends (budget, the strategy's own stopping rule, or
   an exception inside Kernel Tuner) without a qualifying point counts as
   n + 1, as bench_search counts kevo's censored runs; two kinder variants
   are printed as well: such runs finished by random search over the points
   they had not evaluated, and a batch-neutral count (a batch of
   configurations handed to the runner at once, a population say, taken in
   random order rather than Kernel Tuner's);
4. runs build-bench/bin/bench_search --table TABLE --seeds S --json ... for
   kevo's counts on the same table and seeds (or reads them with
   --kevo-json), and prints both side by side, with strategy / kevo per task,
   its geometric mean over tasks per strategy, and per task whether kevo
   needs fewer evaluations than every strategy.

A strategy run stops as soon as it has evaluated a qualifying point (its
budget is closed at that moment); everything it did before is unchanged, so
the count is the one a full run would give (--full-runs checks that).

Exit codes: 0 it ran (whoever wins), 2 bad input, 1 failure.
"""
import argparse
import contextlib
import io
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

# Some strategies iterate over sets; with a fixed hash seed every run (and
# every worker) orders them alike, so a seed gives the same run each time.
# One BLAS thread: bit-identical model fits (bayes_opt's Gaussian process),
# and no more load on a shared machine than one core per worker.
_ENV = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
if any(os.environ.get(k) != v for k, v in _ENV.items()):
    os.environ.update(_ENV)
    os.execv(sys.executable, [sys.executable] + sys.argv)

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Kernel Tuner 1.5.0's single-objective strategies that run in simulation mode
# with what `pip install kernel_tuner==1.5.0` brings. Left out: brute_force
# (exhaustive), skopt (needs scikit-optimize), pyatf_strategies (needs pyATF),
# nsga2/nsga3 (multi-objective).
DEFAULT_STRATEGIES = [
    "random_sample", "genetic_algorithm", "simulated_annealing", "bayes_opt",
    "pso", "firefly_algorithm", "diff_evo", "greedy_ils", "greedy_mls", "mls",
    "ordered_greedy_mls", "basinhopping", "dual_annealing", "minimize",
    "hybrid_vndx", "adaptive_tabu_greywolf",
]


class BadInput(Exception):
    pass


# ----------------------------------------------------------------------------
# Input: the table and the tasks.

def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise BadInput(f"{what} {path}: {e.strerror}")
    except ValueError as e:
        raise BadInput(f"{what} {path}: not JSON ({e})")


def find_tasks(tasks_dir):
    """Task name -> task.json document, for every task under tasks_dir."""
    found = {}
    if os.path.isfile(os.path.join(tasks_dir, "task.json")):
        dirs = [tasks_dir]
    elif os.path.isdir(tasks_dir):
        dirs = [os.path.join(tasks_dir, d) for d in sorted(os.listdir(tasks_dir))]
    else:
        raise BadInput(f"--tasks {tasks_dir}: no such directory")
    for d in dirs:
        p = os.path.join(d, "task.json")
        if os.path.isfile(p):
            doc = load_json(p, "task")
            found[doc.get("name", os.path.basename(d))] = doc
    return found


def value_text(v):
    """A value as kevo's point keys print it (Value::to_string in engine/core/src/expr.cpp)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        for prec in range(1, 18):   # the shortest %g text that reads back to the same double
            text = "%.*g" % (prec, v)
            if float(text) == v:
                return text
    return str(v)


class TaskSpace:
    """One task's parameters (in kevo's order) and its table, by Kernel Tuner key."""

    def __init__(self, name, task_doc, seconds, incorrect, tolerance):
        ss = task_doc.get("search_space")
        if not isinstance(ss, dict) or not ss.get("params"):
            raise BadInput(f"task {name}: no search_space")
        self.name = name
        self.tune_params = {}
        for p in ss["params"]:
            self.tune_params[p["name"]] = list(p["values"])
        self.names = list(self.tune_params)
        self.restrictions = list(ss.get("restrictions", []))
        lookup = {n: {value_text(v): v for v in vals} for n, vals in self.tune_params.items()}

        def parse(key):
            parts = key.split(",")
            if len(parts) != len(self.names):
                raise BadInput(f"table: {name}: key {key!r} does not name {len(self.names)} parameters")
            cfg = []
            for part, pname in zip(parts, self.names):
                k, sep, v = part.partition("=")
                if not sep or k != pname or v not in lookup[pname]:
                    raise BadInput(f"table: {name}: key {key!r}: {part!r} is not a value of {pname}")
                cfg.append(lookup[pname][v])
            return tuple(cfg)

        self.seconds = {}     # config tuple -> seconds (correct, timed points)
        for key, s in seconds.items():
            if not isinstance(s, (int, float)) or not s > 0:
                raise BadInput(f"table: {name}: {key}: time {s!r} is not a positive number")
            self.seconds[parse(key)] = float(s)
        self.incorrect = {parse(key) for key in incorrect}
        if not self.seconds:
            raise BadInput(f"table: {name}: no timed point")
        self.valid = set(self.seconds) | self.incorrect
        self.n = len(self.valid)          # kevo's space_size: its budget and its censored count - 1
        self.best = min(self.seconds.values())
        self.target = (1.0 + tolerance) * self.best
        self.qualifying = {c for c, s in self.seconds.items() if s <= self.target}

    @staticmethod
    def kt_key(cfg):
        return ",".join(str(v) for v in cfg)


def write_cache(space, path):
    """A Kernel Tuner cache file (kernel_tuner/util.py process_cache) with every point."""
    cache = {}
    for cfg in sorted(space.valid, key=TaskSpace.kt_key):
        entry = dict(zip(space.names, cfg))
        if cfg in space.seconds:
            ms = space.seconds[cfg] * 1e3
            entry.update({"time": ms, "times": [ms], "compile_time": 0.0, "verification_time": 0.0,
                          "benchmark_time": 0.0})
        else:
            entry.update({"time": "RuntimeFailedConfig", "compile_time": 0.0, "verification_time": 0.0,
                          "benchmark_time": 0.0})
        cache[TaskSpace.kt_key(cfg)] = entry
    doc = {"device_name": "kevo-table", "kernel_name": space.name, "tune_params_keys": space.names,
           "tune_params": space.tune_params, "objective": "time", "cache": cache}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=0)
    os.replace(tmp, path)


def kt_restrictions(space):
    """The task's restrictions when Kernel Tuner's search space built from
    them is exactly the table's points; else a restriction that is."""
    from kernel_tuner.searchspace import Searchspace
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ss = Searchspace(space.tune_params, list(space.restrictions), 1_000_000_000)
        if set(map(tuple, ss.list)) == space.valid:
            return list(space.restrictions), "the task's restrictions"
    except Exception:   # a restriction Kernel Tuner cannot parse: use the table instead
        pass
    valid = frozenset(space.valid)
    names = space.names

    # A plain function, not a lambda: Kernel Tuner rewrites lambdas from their
    # source text, which loses the closure. python-constraint calls it with
    # the values in parameter order, Kernel Tuner's own checks by name.
    def in_table(*values, **by_name):
        return (tuple(by_name[k] for k in names) if by_name else tuple(values)) in valid

    return [in_table], "membership in the table"


# ----------------------------------------------------------------------------
# Kernel Tuner runs.

_state = {}   # per process: patched runner, task spaces


def _setup_kernel_tuner():
    if _state.get("ready"):
        return
    import numpy as np
    import scipy.stats.qmc as qmc

    # Latin hypercube samples (bayes_opt's initial sample, diff_evo's initial
    # population through Searchspace.get_LHS_sample): scipy seeds
    # LatinHypercube from fresh entropy when given no generator. Give it one
    # drawn from numpy's (seeded) global state, so that a seed fixes the run.
    class SeededLatinHypercube(qmc.LatinHypercube):
        def __init__(self, *args, **kwargs):
            if kwargs.get("rng") is None and kwargs.get("seed") is None:
                kwargs.pop("seed", None)
                kwargs["rng"] = np.random.default_rng(np.random.randint(0, 2**31 - 1))
            super().__init__(*args, **kwargs)

    qmc.LatinHypercube = SeededLatinHypercube
    import kernel_tuner.runners.simulation as sim
    import kernel_tuner.strategies.bayes_opt as bo
    bo.LatinHypercube = SeededLatinHypercube   # imported by name before the patch, if it was

    # bayes_opt's default method (multi-ultrafast) refits its model only when
    # the last evaluations took longer (wall clock) than 5 x the last
    # prediction, else every 5th round. Replayed evaluations take microseconds,
    # so in simulation it would refit rarely, and when depends on the
    # machine's load. Its clock gets, on top of the real time, the time a
    # real evaluation of the task takes (the table's measuring time per
    # judged point), so it decides as it would in a live run (--bo-wall-clock:
    # leave it alone).
    if not _state.get("bo_wall_clock"):
        import time as real_time

        class SimulatedClock:
            def __getattr__(self, name):
                return getattr(real_time, name)

            @staticmethod
            def perf_counter():
                return real_time.perf_counter() + _state["sim_clock"]

            @staticmethod
            def perf_counter_ns():
                return real_time.perf_counter_ns() + int(_state["sim_clock"] * 1e9)

        bo.time = SimulatedClock()

    # Close the budget once a qualifying point has been evaluated: the
    # strategy's own CostFunc then stops it. What it did up to the hit is
    # untouched, so the count is that of a full run.
    original_run = sim.SimulationRunner.run

    def run(self, parameter_space, tuning_options):
        results = original_run(self, parameter_space, tuning_options)
        _state["batch"] += 1   # one call: one batch (a population, a sample) the strategy asked for at once
        _state["log"].extend((_state["batch"], r) for r in results if r)
        _state["sim_clock"] += _state["eval_seconds"] * (len(self.visited_results) - _state["visited"])
        _state["visited"] = len(self.visited_results)
        stop_on = _state.get("stop_on")   # the qualifying configurations, or None for a full run
        if stop_on is not None:
            names = _state["names"]
            if any(r and tuple(r[k] for k in names) in stop_on for r in results):
                b = tuning_options.budget
                b.max_fevals = b.num_fevals
        return results

    sim.SimulationRunner.run = run
    _state["ready"] = True


def run_strategy(job):
    """One (task, strategy, seed) run: (count or None, batch-neutral count or None, distinct
    evaluated, seconds, notes, crashed)."""
    import numpy as np
    from kernel_tuner import tune_kernel
    from kernel_tuner.util import StopCriterionReached

    _setup_kernel_tuner()
    space, cache, restrictions = _state["tasks"][job["task"]]
    seed = job["seed"]
    random.seed(seed)
    np.random.seed(seed)
    _state["stop_on"] = None if job["full"] else space.qualifying
    _state["names"] = space.names
    _state["log"] = []   # (batch, result) for every result the runner returned, in order (repeats included)
    _state["batch"] = 0
    _state["sim_clock"], _state["visited"], _state["eval_seconds"] = 0.0, 0, space.eval_seconds
    crashed = None
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        try:
            tune_kernel(
                space.name, "/* replayed from a kevo table */", (1,), [], space.tune_params,
                restrictions=restrictions, lang="C", strategy=job["strategy"],
                strategy_options={"max_fevals": space.n}, cache=cache, simulation_mode=True,
                quiet=True, verbose=False)
        except StopCriterionReached:
            # The budget ran out (or the early stop closed it) where the
            # strategy does not catch it (greedy_ils's first evaluation): a
            # normal end for the count.
            pass
        except Exception as e:   # noqa: BLE001 - the strategy's own failure is a result, not ours
            crashed = f"{type(e).__name__}: {e}"
    seconds = time.perf_counter() - t0
    if crashed and not _state["log"]:
        # Nothing evaluated: more likely this script's setup than the strategy.
        raise RuntimeError(f"{job['strategy']} on {space.name}, seed {seed}: raised before any evaluation: {crashed}")
    # As run: distinct configurations in the order Kernel Tuner evaluated
    # them, up to and including the first qualifying one. Batch-neutral: a
    # strategy that hands the runner a batch uses no result of it before the
    # whole batch is in, so the order within a batch is incidental (diff_evo's
    # LHS population comes in searchspace-index order, through a set): the
    # expected count were that order random, (k + 1) / (q + 1) into the batch
    # holding the first qualifying point, with k new points, q of them qualifying.
    seen = set()
    count = neutral = None
    batch, new = None, []
    for b, r in _state["log"] + [(None, None)]:
        if b != batch:
            q = sum(c in space.qualifying for c in new)
            if q and neutral is None:
                neutral = len(seen) - len(new) + (len(new) + 1) / (q + 1)
            batch, new = b, []
        if r is None:
            break
        cfg = tuple(r[k] for k in space.names)
        if cfg not in space.valid:
            raise RuntimeError(f"{job['strategy']} on {space.name}: evaluated {cfg}, which the table lacks")
        if cfg in seen:
            continue
        seen.add(cfg)
        new.append(cfg)
        if count is None and cfg in space.qualifying:
            count = len(seen)
    notes = {f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught}
    # Not about the search: the CPU tables have no CUDA thread-block
    # parameters, and with the early stop bayes_opt can meet the target (and
    # so the closed budget) within its initial sample.
    notes = sorted(x for x in notes if "thread block dimensions" not in x
                   and not (not job["full"] and "Stop criterion reached during initialization" in x))
    if crashed:
        notes.append("raised " + crashed[:200])
    return count, neutral, len(seen), seconds, notes, crashed is not None


def _init_worker(tasks, bo_wall_clock):
    _state["tasks"] = tasks
    _state["bo_wall_clock"] = bo_wall_clock


# ----------------------------------------------------------------------------
# kevo's side.

def run_kevo(args, table):
    if args.kevo_json:
        return load_json(args.kevo_json, "--kevo-json")
    bench = os.path.abspath(args.bench or os.path.join(REPO, "build-bench", "bin", "bench_search"))
    if not os.access(bench, os.X_OK):
        raise BadInput(f"{bench}: not built (scripts/bench_search.sh builds it)")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "kevo.json")
        cmd = [bench, "--table", os.path.abspath(table), "--seeds", str(args.seeds), "--first-seed",
               str(args.first_seed), "--tolerance", repr(args.tolerance), "--loose", "0", "--json", out]
        for t in args.task or []:
            cmd += ["--task", t]
        shown = ["<temporary file>" if c == out else os.path.relpath(c, REPO) if c.startswith(REPO) else c
                 for c in cmd]
        print("kevo: " + " ".join(shown), flush=True)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stdout)
            raise RuntimeError(f"bench_search exited with {p.returncode}")
        if "measuring" in p.stdout:
            print("kevo: note: bench_search measured (part of) the table first")
        print(f"kevo: {time.perf_counter() - t0:.0f} s", flush=True)
        return load_json(out, "bench_search --json")


# ----------------------------------------------------------------------------
# Statistics and output.

def mean_sem(xs):
    m = statistics.fmean(xs)
    sem = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return m, sem


def geomean(xs):
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", nargs="?", default=os.path.join(REPO, "build-bench", "search-table.json"),
                    help="timing table (default: build-bench/search-table.json)")
    ap.add_argument("--tasks", default=os.path.join(REPO, "configs", "tasks", "cpu"),
                    help="task directory or folder of them (default: configs/tasks/cpu)")
    ap.add_argument("--task", action="append", help="only this task (repeatable)")
    ap.add_argument("--seeds", type=int, default=100, help="seeds per task and method (default 100)")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=0.02, help="qualifying: time <= (1 + tolerance) x best")
    ap.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                    help="comma-separated Kernel Tuner strategies (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes for the Kernel Tuner runs (default 1)")
    ap.add_argument("--bench", help="bench_search binary (default build-bench/bin/bench_search)")
    ap.add_argument("--kevo-json", help="use this bench_search --json output instead of running bench_search")
    ap.add_argument("--cache-dir", help="where the Kernel Tuner cache files go (default: TABLE.kt/)")
    ap.add_argument("--full-runs", action="store_true",
                    help="run every strategy to its end instead of stopping at the first qualifying point")
    ap.add_argument("--bo-wall-clock", action="store_true",
                    help="let bayes_opt time the replayed evaluations by the wall clock (microseconds) instead of "
                         "the time a real evaluation of the task took")
    ap.add_argument("--json", help="also write every count to this file")
    args = ap.parse_args()
    if args.seeds < 1:
        raise BadInput("--seeds: at least 1")
    if args.jobs < 1:
        raise BadInput("--jobs: at least 1")
    if not args.tolerance >= 0:
        raise BadInput("--tolerance: a number >= 0")
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    import kernel_tuner
    from kernel_tuner.interface import strategy_map
    for s in strategies:
        if s not in strategy_map:
            raise BadInput(f"--strategies: {s} is not a Kernel Tuner strategy ({', '.join(strategy_map)})")

    table = load_json(args.table, "table")
    if not isinstance(table, dict):
        raise BadInput(f"table {args.table}: not an object of tasks")
    meta_path = args.table + ".meta.json"
    meta = load_json(meta_path, "table sidecar") if os.path.exists(meta_path) else {}
    task_docs = find_tasks(args.tasks)
    names = args.task or sorted(n for n in table if n in task_docs)
    for n in names:
        if n not in table:
            raise BadInput(f"--task {n}: not in the table {args.table}")
        if n not in task_docs:
            raise BadInput(f"table task {n}: no task of that name under {args.tasks}")
    if not names:
        raise BadInput(f"table {args.table}: no task of {args.tasks}")

    cache_dir = args.cache_dir or args.table + ".kt"
    os.makedirs(cache_dir, exist_ok=True)
    tasks = {}
    for n in names:
        incorrect = meta.get("tasks", {}).get(n, {}).get("incorrect", {}) if isinstance(meta, dict) else {}
        space = TaskSpace(n, task_docs[n], table[n], incorrect, args.tolerance)
        info = meta.get("tasks", {}).get(n, {}).get("info", {}) if isinstance(meta, dict) else {}
        try:   # wall time per judged point while the table was measured; 1 s when unknown
            space.eval_seconds = float(info["measure_seconds"]) / (space.n * int(info.get("rounds", 1)))
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            space.eval_seconds = 1.0
        cache = os.path.abspath(os.path.join(cache_dir, f"{n}.json"))
        write_cache(space, cache)
        restrictions, how = kt_restrictions(space)
        tasks[n] = (space, cache, restrictions)
        print(f"kernel tuner: {n}: {space.n} valid points ({len(space.incorrect)} incorrect), "
              f"{len(space.qualifying)} within {args.tolerance:.0%}; restrictions: {how}; "
              f"{space.eval_seconds:.2f} s per real evaluation; cache {os.path.relpath(cache)}")

    kevo = run_kevo(args, args.table)
    kevo_tasks = kevo.get("tasks", {})
    for n in names:
        if n not in kevo_tasks:
            raise BadInput(f"kevo results: no task {n}")
        k = kevo_tasks[n]
        if len(k["evolution"]) != args.seeds:
            raise BadInput(f"kevo results: {n} has {len(k['evolution'])} seeds, not {args.seeds}")
        if k["points"] + k["incorrect"] != tasks[n][0].n or k["qualifying"] != len(tasks[n][0].qualifying):
            raise BadInput(f"kevo results: {n}: another table (points / qualifying differ)")

    # The Kernel Tuner runs.
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    jobs = [{"task": n, "strategy": s, "seed": sd, "full": args.full_runs}
            for n in names for s in strategies for sd in seeds]
    print(f"kernel tuner {kernel_tuner.__version__}: {len(jobs)} runs ({len(names)} tasks x {len(strategies)} "
          f"strategies x {args.seeds} seeds), {args.jobs} process(es)", flush=True)
    t0 = time.perf_counter()
    _init_worker(tasks, args.bo_wall_clock)
    outcomes = []
    if args.jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(args.jobs, _init_worker, (tasks, args.bo_wall_clock)) as pool:
            for k, o in enumerate(pool.imap(run_strategy, jobs, chunksize=4)):
                outcomes.append(o)
                if (k + 1) % (args.seeds * 5) == 0:
                    print(f"  {k + 1}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", flush=True)
    else:
        for k, j in enumerate(jobs):
            outcomes.append(run_strategy(j))
            if (k + 1) % args.seeds == 0:
                print(f"  {j['task']} {j['strategy']}: done, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"kernel tuner: {time.perf_counter() - t0:.0f} s", flush=True)

    res = {n: {s: {"counts": [], "neutral": [], "completed": [], "reached": 0, "seconds": 0.0, "notes": set(),
                   "crashed": 0, "crashed_before_target": 0} for s in strategies} for n in names}
    for j, (count, neutral, unique, secs, notes, crashed) in zip(jobs, outcomes):
        r = res[j["task"]][j["strategy"]]
        space = tasks[j["task"]][0]
        r["counts"].append(count if count is not None else space.n + 1)
        # A run that ended without a qualifying point, finished by random
        # search over the points it did not evaluate (a kinder count than n + 1).
        r["completed"].append(count if count is not None
                              else unique + (space.n - unique + 1) / (len(space.qualifying) + 1))
        r["neutral"].append(neutral if neutral is not None else space.n + 1)
        r["reached"] += count is not None
        r["seconds"] += secs
        r["notes"].update(notes)
        r["crashed"] += crashed
        r["crashed_before_target"] += crashed and count is None

    # --------------------------------------------------------------------------
    stats = {}     # (task, method) -> (mean, sem, reached)
    neutral = {}   # (task, strategy) -> batch-neutral (mean, sem)
    for n in names:
        k = kevo_tasks[n]
        m, se = mean_sem(k["evolution"])
        stats[(n, "kevo")] = (m, se, args.seeds - k.get("evolution_censored", 0))
        for s in strategies:
            r = res[n][s]
            m, se = mean_sem(r["counts"])
            stats[(n, s)] = (m, se, r["reached"])
            neutral[(n, s)] = mean_sem(r["neutral"])

    print(f"\n# Evaluations to come within {args.tolerance:.0%} of the exhaustive best: kevo vs Kernel Tuner "
          f"{kernel_tuner.__version__} (simulation mode)")
    print(f"table {os.path.relpath(args.table)}, seeds {seeds[0]}..{seeds[-1]}, per task and method the mean over "
          f"seeds of the distinct valid")
    print("configurations evaluated up to and including the first qualifying one; a run that never meets one "
          "counts as n + 1")
    print("kevo: bench_search (configs/quickstart.json, island.in_flight 8, the seed point counted); Kernel Tuner: "
          "default strategy")
    print("options, max_fevals = n; n valid points, m of them within the tolerance")

    w = max(len(x) for x in strategies + ["bench_search random"]) + 1
    cw = max(16, max(len(n) for n in names) + 2)
    head = f"{'':<{w}}" + "".join(f"{n:>{cw}}" for n in names) + f"{'geomean':>10}"

    def matrix(title, rows):
        print(f"\n## {title}")
        print(head)
        for label, cells, tail in rows:
            print(f"{label:<{w}}" + "".join(f"{c:>{cw}}" for c in cells) + (f"{tail:>10}" if tail else ""))

    ratios = {s: [stats[(n, s)][0] / stats[(n, "kevo")][0] for n in names] for s in strategies}
    rows = [("n / m", [f"{tasks[n][0].n} / {len(tasks[n][0].qualifying)}" for n in names], ""),
            ("(n+1)/(m+1)", [f"{(tasks[n][0].n + 1) / (len(tasks[n][0].qualifying) + 1):.2f}" for n in names], ""),
            ("bench_search random", [f"{statistics.fmean(kevo_tasks[n]['random']):.1f}" for n in names], ""),
            ("kevo", [f"{stats[(n, 'kevo')][0]:.1f}" + " " * 7 + ("*" if stats[(n, "kevo")][2] < args.seeds else " ")
                      for n in names], "")]
    for s in strategies:
        rows.append((s, [f"{stats[(n, s)][0]:.1f} {ratios[s][i]:5.2f}x" + ("*" if stats[(n, s)][2] < args.seeds else " ")
                         for i, n in enumerate(names)], f"{geomean(ratios[s]):.2f}x"))
    matrix("Mean evaluations, and strategy / kevo (* some seeds never met the target: see the next table)", rows)

    pad = 3 + len(str(args.seeds))
    rows = [(meth, [f"{stats[(n, meth)][1]:.1f}" + (f" [{stats[(n, meth)][2]}]" if stats[(n, meth)][2] < args.seeds
                                                     else "").ljust(pad)
                    for n in names], "") for meth in ["kevo"] + strategies]
    matrix(f"Standard error of the mean [seeds, of {args.seeds}, that met the target, when not all]", rows)

    differs = [s for s in strategies if any(abs(neutral[(n, s)][0] - stats[(n, s)][0]) > 0.005 * stats[(n, s)][0]
                                            for n in names)]
    if differs:
        nratios = {s: [neutral[(n, s)][0] / stats[(n, "kevo")][0] for n in names] for s in differs}
        rows = [(s, [f"{neutral[(n, s)][0]:.1f} {nratios[s][i]:5.2f}x " for i, n in enumerate(names)],
                 f"{geomean(nratios[s]):.2f}x") for s in differs]
        matrix("Batch-neutral (each batch a strategy hands Kernel Tuner's runner at once taken in random order: "
               "the expected\nposition of the first qualifying point in its batch), where it differs from the "
               "count as run", rows)

    censored = [s for s in strategies if any(stats[(n, s)][2] < args.seeds for n in names)]
    completed = {(n, s): statistics.fmean(res[n][s]["completed"]) for n in names for s in censored}
    if censored:
        cratios = {s: [completed[(n, s)] / stats[(n, "kevo")][0] for n in names] for s in censored}
        rows = [(s, [f"{completed[(n, s)]:.1f} {cratios[s][i]:5.2f}x" + ("*" if stats[(n, s)][2] < args.seeds else " ")
                     for i, n in enumerate(names)], f"{geomean(cratios[s]):.2f}x") for s in censored]
        matrix("Runs that ended without meeting the target (*) finished by random search over the points they had "
               "not evaluated\n(k evaluated: k + (n - k + 1) / (m + 1) instead of n + 1), for the strategies that "
               "have such runs", rows)

    print("\n## Summary per strategy: geomean over tasks of strategy mean / kevo mean (> 1: kevo needs fewer)")
    for s in strategies:
        per = ", ".join(f"{n} {r:.2f}" for n, r in zip(names, ratios[s]))
        print(f"{s:<{w}} {geomean(ratios[s]):6.2f}x   ({per})")

    print("\n## Target: kevo fewer evaluations than every strategy, per task (means as run)")
    held_all = True
    for n in names:
        km, kse, _ = stats[(n, "kevo")]
        lost = [s for s in strategies if stats[(n, s)][0] <= km]
        close = [s for s in strategies if s not in lost and stats[(n, s)][0] - km
                 <= 2 * math.sqrt(stats[(n, s)][1] ** 2 + kse ** 2)]
        lost_neutral = [s for s in strategies if neutral[(n, s)][0] <= km]
        lost_completed = [s for s in censored if completed[(n, s)] <= km and s not in lost]
        best_s = min(strategies, key=lambda s: stats[(n, s)][0])
        held_all = held_all and not lost
        verdict = "HOLDS" if not lost else "DOES NOT HOLD (" + ", ".join(
            f"{s} {stats[(n, s)][0]:.1f}" for s in lost) + " <= kevo)"
        extra = ""
        if close:
            extra += "; not by 2 standard errors against " + ", ".join(f"{s} {stats[(n, s)][0]:.1f}" for s in close)
        if sorted(lost_neutral) != sorted(lost):
            extra += f"; batch-neutral: {'beaten by ' + ', '.join(lost_neutral) if lost_neutral else 'holds'}"
        if lost_completed:
            extra += f"; with ended runs finished by random search also beaten by {', '.join(lost_completed)}"
        print(f"{n:<12} kevo {km:.1f}, best strategy {best_s} {stats[(n, best_s)][0]:.1f}: {verdict}{extra}")
    print(f"overall: {'kevo fewer than every strategy on every task' if held_all else 'NOT on every task'}")

    crashes = [(n, s, res[n][s]) for n in names for s in strategies if res[n][s]["crashed"]]
    if crashes:
        print("\n## Strategy runs that raised (counted up to the exception; n + 1 if no qualifying point by then)")
        for n, s, r in crashes:
            print(f"{n:<12} {s:<{w}} {r['crashed']} of {args.seeds} runs raised, "
                  f"{r['crashed_before_target']} before meeting the target")
    notes = sorted({(s, note) for n in names for s in strategies for note in res[n][s]["notes"]})
    if notes:
        print("\nwarnings and exceptions raised inside Kernel Tuner (once each):")
        for s, note in notes:
            print(f"  {s}: {note}")
    print(f"\nKernel Tuner time per run (s, mean over tasks and seeds): " + ", ".join(
        f"{s} {statistics.fmean(res[n][s]['seconds'] for n in names) / args.seeds:.3f}" for s in strategies))

    if args.json:
        out = {"table": args.table, "tolerance": args.tolerance, "seeds": [seeds[0], seeds[-1]],
               "kernel_tuner": kernel_tuner.__version__, "full_runs": args.full_runs, "tasks": {}}
        for n in names:
            space = tasks[n][0]
            out["tasks"][n] = {"points": space.n, "qualifying": len(space.qualifying),
                               "kevo": kevo_tasks[n]["evolution"],
                               "strategies": {s: {k: res[n][s][k] for k in
                                                  ("counts", "neutral", "completed", "reached", "seconds",
                                                   "crashed")}
                                              for s in strategies}}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BadInput as e:
        print(f"kernel_tuner_compare: error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:   # noqa: BLE001 - a measurement that failed
        import traceback
        traceback.print_exc()
        print(f"kernel_tuner_compare: failure: {e}", file=sys.stderr)
        sys.exit(1)
