"""Windowed and Cumulative take the mechanism arguments of the front doors (method, capacity, unit;
the sketch and its shape), and give the same releases as the ``make=`` factories they replace."""

from __future__ import annotations

import numpy as np
import pytest

import dpsketch
from dpsketch import Person, Row
from dpsketch.errors import ParameterError
from dpsketch.time.cumulative import Cumulative
from dpsketch.time.windows import Windowed

RNG = np.random.default_rng(7)
ITEMS = RNG.zipf(1.3, 20_000).astype(np.int64) % 500
TIMES = RNG.uniform(0, 3 * 3600, ITEMS.size)
IDS = RNG.integers(0, 2_000, ITEMS.size)
WINDOW = dict(period="1h", start=0, end=3 * 3600, epsilon=1.0, delta=1e-6, seed=11)


def _released(w, *batch):
    return [(r.metadata["window"]["index"], r.items, r.epsilon, r.delta, r.mechanism)
            for r in w.update(*batch) + w.close()]


@pytest.mark.parametrize("method, cls", [("dpss", dpsketch.SpaceSaving), ("pmg", dpsketch.MisraGries)])
def test_method_and_capacity_give_the_releases_of_make(method, cls):
    by_method = Windowed(**WINDOW, k=20, method=method, capacity=64)
    by_make = Windowed(**WINDOW, k=20, make=lambda: cls(64))
    assert _released(by_method, ITEMS, TIMES) == _released(by_make, ITEMS, TIMES)
    assert by_method.mechanism == ("DPSS" if method == "dpss" else "PMG")


def test_auto_is_dpss_with_k_and_pmg_without():
    assert Windowed(**WINDOW, k=10).mechanism == "DPSS"
    assert Windowed(**WINDOW, capacity=32).mechanism == "PMG"
    w = Windowed(**WINDOW, k=10)
    assert w._make().capacity == 20  # 2k counters, as the front door's default


def test_person_unit_is_max_rows_per_unit():
    by_unit = Windowed(**WINDOW, k=20, unit=Person("user", max_rows=3))
    by_rows = Windowed(**WINDOW, k=20, make=lambda: dpsketch.SpaceSaving(40), max_rows_per_unit=3)
    a, b = _released(by_unit, ITEMS, TIMES, IDS), _released(by_rows, ITEMS, TIMES, IDS)
    assert a == b
    assert a[0][4] == "unit.bounded_memory[DPSS]" and a[0][2] <= 1.0


@pytest.mark.parametrize("kwargs, words", [
    (dict(k=10, method="dpss", make=lambda: dpsketch.SpaceSaving(20)), "make= replaces"),
    (dict(k=10, unit=Person("user", max_keys=3)), "max_rows=r"),
    (dict(k=10, unit=Row(public_length=True)), "private"),
    (dict(k=10, unit=Person("user", max_rows=3), max_rows_per_unit=3), "once"),
    (dict(method="pmg"), "capacity="),
    (dict(k=10, method="exact"), "method must be one of"),
])
def test_wrong_mechanism_arguments_are_refused(kwargs, words):
    with pytest.raises(ParameterError, match=words):
        Windowed(**WINDOW, **kwargs)


STEPS = [RNG.integers(0, 300, 2_000) for _ in range(6)]


def _prefixes(c):
    out = []
    for s in STEPS:
        c.step(s)
        p = c.prefix()
        out.append([round(p.estimate(x), 6) for x in range(0, 300, 17)])
    return out


@pytest.mark.parametrize("sketch, cls", [("countmin", dpsketch.CountMin), ("countsketch", dpsketch.CountSketch)])
def test_sketch_and_shape_give_the_releases_of_make(sketch, cls):
    by_shape = Cumulative(horizon=8, sketch=sketch, width=64, depth=3, hash_seed=99, rho=0.5, seed=3)
    by_make = Cumulative(horizon=8, make=lambda: cls(64, 3, hash_seed=99), rho=0.5, seed=3)
    assert _prefixes(by_shape) == _prefixes(by_make)


def test_dyadic_sketch_by_shape():
    by_shape = Cumulative(horizon=4, sketch="dyadic", universe_bits=16, width=32, depth=3, hash_seed=5,
                          epsilon=1.0, seed=2)
    by_make = Cumulative(horizon=4, make=lambda: dpsketch.DyadicCountSketch(16, width=32, depth=3, hash_seed=5),
                         epsilon=1.0, seed=2)
    for c in (by_shape, by_make):
        for s in STEPS[:4]:
            c.step(s)
    assert [by_shape.prefix().rank(x) for x in (10, 100, 200)] == [by_make.prefix().rank(x) for x in (10, 100, 200)]
    assert by_shape.prefix().quantile(0.5) == by_make.prefix().quantile(0.5)


def test_one_hash_seed_for_every_leaf_derived_from_the_seed():
    a = Cumulative(horizon=4, sketch="countsketch", width=16, depth=3, rho=0.5, seed=4)
    b = Cumulative(horizon=4, sketch="countsketch", width=16, depth=3, rho=0.5, seed=4)
    assert a._make().hash_seed == a._make().hash_seed == b._make().hash_seed


@pytest.mark.parametrize("kwargs, words", [
    (dict(), "sketch="),
    (dict(sketch="countsketch", width=16), "width= and depth="),
    (dict(sketch="countmin", width=16, depth=3, universe_bits=8), "options of sketch='dyadic'"),
    (dict(sketch="countmin", width=16, depth=3, make=lambda: dpsketch.CountMin(16, 3)), "make= replaces"),
    (dict(sketch="spacesaving", width=16, depth=3), "sketch must be one of"),
])
def test_wrong_sketch_arguments_are_refused(kwargs, words):
    with pytest.raises(ParameterError, match=words):
        Cumulative(horizon=4, rho=0.5, **kwargs)


def test_every_series_release_reports_its_unit():
    w = Windowed(**WINDOW, k=20, unit=Person("user", max_rows=3))
    rels = w.update(ITEMS, TIMES, IDS) + w.close()
    assert {r.metadata["unit"]["kind"] for r in rels} == {"person"}
    assert rels[0].metadata["unit"]["max_rows"] == 3 and rels[0].metadata["unit"]["id"] == "user"
    w = Windowed(**WINDOW, k=20)
    assert (w.update(ITEMS, TIMES) + w.close())[0].metadata["unit"] == Row().describe()
    c = Cumulative(horizon=2, sketch="countmin", width=16, depth=3, rho=0.5)
    assert c.step(STEPS[0])[0].metadata["unit"] == Row().describe()
