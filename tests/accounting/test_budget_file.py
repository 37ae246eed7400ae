"""dpsketch.accounting.FileBudget (Budget.open; docs/privacy.md §Budget files) on real files: values round-trip
exactly, processes charging one file concurrently never pass its cap and the ledger lists exactly
the charges that were accepted, a refused charge leaves the file byte for byte as it was, and a
damaged or edited file is refused with BudgetFileError and left as it is."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import pickle
from fractions import Fraction

import numpy as np
import pytest

import dpsketch
from dpsketch import Budget, DPSketchError
from dpsketch.errors import BudgetExceededError, BudgetFileError
from dpsketch.accounting import FileBudget


def _frac(text: str) -> Fraction:
    num, den = text.split("/")
    return Fraction(int(num), int(den))


def _rewrite(path, edit, *, rehash: bool) -> None:
    """Apply ``edit`` to the parsed file; with ``rehash`` recompute the SHA-256 over the canonical
    content (every other field as compact JSON with sorted keys), as a deliberate forger would."""
    doc = json.loads(path.read_text())
    edit(doc)
    if rehash:
        doc.pop("sha256")
        canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        doc["sha256"] = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    path.write_text(json.dumps(doc, indent=1))


# -- exact round trip -------------------------------------------------------------------------------


def test_epsilon_delta_rho_round_trip_exactly(tmp_path):
    path = tmp_path / "b.json"
    b = Budget.open(path, epsilon=2.0, delta=1e-5, zcdp_delta=4e-6)
    assert isinstance(b, FileBudget) and isinstance(b, Budget)
    b.spend("thirds", epsilon=Fraction(1, 3), delta=Fraction(1, 10**7))
    b.spend("float", epsilon=0.1, delta=1e-6)
    with pytest.raises(BudgetExceededError, match="basic composition"):  # the first spend was (ε, δ)
        b.spend("zcdp", rho=0.01)
    again = Budget.open(path)  # a second object reading the same file
    assert again.exact_ledger() == [("thirds", Fraction(1, 3), Fraction(1, 10**7), Fraction(0)),
                                    ("float", Fraction(0.1), Fraction(1e-6), Fraction(0))]
    assert (again.epsilon, again.delta, again.zcdp_delta, again.rho) == (2.0, 1e-5, 4e-6, None)
    assert again.spent() == b.spent() and again.remaining() == b.remaining()
    doc = json.loads(path.read_text())
    assert _frac(doc["spent"]["epsilon"]) == Fraction(1, 3) + Fraction(0.1)  # exact sums, not floats
    assert _frac(doc["spent"]["delta"]) == Fraction(1, 10**7) + Fraction(1e-6)
    assert _frac(doc["cap"]["zcdp_delta"]) == Fraction(4e-6)
    # the same spends on an in-memory budget give the same totals
    mem = Budget(2.0, 1e-5, zcdp_delta=4e-6)
    for m, e, d, r in again.exact_ledger():
        mem.spend(m, epsilon=e, delta=d, rho=r)
    assert mem.spent() == again.spent() and mem.remaining() == again.remaining()


def test_zcdp_budget_round_trip(tmp_path):
    path = tmp_path / "z.json"
    z = Budget.open(path, rho=0.5)
    z.spend("pure", epsilon=0.5)  # counts 0.5^2/2 = 0.125
    z.spend("gauss", rho=0.25)
    again = Budget.open(path, rho=0.5)  # the same cap given again: accepted
    assert again.spent().rho == 0.375 and again.remaining().rho == 0.125
    assert _frac(json.loads(path.read_text())["spent"]["rho"]) == Fraction(3, 8)
    with pytest.raises(ValueError, match="delta > 0"):
        again.spend("approx", epsilon=0.01, delta=1e-9)


def test_releases_charge_the_file(tmp_path):
    path = tmp_path / "b.json"
    b = Budget.open(path, epsilon=1.5, delta=1e-5)
    ss = dpsketch.SpaceSaving(64)
    ss.update_many(np.repeat(np.arange(5, dtype=np.int64), 500))
    rel = ss.release(epsilon=1.0, delta=1e-6, k=10, seed=1, budget=b)
    (spend,) = Budget.open(path).ledger
    assert (spend.mechanism, spend.epsilon, spend.delta) == ("DPSS", rel.epsilon, rel.delta)
    before = path.read_bytes()
    other = dpsketch.SpaceSaving(64)
    other.update_many(np.arange(100, dtype=np.int64))
    with pytest.raises(BudgetExceededError, match="left"):
        other.release(epsilon=1.0, delta=1e-6, k=10, seed=1, budget=b)
    assert path.read_bytes() == before  # a refused charge writes nothing
    other.release(epsilon=0.5, delta=1e-6, k=10, seed=1)  # and the refused release did not advance its guard


# -- opening ----------------------------------------------------------------------------------------


def test_opening_rules(tmp_path):
    path = tmp_path / "b.json"
    with pytest.raises(BudgetFileError, match="no budget file") as exc:
        Budget.open(path)  # caps are needed to create it
    assert str(path) in str(exc.value) and not path.exists()
    FileBudget.create(path, epsilon=1.0, delta=1e-6)
    with pytest.raises(BudgetFileError, match="exists already"):
        FileBudget.create(path, epsilon=1.0, delta=1e-6)
    for caps in ({"epsilon": 2.0}, {"delta": 1e-5}, {"rho": 1.0}, {"zcdp_delta": 1e-7}):
        with pytest.raises(BudgetFileError, match="has the caps"):
            Budget.open(path, **caps)
    assert Budget.open(path, epsilon=1.0, delta=1e-6).spent().epsilon == 0
    with pytest.raises(ValueError):
        Budget.open(tmp_path / "bad.json", epsilon=-1.0)
    assert not (tmp_path / "bad.json").exists()
    assert issubclass(BudgetFileError, DPSketchError) and issubclass(BudgetFileError, ValueError)


def test_pickling_reopens_the_same_file(tmp_path):
    b = Budget.open(tmp_path / "b.json", epsilon=1.0)
    copy = pickle.loads(pickle.dumps(b))
    copy.spend("elsewhere", epsilon=0.75)
    assert [s.mechanism for s in b.ledger] == ["elsewhere"]
    with pytest.raises(BudgetExceededError):
        b.spend("more", epsilon=0.5)


def test_a_charge_inside_a_charge_is_refused_not_deadlocked(tmp_path):
    b = Budget.open(tmp_path / "b.json", epsilon=1.0)
    with b.charging("outer", epsilon=0.25):
        with pytest.raises(RuntimeError, match="already in progress"):
            b.spend("inner", epsilon=0.25)
    assert [s.mechanism for s in b.ledger] == ["outer"]


# -- damaged and edited files -----------------------------------------------------------------------


def _damaged_cases():
    def number(doc):  # one number changed, the JSON still valid, the digest not updated
        doc["ledger"][0]["epsilon"] = "1/8"

    def cap(doc):
        doc["cap"]["epsilon"] = "4/1"

    def negative(doc):
        doc["ledger"][0]["epsilon"] = "-1/4"
        doc["spent"]["epsilon"] = "-1/4"

    def totals(doc):
        doc["spent"]["epsilon"] = "1/8"

    def over_cap(doc):
        doc["ledger"][0]["epsilon"] = "3/1"
        doc["ledger"][0]["profile"][0]["epsilon"] = "3/1"
        doc["spent"]["epsilon"] = "3/1"

    def version(doc):
        doc["version"] = 3

    def foreign(doc):
        doc["format"] = "something-else"

    def unreduced(doc):
        doc["ledger"][0]["epsilon"] = "2/8"
        doc["spent"]["epsilon"] = "2/8"

    return [
        ("edited number", number, False, "integrity check"),
        ("edited cap", cap, False, "integrity check"),
        ("negative entry, rehashed", negative, True, "negative"),
        ("totals not the entries' sums, rehashed", totals, True, "not the sums"),
        ("spends beyond the cap, rehashed", over_cap, True, "beyond its cap"),
        ("unknown version", version, False, "version 3"),
        ("not a budget file", foreign, False, "not a dpsketch budget file"),
        ("not in lowest terms, rehashed", unreduced, True, "lowest terms"),
    ]


@pytest.mark.parametrize("name, edit, rehash, message", _damaged_cases(), ids=[c[0] for c in _damaged_cases()])
def test_edited_files_are_refused_and_left_alone(tmp_path, name, edit, rehash, message):
    path = tmp_path / "b.json"
    b = Budget.open(path, epsilon=1.0)
    b.spend("first", epsilon=0.25)
    _rewrite(path, edit, rehash=rehash)
    edited = path.read_bytes()
    with pytest.raises(BudgetFileError, match=message) as exc:
        Budget.open(path)
    assert str(path) in str(exc.value) and "backup" in str(exc.value)
    with pytest.raises(BudgetFileError, match=message):  # an object opened before the edit refuses too
        b.spend("second", epsilon=0.25)
    assert path.read_bytes() == edited  # never reset or repaired


@pytest.mark.parametrize("keep", [0, 1, 40, -2])
def test_truncated_files_are_refused(tmp_path, keep):
    path = tmp_path / "b.json"
    Budget.open(path, epsilon=1.0, delta=1e-6).spend("first", epsilon=0.5, delta=1e-7)
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    with pytest.raises(BudgetFileError, match="not valid JSON"):
        Budget.open(path)
    assert path.read_bytes() == data[:keep]


def test_whitespace_and_key_order_are_not_content(tmp_path):
    path = tmp_path / "b.json"
    Budget.open(path, epsilon=1.0).spend("first", epsilon=0.5)
    doc = json.loads(path.read_text())
    path.write_text(json.dumps(dict(reversed(list(doc.items())))))  # same content, other layout
    assert Budget.open(path).spent().epsilon == 0.5


# -- concurrent processes ---------------------------------------------------------------------------

STEP = Fraction(1, 64)  # 64 steps fill the cap exactly: the bound is tight, not approximate
TRIES = 30


def _charge_loop(path: str, worker: int, start) -> list[str]:
    """One process: open the file and try to charge TRIES steps of ε = 1/64; the names accepted."""
    start.wait()
    b = FileBudget.open(path)
    accepted = []
    for i in range(TRIES):
        name = f"worker {worker} charge {i}"
        try:
            b.spend(name, epsilon=STEP, delta=Fraction(1, 2**40))
        except BudgetExceededError:
            continue
        accepted.append(name)
    return accepted


def test_concurrent_processes_never_pass_the_cap(tmp_path):
    path = tmp_path / "shared.json"
    FileBudget.create(path, epsilon=1.0, delta=2.0**-30)
    workers = 4  # 4 x 30 tries for 64 places
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Barrier(workers)
        with ctx.Pool(workers) as pool:
            results = pool.starmap(_charge_loop, [(str(path), w, start) for w in range(workers)])
    accepted = [name for r in results for name in r]
    assert len(accepted) == 64 and len(set(accepted)) == 64
    assert sum(len(r) > 0 for r in results) >= 2  # the processes did interleave
    entries = FileBudget.open(path).exact_ledger()
    assert sorted(m for m, *_ in entries) == sorted(accepted)  # exactly the accepted charges
    assert sum(e for _, e, _, _ in entries) == 1 and sum(d for _, _, d, _ in entries) == Fraction(64, 2**40)
    doc = json.loads(path.read_text())
    assert _frac(doc["spent"]["epsilon"]) == 1
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary file left


# -- one ledger, one name (docs/privacy.md §Budget files) -------------------------------------------


def test_a_symbolic_link_charges_the_same_ledger(tmp_path):
    path = tmp_path / "s.json"
    Budget.open(path, epsilon=1.0, delta=1e-6)
    link = tmp_path / "link.json"
    link.symlink_to(path.name)  # relative, as `ln -s s.json link.json` makes it
    through_link = Budget.open(link)
    assert through_link.path == str(path)
    through_link.spend("via link", epsilon=0.9)
    assert link.is_symlink()  # the link was not replaced by a private copy
    with pytest.raises(BudgetExceededError):
        Budget.open(path).spend("via file", epsilon=0.9)
    with pytest.raises(BudgetExceededError):
        Budget.open(link).spend("via link again", epsilon=0.9)
    assert [m for m, *_ in Budget.open(path).exact_ledger()] == ["via link"]


def test_a_folder_reached_through_a_link_is_the_same_ledger(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    Budget.open(real / "b.json", epsilon=1.0, delta=1e-6)
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    Budget.open(tmp_path / "alias" / "b.json").spend("via alias", epsilon=0.6)
    with pytest.raises(BudgetExceededError):
        Budget.open(real / "b.json").spend("direct", epsilon=0.6)


def test_a_hard_linked_ledger_is_refused_before_any_write(tmp_path):
    import os

    path = tmp_path / "s.json"
    b = Budget.open(path, epsilon=1.0, delta=1e-6)
    os.link(path, tmp_path / "hl.json")
    before = path.read_bytes()
    for name in ("s.json", "hl.json"):
        with pytest.raises(BudgetFileError, match="hard link"):
            Budget.open(tmp_path / name)
    with pytest.raises(BudgetFileError, match="hard link"):
        b.spend("opened before the link", epsilon=0.5)  # every charge checks, not only open
    assert path.read_bytes() == before and (tmp_path / "hl.json").read_bytes() == before
    os.unlink(tmp_path / "hl.json")  # one name again: usable as before
    b.spend("after unlinking", epsilon=0.5)
    assert [m for m, *_ in Budget.open(path).exact_ledger()] == ["after unlinking"]


def _charge_once(path: str, start) -> bool:
    start.wait()
    try:
        FileBudget.open(path).spend("one process", epsilon=0.6)
    except BudgetExceededError:
        return False
    return True


def test_two_processes_charging_through_two_names_share_the_cap(tmp_path):
    path = tmp_path / "s.json"
    FileBudget.create(path, epsilon=1.0, delta=1e-6)
    (tmp_path / "link.json").symlink_to(path)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Barrier(2)
        with ctx.Pool(2) as pool:
            accepted = pool.starmap(_charge_once, [(str(path), start), (str(tmp_path / "link.json"), start)])
    assert sorted(accepted) == [False, True]  # 0.6 + 0.6 > 1: exactly one of the two charges
    assert len(FileBudget.open(path).exact_ledger()) == 1
    assert (tmp_path / "link.json").is_symlink()
