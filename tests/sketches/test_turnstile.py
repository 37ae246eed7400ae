"""Turnstile updates on every linear sketch and replace-one neighbours on every private linear
sketch (docs/privacy.md "Dyadic sketches (§6)": turnstile, replace neighbours)."""

import numpy as np
import pytest

import dpsketch as dp

LINEAR = [
    lambda: dp.CountMin(64, 5, seed=3),
    lambda: dp.CountSketch(64, 5, seed=3),
    lambda: dp.PrivateCountMin(64, 5, rho=1.0, seed=3),
    lambda: dp.PrivateCountSketch(64, 5, epsilon=1.0, seed=3),
]
IDS = ["CountMin", "CountSketch", "PrivateCountMin", "PrivateCountSketch"]


@pytest.mark.parametrize("make", LINEAR, ids=IDS)
@pytest.mark.parametrize("keys", ["int", "str"])
def test_insert_then_delete_restores_cells(make, keys, rng):
    base = rng.integers(0, 500, 2000)
    batch = rng.integers(0, 500, 1000)
    if keys == "str":
        base, batch = [f"k{v}" for v in base], np.array([f"k{v}" for v in batch])
    s = make()
    s.update_many(base)
    before, n0 = s.cells(), s.n
    s.update_many(batch, counts=np.full(len(batch), 4))
    assert not np.array_equal(s.cells(), before)
    s.update_many(batch, counts=np.full(len(batch), -4, dtype=np.int64))
    assert np.array_equal(s.cells(), before) and s.n == n0
    k = batch[0] if keys == "int" else str(batch[0])
    k = int(k) if keys == "int" else k
    s.update(k, -3)
    assert s.n == n0 - 3
    s.update(k, 3)
    assert np.array_equal(s.cells(), before)


@pytest.mark.parametrize("make", LINEAR[:2], ids=IDS[:2])
def test_counted_update_equals_repeated_unit_updates(make, rng):
    a, b = make(), make()
    items = rng.integers(0, 300, 400)
    counts = rng.integers(1, 6, 400)
    a.update_many(items, counts=counts)
    for x, c in zip(items, counts):
        for _ in range(c):
            b.update(int(x))
    assert np.array_equal(a.cells(), b.cells()) and a.n == b.n == counts.sum()
    # deleting everything: Count-Min cells all zero again, n = 0
    a.update_many(items, counts=-counts)
    assert a.n == 0 and not a.cells().any()


@pytest.mark.parametrize("make", LINEAR[:2], ids=IDS[:2])
def test_turnstile_serialization_round_trip(make, rng):
    s = make()
    s.update_many(rng.integers(0, 100, 500), counts=rng.integers(-5, 3, 500))
    assert (s.cells() < 0).any()
    t = type(s).from_bytes(s.to_bytes())
    assert np.array_equal(t.cells(), s.cells()) and t.n == s.n
    # the Count-Min row-sum / CountSketch parity checks still hold and still catch corruption
    data = bytearray(s.to_bytes())
    data[-8] ^= 1  # low bit of the last cell
    with pytest.raises(ValueError):
        type(s).from_bytes(bytes(data))


def test_counter_summaries_reject_counts():
    for s in (dp.MisraGries(8), dp.SpaceSaving(8)):
        with pytest.raises(ValueError, match="once"):
            s.update(3, 2)
        with pytest.raises(ValueError, match="once"):
            s.update_many(np.array([1, 2]), counts=np.array([1, 1]))
        s.update(3, 1)  # count=1 is an ordinary update
        assert s.n == 1
    with pytest.raises(TypeError):
        dp.CountMin(8, 2, seed=1).update(1, 1.5)
    with pytest.raises(ValueError):
        dp.CountMin(8, 2, seed=1).update_many(np.array([1, 2]), counts=np.array([1]))


def test_mass_bound_refuses_overflow():
    s = dp.CountMin(8, 2, seed=1)
    s.update(1, 2**62)
    with pytest.raises(OverflowError):
        s.update(2, -1)  # |count| 1 more than the bound allows
    with pytest.raises(OverflowError):
        s.update_many(np.array([1, 2]), counts=np.array([1, 1]))
    assert s.n == 2**62  # the refused batch changed nothing


