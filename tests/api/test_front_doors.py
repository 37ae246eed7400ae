"""The two front doors (dpsketch.heavy_hitters, dpsketch.quantiles; docs/routes.md) with the privacy
unit as a value: each route they pick gives exactly the release of the mechanism it names (same
seed, same items and values) from every data form, reports the unit and the method, and refuses
combinations that do not fit before reading any data."""

from __future__ import annotations

import numpy as np
import pytest

import dpsketch as d
from dpsketch import Person, Row
from dpsketch.datasets import event_log

from conftest import write_event_log

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def log():
    users, keys = event_log(30_000, universe=3_000, heavy_users=5, heavy_rows=300, seed=4)
    return users, keys


def _same(a, b):
    assert a.items == b.items and a.threshold == b.threshold
    assert (a.epsilon, a.delta, a.rho) == (b.epsilon, b.delta, b.rho)


# -- the unit as a value --------------------------------------------------------------------------------


def test_units_validate_and_describe_themselves():
    assert Row().describe()["kind"] == "row" and Row(public_length=True).describe()["public_length"] is True
    p = Person("user", max_keys=4, max_rows_per_key=2)
    assert p.describe() == {"kind": "person", "id": "user", "neighbours": "add or remove every row of one privacy id",
                            "max_keys": 4, "max_rows_per_key": 2}
    assert "user" in str(p) and "4 keys" in str(p) and repr(p) == "Person(id='user', max_keys=4, max_rows_per_key=2)"
    assert Person(np.arange(3), max_rows=2).describe()["id"] == "<array>"  # ids are data: never in metadata
    with pytest.raises(d.ParameterError, match="contribution bound"):
        Person("user")
    with pytest.raises(d.ParameterError, match="not both"):
        Person("user", max_keys=1, max_rows=1)
    with pytest.raises(d.ParameterError):
        Person("user", max_keys=0)
    with pytest.raises(d.errors.ParameterTypeError):
        Person(7, max_keys=1)
    with pytest.raises(d.errors.ParameterTypeError):
        Row(public_length="yes")


# -- heavy hitters --------------------------------------------------------------------------------------


def test_row_level_default_is_dpss_and_reports_it(log):
    _, keys = log
    rel = d.heavy_hitters(keys, k=50, epsilon=1.0, delta=1e-6, seed=3)
    from dpsketch.mechanisms.dpss import heavy_hitters as dpss

    _same(rel, dpss(keys, k=50, epsilon=1.0, delta=1e-6, seed=3))
    assert rel.metadata["method"] == "dpss" and rel.metadata["unit"]["kind"] == "row"
    two = d.heavy_hitters(keys, k=50, epsilon=1.0, delta=1e-6, seed=3, passes=2)
    assert two.metadata["method"] == "dpss_two_pass"
    _same(two, d.heavy_hitters(keys, k=50, epsilon=1.0, delta=1e-6, seed=3, method="dpss_two_pass"))
    pub = d.heavy_hitters(keys, k=50, epsilon=1.0, delta=1e-6, seed=3, unit=Row(public_length=True))
    _same(pub, d.heavy_hitters(keys, k=50, epsilon=1.0, delta=1e-6, seed=3, public_length=True))
    assert pub.metadata["unit"]["public_length"] is True and pub.metadata["length"] == "public"


def test_row_level_pmg_is_misra_gries_released_by_pmg(log):
    _, keys = log
    rel = d.heavy_hitters(keys, k=50, epsilon=1.0, delta=1e-6, seed=3, method="pmg")
    mg = d.MisraGries(100)
    mg.update_many(keys)
    _same(rel, mg.release(epsilon=1.0, delta=1e-6, k=50, seed=3))
    assert rel.mechanism == "PMG" and rel.metadata["method"] == "pmg"


def test_person_exact_equals_unit_heavy_hitters_from_every_data_form(log, tmp_path):
    users, keys = log
    want = d.mechanisms.unit_level.unit_heavy_hitters(keys, users, epsilon=1.0, delta=1e-6, max_keys_per_unit=3, seed=5)
    assert want.items  # the comparison is not vacuous
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    events = pa.table({"query": keys, "user_id": users})
    forms = {
        "arrays": (keys, Person(users, max_keys=3), None),
        "pandas": (pd.DataFrame({"query": keys, "user_id": users}), Person("user_id", max_keys=3), "query"),
        "polars": (pl.DataFrame({"query": keys, "user_id": users}), Person("user_id", max_keys=3), "query"),
        "arrow": (events, Person("user_id", max_keys=3), "query"),
        "duckdb": (duckdb.sql("select * from events"), Person("user_id", max_keys=3), "query"),
        "parquet": (str(write_event_log(tmp_path, users, keys) / "events.parquet"), Person("user_id", max_keys=3),
                    "query"),
    }
    for name, (data, unit, column) in forms.items():
        rel = d.heavy_hitters(data, column=column, unit=unit, epsilon=1.0, delta=1e-6, seed=5)
        _same(rel, want)
        assert rel.metadata["method"] == "exact" and rel.metadata["unit"]["kind"] == "person", name
        assert rel.metadata["privacy_unit"] == "privacy_id"
    top = d.heavy_hitters(keys, unit=Person(users, max_keys=3), top_k=5, epsilon=1.0, delta=1e-6, seed=5)
    _same(top, d.mechanisms.unit_level.unit_heavy_hitters(keys, users, epsilon=1.0, delta=1e-6, max_keys_per_unit=3, selection="gumbel",
                                    k=5, seed=5))
    assert len(top.items) == 5


