"""Data sets: the bundled FIMI *retail* stream, the optional GCIDE word stream, and seeded Zipf
streams like those of the papers' experiments.

``retail`` -- the FIMI "retail" market-basket data set (Brijs et al., 1999): anonymised receipts of
a Belgian supermarket, one basket per line, item ids separated by spaces, read as a stream of
integer item ids in file order (908,576 items, 16,470 distinct). Public research data set from the
FIMI repository (fimi.uantwerpen.be); shipped here as the demo data set.
"""

from __future__ import annotations

import gzip
import os
from functools import lru_cache
from pathlib import Path

import numpy as np
from ..errors import NotInstalledError, ParameterError

__all__ = ["retail", "gcide_words", "zipf", "shared_data_dir"]

_HERE = Path(__file__).resolve().parent

RETAIL_PROVENANCE = (
    "FIMI 'retail' market-basket data set (Brijs et al., 1999), anonymised receipts of a Belgian "
    "supermarket; public research data from the FIMI repository."
)


@lru_cache(maxsize=1)
def _retail_cached() -> np.ndarray:
    with gzip.open(_HERE / "retail.dat.gz", "rb") as fh:
        data = fh.read()
    arr = np.array(data.split(), dtype=np.int64)
    arr.setflags(write=False)
    return arr


def retail() -> np.ndarray:
    """The retail stream as a read-only int64 array (908,576 item ids in file order)."""
    return _retail_cached()


def shared_data_dir() -> Path | None:
    """Folder with the optional real data sets: $DPSKETCH_DATA, else ../shared/data from the
    current directory or from the source checkout; None when absent."""
    candidates = []
    if os.environ.get("DPSKETCH_DATA"):
        candidates.append(Path(os.environ["DPSKETCH_DATA"]))
    candidates.append(Path.cwd().parent / "shared" / "data")
    candidates.append(Path.cwd() / ".." / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    return None


def gcide_words(path: str | os.PathLike | None = None) -> list[str]:
    """The GCIDE lower-case word stream (5,417,136 tokens; GPL text, not shipped). Looks in
    ``path`` or :func:`shared_data_dir`; raises FileNotFoundError saying where it looked."""
    if path is None:
        d = shared_data_dir()
        if d is None or not (d / "gcide_words.txt.gz").exists():
            raise NotInstalledError(
                "gcide_words.txt.gz not found; pass path=..., or set DPSKETCH_DATA to the folder holding it"
            )
        path = d / "gcide_words.txt.gz"
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return fh.read().split()


def zipf(n: int, skew: float, universe: int = 100_000, seed: int | None = None, *, offset: int = 0) -> np.ndarray:
    """``n`` int64 items drawn i.i.d. from a Zipf law over ``universe`` values:
    P(item = offset + i) proportional to 1/(i+1)**skew for i in [0, universe). Item offset+0 is the
    most frequent. Sampling by inverse CDF (exact up to float64 rounding of the CDF)."""
    if n < 0 or universe < 1:
        raise ParameterError("n must be >= 0 and universe >= 1")
    if not np.isfinite(skew) or skew < 0:
        raise ParameterError(f"skew must be a finite number >= 0, got {skew}")
    rng = np.random.default_rng(seed)
    weights = np.arange(1, universe + 1, dtype=np.float64) ** (-float(skew))
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    u = rng.random(n)
    idx = np.searchsorted(cdf, u, side="right")
    np.minimum(idx, universe - 1, out=idx)
    return idx.astype(np.int64) + offset


def event_log(rows: int = 5_000_000, *, skew: float = 1.1, universe: int = 1_000_000, mean_rows_per_user: float = 5.0,
              heavy_users: int = 40, heavy_rows: int = 5_000, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A synthetic event log with people in it: ``(user_id, key)`` int64 arrays of ``rows`` rows,
    shuffled (a test bed for user-level privacy: a privacy unit is a user).

    Ordinary users contribute 1 + Geometric rows (mean ``mean_rows_per_user``) with keys drawn
    from a Zipf(``skew``) law over ``universe`` keys. ``heavy_users`` "bots" contribute
    ``heavy_rows`` rows each: half on a key of their own that nobody else uses (single-user keys,
    keys ``universe + i``), half on Zipf keys. Users are numbered 0.. (heavy users last)."""
    if rows < 1 or universe < 1 or heavy_users < 0 or heavy_rows < 0 or mean_rows_per_user < 1:
        raise ParameterError("rows, universe >= 1; heavy_users, heavy_rows >= 0; mean_rows_per_user >= 1")
    rng = np.random.default_rng(seed)
    heavy_total = heavy_users * heavy_rows
    if heavy_total >= rows:
        raise ParameterError("heavy_users * heavy_rows must be below rows")
    ordinary = rows - heavy_total
    # rows per ordinary user: 1 + Geometric(p) with mean 1/p = mean_rows_per_user - 1 + 1
    p = 1.0 / mean_rows_per_user
    per_user = rng.geometric(p, size=int(ordinary / mean_rows_per_user * 1.2) + 16)
    ends = np.cumsum(per_user)
    users_needed = int(np.searchsorted(ends, ordinary)) + 1
    per_user = per_user[:users_needed]
    per_user[-1] -= int(ends[users_needed - 1] - ordinary)
    user = np.repeat(np.arange(users_needed, dtype=np.int64), per_user)
    key = zipf(ordinary, skew, universe, seed=int(rng.integers(2**63)))
    if heavy_users:
        hu = np.repeat(np.arange(users_needed, users_needed + heavy_users, dtype=np.int64), heavy_rows)
        own = universe + np.repeat(np.arange(heavy_users, dtype=np.int64), heavy_rows)
        mixed = zipf(heavy_total, skew, universe, seed=int(rng.integers(2**63)))
        hk = np.where(np.tile(np.arange(heavy_rows) % 2 == 0, heavy_users), own, mixed)
        user, key = np.concatenate([user, hu]), np.concatenate([key, hk])
    order = rng.permutation(rows)
    return user[order], key[order]


def distinct_units_per_key(keys, units) -> dict:
    """{key: number of distinct units that have it}: the ground truth user-level releases are
    scored against (an exact function of the data: for evaluation, never for publication)."""
    pairs = np.unique(np.stack([np.asarray(keys), np.asarray(units)]), axis=1)
    k, n = np.unique(pairs[0], return_counts=True)
    return dict(zip(k.tolist(), n.tolist()))
