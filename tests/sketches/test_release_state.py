"""Single-release protections survive every copy path, seeded private sketches do not expose
their noise, and private-sketch releases carry metadata. docs/privacy.md §Publishing and the
release-once rule, §Seeds; docs/format.md."""

import copy
import math
import pickle

import numpy as np
import pytest

import dpsketch as d
from dpsketch import _core

R = _core.release

PATHS = {
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": lambda o: pickle.loads(pickle.dumps(o)),
    "bytes": lambda o: type(o).from_bytes(o.to_bytes()),
    "bytes-twice": lambda o: type(o).from_bytes(type(o).from_bytes(o.to_bytes()).to_bytes()),
}


def _released_spacesaving():
    ss = d.SpaceSaving(4)
    ss.update_many([7] * 60 + [1, 2, 3])
    ss.release(epsilon=1.0, delta=1e-3, k=2)
    return ss


@pytest.mark.parametrize("path", PATHS)
def test_release_count_survives_every_copy_path(path):
    ss = _released_spacesaving()
    c = PATHS[path](ss)
    with pytest.raises(d.errors.ReleaseBudgetError):
        c.release(epsilon=1.0, delta=1e-3, k=2)
    r = c.release(epsilon=1.0, delta=1e-3, k=2, allow_repeat=True)
    assert r.metadata["release_index"] == 2 and r.metadata["composed_with_previous_releases"]
    mg = d.MisraGries(4)
    mg.update_many([1, 1, 2])
    mg.release(epsilon=1.0, delta=1e-3)
    with pytest.raises(d.errors.ReleaseBudgetError):
        PATHS[path](mg).release(epsilon=1.0, delta=1e-3)


def test_averaging_releases_of_copies_is_refused():
    # The attack: if every copy of a released summary could release "for the first time", averaging
    # the fresh DLap(1/ε) draws would converge to the exact count. So the first copy refuses.
    ss = _released_spacesaving()
    values = []
    for i in range(200):
        c = PATHS[list(PATHS)[i % len(PATHS)]](ss)
        try:
            values += [v for k, v in c.release(epsilon=1.0, delta=1e-3, k=2).items if k == 7]
        except d.errors.ReleaseBudgetError:
            pass
    assert values == []


def test_in_process_copies_share_one_budget():
    ss = d.SpaceSaving(4)
    ss.update_many([7] * 60)
    copy.copy(ss).release(epsilon=1.0, delta=1e-3, k=2)
    for c in (ss, copy.copy(ss), copy.deepcopy(ss)):
        with pytest.raises(d.errors.ReleaseBudgetError):
            c.release(epsilon=1.0, delta=1e-3, k=2)


@pytest.mark.parametrize("cls", [d.PrivateCountMin, d.PrivateCountSketch])
@pytest.mark.parametrize("path", PATHS)
def test_published_sketch_stays_read_only(cls, path):
    p = cls(64, 3, epsilon=1.0)
    p.update_many([1, 2, 3])
    pub = p.release().sketch
    q = PATHS[path](pub)
    assert q.published and q.metadata["release_index"] == 1
    with pytest.raises(RuntimeError, match="read-only"):
        q.update(4)
    with pytest.raises(RuntimeError, match="read-only"):
        q.update_many([4, 5])
    assert np.array_equal(q.cells(), pub.cells())
    assert q.release().sketch.published  # republishing a published copy reveals nothing new


@pytest.mark.parametrize("path", PATHS)
def test_snapshot_difference_attack_needs_allow_repeat(path):
    # Publishing the sketch before and after an update reveals the update exactly (same noise).
    p = d.PrivateCountMin(64, 3, epsilon=0.5)
    p.update_many([1, 2, 3])
    first = p.release().sketch
    q = PATHS[path](p)
    q.update(99)
    with pytest.raises(d.errors.ReleaseBudgetError):
        q.release()
    second = q.release(allow_repeat=True).sketch  # explicit: the metadata says it composes
    assert second.metadata["release_index"] == 2
    diff = second.cells() - first.cells()
    assert diff.sum() == 3 and set(np.unique(diff)) == {0, 1}  # the reason for the rule


