#!/usr/bin/env python3
"""Training data from one kevo run's lineage (docs/export.md).

    kevo_export.py RUN_DIR [--format jsonl] [--out FILE] [--correct-only]
                   [--min-speedup P] [--dedupe]
                   [--reward speedup|log_speedup|binary|none] [--fail-reward R]
                   [--include repairs,generations,analyses] [--keep-special-tokens]

Reads RUN_DIR/lineage/rank-*.h5 (docs/lineage.md): the candidate rows and
the `llm` events, one per LLM request. Writes one JSON object per line in the
chat format SFT and RL trainers read:

    {"messages": [{"role": ..., "content": ...}, ...],   # prompt as sent, then the reply
     "kevo": {"run", "rank", "candidate", "task", "operator", "parents", "status",
              "speedup", "model", "purpose", "reward", "source_sha256", ...}}

Record kinds (--include): generations (one per LLM-made candidate, its
generate request), repairs (one per llm_fix repair chain: the whole
multi-turn conversation, the last turn's candidate its outcome, with
"chain": the candidate of each turn), analyses (the performance reviews of
llm_analyst, the candidate that followed them their outcome).

Every string of a record is scrubbed of what looks like a credential
(authorization headers, bearer tokens, sk-... keys, the values of the
config's api_key_env variables where they are set here), although the
lineage never holds one.

The messages' contents hold what candidates wrote (their sources, output
and errors quoted in later prompts), so the control strings of chat
templates in them (<|im_start|>, <|eot_id|> and every other <|...|>,
[INST], <<SYS>>, <start_of_turn>, ...) are broken with a zero-width space
after their first character: a trainer whose tokenizer reads special tokens
in text would otherwise see a turn the candidate forged.
--keep-special-tokens leaves them as they are.

Exit status: 0 done; 2 RUN_DIR has no lineage, a file cannot be read or
written, or an option is bad (the message names it); 1 anything else.
A one-line summary goes to stderr.
"""
import argparse
import glob
import hashlib
import json
import math
import os
import re
import sys
import time

PROG = "kevo export"
NO_ID = 2**64 - 1
KINDS = ("repairs", "generations", "analyses")
DEFAULT_INCLUDE = "repairs,generations"
REWARDS = ("speedup", "log_speedup", "binary", "none")
# Verdicts that judge the candidate a failure (docs/verdicts.md). The others:
# correct; duplicate (takes its original's outcome); lost, pending and
# internal_error (no verdict on the candidate: no reward).
FAILED = ("wrong_answer", "compile_error", "runtime_error", "timeout", "memory_limit", "output_limit",
          "invalid", "forbidden")
REDACTED = "[REDACTED]"


class ExportError(Exception):
    """Bad input: exit 2 with this message."""


# ---------------------------------------------------------------- scrubbing

_SECRET_PATTERNS = [
    # Authorization: Bearer xyz / Authorization: Basic xyz / "authorization": "xyz"
    (re.compile(r'(?i)(\bauthorization\b["\']?\s*[:=]\s*["\']?\s*)(?:(bearer|basic|token)\s+)?[^\s"\',;]+'),
     lambda m: m.group(1) + ((m.group(2) + " ") if m.group(2) else "") + REDACTED),
    # x-api-key: xyz, api_key=xyz, "apiKey": "xyz", x-goog-api-key ...
    (re.compile(r'(?i)(\b(?:x-api-key|x-goog-api-key|api[-_ ]?key|access[-_]?token|secret[-_]?key)\b["\']?'
                r'\s*[:=]\s*["\']?)[^\s"\',;]+'),
     lambda m: m.group(1) + REDACTED),
    # Bearer tokens anywhere
    (re.compile(r'(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}'), lambda m: m.group(1) + REDACTED),
    # OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-...
    (re.compile(r'\bsk-[A-Za-z0-9_\-]{6,}'), lambda m: REDACTED),
    # Other common token shapes: GitHub, Hugging Face, AWS access key ids, Google API keys
    (re.compile(r'\b(?:gh[pousr]_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,})'),
     lambda m: REDACTED),
]


# Chat templates' control strings: <|...|> (ChatML, Llama 3, Phi, ...),
# [INST] / [/INST] and <<SYS>> / <</SYS>> (Llama 2, Mistral), Gemma's turns.
# Not <s> and </s>, which C++ templates may spell (a trainer that reads
# special tokens in text should be told split_special_tokens).
_SPECIAL_TOKENS = re.compile(r"<\|[A-Za-z0-9_./:-]{0,64}\|>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>")
_ZWSP = "\u200b"


class SpecialTokens:
    """Breaks chat templates' control strings in message contents."""

    def __init__(self, keep=False):
        self.keep = keep
        self.count = 0

    def _break(self, m):
        self.count += 1
        t = m.group(0)
        return t[0] + _ZWSP + t[1:]

    def record(self, rec):
        if not self.keep:
            for msg in rec["messages"]:
                msg["content"] = _SPECIAL_TOKENS.sub(self._break, msg["content"])
        return rec


