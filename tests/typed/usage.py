"""A typed user of the public API: ``mypy --strict`` must accept this file against the installed
package (py.typed + the checked-in stubs of dpsketch._core). Checked by tests/api/test_typing.py;
never imported by pytest (it draws real noise)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

import dpsketch
from dpsketch import Budget, Release
from dpsketch.errors import BudgetExceededError, BudgetFileError
from dpsketch.accounting import FileBudget, PrivacyTotals, Spend


def counters(stream: np.ndarray) -> list[str]:
    ss = dpsketch.SpaceSaving(64)
    ss.update_many(stream)
    ss.update(3)
    top = ss.items()
    low: int = ss.min_count()
    mg = dpsketch.MisraGries(64, key_type="str")
    mg.update("a")
    blob: bytes = ss.to_bytes()
    again: dpsketch.SpaceSaving = dpsketch.SpaceSaving.from_bytes(blob)
    est: int | float = again.estimate(3)
    budget = Budget(1.0, 1e-6)
    rel: Release = ss.release(epsilon=0.5, delta=1e-7, k=8, cut=None, budget=budget)
    two: Release = dpsketch.heavy_hitters(stream, k=8, epsilon=0.5, delta=1e-7, passes=2, cut="n/k")
    rel2: Release = mg.release(epsilon=0.25, delta=1e-7, budget=budget)
    spent: PrivacyTotals = budget.spent()
    left: float | None = budget.remaining().epsilon
    ledger: list[Spend] = budget.ledger
    _ = (top, low, est, rel2, two, spent, left, ledger, len(ss), ss.n, ss.capacity)
    return [rel.mechanism, rel.to_json()]


def sketches(stream: np.ndarray) -> float:
    cm = dpsketch.CountMin(1024, 4, seed=1)
    cm.update_many(stream)
    cells: np.ndarray = cm.cells()
    b = Budget(rho=1.0)
    pcm = dpsketch.PrivateCountMin(1024, 4, rho=0.5, budget=b)
    pcs = dpsketch.PrivateCountSketch(1024, 4, epsilon=1.0, budget=b)
    pcm.update_many(stream)
    published: dpsketch.PrivateCountMin = pcm.release().sketch
    hh = dpsketch.SketchHeavyHitters("countsketch", k=8, capacity=32, epsilon=1.0, delta=1e-6,
                                     max_stream_length=len(stream))
    hh.update_many(stream)
    try:
        hh.release(budget=Budget(0.1, 1e-3))
    except BudgetExceededError as exc:
        message: str = str(exc)
        _ = message
    _ = (cells, pcs, published)
    return float(b.spent().rho)


def datasets() -> int:
    z: np.ndarray = dpsketch.datasets.zipf(1000, 1.1, seed=1)
    return int(z.sum())


def budget_file(path: str) -> float:
    shared: FileBudget = Budget.open(path, epsilon=1.0, delta=1e-6)
    shared.check("next release", epsilon=0.5, delta=1e-7)
    ss = dpsketch.SpaceSaving(16)
    ss.update_many(np.arange(100, dtype=np.int64))
    ss.release(epsilon=0.5, delta=1e-7, k=4, budget=shared)
    try:
        FileBudget.create(path, rho=1.0)
    except BudgetFileError as exc:
        _ = str(exc)
    where: str = shared.path
    charges: list[tuple[str, Fraction, Fraction, Fraction]] = shared.exact_ledger()
    _ = (where, charges, shared.to_dict()["ledger"])
    return float(shared.spent().epsilon or 0.0)
