#!/usr/bin/env python3
"""Reads a lineage file repeatedly while a run writes it (h5py, plain
read-only open; the writer keeps the file closed between flushes). Exits 0
when it saw the row count grow across at least two successful reads and no
read returned inconsistent data.

usage: live_reader.py H5FILE PIDFILE_OR_SECONDS
"""
import os
import sys
import time

import h5py


def main():
    path, seconds = sys.argv[1], float(sys.argv[2])
    deadline = time.time() + seconds
    seen, errors, ok_reads = [], 0, 0
    while time.time() < deadline:
        if os.path.exists(path):
            try:
                with h5py.File(path, "r") as f:
                    rows = f["candidates"][:]
                    ids = rows["id"]
                    written = ids[ids != 2**64 - 1]
                    if len(set(written.tolist())) != len(written):
                        print("inconsistent: duplicate ids in a snapshot")
                        sys.exit(1)
                    seen.append(len(written))
                    ok_reads += 1
            except (OSError, KeyError) as e:
                # The writer holds the file for a moment during a flush.
                errors += 1
        time.sleep(0.3)
    grew = len(seen) >= 2 and seen[-1] > seen[0]
    monotonic = all(b >= a for a, b in zip(seen, seen[1:]))
    print(f"reads ok {ok_reads}, busy {errors}, rows {seen[:3]}...{seen[-3:]}")
    if not (grew and monotonic):
        print("FAILED: row count did not grow monotonically while the run was writing")
        sys.exit(1)


if __name__ == "__main__":
    main()
