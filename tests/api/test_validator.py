"""The one parameter validator (dpsketch._validation): declarative constraints, the shared specs,
one message form (name, what is allowed, the type given -- never the value), and the same message
for the same bad value through the library, the command line and dpsketch.spark."""

from __future__ import annotations

import importlib.util
import math
from fractions import Fraction

import numpy as np
import pytest

import dpsketch
from dpsketch import _validation as V
from dpsketch.cli import main
from dpsketch.errors import ParameterError, ParameterTypeError
from dpsketch.mechanisms import unit_level as U


def test_constraints_accept_and_convert():
    assert V.Interval(int, 1, 10).check("n", 3.0) == 3 and V.Interval(int, 1, 10).check("n", np.int64(10)) == 10
    assert V.Interval(float, 0, 1, closed="neither").check("d", Fraction(1, 2)) == 0.5
    assert V.Options(("a", None)).check("o", "a") == "a" and V.Options((1, 2)).check("p", 2.0) == 2.0
    assert V.Instance(bool).check("b", False) is False
    assert V.Pair().check("bounds", (0, 1)) == (0.0, 1.0)
    assert V.NoneOr(V.Interval(int, 0, None)).check("x", None) is None
    assert V.check("seed", 2**64 - 1) == 2**64 - 1
    assert V.check("epsilon", 2**-32) == 2**-32


@pytest.mark.parametrize("con,bad,kind", [
    (V.Interval(int, 1, 10), 0, ParameterError), (V.Interval(int, 1, 10), 2.5, ParameterError),
    (V.Interval(int, 1, 10), math.nan, ParameterError), (V.Interval(int, 1, 10), True, ParameterTypeError),
    (V.Interval(int, 1, 10), "3", ParameterTypeError), (V.Interval(float, 0, 1, "neither"), 1, ParameterError),
    (V.Interval(float, 0, 1, "neither"), math.inf, ParameterError), (V.Interval(float, 0, None, "neither"), 0.0,
                                                                      ParameterError),
    (V.Options(("a", "b")), "c", ParameterError), (V.Options(("a", "b")), 3, ParameterTypeError),
    (V.Options((1, 2)), True, ParameterError), (V.Instance(bool), 1, ParameterTypeError),
    (V.Pair(), (2, 1), ParameterError), (V.Pair(), (1, 2, 3), ParameterTypeError), (V.Pair(), "ab", ParameterTypeError),
])
def test_one_message_form_and_never_the_value(con, bad, kind):
    with pytest.raises(kind) as e:
        con.check("secret_param", bad)
    msg = str(e.value)
    assert type(e.value) is kind
    assert msg.startswith(f"secret_param must be {con.describe()}, got ")
    assert msg.endswith(type(bad).__name__) or msg.endswith(f"{type(bad).__name__} that is not")
    if not isinstance(bad, (int, float)) or isinstance(bad, bool) or bad not in (1, 10, 0):
        assert repr(bad) not in msg.split(", got ")[1]


def test_limits_print_as_powers_of_two_and_max_capacity_as_a_number():
    assert V.describe("seed") == "an integer in [0, 2**64 - 1]"
    assert V.describe("epsilon") == "a number in [2**-32, 2**31 - 1]"
    assert V.describe("delta") == "a number in (0, 1)"
    assert str(dpsketch._core.MAX_CAPACITY) in V.describe("capacity")


def test_validate_params_checks_positional_and_keyword_arguments_and_skips_none():
    @V.validate_params({"k": None, "level": "level", "x": V.Interval(int, 0, 5)})
    def f(k, level=None, *, x=None):
        return k, level, x

    assert f(3, 0.5, x=2) == (3, 0.5, 2) and f(k=3) == (3, None, None)
    with pytest.raises(ParameterError, match=r"^k must be an integer in \[1, 2\*\*63 - 1\], got an int that is not$"):
        f(0)
    with pytest.raises(ParameterTypeError, match="^level must be"):
        f(1, "high")
    with pytest.raises(ParameterError, match="^x must be an integer in \\[0, 5\\]"):
        f(1, x=6)
    with pytest.raises(ParameterError, match="no parameter"):
        V.validate_params(["epsilon"])(lambda k: k)
    assert f.__wrapped__ is not None and list(f.__validated__) == ["k", "level", "x"]