@pytest.mark.parametrize("cls", [dp.CountMin, dp.CountSketch])
def test_a_rejected_string_batch_reserves_no_mass(cls):
    """The mass bound (Σ|count| <= 2^62) is reserved only after every key is validated: a batch
    rejected for a bad key must leave room for the full remaining mass."""
    s = cls(8, 2, seed=1)
    s.update("a", 2**62 - 10)
    for bad in (["x", 3], ["x", None], ["x", "lone \ud800"]):
        with pytest.raises((TypeError, ValueError)):
            s.update_many(bad, counts=np.array([5, 5]))
    s.update_many(["y"], counts=np.array([10]))  # exactly the room left
    assert s.n == 2**62


# -- replace neighbours --------------------------------------------------------------------------


def _single_cells(make, x):
    s = make()
    s.update(x)
    return s.cells().ravel().astype(np.int64)


@pytest.mark.parametrize("cls,count_min", [(dp.CountMin, True), (dp.CountSketch, False)])
def test_replace_sensitivity_brute_force(cls, count_min):
    """ℓ1 doubles under replace-one; ℓ2² doubles for Count-Min and reaches 4d for CountSketch."""
    d = 2
    make = lambda: cls(3, d, seed=5)  # noqa: E731
    V = np.stack([_single_cells(make, x) for x in range(300)])
    assert np.abs(V).sum(1).max() == d and (V**2).sum(1).max() == d  # add/remove
    diff = V[None, :, :] - V[:, None, :]
    assert np.abs(diff).sum(2).max() == 2 * d
    assert (diff**2).sum(2).max() == (2 * d if count_min else 4 * d)


def test_replace_neighbours_recalibrate_noise():
    for cls, cm in ((dp.PrivateCountMin, True), (dp.PrivateCountSketch, False)):
        a = cls(200, 6, rho=0.5, seed=1)
        r = cls(200, 6, rho=0.5, seed=1, neighbours="replace")
        pa, pr = a.privacy(), r.privacy()
        assert pr["neighbours"] == "replace" and pr["l1_sensitivity"] == 2 * pa["l1_sensitivity"]
        assert pr["l2_sensitivity_squared"] == (2 if cm else 4) * pa["l2_sensitivity_squared"]
        s2a = pa["noise_param_rational"][0] / pa["noise_param_rational"][1]
        s2r = pr["noise_param_rational"][0] / pr["noise_param_rational"][1]
        assert s2r == pytest.approx((2 if cm else 4) * s2a)
        if cm:  # the Count-Min shift is recomputed from the new σ
            assert pr["shift"] == dp._core.release.gaussian_cm_shift(s2r, 6, 200, 0.01) > pa["shift"]
        back = cls.from_bytes(r.to_bytes())
        assert back.neighbours == "replace" and back.rho == pytest.approx(0.5)
        le = cls(200, 6, epsilon=1.0, seed=1, neighbours="replace").privacy()
        la = cls(200, 6, epsilon=1.0, seed=1).privacy()
        assert le["noise_param_rational"][0] / le["noise_param_rational"][1] == pytest.approx(
            2 * la["noise_param_rational"][0] / la["noise_param_rational"][1])
        with pytest.raises(ValueError):
            cls(200, 6, rho=1, neighbours="swap")


def test_replace_cell_variance_doubles():
    cells = np.concatenate([dp.PrivateCountMin(500, 8, rho=1.0, seed=s, neighbours="replace").cells().ravel()
                            for s in range(3)]).astype(np.float64)
    m = dp.PrivateCountMin(500, 8, rho=1.0, seed=0, neighbours="replace").privacy()
    s2 = 2 * 8 / 2.0
    assert abs(cells.var() / s2 - 1) < 5 * np.sqrt(2 / len(cells))
    assert abs(cells.mean() - m["shift"]) < 5 * np.sqrt(s2 / len(cells))
