"""An independent numpy implementation of the dyadic CountSketch hierarchy (docs/algorithms.md §6),
from the documented hashing (cpp/include/dpsketch/dyadic/prefix_hash.hpp): used by the tests to
check the C++ cells bit for bit, and by bench/bench_dyadic.py as the vectorised-numpy baseline."""

from __future__ import annotations

import math

import numpy as np

M64 = 2**64 - 1


def splitmix64(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    return k ^ (k >> 33)


def row_params(seed: int, level: int, row: int) -> tuple[int, int, int, int]:
    """(a_lo, a_hi, b_lo, b_hi) of RowHash::make(seed, level, row)."""
    state = seed ^ fmix64((level << 32) | (row + 1))
    out = []
    for _ in range(4):
        state, v = splitmix64(state)
        out.append(v)
    return out[0], out[1], out[2], out[3]


def exact_levels(bits: int, width: int, depth: int) -> int:
    e = 0
    while e < bits and 2 ** (e + 1) <= width * depth:
        e += 1
    return e


class NumpyDyadic:
    """Same cells as DyadicCountSketch(bits, width, depth) with hash seed `seed`, levels <= 32 bits
    for the sketch levels (the narrow hash); built with vectorised numpy: per level one shift, per
    row the hash as whole-array uint64 operations and one integer bincount."""

    def __init__(self, bits: int, width: int, depth: int, seed: int):
        self.bits, self.width, self.depth = bits, width, depth
        self.exact = exact_levels(bits, width, depth)
        if bits > 32 and bits > self.exact:
            raise ValueError("the numpy reference implements the narrow (<= 32-bit prefix) hash only")
        self.levels = []
        self.params = {}
        for j in range(1, bits + 1):
            if j <= self.exact:
                self.levels.append(np.zeros(2**j, dtype=np.int64))
            else:
                self.levels.append(np.zeros((depth, width), dtype=np.int64))
                for i in range(depth):
                    a_lo, _, b_lo, _ = row_params(seed, j, i)
                    self.params[j, i] = (np.uint64(a_lo), np.uint64(b_lo))

    def update_many(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.uint64)
        w = np.uint64(self.width)
        one, s32, s31 = np.uint64(1), np.uint64(32), np.uint64(31)
        for j in range(1, self.bits + 1):
            p = x >> np.uint64(self.bits - j)
            cells = self.levels[j - 1]
            if j <= self.exact:
                cells += np.bincount(p.astype(np.int64), minlength=2**j)
                continue
            for i in range(self.depth):
                a, b = self.params[j, i]
                with np.errstate(over="ignore"):
                    h = (a * p + b) >> s32  # wraps mod 2^64 like the C++
                # signed bincount without float weights: count (column, sign bit) pairs, then
                # cell = #(+1) - #(-1) (measured ~2x faster than bincount with weights)
                key = ((((h >> one) * w) >> s31) << one) | (h & one)
                c = np.bincount(key.astype(np.int64), minlength=2 * self.width)
                cells[i] += c[1::2] - c[0::2]

    def rank(self, pos: int) -> float:
        r = 0.0
        for j in range(1, self.bits + 1):
            p = pos >> (self.bits - j)
            if p & 1:
                r += self.node(j, p - 1)
        return r

    def node(self, j: int, prefix: int) -> float:
        cells = self.levels[j - 1]
        if j <= self.exact:
            return float(cells[prefix])
        v = []
        for i in range(self.depth):
            a, b = (int(t) for t in self.params[j, i])
            h = ((a * prefix + b) & M64) >> 32
            sign = 1 if h & 1 else -1
            v.append(sign * int(cells[i, ((h >> 1) * self.width) >> 31]))
        return float(np.median(v))

    @staticmethod
    def zhao(bits: int, gamma: float) -> tuple[int, int]:
        lg = math.log(bits / gamma)
        return math.ceil(math.sqrt(bits * lg) / gamma), math.ceil(lg)