def test_parse_text_reads_numbers_like_the_library_gets_them():
    assert V.parse_text("epsilon", "1") == 1.0 and V.parse_text("k", "7") == 7
    with pytest.raises(ParameterTypeError, match="got str$"):
        V.parse_text("k", "seven")
    with pytest.raises(ParameterError, match="got a float that is not$"):
        V.parse_text("delta", "1.5")


# -- the same bad value, the same message, in the library, the command line and Spark --------------

ITEMS = [1, 2, 2, 3, 3, 3] * 50
IDS = list(range(300))

# (parameter, bad value, library call, command-line argv, spark call or None)
SHARED = [
    ("epsilon", 0, lambda v: dpsketch.heavy_hitters(ITEMS, epsilon=v, delta=1e-6, k=10),
     ["top", "--epsilon", "0", "-"], lambda S, v: S.heavy_hitters(None, "x", epsilon=v, delta=1e-6, k=10)),
    ("epsilon", 2**40, lambda v: dpsketch.SpaceSaving(8).release(epsilon=v, delta=1e-6, k=4),
     ["top", "--epsilon", str(2**40), "-"], lambda S, v: S.heavy_hitters(None, "x", epsilon=v, delta=1e-6, k=10)),
    ("delta", 1, lambda v: dpsketch.heavy_hitters(ITEMS, epsilon=1.0, delta=v, k=10),
     ["top", "--delta", "1", "-"], lambda S, v: S.heavy_hitters(None, "x", epsilon=1.0, delta=v, k=10)),
    ("delta", 0.0, lambda v: U.unit_heavy_hitters(ITEMS, IDS, epsilon=1.0, delta=v, max_keys_per_unit=1),
     ["audit", "--delta", "0.0"], lambda S, v: S.windowed_heavy_hitters(
         None, "x", time_column="t", period="1h", start=0, end=1, k=5, epsilon=1.0, delta=v)),
    ("k", 0, lambda v: dpsketch.heavy_hitters(ITEMS, epsilon=1.0, delta=1e-6, k=v),
     ["top", "-k", "0", "-"], lambda S, v: S.heavy_hitters(None, "x", epsilon=1.0, delta=1e-6, k=v)),
    ("top_k", 2**31 + 1, lambda v: dpsketch.heavy_hitters(ITEMS, epsilon=1.0, delta=1e-6, top_k=v),
     ["top", "--top-k", str(2**31 + 1), "-"], lambda S, v: S.heavy_hitters(None, "x", epsilon=1.0, delta=1e-6, top_k=v)),
    ("seed", -1, lambda v: dpsketch.heavy_hitters(ITEMS, epsilon=1.0, delta=1e-6, k=10, seed=v),
     ["top", "--seed", "-1", "-"], lambda S, v: S.heavy_hitters(None, "x", epsilon=1.0, delta=1e-6, k=10, seed=v)),
    ("seed", 2**64, lambda v: dpsketch.quantiles([0.5] * 10, [0.5], bounds=(0, 1), epsilon=1.0, seed=v),
     ["quantiles", "--seed", str(2**64), "-"], lambda S, v: S.quantiles(None, "x", [0.5], rho=1.0, seed=v)),
    ("max_keys_per_unit", 0, lambda v: U.unit_heavy_hitters(ITEMS, IDS, epsilon=1.0, delta=1e-6, max_keys_per_unit=v),
     ["top", "--privacy-id", "u", "--max-keys-per-unit", "0", "-"],
     lambda S, v: S.heavy_hitters(None, "x", epsilon=1.0, delta=1e-6, privacy_id="u", max_keys_per_unit=v)),
    ("max_rows_per_key", 2**20 + 1, lambda v: U.bound_contributions(ITEMS, IDS, max_keys_per_unit=1, max_rows_per_key=v),
     ["top", "--privacy-id", "u", "--max-keys-per-unit", "1", "--max-rows-per-key", str(2**20 + 1), "-"], None),
    ("max_rows_per_unit", 0, lambda v: U.unit_quantiles([1.0] * 300, IDS, [0.5], max_rows_per_unit=v, bounds=(0, 2),
                                                        rho=1.0),
     ["quantiles", "--privacy-id", "u", "--max-rows-per-unit", "0", "-"],
     lambda S, v: S.quantiles(None, "x", [0.5], rho=1.0, privacy_id="u", max_rows_per_unit=v)),
    ("universe_bits", 65, lambda v: dpsketch.DyadicCountSketch(v),
     ["quantiles", "--universe-bits", "65", "-"], lambda S, v: S.quantiles(None, "x", [0.5], rho=1.0, universe_bits=v)),
    ("rho", 0, lambda v: dpsketch.PrivateDyadicCountSketch(8, rho=v),
     ["quantiles", "--rho", "0", "-"], lambda S, v: S.quantiles(None, "x", [0.5], rho=v)),
    ("length_epsilon", 0, lambda v: dpsketch.heavy_hitters(ITEMS, epsilon=1.0, delta=1e-6, k=10, length_epsilon=v),
     ["top", "--length-epsilon", "0", "-"],
     lambda S, v: S.heavy_hitters(None, "x", epsilon=1.0, delta=1e-6, k=10, length_epsilon=v)),
    ("gamma", 1, lambda v: dpsketch.DyadicCountSketch(8, gamma=v), ["quantiles", "--gamma", "1", "-"], None),
]


