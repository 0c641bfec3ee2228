#!/usr/bin/env python3
"""A scripted evaluator for the command backend's tests (docs/command-backend.md).

It speaks protocol 1 faithfully (stage events, one result, the nonce on every
line, exit 0 after the result in one-shot mode, one request per line until
EOF with --serve) but judges by markers in the candidate's source instead of
running anything, and misbehaves on request.

usage:
  scripted_evaluator.py [--behaviour NAME[,NAME...]] [--serve] [--log FILE]
  scripted_evaluator.py --compile SRC --out DIR [--log FILE]
  scripted_evaluator.py --version [--version-tag TAG]

MARKERS (in candidate.source; judge mode)
  KEVO_TEST_CRASH          runtime_error "candidate crashed (scripted)"
  KEVO_TEST_CRASH_HIDDEN   runtime_error at the first hidden shape (failed_shape),
                           the shape's sizes in message and feedback, as a
                           candidate's traceback would carry them
  KEVO_TEST_WRONG_HIDDEN   wrong_answer, mismatch.shape = the first hidden shape
                           (the first shape when there is none); the message and
                           feedback do not name it
  KEVO_TEST_WRONG          wrong_answer, mismatch.shape = the first visible shape
  KEVO_TEST_CORRECT        correct; timed (request.timing): shape_timings for
                           every visible shape, cand_median_ns from
                           KEVO_TEST_NS=<number> (default 1000), ref_median_ns
                           2000, IQRs 1% of the medians, repeats =
                           timing_options.min_repeats, verdict speedup = the
                           geometric mean of ref/cand
  (no marker of these)     compile_error "does not build" (the conformance
                           probe, a text that is no program)
  KEVO_TEST_ECHO_HIDDEN_HANG  a call event at the first hidden shape, that
                           shape's sizes on stderr, then a sleep of an hour
                           (killed at the wall limit: no result)
  KEVO_TEST_COMPILE_ERROR_HIDDEN  a call event at the first hidden shape,
                           then compile_error (an evaluator that compiles
                           per shape, as NKI's does) whose message and
                           compile log spell that shape's sizes
                           ("compilation failed at N 3"), not as its label
  KEVO_TEST_SLEEP=<s>      sleeps <s> seconds after the correctness stage
                           event, then judges as above
  KEVO_TEST_HONEST         no misbehaviour of the "judge"/"timed" kinds below
                           for this candidate (for a seed whose text kevo
                           would not send verbatim)
  The first of CRASH_HIDDEN, CRASH, WRONG_HIDDEN, WRONG, CORRECT found wins (a failure
  marker beats CORRECT).
  Builds: a candidate.build / reference.build that is not null must be a
  folder holding built.txt written by --compile for the same source text
  (its sha256), else runtime_error "build missing" / "build stale". With
  candidate.build null the evaluator reports a compile stage itself.

RUN MODE  (mode "run", backend.command.judge = "kevo": kevo compares)
  Each call's buffers are loaded from files.in at their offsets and written
  to files.out at the same offsets. The program (request.program: the reference, or the candidate)
  computes every out/inout buffer as the element-wise sum of the "in"
  buffers (wrapping), when its source holds KEVO_TEST_CORRECT (the reference
  does); KEVO_TEST_CRASH is runtime_error; no marker is compile_error. With
  KEVO_TEST_CORRECT, these markers spoil the outputs kevo must catch:
  KEVO_TEST_RUN_WRONG        element min(7, n-1) of each output + 1, every call
  KEVO_TEST_RUN_WRONG_HIDDEN the same, on hidden shapes only
  KEVO_TEST_RUN_WRONG_STRESS the same, on stress trials only
  KEVO_TEST_RUN_WRONG_AFTER_HIDDEN  element min(7, n-1) of each output plus
                             the largest N of the hidden shapes called so
                             far, on the visible shapes' calls after one (a candidate that
                             remembers a hidden size and spells it out in a
                             later value)
  KEVO_TEST_RUN_WRONG_TIMED  the same, on the calls with "time" only (the
                             outputs of the last timed run)
  KEVO_TEST_RUN_UNWRITTEN    the last element of each output keeps its
                             files.in bytes (kevo's poison)
  KEVO_TEST_RUN_MODIFY_INPUT element 0 of the first "in" buffer becomes 42
  KEVO_TEST_RUN_SHORT_FILE   files.out 4 bytes short
  A timed candidate request answers shape_timings as in judge mode.
  Behaviour run_ignores_inputs (ALL run requests): outputs are zeros, inputs
  copied through, whatever the program.

MODES
  self_check               correct (shape_timings when timed, cand = ref = 2000 ns)
  null (any null_kind)     wrong_answer: mismatch on the first out/inout arg at
                           the first shape of the request
  judge                    by markers, above

COMPILE MODE  --compile SRC --out DIR
  KEVO_TEST_COMPILE_SLEEP=<s>  sleeps first
  KEVO_TEST_NOCOMPILE      prints "error: KEVO_TEST_NOCOMPILE" on stdout, exit 1
  KEVO_TEST_WARN           prints "warning: KEVO_TEST_WARN" on stdout, builds
  otherwise                writes DIR/built.txt (the source's sha256), exit 0
  --version prints "scripted-evaluator 1" (+ " TAG" with --version-tag TAG).

BEHAVIOURS  (--behaviour, comma-separated; default honest)
  "judge" ones act on judge requests except the conformance checks, i.e. not
  on the probe (a candidate with no verdict marker), nor on the seed check (an
  untimed judge of a text equal to the task's seed, task.dir/task.json "seed"),
  nor on a candidate marked KEVO_TEST_HONEST, so that conformance passes and
  the misbehaviour shows on candidates (the seed's timed judgement in a run
  included).
  "timed" ones act on those judge requests whose honest verdict is a correct
  timed one. "ALL" ones act on every request.

  name                       scope   what
  honest                     -       the above
  garbage                    judge   a line that is not JSON before the result
  no_nonce                   judge   the result line has no nonce
  wrong_nonce                judge   the result line has another nonce
  exit_without_verdict       judge   exits 0 after a stage event
  exit_nonzero_after_result  judge   exits 5 after a valid result
  hang                       judge   sleeps forever after a stage event
  flood_stdout               judge   10 MB of a valid stage line, repeated, then the result
  flood_stderr               judge   10 MB on stderr, then the result
  bad_verdict[=KIND]         judge   string (default): "verdict": "correct";
                                     status: status "splendid"; pending: status
                                     "pending"; type: max_abs_error "zero"
  unknown_key                judge   the verdict carries "secret_sauce"
  unknown_shape              judge   wrong_answer whose mismatch.shape is in no shape of the request
  unknown_failed_shape       judge   runtime_error whose failed_shape is in no shape of the request
  leak_hidden                judge   wrong_answer at the first hidden shape, its label in message and feedback
  two_results                judge   the result twice
  nan_time[=string]          timed   a cand_median_ns of NaN: the bare token NaN
                                     (default) or the string "nan"
  negative_time              timed   cand_median_ns -1000
  wrong_speedup              timed   verdict speedup 100 while the times say 2
  missing_shape_timings      timed   correct without shape_timings
  under_roofline             timed   cand_median_ns 1 (ns) on every shape
  probe_correct              probe   correct for a judge candidate with no verdict marker
  null_correct               null    correct for every null request
  all_correct                ALL     correct for every request (null and probe too)
  fatal                      ALL     a fatal event, then exit 3
  die_after=N                ALL     --serve: exits 0 after N requests answered
  sleep_start=S              ALL     sleeps S seconds at start, before reading

PROFILES  a timed judge request with "profile": true that is judged correct
  gets "profile_ncu_csv": a small ncu raw page written here (one kernel,
  scripted_kernel), which kevo condenses into the verdict's profile.

KEVO_TEST_PROBE_READ=P1:P2:...  every log line has "readable": {path: whether
  this process could open and read it}.

KEVO_TEST_PROBE_SIGNAL=PID  every log line has "signalled": the outcome of
  sending SIGURG to PID ("sent", or the error's name: "EPERM" where the
  process may not signal it).

LOG  (--log FILE: one JSON line appended per request or compile; run mode
  adds {"event": "run", "program", "calls": [{"shape", "trial", "time",
  "inputs_sha": sha256 of the in/inout buffers, "poison": [first 8 bytes of
  each out buffer as kevo wrote it, hex]}]})
  {"event": "request"|"compile"|"version", "pid", "ppid", "time", "argv",
   "behaviours", "stdin": "pipe"|"socket"|"file"|"tty"|"chardev"|"closed"|"other",
   "env_names": [sorted names, never values], "fds": [open fds], "cwd",
   "request": the parsed request (or {"unparsed": text}),
   "schema_errors": [...] (null without the jsonschema module)}
"""
import argparse
import array
import errno
import hashlib
import json
import math
import os
import re
import signal
import stat
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REQUEST_SCHEMA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "schemas",
                              "command-request.schema.json")