def test_person_bounded_memory_equals_unit_stream(log, tmp_path):
    users, keys = log
    s = d.mechanisms.unit_level.UnitStream("spacesaving", capacity=100, max_rows_per_unit=4)
    s.update(keys, users)
    want = s.release(epsilon=1.0, delta=1e-6, k=50, seed=2)
    rel = d.heavy_hitters(keys, unit=Person(users, max_rows=4), k=50, epsilon=1.0, delta=1e-6, seed=2)
    _same(rel, want)
    assert rel.metadata["method"] == "bounded_memory" and rel.metadata["unit"]["max_rows"] == 4
    path = write_event_log(tmp_path, users, keys) / "events.parquet"
    _same(d.heavy_hitters(str(path), column="query", unit=Person("user_id", max_rows=4), k=50, epsilon=1.0,
                          delta=1e-6, seed=2), want)


@pytest.mark.parametrize("kwargs,match", [
    ({"unit": Row(), "method": "exact"}, "protects a person"),
    ({"unit": Person("u", max_keys=2), "method": "dpss"}, "protects one row"),
    ({"unit": Person("u", max_keys=2), "k": 10}, "top_k=N"),
    ({"unit": Person("u", max_rows=2), "top_k": 10}, "frequency cut"),
    ({"unit": Person("u", max_rows=2), "method": "exact"}, "max_keys"),
    ({"unit": Person("u", max_keys=2), "passes": 2}, "row-level"),
    ({"unit": Row(), "public_length": True}, "part of the unit"),
    ({"unit": "person"}, "dpsketch.Row"),
    ({"method": "fastest"}, "method must be"),
    ({"k": 10, "passes": 2, "method": "dpss"}, "passes=2"),
    ({"k": 10, "passes": 3}, "passes must be 1 or 2"),  # was run as one pass
    ({"k": 10, "passes": 3, "method": "pmg"}, "passes must be 1 or 2"),
])
def test_combinations_that_do_not_fit_are_refused_before_reading(tmp_path, kwargs, match):
    missing = tmp_path / "never-read.csv"  # a refusal must come before the (missing) input is opened
    kw = {"epsilon": 1.0, "delta": 1e-6, "column": "q", **kwargs}
    if "unit" in kw and isinstance(kw["unit"], Row) or "unit" not in kw:
        kw.setdefault("k", 10)
    with pytest.raises(d.DPSketchError, match=match):
        d.heavy_hitters(str(missing), **kw)


def test_an_id_column_name_with_array_data_is_refused():
    with pytest.raises(d.ParameterError, match="names a column"):
        d.heavy_hitters(np.arange(10), unit=Person("user", max_keys=1), epsilon=1.0, delta=1e-6)


# -- quantiles ------------------------------------------------------------------------------------------


def test_row_level_quantiles_are_the_in_memory_mechanisms():
    x = np.random.default_rng(1).normal(50, 10, 5_000)
    from dpsketch.mechanisms.quantiles import quantiles as inmemory

    for method in ("auto", "exp", "joint", "recursive"):
        rel = d.quantiles(x, [0.25, 0.5, 0.9], bounds=(0, 100), epsilon=1.0, method=method, seed=3)
        _same(rel, inmemory(x, [0.25, 0.5, 0.9], bounds=(0, 100), epsilon=1.0, method=method, seed=3))
        assert rel.metadata["unit"]["kind"] == "row" and rel.metadata["method"] in ("exp", "joint", "recursive")
    table = pa.table({"ms": x})
    _same(d.quantiles(table, [0.5], column="ms", bounds=(0, 100), epsilon=1.0, seed=3),
          inmemory(x, [0.5], bounds=(0, 100), epsilon=1.0, seed=3))


def test_person_level_quantiles_are_unit_quantiles(log):
    users, _ = log
    values = (users * 7919) % 1000  # per-row values, several rows per person
    rel = d.quantiles(values, [0.5, 0.9], unit=Person(users, max_rows=3), universe_bits=10, rho=0.5, seed=4)
    _same(rel, d.mechanisms.unit_level.unit_quantiles(values, users, [0.5, 0.9], max_rows_per_unit=3, universe_bits=10, rho=0.5, seed=4))
    assert rel.metadata["method"] == "dyadic" and rel.metadata["unit"]["max_rows"] == 3
    with pytest.raises(d.ParameterError, match="max_rows"):
        d.quantiles(values, [0.5], unit=Person(users, max_keys=3), universe_bits=10, rho=0.5)
    with pytest.raises(d.ParameterError, match="pure"):
        d.quantiles(values, [0.5], bounds=(0, 1000), epsilon=1.0, delta=1e-6)
