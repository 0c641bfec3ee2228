"""Reads rank 0's lineage of a run for the LLM tests (docs/lineage.md):
the candidate rows, the `llm` event records and the notes.

    rows, llm, notes, manifests = read(run_dir)

rows: dicts with id, parent0, parent1, op, status (its name), source,
speedup, message, note (the operator's note) and params (the point's JSON
text, "" without one), in id order; llm: (id,
record) pairs, the record parsed from its JSON; notes: the texts of `note`
events; manifests: the task manifests the file carries.
replay_difference(a, b): "" or how two runs' rows differ in what a replay
reproduces (REPLAYED).
"""
import json

import h5py

# What a replay must reproduce of each candidate row.
REPLAYED = ("id", "parent0", "parent1", "op", "status", "source", "speedup")

NO_ID = 2**64 - 1


def read(run_dir):
    with h5py.File(run_dir + "/lineage/rank-0000.h5", "r") as f:
        text = f["text"]
        status = {v: k for k, v in h5py.check_enum_dtype(f["candidates"].dtype["status"]).items()}
        kinds = h5py.check_enum_dtype(f["events"].dtype["kind"])

        def t(i):
            if i < 0:
                return ""
            s = text[i]
            return s.decode() if isinstance(s, bytes) else s

        rows = [{"id": int(r["id"]), "parent0": int(r["parent0"]), "parent1": int(r["parent1"]),
                 "op": r["op"].decode().rstrip("\0"), "status": status[r["status"]], "source": t(r["source"]),
                 "speedup": float(r["speedup"]), "message": t(r["message"]), "note": t(r["op_note"]),
                 "params": t(r["params"])}
                for r in f["candidates"][:] if r["id"] != NO_ID]
        llm, notes = [], []
        for e in f["events"][:]:
            if e["kind"] == kinds["llm"]:
                llm.append((int(e["id"]), json.loads(t(e["text"]))))
            elif e["kind"] == kinds["note"]:
                notes.append(t(e["text"]))
        manifests = json.loads(f.attrs["task_manifests"])
    rows.sort(key=lambda r: r["id"])
    return rows, llm, notes, manifests


def replay_difference(a, b):
    """"" when the rows `a` and `b` agree on REPLAYED, else the first
    difference (without the sources) or the counts."""
    pa = [{k: r[k] for k in REPLAYED} for r in a]
    pb = [{k: r[k] for k in REPLAYED} for r in b]
    if pa == pb:
        return ""
    for x, y in zip(pa, pb):
        if x != y:
            return "first difference: %s vs %s" % ({k: v for k, v in x.items() if k != "source"},
                                                   {k: v for k, v in y.items() if k != "source"})
    return "%d vs %d candidates" % (len(pa), len(pb))


NOT_JUDGED = {"pending", "duplicate", "invalid", "lost"}


def per_op_statuses(rows, show=True):
    """{operator: {status: count}}; printed one line per operator when `show`."""
    per_op = {}
    for r in rows:
        per_op.setdefault(r["op"], {}).setdefault(r["status"], 0)
        per_op[r["op"]][r["status"]] += 1
    if show:
        for op, st in sorted(per_op.items()):
            print("  %-14s %s" % (op, dict(sorted(st.items()))))
    return per_op


def unjudged_operators(per_op, ops):
    """The operators of `ops` that made no child that was judged."""
    return [op for op in ops if not any(s not in NOT_JUDGED for s in per_op.get(op, {}))]


def repair_chains(rows, llm):
    """(repairs, by_status): the llm records of repair turns as (id, record),
    and those records by the status of the candidate each repaired; raises
    ValueError when a repair names a candidate that did not fail."""
    by_id = {r["id"]: r for r in rows}
    repairs = [(i, r) for i, r in llm if r.get("purpose") == "repair"]
    by_status = {}
    for i, r in repairs:
        broken = by_id.get(r.get("repair_of"))
        # (runtime_error and forbidden: a torch task's tracebacks and calls of
        # the reference's own operations are repaired too)
        if broken is None or broken["status"] not in ("compile_error", "wrong_answer", "runtime_error", "forbidden"):
            raise ValueError("repair %d names candidate %s, which did not fail: %s"
                             % (i, r.get("repair_of"), broken and broken["status"]))
        by_status.setdefault(broken["status"], []).append((i, r))
    return repairs, by_status
