"""Exhaustive neighbour search for merged Misra-Gries / SpaceSaving summaries (docs/privacy.md
§Merged counter summaries): over all streams of length <= N on a small alphabet, all 2-way
partitions of the rows and both merge orders, remove one row and compare the merged summaries.
Reports the neighbouring pairs that break the per-stream neighbour structure PMG/DPSS rely on:
  (a) some counter moves by >= 2, or (b) counters move in both directions.
Usage: python bench/merge_neighbour_search.py [N] [capacity]"""

from __future__ import annotations

import itertools
import sys

import dpsketch as dp


def summary(cls, cap, rows, assign, order):
    parts = [cls(cap, key_type="int"), cls(cap, key_type="int")]
    for x, a in zip(rows, assign):
        parts[a].update(x)
    a, b = parts if order == 0 else parts[::-1]
    a.merge(b)
    return dict(a.items())


def violation(c, c2):
    keys = set(c) | set(c2)
    diffs = [c.get(x, 0) - c2.get(x, 0) for x in keys]
    if any(abs(d) >= 2 for d in diffs):
        return "a counter moves by >= 2"
    if any(d > 0 for d in diffs) and any(d < 0 for d in diffs):
        return "counters move in both directions"
    return None


def main(n_max=6, cap=2, alphabet=3):
    found = {}
    for cls in (dp.MisraGries, dp.SpaceSaving):
        for n in range(1, n_max + 1):
            for rows in itertools.product(range(alphabet), repeat=n):
                for assign in itertools.product((0, 1), repeat=n):
                    for order in (0, 1):
                        full = summary(cls, cap, rows, assign, order)
                        for i in range(n):  # remove row i (from whichever part holds it)
                            r2 = rows[:i] + rows[i + 1:]
                            a2 = assign[:i] + assign[i + 1:]
                            v = violation(full, summary(cls, cap, r2, a2, order))
                            if v and (cls.__name__, v) not in found:
                                found[(cls.__name__, v)] = (rows, assign, order, i, full)
    for (name, v), ex in sorted(found.items()):
        rows, assign, order, i, full = ex
        print(f"{name}: {v}: stream {rows}, parts {assign}, merge order {order}, remove row {i}")
    if not found:
        print("no violation found")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