JUDGE_ONLY = {"garbage", "no_nonce", "wrong_nonce", "exit_without_verdict", "exit_nonzero_after_result",
              "hang", "flood_stdout", "flood_stderr", "bad_verdict", "unknown_key", "unknown_shape",
              "unknown_failed_shape", "leak_hidden", "two_results"}
TIMED = {"nan_time", "negative_time", "wrong_speedup", "missing_shape_timings", "under_roofline"}
OTHER = {"honest", "probe_correct", "null_correct", "all_correct", "fatal", "die_after", "sleep_start",
         "run_ignores_inputs"}
KNOWN = JUDGE_ONLY | TIMED | OTHER
VERDICT_MARKERS = ("KEVO_TEST_CRASH_HIDDEN", "KEVO_TEST_CRASH", "KEVO_TEST_WRONG_HIDDEN", "KEVO_TEST_WRONG", "KEVO_TEST_CORRECT")
FLOOD_BYTES = 10 * 1024 * 1024
REF_NS = 2000.0
DEFAULT_NS = 1000.0
# ncu's raw page (--csv --page raw) as a profiler would print it, for "profile": true
SCRIPTED_NCU_CSV = (
    '"ID","Kernel Name","Grid Size","Block Size","gpu__time_duration.sum",'
    '"dram__throughput.avg.pct_of_peak_sustained_elapsed","sm__throughput.avg.pct_of_peak_sustained_elapsed",'
    '"launch__registers_per_thread"\n'
    '"","","","","nsecond","%","%","register/thread"\n'
    '"0","scripted_kernel(float*, int)","(64, 1, 1)","(256, 1, 1)","12,345","81.5","20.1","32"\n')