class Scrubber:
    def __init__(self, literals=()):
        self.literals = sorted({s for s in literals if s and len(s) >= 8}, key=len, reverse=True)
        self.count = 0

    def text(self, s):
        for lit in self.literals:
            if lit in s:
                self.count += s.count(lit)
                s = s.replace(lit, REDACTED)
        for pat, repl in _SECRET_PATTERNS:
            s, n = pat.subn(repl, s)
            self.count += n
        return s

    def value(self, v):
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        return v


# ---------------------------------------------------------------- reading

def _decode(s):
    if isinstance(s, bytes):
        return s.decode("utf-8", errors="replace")
    return str(s)


def _read_rank(f, path):
    """Rows by id, llm events (id, record) in file order, tasks, config of one rank file."""
    import h5py

    for name in ("candidates", "events", "text", "tasks"):
        if name not in f:
            raise ExportError("%s: not a kevo lineage file (no /%s)" % (path, name))
    cand = f["candidates"]
    text = f["text"]
    status_names = {v: k for k, v in h5py.check_enum_dtype(cand.dtype["status"]).items()}
    kinds = h5py.check_enum_dtype(f["events"].dtype["kind"])
    tasks = [_decode(t) for t in f["tasks"][:]]
    n_text = text.shape[0]
    cache = {}

    def t(i):
        i = int(i)
        if i < 0 or i >= n_text:
            return None
        if i not in cache:
            cache[i] = _decode(text[i])
        return cache[i]

    rank = int(f.attrs.get("rank", 0))
    rows = {}
    for r in cand[:]:
        if int(r["id"]) == NO_ID:
            continue
        src = t(r["source"])
        task_i = int(r["task"])
        rows[int(r["id"])] = {
            "id": int(r["id"]),
            "task": tasks[task_i] if 0 <= task_i < len(tasks) else str(task_i),
            "op": r["op"].split(b"\0")[0].decode("utf-8", errors="replace"),
            "status": status_names.get(int(r["status"]), str(int(r["status"]))),
            "parents": [int(p) for p in (r["parent0"], r["parent1"]) if int(p) >= 0],
            "duplicate_of": int(r["duplicate_of"]),
            "speedup": float(r["speedup"]),
            "source_sha256": hashlib.sha256(src.encode("utf-8")).hexdigest() if src is not None else None,
            "rank": int(r["rank"]),
            "origin_rank": int(r["origin_rank"]),
        }
    events, bad = [], 0
    llm_kind = kinds.get("llm")
    for e in f["events"][:]:
        if float(e["time"]) == -1 or int(e["kind"]) != llm_kind:
            continue
        raw = t(e["text"])
        try:
            rec = json.loads(raw) if raw is not None else None
        except ValueError:
            rec = None
        if not isinstance(rec, dict):
            bad += 1
            continue
        events.append((int(e["id"]), rec))
    config = f.attrs.get("config", "{}")
    try:
        config = json.loads(_decode(config))
    except ValueError:
        config = {}
    return {"path": path, "rank": rank, "rows": rows, "events": events, "bad_events": bad, "config": config}


def read_lineage(run_dir, tries=40):
    """Every rank file of RUN_DIR, read without blocking a writer (docs/lineage.md)."""
    try:
        import h5py  # noqa: F401
    except ImportError as e:
        raise ExportError("this Python (%s) lacks h5py: %s (pass another with kevo export --python P)"
                          % (sys.executable, e))
    import h5py

    if not os.path.exists(run_dir):
        raise ExportError("%s: no such run directory" % run_dir)
    if not os.path.isdir(run_dir):
        raise ExportError("%s: not a directory" % run_dir)
    paths = sorted(glob.glob(os.path.join(glob.escape(run_dir), "lineage", "rank-*.h5")))
    if not paths:
        raise ExportError("%s: no lineage (no lineage/rank-*.h5; is it a run directory made by `kevo run`?)"
                          % os.path.join(run_dir, "lineage"))
    ranks = []
    for path in paths:
        if not os.access(path, os.R_OK):
            raise ExportError("%s: cannot read the file (permission denied)" % path)
        last = None
        for _ in range(tries):
            try:
                with h5py.File(path, "r", swmr=True, locking=False) as f:
                    ranks.append(_read_rank(f, path))
                break
            except ExportError:
                raise
            except (OSError, KeyError, ValueError, TypeError) as e:
                last = e
                time.sleep(0.05)
        else:
            raise ExportError("%s: cannot read the lineage file: %s" % (path, last))
    return ranks


# ---------------------------------------------------------------- records

