"""A real stream over a 32-bit universe, standing in for Zhao et al.'s CAIDA source IPs (the CAIDA
traces cannot be redistributed): the GCIDE word tokens in stream order, each hashed to 32 bits.

The hash is the first 4 bytes (little-endian) of BLAKE2b of the token's UTF-8 bytes: fixed,
documented and platform independent, so the stream is the same on every machine. Two distinct
words collide with probability 2^-32; among D distinct words the expected number of colliding pairs
is D^2 / 2^33 (about 0.01 for the ~10^4 distinct words of a 10^5-token window). All metrics are
computed on the hashed stream itself, so a collision would merge two words' counts but not bias
the comparison.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np
from dpsketch.errors import ParameterError

__all__ = ["GCIDE_FILE", "REAL_DATASET", "REAL_STREAM", "find_gcide", "gcide_hashed32", "gcide_windows", "hash32"]

GCIDE_FILE = "gcide_words.txt.gz"
REAL_DATASET = "gcide32"
# How the stream is described in run_info.json (one place for every experiment that uses it).
REAL_STREAM = (f"{REAL_DATASET}: GCIDE word tokens in stream order, each hashed to 32 bits "
               "(BLAKE2b, first 4 bytes); repeat r = tokens [r*n, (r+1)*n)")


def hash32(token: str) -> int:
    """The 32-bit value a token maps to (BLAKE2b, first 4 bytes, little-endian)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "little")


def find_gcide(data=None) -> Path | None:
    """The GCIDE word file: ``data`` (a folder holding it, or the file), else the shared data folder
    (``DPSKETCH_DATA`` or ``../shared/data``); None when absent."""
    if data is not None:
        p = Path(data)
        p = p / GCIDE_FILE if p.is_dir() else p
        return p if p.exists() else None
    from dpsketch import datasets

    d = datasets.shared_data_dir()
    if d is None or not (d / GCIDE_FILE).exists():
        return None
    return d / GCIDE_FILE


def gcide_hashed32(count: int, data=None) -> np.ndarray | None:
    """The first ``count`` GCIDE tokens, in stream order, hashed to 32 bits (int64 array). Reads
    only as much of the file as needed. None when the file is absent; ValueError when it holds fewer
    than ``count`` tokens."""
    path = find_gcide(data)
    if path is None:
        return None
    out = np.empty(int(count), dtype=np.int64)
    cache: dict[str, int] = {}
    i = 0
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            for tok in line.split():
                if i == count:
                    return out
                v = cache.get(tok)
                if v is None:
                    v = cache[tok] = hash32(tok)
                out[i] = v
                i += 1
    if i < count:
        raise ParameterError(f"{path.name} holds {i} tokens, fewer than the {count} the experiment needs")
    return out


def gcide_windows(n: int, repeats: int, data=None, who: str = "experiment") -> list[np.ndarray]:
    """``repeats`` disjoint windows of ``n`` hashed tokens (repeat r = tokens [r*n, (r+1)*n)), or []
    with a note on stderr when the GCIDE file is absent."""
    real = gcide_hashed32(n * repeats, data)
    if real is None:
        from ._common import log

        log(f"{who}: {GCIDE_FILE} not found (pass --data DIR or set DPSKETCH_DATA); skipping the real stream")
        return []
    return [real[r * n:(r + 1) * n] for r in range(repeats)]