def parse_behaviours(text):
    """'hang,die_after=3' -> {"hang": None, "die_after": "3"}"""
    out = {}
    for part in (text or "honest").split(","):
        part = part.strip()
        if not part:
            continue
        name, _, value = part.partition("=")
        if name not in KNOWN:
            sys.exit("scripted_evaluator: unknown behaviour %r (known: %s)" % (name, ", ".join(sorted(KNOWN))))
        out[name] = value if value else None
    return out


def stdin_kind():
    try:
        st = os.fstat(0)
    except OSError:
        return "closed"
    if stat.S_ISFIFO(st.st_mode):
        return "pipe"
    if stat.S_ISSOCK(st.st_mode):
        return "socket"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISCHR(st.st_mode):
        return "tty" if os.isatty(0) else "chardev"
    return "other"


def open_fds():
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    fds = []
    for n in names:
        try:
            fd = int(n)
            os.fstat(fd)   # the listing's own fd is closed by now
            fds.append(fd)
        except (ValueError, OSError):
            pass
    return sorted(fds)


def schema_errors(request):
    try:
        import jsonschema
        with open(REQUEST_SCHEMA) as f:
            schema = json.load(f)
        v = jsonschema.Draft202012Validator(schema)
        return sorted("%s: %s" % ("/".join(str(p) for p in e.absolute_path), e.message)
                      for e in v.iter_errors(request))
    except ImportError:
        return None
    except Exception as e:   # a log is no place to fail
        return ["schema check failed: %s" % e]


def can_read(path):
    try:
        with open(path, "rb") as f:
            f.read(1)
        return True
    except OSError:
        return False


def write_log(path, event, behaviours, **extra):
    if not path:
        return
    entry = {"event": event, "pid": os.getpid(), "ppid": os.getppid(), "time": time.time(),
             "argv": sys.argv, "behaviours": behaviours, "stdin": stdin_kind(),
             "env_names": sorted(os.environ), "fds": open_fds(), "cwd": os.getcwd()}
    entry.update(extra)
    if os.environ.get("KEVO_TEST_PROBE_READ"):
        entry["readable"] = {p: can_read(p) for p in os.environ["KEVO_TEST_PROBE_READ"].split(":")}
    if os.environ.get("KEVO_TEST_PROBE_SIGNAL"):
        try:
            os.kill(int(os.environ["KEVO_TEST_PROBE_SIGNAL"]), signal.SIGURG)
            entry["signalled"] = "sent"
        except OSError as e:
            entry["signalled"] = errno.errorcode.get(e.errno, str(e.errno))
    line = (json.dumps(entry) + "\n").encode()
    # One write on an O_APPEND descriptor: concurrent evaluators don't interleave.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def marker_number(src, name, default):
    m = re.search(re.escape(name) + r"=([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)", src)
    return float(m.group(1)) if m else default