def reward_of(kind, status, speedup, fail_reward):
    """The reward of an outcome (docs/export.md#rewards); None where none is defined."""
    if kind == "none":
        return None
    if status == "correct":
        if kind == "binary":
            return 1.0
        if speedup is None:
            return None
        if kind == "speedup":
            return speedup
        return math.log(speedup) if speedup > 0 else None
    if status in FAILED:
        return {"binary": 0.0, "speedup": 0.0, "log_speedup": fail_reward}[kind]
    return None


def _finite(x):
    return x if x is not None and math.isfinite(x) else None


def _messages(rec):
    prompt = rec.get("prompt")
    reply = rec.get("reply")
    if not isinstance(prompt, list) or not isinstance(reply, str) or not reply:
        return None
    msgs = []
    for m in prompt:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            return None
        role = m.get("role")
        if role not in ("system", "user", "assistant"):
            return None
        msgs.append({"role": role, "content": m["content"]})
    msgs.append({"role": "assistant", "content": reply})
    return msgs


class Exporter:
    def __init__(self, ranks, run_name, args):
        self.ranks = ranks
        self.run = run_name
        self.args = args
        self.rows = {}      # id -> row (the origin rank's row first)
        for r in ranks:
            for cid, row in r["rows"].items():
                prev = self.rows.get(cid)
                if prev is None or (row["rank"] == row["origin_rank"] and prev["rank"] != prev["origin_rank"]):
                    self.rows[cid] = row
        self.skipped = sum(r["bad_events"] for r in ranks)

    def outcome(self, row):
        """(status, speedup, reward, duplicate_of) of a candidate."""
        status = row["status"]
        speedup = _finite(row["speedup"]) if status == "correct" else None
        judged, seen = row, set()
        while judged["status"] == "duplicate" and judged["duplicate_of"] >= 0 and judged["id"] not in seen:
            seen.add(judged["id"])
            nxt = self.rows.get(judged["duplicate_of"])
            if nxt is None:
                break
            judged = nxt
        jspeed = _finite(judged["speedup"]) if judged["status"] == "correct" else None
        reward = reward_of(self.args.reward, judged["status"], jspeed, self.args.fail_reward)
        dup = row["duplicate_of"] if status == "duplicate" and row["duplicate_of"] >= 0 else None
        return status, speedup, reward, dup

    def meta(self, rank, row, rec, purpose):
        status, speedup, reward, dup = self.outcome(row)
        m = {"run": self.run, "rank": rank, "candidate": row["id"], "task": row["task"], "operator": row["op"],
             "parents": row["parents"], "status": status, "speedup": speedup, "model": rec.get("model"),
             "purpose": purpose, "reward": reward, "source_sha256": row["source_sha256"]}
        if dup is not None:
            m["duplicate_of"] = dup
        return m

    def records(self):
        """(sort key, record) of every record of the included kinds; counts skipped requests."""
        include = self.args.include
        out = []
        for r in self.ranks:
            by_id = {}
            repairs = {}  # candidate id -> its repair request
            for cid, rec in r["events"]:
                by_id.setdefault(cid, []).append(rec)
            for cid, recs in by_id.items():
                row = r["rows"].get(cid) or self.rows.get(cid)
                if row is None:
                    self.skipped += len(recs)
                    continue
                gen = None
                for i, rec in enumerate(recs):
                    purpose = rec.get("purpose")
                    msgs = _messages(rec)
                    if purpose == "repair":
                        if msgs is not None:
                            repairs[cid] = (rec, msgs)
                        else:
                            self.skipped += 1
                    elif purpose == "analyse":
                        if msgs is None:
                            self.skipped += 1
                        elif "analyses" in include:
                            out.append(((cid, 0, i), {"messages": msgs,
                                                       "kevo": self.meta(r["rank"], row, rec, "analyse")}))
                    elif purpose == "generate":
                        if msgs is None:
                            self.skipped += 1
                        else:
                            gen = (i, rec, msgs)
                    else:
                        self.skipped += 1
                if gen is not None and "generations" in include:
                    i, rec, msgs = gen
                    out.append(((cid, 1, i), {"messages": msgs, "kevo": self.meta(r["rank"], row, rec, "generate")}))
            if "repairs" in include:
                out.extend(self.chains(r, repairs))
        out.sort(key=lambda x: x[0])
        return [rec for _, rec in out]

    def chains(self, r, repairs):
        """One record per repair chain: the conversation up to a repair no other repair continues."""
        continued = set()
        for rec, _ in repairs.values():
            ro = rec.get("repair_of")
            if isinstance(ro, int):
                continued.add(ro)
        out = []
        for leaf, (rec, msgs) in repairs.items():
            if leaf in continued:
                continue
            chain, cur, seen = [leaf], rec, {leaf}
            while True:
                ro = cur.get("repair_of")
                if not isinstance(ro, int) or ro in seen:
                    break
                chain.append(ro)
                seen.add(ro)
                if ro not in repairs:
                    break
                cur = repairs[ro][0]
            chain.reverse()
            row = r["rows"].get(leaf) or self.rows[leaf]
            meta = self.meta(r["rank"], row, rec, "repair")
            meta["chain"] = chain
            meta["repair_turn"] = rec.get("repair_turn")
            turns = []
            for cid in chain:
                crow = self.rows.get(cid)
                if crow is None:
                    turns.append({"candidate": cid, "status": None, "speedup": None, "reward": None})
                    continue
                status, speedup, reward, _ = self.outcome(crow)
                turns.append({"candidate": cid, "status": status, "speedup": speedup, "reward": reward})
            meta["turns"] = turns
            out.append(((leaf, 2, 0), {"messages": msgs, "kevo": meta}))
        return out