def test_old_bytes_load_and_unknown_flags_are_rejected():
    ss = d.SpaceSaving(4)
    ss.update_many([1, 2, 2])
    b = ss.to_bytes()
    assert b[7] == 0  # never released: flags 0, i.e. the bytes of the flag-less format, which must keep loading
    assert d.SpaceSaving.from_bytes(b).items() == ss.items()
    for bit in (0x10, 0x20, 0x40, 0x80):
        with pytest.raises(ValueError, match="unknown header flags"):
            d.SpaceSaving.from_bytes(b[:7] + bytes([bit]) + b[8:])
    with pytest.raises(ValueError, match="only private sketches"):  # published, on a summary
        d.SpaceSaving.from_bytes(b[:7] + bytes([0x06]) + b[8:] + (1).to_bytes(8, "little") + b"\x01")
    ss.release(epsilon=1.0, delta=1e-3, k=2)
    r = ss.to_bytes()
    assert r[7] == 0x02 and r[:7] + b"\x00" + r[8:-9] == b and r[-9:] == (1).to_bytes(8, "little") + b"\x01"
    with pytest.raises(ValueError, match="extension version"):
        d.SpaceSaving.from_bytes(r[:-1] + b"\x02")
    with pytest.raises(ValueError, match=">= 1 release"):
        d.SpaceSaving.from_bytes(r[:-9] + (0).to_bytes(8, "little") + b"\x01")
    p = d.PrivateCountMin(16, 2, epsilon=1).release().sketch
    pb = p.to_bytes()
    with pytest.raises(ValueError, match="release index"):  # published without its trailer
        d.PrivateCountMin.from_bytes(pb[:7] + bytes([0x04]) + pb[8:-9])


# ------------------------------------------------------------------- seeds -----------------------
@pytest.mark.parametrize("cls,base", [(d.PrivateCountMin, d.CountMin), (d.PrivateCountSketch, d.CountSketch)])
def test_published_hash_seed_does_not_regenerate_the_noise(cls, base):
    width, depth, eps = 128, 4, 1.0
    stream = np.arange(500) % 37
    p = cls(width, depth, epsilon=eps, seed=12345)
    p.update_many(stream)
    pub = cls.from_bytes(p.release().sketch.to_bytes())  # what an outsider holds
    exact = base(width, depth, hash_seed=pub.hash_seed)
    exact.update_many(stream)
    noise = pub.cells() - exact.cells()
    assert np.any(noise != 0)
    # An invertible derivation (hash seed = seed ^ constant) would let the holder rebuild the noise
    # from the published hash seed h: try inverting one, and h itself.
    h = pub.hash_seed
    for guess in (h ^ 0x5EED_1234_ABCD_0001, h):
        rebuilt = cls(width, depth, epsilon=eps, seed=guess)
        assert not np.array_equal(rebuilt.cells(), noise)
    # Same seed, same object: reproducible (that is what the label warns about).
    again = cls(width, depth, epsilon=eps, seed=12345)
    again.update_many(stream)
    assert np.array_equal(again.cells(), p.cells())