def verdict_marker(src):
    for m in VERDICT_MARKERS:
        if m in src:
            return m
    return None


# ---- compile and version modes ----------------------------------------------

def compile_mode(a, behaviours):
    write_log(a.log, "compile", behaviours, source=a.compile, out=a.out)
    try:
        with open(a.compile, "rb") as f:
            data = f.read()
    except OSError as e:
        print("error: cannot read %s: %s" % (a.compile, e))
        return 1
    src = data.decode("utf-8", "replace")
    time.sleep(marker_number(src, "KEVO_TEST_COMPILE_SLEEP", 0.0))
    if "KEVO_TEST_NOCOMPILE" in src:
        print("error: KEVO_TEST_NOCOMPILE")
        return 1
    if "KEVO_TEST_WARN" in src:
        print("warning: KEVO_TEST_WARN")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "built.txt"), "w") as f:
        f.write(hashlib.sha256(data).hexdigest() + "\n")
    return 0


# ---- judging ----------------------------------------------------------------

class Answerer:
    def __init__(self, behaviours, log):
        self.b = behaviours
        self.log = log
        self.answered = 0

    # -- output
    def emit(self, obj, raw=None):
        sys.stdout.write((raw if raw is not None else json.dumps(obj)) + "\n")
        sys.stdout.flush()

    def stage(self, nonce, name):
        self.emit({"nonce": nonce, "event": "stage", "stage": name})

    def fatal(self, nonce, message, code=3):
        self.emit({"nonce": nonce, "event": "fatal", "message": message})
        sys.exit(code)

    # -- helpers over the request
    @staticmethod
    def shapes(req, kind=None):
        return [s for s in req.get("task", {}).get("shapes", []) if kind is None or s.get("kind") == kind]

    @staticmethod
    def first_output(req):
        for a in req.get("task", {}).get("args", []):
            if a.get("role") in ("out", "inout"):
                return a.get("name", "out")
        return "out"

    def timings(self, req, cand_ns, ref_ns=REF_NS):
        reps = int(req.get("timing_options", {}).get("min_repeats", 1) or 1)
        return [{"shape": s["label"], "cand_median_ns": cand_ns, "cand_iqr_ns": cand_ns * 0.01,
                 "ref_median_ns": ref_ns, "ref_iqr_ns": ref_ns * 0.01, "repeats": max(1, reps)}
                for s in self.shapes(req, "visible")]

    @staticmethod
    def speedup(timings):
        if not timings:
            return 0.0
        return math.exp(sum(math.log(t["ref_median_ns"] / t["cand_median_ns"]) for t in timings) / len(timings))

    def correct(self, req, cand_ns=DEFAULT_NS, ref_ns=REF_NS):
        verdict = {"status": "correct", "stage": "done", "max_abs_error": 0, "rel_l2_error": 0,
                   "device": "scripted"}
        timings = None
        if req.get("timing"):
            timings = self.timings(req, cand_ns, ref_ns)
            verdict["speedup"] = self.speedup(timings)
            verdict["message"] = "correct; %.2fx" % verdict["speedup"]
            verdict["feedback"] = "Correct on every shape; %.2fx the reference." % verdict["speedup"]
        else:
            verdict["message"] = "correct"
            verdict["feedback"] = "Correct on every shape."
        return verdict, timings

    def wrong(self, req, shape_label, arg=None, name_shape=True):
        arg = arg or self.first_output(req)
        where = " (trial 1, shape %s)" % shape_label if name_shape else " (trial 1)"
        msg = "output '%s' differs from the reference at [0]%s: expected 1, got 0" % (arg, where)
        return {"status": "wrong_answer", "stage": "correctness", "message": msg,
                "max_abs_error": 1, "rel_l2_error": 1,
                "mismatch": {"arg": arg, "shape": shape_label, "trial": "trial 1", "flat_index": 0,
                             "index": "[0]", "expected": 1.0, "got": 0.0},
                "feedback": "Wrong answer: " + msg}, None

    @staticmethod
    def runtime_error(message):
        return {"status": "runtime_error", "stage": "correctness", "message": message,
                "feedback": "Runtime error: " + message}, None

    def check_build(self, prog, who):
        """None, or the runtime_error of a missing/stale build."""
        build = (prog or {}).get("build")
        if build is None:
            return None
        built = os.path.join(build, "built.txt")
        if not os.path.isfile(built):
            return self.runtime_error("build missing: %s has no built.txt (%s)" % (build, who))
        try:
            with open(built) as f:
                want = f.read().strip()
            if want != sha256_file(prog["source"]):
                return self.runtime_error("build stale: %s was built from another source (%s)" % (build, who))
        except OSError as e:
            return self.runtime_error("build unreadable (%s): %s" % (who, e))
        return None

    @staticmethod
    def is_seed(req, src):
        task_dir = req.get("task", {}).get("dir")
        if not task_dir:
            return False
        try:
            with open(os.path.join(task_dir, "task.json")) as f:
                seed = json.load(f).get("seed")
            if not seed:
                return False
            with open(os.path.join(task_dir, seed), encoding="utf-8", errors="replace") as f:
                return f.read() == src
        except (OSError, ValueError, AttributeError):
            return False

    # -- one request
    def answer(self, req):
        b = self.b
        nonce = req.get("nonce")
        if not isinstance(nonce, str) or not nonce:
            self.fatal("", "request without a nonce", 2)
        if req.get("protocol") != 1:
            self.fatal(nonce, "unsupported protocol %r (this evaluator speaks 1)" % req.get("protocol"), 2)
        if "fatal" in b:
            self.stage(nonce, "correctness")
            self.fatal(nonce, "scripted fatal: the device is gone", 3)
        mode = req.get("mode")
        if mode == "run":
            return self.run_mode(req)
        if mode not in ("judge", "self_check", "null"):
            self.fatal(nonce, "unknown mode %r" % mode, 2)
        timed = bool(req.get("timing"))
        cand = req.get("candidate")

        # Stage events first; a build the evaluator makes itself is a compile stage.
        if mode == "judge" and cand and cand.get("build") is None:
            self.stage(nonce, "compile")
        self.stage(nonce, "correctness")

        if "all_correct" in b:
            return self.finish(req, *self.correct(req), misbehave=False)
        if mode == "null":
            if "null_correct" in b:
                return self.finish(req, *self.correct(req), misbehave=False)
            shapes = self.shapes(req)
            return self.finish(req, *self.wrong(req, shapes[0]["label"] if shapes else "?"), misbehave=False)

        bad = self.check_build(req.get("reference"), "reference")
        if bad:
            return self.finish(req, *bad, misbehave=False)
        if mode == "self_check":
            return self.finish(req, *self.correct(req, REF_NS, REF_NS), misbehave=False)

        # judge
        try:
            with open(cand["source"], encoding="utf-8", errors="replace") as f:
                src = f.read()
        except (OSError, KeyError, TypeError) as e:
            self.fatal(nonce, "cannot read the candidate's source: %s" % e, 3)
        marker = verdict_marker(src)
        probe = marker is None
        conformance = probe or "KEVO_TEST_HONEST" in src or (not timed and self.is_seed(req, src))
        misbehave = not conformance

        if misbehave and "exit_without_verdict" in b:
            sys.exit(0)
        if misbehave and "hang" in b:
            while True:
                time.sleep(3600)
        if misbehave and "flood_stdout" in b:
            line = (json.dumps({"nonce": nonce, "event": "stage", "stage": "correctness"}) + "\n") * 1024
            for _ in range(FLOOD_BYTES // len(line) + 1):
                sys.stdout.write(line)
            sys.stdout.flush()
        if misbehave and "flood_stderr" in b:
            chunk = ("scripted evaluator: flooding stderr " + "x" * 90 + "\n") * 1024
            for _ in range(FLOOD_BYTES // len(chunk) + 1):
                sys.stderr.write(chunk)
            sys.stderr.flush()

        if "KEVO_TEST_ECHO_HIDDEN_HANG" in src and self.shapes(req, "hidden"):
            # A candidate that prints the sizes it is called with at a hidden
            # shape, then hangs: the evaluator said it ran there (a call
            # event), and is killed before any result.
            hidden = self.shapes(req, "hidden")[0]
            self.emit({"nonce": nonce, "event": "call", "shape": hidden["label"]})
            sys.stderr.write("candidate output: called with %s\n" % " ".join(
                "%s %s" % kv for kv in sorted(hidden.get("dims", {}).items())))
            sys.stderr.flush()
            time.sleep(3600)
        if "KEVO_TEST_COMPILE_ERROR_HIDDEN" in src and self.shapes(req, "hidden"):
            hidden = self.shapes(req, "hidden")[0]
            self.emit({"nonce": nonce, "event": "call", "shape": hidden["label"]})
            sizes = " ".join("%s %s" % kv for kv in sorted(hidden.get("dims", {}).items()))
            return self.finish(req, {"status": "compile_error", "stage": "correctness",
                                     "message": "RuntimeError: compilation failed at %s" % sizes,
                                     "compile_log": "Traceback: compilation failed at %s" % sizes}, None,
                               misbehave=False)
        time.sleep(marker_number(src, "KEVO_TEST_SLEEP", 0.0))

        if probe and "probe_correct" in b:
            return self.finish(req, *self.correct(req), misbehave=False)
        bad = self.check_build(cand, "candidate")
        if bad:
            return self.finish(req, *bad, misbehave=misbehave)
        if marker == "KEVO_TEST_CRASH_HIDDEN":
            hidden = self.shapes(req, "hidden") or self.shapes(req)
            sizes = " ".join("%s %s" % kv for kv in sorted(hidden[0].get("dims", {}).items()))
            verdict, timings = self.runtime_error("forward raised: ValueError: called with %s" % sizes)
            verdict["failed_shape"] = hidden[0]["label"]
        elif marker == "KEVO_TEST_CRASH":
            verdict, timings = self.runtime_error("candidate crashed (scripted): SIGSEGV")
        elif marker == "KEVO_TEST_WRONG_HIDDEN":
            hidden = self.shapes(req, "hidden") or self.shapes(req)
            verdict, timings = self.wrong(req, hidden[0]["label"], name_shape=False)
        elif marker == "KEVO_TEST_WRONG":
            visible = self.shapes(req, "visible") or self.shapes(req)
            verdict, timings = self.wrong(req, visible[0]["label"])
        elif marker == "KEVO_TEST_CORRECT":
            verdict, timings = self.correct(req, marker_number(src, "KEVO_TEST_NS", DEFAULT_NS))
        else:
            verdict = {"status": "compile_error", "stage": "compile", "message": "does not build",
                       "compile_log": "error: not a program (no KEVO_TEST_ marker)",
                       "feedback": "Compile error: does not build"}
            timings = None
        return self.finish(req, verdict, timings, misbehave=misbehave)

    # -- run mode: kevo judges, this runs the "program" on kevo's files
    def run_mode(self, req):
        nonce = req["nonce"]
        b = self.b
        program = req.get("program")
        prog = req.get("reference") if program == "reference" else req.get("candidate")
        if program not in ("reference", "candidate") or not isinstance(prog, dict):
            self.fatal(nonce, "run request without a program to run (%r)" % program, 2)
        self.stage(nonce, "correctness")
        bad = self.check_build(prog, program)
        if bad:
            return self.finish(req, *bad, misbehave=False)
        try:
            with open(prog["source"], encoding="utf-8", errors="replace") as f:
                src = f.read()
        except (OSError, KeyError, TypeError) as e:
            self.fatal(nonce, "cannot read the %s's source: %s" % (program, e), 3)
        marker = verdict_marker(src)
        timed = bool(req.get("timing"))
        conformance = (program == "reference" or marker is None or "KEVO_TEST_HONEST" in src
                       or (not timed and self.is_seed(req, src)))
        misbehave = not conformance
        if marker == "KEVO_TEST_CRASH":
            return self.finish(req, *self.runtime_error("candidate crashed (scripted): SIGSEGV"), misbehave=misbehave)
        if marker != "KEVO_TEST_CORRECT" and "run_ignores_inputs" not in b:
            verdict = {"status": "compile_error", "stage": "compile", "message": "does not build",
                       "compile_log": "error: not a program (no KEVO_TEST_ marker)",
                       "feedback": "Compile error: does not build"}
            return self.finish(req, verdict, None, misbehave=misbehave)
        codes = {"float32": "f", "float64": "d", "int32": "i", "int64": "q"}
        args = [a for a in req["task"]["args"] if a["role"] != "scalar"]
        kinds = {s["label"]: s.get("kind") for s in req["task"]["shapes"]}
        seen = []
        hidden_n = None   # KEVO_TEST_RUN_WRONG_AFTER_HIDDEN
        with open(req["files"]["in"], "rb") as f:
            data = f.read()
        result = bytearray(data)   # the out file has the in file's layout
        for call in req.get("calls", []):
            place = call["args"]
            loaded = {a["name"]: data[place[a["name"]]["offset"]:place[a["name"]]["offset"] + place[a["name"]]["bytes"]]
                      for a in args}
            seen.append({"shape": call["shape"], "trial": call["trial"], "time": call.get("time"),
                         "inputs_sha": hashlib.sha256(b"".join(loaded[a["name"]] for a in args
                                                               if a["role"] != "out")).hexdigest(),
                         "poison": [loaded[a["name"]][:8].hex() for a in args if a["role"] == "out"]})
            outs = dict(loaded)
            spoil = ("KEVO_TEST_RUN_WRONG_HIDDEN" in src and kinds.get(call["shape"]) == "hidden") or \
                    ("KEVO_TEST_RUN_WRONG_STRESS" in src and call["trial"].startswith("stress")) or \
                    ("KEVO_TEST_RUN_WRONG_TIMED" in src and call.get("time")) or \
                    re.search(r"KEVO_TEST_RUN_WRONG(?![_A-Z])", src) is not None
            spoil_by = 1
            if "KEVO_TEST_RUN_WRONG_AFTER_HIDDEN" in src:
                if kinds.get(call["shape"]) == "hidden":
                    hidden_n = max(hidden_n or 0, int(re.search(r"N=(\d+)", call["shape"]).group(1)))
                elif kinds.get(call["shape"]) == "visible" and hidden_n is not None:
                    spoil, spoil_by = True, hidden_n
            ins = [array.array(codes[a["dtype"]], loaded[a["name"]]) for a in args if a["role"] == "in"]
            for a in args:
                if a["role"] == "in":
                    continue
                code = codes[a["dtype"]]
                n = len(loaded[a["name"]]) // array.array(code).itemsize
                if "run_ignores_inputs" in b:
                    out = array.array(code, bytes(len(loaded[a["name"]])))
                else:
                    out = array.array(code, [sum(x[i % len(x)] for x in ins if len(x)) for i in range(n)])
                    if spoil and n:
                        out[min(7, n - 1)] += spoil_by
                data_out = out.tobytes()
                if "KEVO_TEST_RUN_UNWRITTEN" in src and n:
                    data_out = data_out[:-out.itemsize] + loaded[a["name"]][-out.itemsize:]
                outs[a["name"]] = data_out
            if "KEVO_TEST_RUN_MODIFY_INPUT" in src:
                first = next(a for a in args if a["role"] == "in")
                x = array.array(codes[first["dtype"]], loaded[first["name"]])
                if len(x):
                    x[0] = 42
                outs[first["name"]] = x.tobytes()
            for a in args:
                o = place[a["name"]]["offset"]
                result[o:o + len(outs[a["name"]])] = outs[a["name"]]
        if "KEVO_TEST_RUN_SHORT_FILE" in src:
            del result[-4:]
        with open(req["files"]["out"], "wb") as f:
            f.write(result)
        write_log(self.log, "run", b, program=program, calls=seen)
        verdict, timings = self.correct(req, marker_number(src, "KEVO_TEST_NS", DEFAULT_NS))
        verdict["message"] = "ran every call" + ("; %.2fx" % verdict["speedup"] if timings else "")
        verdict.pop("max_abs_error", None)
        verdict.pop("rel_l2_error", None)
        return self.finish(req, verdict, timings, misbehave=misbehave)

    def finish(self, req, verdict, timings, misbehave):
        b = self.b
        nonce = req["nonce"]
        if misbehave and "unknown_shape" in b:
            verdict, timings = self.wrong(req, "no such shape %d" % os.getpid())
        if misbehave and "unknown_failed_shape" in b:
            verdict, timings = self.runtime_error("candidate crashed (scripted)")
            verdict["failed_shape"] = "no such shape %d" % os.getpid()
        if misbehave and "leak_hidden" in b:
            hidden = self.shapes(req, "hidden") or self.shapes(req)
            verdict, timings = self.wrong(req, hidden[0]["label"], name_shape=True)
        timed_correct = verdict.get("status") == "correct" and timings is not None
        if timed_correct:
            self.stage(nonce, "timing")
            if req.get("profile"):
                verdict["profile_ncu_csv"] = SCRIPTED_NCU_CSV
        raw = None
        if misbehave and timed_correct:
            if "under_roofline" in b:
                for t in timings:
                    t["cand_median_ns"], t["cand_iqr_ns"] = 1.0, 0.0
                verdict["speedup"] = self.speedup(timings)
                verdict["message"] = "correct; %.2fx" % verdict["speedup"]
            if "negative_time" in b:
                timings[0]["cand_median_ns"] = -1000.0
                verdict.pop("speedup", None)
            if "wrong_speedup" in b:
                for t in timings:
                    t["cand_median_ns"], t["ref_median_ns"] = 1000.0, 2000.0
                verdict["speedup"] = 100.0
            if "nan_time" in b:
                verdict.pop("speedup", None)
                timings[0]["cand_median_ns"] = "nan" if b["nan_time"] == "string" else float("nan")
            if "missing_shape_timings" in b:
                timings = None
        result = {"nonce": nonce, "event": "result", "verdict": verdict}
        if timings is not None:
            result["shape_timings"] = timings
        if misbehave:
            if "unknown_key" in b:
                verdict["secret_sauce"] = "42"
            if "bad_verdict" in b:
                kind = b["bad_verdict"] or "string"
                if kind == "string":
                    result["verdict"] = "correct"
                elif kind == "status":
                    verdict["status"] = "splendid"
                elif kind == "pending":
                    verdict["status"] = "pending"
                else:
                    verdict["max_abs_error"] = "zero"
            if "no_nonce" in b:
                del result["nonce"]
            if "wrong_nonce" in b:
                result["nonce"] = "0" * 31 + ("1" if not nonce.endswith("1") else "2")
            if "garbage" in b:
                self.emit(None, raw="scripted evaluator: this line is not JSON {")
        self.emit(result, raw)
        if misbehave and "two_results" in b:
            self.emit(result, raw)
        self.answered += 1
        if misbehave and "exit_nonzero_after_result" in b:
            sys.exit(5)
        if "die_after" in b and self.answered >= int(b["die_after"] or 1):
            sys.exit(0)

    def handle(self, text):
        try:
            req = json.loads(text)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as e:
            write_log(self.log, "request", self.b, request={"unparsed": text[:4096]}, schema_errors=None)
            self.fatal("", "request is not a JSON object: %s" % e, 2)
        write_log(self.log, "request", self.b, request=req,
                  schema_errors=schema_errors(req) if self.log else None)
        self.answer(req)


def main():
    ap = argparse.ArgumentParser(description="kevo's scripted command evaluator (tests only)")
    ap.add_argument("--behaviour", "--behavior", default="honest")
    ap.add_argument("--serve", action="store_true", help="persistent mode: one request per line until EOF")
    ap.add_argument("--log")
    ap.add_argument("--compile", metavar="SRC")
    ap.add_argument("--out", metavar="DIR")
    ap.add_argument("--version", action="store_true")
    ap.add_argument("--version-tag")
    a = ap.parse_args()
    behaviours = parse_behaviours(a.behaviour)
    if a.version:
        write_log(a.log, "version", behaviours)
        print("scripted-evaluator 1" + (" " + a.version_tag if a.version_tag else ""))
        return 0
    if a.compile is not None:
        if not a.out:
            ap.error("--compile needs --out DIR")
        return compile_mode(a, behaviours)
    if "sleep_start" in behaviours:
        time.sleep(float(behaviours["sleep_start"] or 1))
    ans = Answerer(behaviours, a.log)
    if not a.serve:
        text = sys.stdin.read()
        if not text.strip():
            print("scripted evaluator: no request on stdin", file=sys.stderr)
            return 2
        ans.handle(text)
        return 0
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        if line.strip():
            ans.handle(line)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # kevo closed our stdout (killed the group, or stopped reading).
        try:
            sys.stdout = None
        finally:
            os._exit(1)
