"""Brute-force O(capacity)-per-update references written straight from docs/algorithms.md §2 and §3.
They share no code with the native implementation; tests compare full internal state."""

from __future__ import annotations


class RefSpaceSaving:
    """§3: tracked -> +1; free slot -> insert with 1; else evict, among minimum-count items, the
    one whose most recent occurrence is latest; newcomer gets c_min + 1."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.slots = []  # [key, count, last_time]
        self.t = 0

    def update(self, x):
        self.t += 1
        for s in self.slots:
            if s[0] == x:
                s[1] += 1
                s[2] = self.t
                return
        if len(self.slots) < self.capacity:
            self.slots.append([x, 1, self.t])
            return
        cmin = min(s[1] for s in self.slots)
        victim = max((s for s in self.slots if s[1] == cmin), key=lambda s: s[2])
        victim[:] = [x, cmin + 1, self.t]

    def state(self):
        """Counts ascending; within a count, most recent occurrence first."""
        return [(k, c) for k, c, _ in sorted(self.slots, key=lambda s: (s[1], -s[2]))]


class RefMisraGries:
    """§2 (Lebeda-Tetek): stored -> +1 (also from 0); else a zero slot -> take the one that reached
    0 most recently (ties: incremented most recently; never-used slots last, lowest index first);
    else decrement every counter and drop x. Keys at count 0 stay stored until reused."""

    NEVER = float("-inf")

    def __init__(self, capacity):
        self.slots = [
            {"key": None, "count": 0, "zero_time": self.NEVER, "last": self.NEVER, "idx": i}
            for i in range(capacity)
        ]
        self.t = 0

    def update(self, x):
        self.t += 1
        for s in self.slots:
            if s["key"] is not None and s["key"] == x:
                s["count"] += 1
                s["last"] = self.t
                return
        zeros = [s for s in self.slots if s["count"] == 0]
        if zeros:
            s = max(zeros, key=lambda s: (s["zero_time"], s["last"], -s["idx"]))
            s.update(key=x, count=1, last=self.t)
            return
        for s in self.slots:
            s["count"] -= 1
            if s["count"] == 0:
                s["zero_time"] = self.t

    def state(self):
        pos = sorted((s for s in self.slots if s["count"] > 0), key=lambda s: (s["count"], -s["last"]))
        zero = sorted(
            (s for s in self.slots if s["count"] == 0 and s["key"] is not None),
            key=lambda s: (-s["zero_time"], -s["last"], s["idx"]),
        )
        return [(s["key"], s["count"]) for s in pos] + [(s["key"], 0) for s in zero]
