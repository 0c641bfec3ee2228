#!/usr/bin/env python3
"""Docs and scripts name only what exists (docs/architecture.md, Layout).

Scans README.md, docs/*.md, every file under scripts/ and configs/*.json for
the repository paths they name and fails, naming file and line, for each one
that does not exist.

What counts as a repository path:
  * a word starting with one of the top-level folders (configs/, scripts/,
    docs/, tests/, backends/, engine/, operators/), optionally after a shell
    variable that stands for the project root ("$src/", "${here}/../../");
    it ends at a character that cannot be part of a path; a trailing '.',
    ',', ':' or ';' and a '#anchor' are not part of it;
  * in configs/*.json: the entries of "tasks" and the values of
    "prompts_dir" and "knowledge_dir", relative to the config's folder.

Placeholders are explicit and narrow: a path segment written <name>
(configs/knowledge/<backend>.md) or holding a '*' is a pattern, and at least
one existing path must match it; NNNN stands for digits. Nothing else is
skipped.

usage: check_paths.py SOURCE_DIR [--list]
       check_paths.py --self-test WORK_DIR   (the rules above, on a made-up tree)
"""
import glob
import json
import os
import re
import sys

ROOTS = ("configs", "scripts", "docs", "tests", "backends", "engine", "operators")
# A path: a root, then path characters. Before it: start, or a character that
# cannot be inside a path, or a shell variable (the project root) and '/'
# (with '../' steps, as in "$(dirname "$0")/../../engine").
PATH_RE = re.compile(
    r"(?:(?<=^)|(?<=[^\w./$<>*{}-])|(?:\$\{?\w+\}?\)?/(?:\.\./)*))"
    r"((?:%s)/[\w./<>*+-]*)" % "|".join(ROOTS))


def files_to_scan(src):
    out = [os.path.join(src, "README.md")]
    out += sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    for d, _, names in os.walk(os.path.join(src, "scripts")):
        out += sorted(os.path.join(d, n) for n in names)
    out += sorted(glob.glob(os.path.join(src, "configs", "*.json")))
    return [f for f in out if os.path.isfile(f)]


def clean(token):
    token = token.split("#", 1)[0]
    while token and token[-1] in ".,:;":
        token = token[:-1]
    return token


def exists(src, rel):
    """rel names an existing path, or matches one when it is a pattern."""
    if "<" in rel or "*" in rel or "NNNN" in rel:
        pattern = re.sub(r"<[^>/]*>", "*", rel).replace("NNNN", "[0-9]" * 4)
        return bool(glob.glob(os.path.join(src, pattern)))
    return os.path.exists(os.path.join(src, rel))


def config_paths(path):
    """(line, path relative to the repository) of the paths a config names."""
    text = open(path, encoding="utf-8").read()
    doc = json.loads(text)
    base = os.path.dirname(path)
    found = []

    def line_of(value):
        k = text.find('"%s"' % value)
        return text.count("\n", 0, k) + 1 if k >= 0 else 0

    values = list(doc.get("tasks", []))
    llm = doc.get("llm", {})
    values += [llm[k] for k in ("prompts_dir", "knowledge_dir") if k in llm]
    for v in values:
        if isinstance(v, str) and not os.path.isabs(v):
            found.append((line_of(v), os.path.normpath(os.path.join(base, v))))
    return found


def scan(src, listing=False):
    """Returns (paths checked, 'file:line: path does not exist' lines)."""
    missing, checked = [], 0
    for f in files_to_scan(src):
        rel_file = os.path.relpath(f, src)
        try:
            lines = open(f, encoding="utf-8").read().splitlines()
        except UnicodeDecodeError:
            continue   # not text
        named = []
        for n, line in enumerate(lines, 1):
            for m in PATH_RE.finditer(line):
                token = clean(m.group(1))
                if token.rstrip("/") in ROOTS:
                    continue   # the folder itself ("tests/"), named in prose
                named.append((n, token, os.path.join(src, token)))
        if f.endswith(".json"):
            named += [(n, os.path.relpath(p, src), p) for n, p in config_paths(f)]
        for n, token, full in named:
            checked += 1
            rel = os.path.relpath(full, src)
            if listing:
                print(f"{rel_file}:{n}: {token}")
            if not exists(src, rel):
                missing.append(f"{rel_file}:{n}: {token} does not exist")
    return checked, missing


def self_test(work):
    """Every rule on a tree made up for it: what must pass and what must fail."""
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    for d in ("docs", "scripts/slurm", "configs/tasks/cpu/a", "configs/prompts", "engine/core"):
        os.makedirs(os.path.join(work, d))
    for f in ("README.md", "configs/prompts/system_cpu.md", "engine/core/x.cpp", "configs/run.json"):
        open(os.path.join(work, f), "w").close()
    with open(os.path.join(work, "docs", "a.md"), "w") as f:
        f.write("fine: `engine/core/x.cpp`, configs/prompts/system_<backend>.md and docs/a.md#anchor.\n"
                "gone: see engine/core/y.cpp.\n"
                "pattern that matches nothing: configs/knowledge/<backend>.md\n"
                "not a path: RUN_DIR/engine/z and tests/ in prose\n")
    with open(os.path.join(work, "scripts", "slurm", "job.sbatch"), "w") as f:
        f.write('exec "$here/../../engine/core/x.cpp"\n#   sbatch job.sbatch configs/nothere.json\n')
    with open(os.path.join(work, "configs", "run.json"), "w") as f:
        json.dump({"tasks": ["tasks/cpu/a", "tasks/cpu/b"], "llm": {"prompts_dir": "prompts"}}, f, indent=1)
    checked, missing = scan(work)
    want = ["docs/a.md:2: engine/core/y.cpp does not exist",
            "docs/a.md:3: configs/knowledge/<backend>.md does not exist",
            "scripts/slurm/job.sbatch:2: configs/nothere.json does not exist",
            "configs/run.json:4: configs/tasks/cpu/b does not exist"]
    if sorted(missing) != sorted(want) or checked != 10:
        print(f"self-test: {checked} checked (wanted 10), missing:\n  " + "\n  ".join(missing) +
              "\nwanted:\n  " + "\n  ".join(want))
        return 1
    print("self-test ok")
    return 0


def main():
    if sys.argv[1] == "--self-test":
        return self_test(os.path.abspath(sys.argv[2]))
    checked, missing = scan(os.path.abspath(sys.argv[1]), "--list" in sys.argv[2:])
    for m in missing:
        print(m)
    print(f"{checked} path(s) named, {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
