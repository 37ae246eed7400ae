"""The AVX2 kernels of the linear sketches (row hashes, CountSketch median; common/simd.hpp) must give
bit-identical results to the portable paths: the same workload is digested here and in a subprocess
with DPSKETCH_NO_SIMD=1. (On a CPU without AVX2 both sides take the portable path.)"""

import os
import subprocess
import sys

WORKLOAD = r"""
import hashlib
import numpy as np
import dpsketch as d


def digest():
    h = hashlib.sha256()
    rng = np.random.default_rng(5)
    ints = np.concatenate([rng.zipf(1.3, 4000) % 3000, rng.integers(-2**62, 2**62, 500)]).astype(np.int64)
    strs = [f"k{i}" * (1 + i % 3) for i in ints[:1500]]
    for cls in (d.CountMin, d.CountSketch):
        for width in (1, 3, 64, 100, 512, 768):
            for depth in (1, 2, 5, 16, 17, 31, 32, 33, 40):
                for keys in (ints, strs):
                    s = cls(width, depth, seed=width * 100 + depth)
                    s.update_many(keys)
                    h.update(s.to_bytes())
                    est = s.estimate_many(keys[::7]) if keys is ints else [s.estimate(k) for k in keys[::7]]
                    h.update(np.asarray(est, dtype=np.float64).tobytes())
    for cls in (d.PrivateCountMin, d.PrivateCountSketch):
        s = cls(768, 32, epsilon=1.0, seed=3)
        s.update_many(ints)
        h.update(s.to_bytes())
        h.update(np.asarray(s.estimate_many(ints[::5]), dtype=np.float64).tobytes())
    heavy = (rng.zipf(1.3, 60000) % 5000).astype(np.int64)
    for sketch in ("countmin", "countsketch"):
        for keys in (heavy, [f"u{i}" for i in heavy]):
            hh = d.SketchHeavyHitters(sketch, k=16, capacity=64, epsilon=1.0, delta=1e-3,
                                      max_stream_length=10**5, seed=9)
            for chunk in (keys[:1000], keys[1000:]):  # a partial heap, then full
                hh.update_many(chunk)
            h.update(repr([hh.estimate(k) for k in keys[:200]]).encode())
            h.update(repr(hh.release(seed=1).to_dict()).encode())
    return h.hexdigest()
"""


def _digest_here():
    scope = {}
    exec(WORKLOAD, scope)
    return scope["digest"]()


def test_avx2_and_portable_paths_agree():
    here = _digest_here()
    env = dict(os.environ, DPSKETCH_NO_SIMD="1")
    code = WORKLOAD + "\nprint(digest())\n"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == here