def _spark():
    if importlib.util.find_spec("pyspark") is None:
        return None
    try:
        import dpsketch.spark as S
    except ImportError:
        return None
    return S


@pytest.mark.parametrize("name,bad,lib,argv,spark", SHARED, ids=[f"{c[0]}-{c[1]}" for c in SHARED])
def test_the_same_bad_value_gets_the_same_message_everywhere(name, bad, lib, argv, spark, capsys):
    with pytest.raises(ParameterError) as e:
        lib(bad)
    msg = str(e.value)
    assert msg == V.message(name, V.describe(name), bad, False)  # the shared spec's own words
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpsketch: error: argument ") and msg in err[0], (err, msg)
    S = _spark()
    if spark is not None and S is not None:
        with pytest.raises(ParameterError) as e2:
            spark(S, bad)
        assert str(e2.value) == msg


def test_the_public_entry_points_check_through_the_validator():
    from dpsketch import plans
    from dpsketch.mechanisms import private_sketches as P
    from dpsketch.sketches import dyadic as D

    entry = [dpsketch.heavy_hitters, dpsketch.quantiles, plans.plan_heavy_hitters,
             plans.plan_quantiles, dpsketch.SpaceSaving.__init__, dpsketch.SpaceSaving.release,
             dpsketch.MisraGries.release, dpsketch.CountMin.__init__, D.DyadicCountSketch.__init__,
             D.PrivateDyadicCountSketch.__init__, D.PrivateDyadicCountSketch.release, P.PrivateCountMin.__init__,
             P.PrivateCountMin.release, P.SketchHeavyHitters.__init__, P.SketchHeavyHitters.release,
             dpsketch.Budget.__init__, dpsketch.Windowed.__init__, dpsketch.Cumulative.__init__,
             U.unit_heavy_hitters, U.unit_quantiles, U.bound_contributions, U.bound_rows_per_unit,
             U.release_bounded_counts, U.release_unit_quantiles, U.unit_release_cost, U.unit_quantiles_cost,
             U.unit_calibration, U.ContributionBounder.__init__, U.UnitStream.__init__, U.UnitStream.release,
             U.UnitRowLimiter.__init__]
    S = _spark()
    if S is not None:
        entry += [S.heavy_hitters, S.quantiles, S.windowed_heavy_hitters, S.stream_heavy_hitters]
    for fn in entry:
        specs = getattr(fn, "__validated__", None)
        assert specs, fn.__qualname__
        if fn is dpsketch.Budget.__init__:
            continue  # a budget's caps are not a release's parameters (any epsilon > 0, delta in [0, 1))
        for name, con in specs.items():  # a shared name always means the shared spec
            assert name not in V.SPECS or con is V.SPECS[name], (fn.__qualname__, name)