def test_seeded_objects_and_releases_are_labelled():
    p = d.PrivateCountSketch(32, 3, rho=0.5, seed=1)
    assert p.reproducible_not_secret and p.privacy()["reproducible_not_secret"]
    for path in PATHS.values():
        q = path(p.release(allow_repeat=True).sketch)
        assert q.reproducible_not_secret and q.metadata["reproducible_not_secret"]
        assert "reproducible_not_secret=True" in repr(q)
    assert p.to_bytes()[7] & 0x08
    u = d.PrivateCountSketch(32, 3, rho=0.5)
    assert not u.reproducible_not_secret and not u.release().metadata["reproducible_not_secret"]
    # an unseeded wrapper released with a seed: its noisy length is reproducible, so not secret
    h = d.SketchHeavyHitters(k=2, capacity=8, epsilon=1, delta=1e-3, max_stream_length=100)
    assert not h.reproducible_not_secret
    assert d.SketchHeavyHitters(k=2, capacity=8, epsilon=1, delta=1e-3, max_stream_length=100,
                                seed=1).reproducible_not_secret
    h.update_many([1, 1, 1, 2])
    r = h.release(seed=3)
    assert r.metadata["reproducible_not_secret"] is True
    h2 = d.SketchHeavyHitters(k=2, capacity=8, epsilon=1, delta=1e-3, max_stream_length=100)
    h2.update_many([1, 1, 1, 2])
    assert h2.release().metadata["reproducible_not_secret"] is False


# ---------------------------------------------------------- release metadata ------------------
def test_private_sketch_release_metadata():
    from dpsketch.accounting.zcdp import cks20_epsilon

    p = d.PrivateCountMin(256, 5, rho=0.5, beta=0.01)
    pub = p.release(delta=1e-6).sketch
    m = pub.metadata
    sigma2 = 5 / (2 * 0.5)  # §4: σ² = d/(2ρ)
    assert m["mechanism"] == "PrivateCountMin[gaussian]" and m["reference"] == "docs/algorithms.md §4"
    assert m["noise"] == "discrete_gaussian" and m["noise_param"] == pytest.approx(sigma2)
    assert m["rho"] == pytest.approx(0.5) and m["l2_sensitivity_squared"] == 5
    assert m["shift"] == R.gaussian_cm_shift(sigma2, 5, 256, 0.01) and m["beta"] == 0.01
    # the CKS20 conversion (docs/accounting.md), below the classic ρ + 2√(ρ ln 1/δ)
    assert m["delta"] == 1e-6 and m["epsilon"] == pytest.approx(cks20_epsilon(0.5, 1e-6))
    assert m["epsilon"] < 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))
    assert (m["width"], m["depth"], m["release_index"], m["published"]) == (256, 5, 1, True)
    assert m["assumes_public_length"] is False and m["reproducible_not_secret"] is False
    back = d.PrivateCountMin.from_bytes(pub.to_bytes()).metadata
    for key in ("mechanism", "noise_param", "shift", "rho", "width", "depth", "release_index", "published"):
        assert back[key] == m[key]
    lap = d.PrivateCountSketch(64, 4, epsilon=2.0).release().metadata
    assert lap["mechanism"] == "PrivateCountSketch[laplace]" and lap["privacy"] == "pure"
    assert lap["epsilon"] == pytest.approx(R.epsilon_used(2.0)) and lap["delta"] == 0.0
    assert lap["l1_sensitivity"] == 4 and lap["noise_param"] == pytest.approx(4 / R.epsilon_used(2.0))
    with pytest.raises(ValueError, match="zCDP"):
        d.PrivateCountSketch(64, 4, epsilon=2.0).release(delta=1e-6)


# ----------------------------------------------------------- the dyadic sketch, same contract --
def test_private_dyadic_release_state_travels_with_every_copy():
    import copy
    import pickle

    import dpsketch

    s = dpsketch.PrivateDyadicCountSketch(12, width=40, depth=3, rho=1.0, seed=5)
    s.update_many(np.arange(200) % 4096)
    published = s.release().sketch
    for clone in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s)),
                  type(s).from_bytes(s.to_bytes())):
        with pytest.raises(dpsketch.errors.ReleaseBudgetError):
            clone.release()
    for clone in (copy.copy(published), pickle.loads(pickle.dumps(published)),
                  type(s).from_bytes(published.to_bytes())):
        assert clone.published and clone.reproducible_not_secret
        with pytest.raises(RuntimeError):
            clone.update(3)
    unseeded = dpsketch.PrivateDyadicCountSketch(12, width=40, depth=3, rho=1.0)
    assert not type(s).from_bytes(unseeded.to_bytes()).reproducible_not_secret