# ---------------------------------------------------------------- main

def _include(value):
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError("%r: a comma-separated list of %s" % (value, ", ".join(KINDS)))
    return set(kinds)


def _number(value):
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % value)
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError("%r is not a finite number" % value)
    return x


def parse_args(argv):
    ap = argparse.ArgumentParser(prog=PROG, description="Training data (JSONL chat records) from a run's lineage "
                                 "(docs/export.md)")
    ap.add_argument("run_dir", metavar="RUN_DIR", help="run directory written by kevo run")
    ap.add_argument("--format", choices=("jsonl",), default="jsonl", help="output format (jsonl)")
    ap.add_argument("--out", metavar="FILE", help="output file (default: stdout)")
    ap.add_argument("--correct-only", action="store_true", help="only records whose outcome is correct")
    ap.add_argument("--min-speedup", type=_number, metavar="P",
                    help="only correct records with speedup > P (implies --correct-only)")
    ap.add_argument("--dedupe", action="store_true", help="keep the first record per candidate source hash")
    ap.add_argument("--keep-special-tokens", action="store_true",
                    help="leave chat templates' control strings (<|im_end|>, [INST], ...) in message contents as "
                         "they are (default: broken with a zero-width space)")
    ap.add_argument("--reward", choices=REWARDS, default="log_speedup", help="reward (default log_speedup)")
    ap.add_argument("--fail-reward", type=_number, default=-1.0, metavar="R",
                    help="log_speedup reward of a failed candidate (default -1)")
    ap.add_argument("--include", type=_include, default=_include(DEFAULT_INCLUDE), metavar="KINDS",
                    help="record kinds: repairs,generations,analyses (default %s)" % DEFAULT_INCLUDE)
    return ap.parse_args(argv)


def key_literals(ranks):
    """Values of the api_key_env variables the run's config names, where this environment has them."""
    names = set()
    for r in ranks:
        models = ((r["config"] or {}).get("llm") or {}).get("models") or []
        for m in models:
            if isinstance(m, dict) and isinstance(m.get("api_key_env"), str) and m["api_key_env"]:
                names.add(m["api_key_env"])
    return [os.environ[n] for n in names if os.environ.get(n)]


def main(argv=None):
    args = parse_args(argv)
    try:
        ranks = read_lineage(args.run_dir)
        run_name = os.path.basename(os.path.normpath(os.path.abspath(args.run_dir)))
        ex = Exporter(ranks, run_name, args)
        records = ex.records()
        scrub = Scrubber(key_literals(ranks))
        special = SpecialTokens(args.keep_special_tokens)
        correct_only = args.correct_only or args.min_speedup is not None
        kept, filtered, seen = [], 0, set()
        for rec in records:
            k = rec["kevo"]
            if correct_only and k["status"] != "correct":
                filtered += 1
                continue
            if args.min_speedup is not None and not (k["speedup"] is not None and k["speedup"] > args.min_speedup):
                filtered += 1
                continue
            if args.dedupe:
                h = k["source_sha256"] or "reply:" + hashlib.sha256(
                    rec["messages"][-1]["content"].encode("utf-8")).hexdigest()
                if h in seen:
                    filtered += 1
                    continue
                seen.add(h)
            kept.append(special.record(scrub.value(rec)))
        lines = [json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n" for rec in kept]
        data = "".join(lines).encode("utf-8")
        if args.out:
            try:
                with open(args.out, "wb") as f:
                    f.write(data)
            except OSError as e:
                raise ExportError("%s: cannot write: %s" % (args.out, e.strerror or e))
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
    except ExportError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    chains = sum(1 for r in kept if r["kevo"]["purpose"] == "repair")
    print("%s: %d records written (%d repair chains) from %s, %d filtered out, %d requests skipped "
          "(no usable reply), %d secrets scrubbed, %d chat-template control strings broken"
          % (PROG, len(kept), chains, args.run_dir, filtered, ex.skipped, scrub.count, special.count), file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
