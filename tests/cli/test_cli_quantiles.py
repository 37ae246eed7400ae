"""`dpsketch quantiles`: output formats, accuracy on an easy stream, and one-line errors with the
documented exit codes (parameters are validated before any input is read)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import dpsketch.accounting.calibration
from dpsketch.cli import main


@pytest.fixture
def values_csv(tmp_path):
    rng = np.random.default_rng(3)
    v = rng.uniform(0, 1000, 20_000)
    p = tmp_path / "v.csv"
    p.write_text("id,ms\n" + "".join(f"{i},{float(x)!r}\n" for i, x in enumerate(v)))
    return p, v


def test_table_json_csv(values_csv, capsys):
    path, v = values_csv
    args = [str(path), "--column", "ms", "--bounds", "0,1000", "--rho", "1", "--q", "0.1,0.5,0.9", "--seed", "4"]
    assert main(["quantiles", *args, "--json"]) == 0
    out, err = capsys.readouterr()
    obj = json.loads(out)
    assert [r["q"] for r in obj["quantiles"]] == [0.1, 0.5, 0.9]
    for r in obj["quantiles"]:
        assert abs(r["value"] - np.quantile(v, r["q"])) < 10  # 1 % of the range
    assert obj["privacy"]["noise"] == "discrete_gaussian" and obj["privacy"]["reproducible_not_secret"] is True
    assert obj["resolution"] == pytest.approx(1000 / 2**32)
    assert "PrivateDyadicCountSketch" in err and "resolution" in err and "NOT secret" in err
    assert f"rank noise sigma at most {obj['privacy']['rank_error_sigma']:.3g}" in err
    assert main(["quantiles", *args, "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "q,value" and len(lines) == 4
    assert main(["quantiles", *args]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert table[0].split() == ["q", "value"] and len(table) == 4
    values = [float(line.split()[1]) for line in table[1:]]
    assert values == sorted(values)


def test_rho_with_delta_prints_the_epsilon_delta_conversion(values_csv, capsys):
    path, _ = values_csv
    args = ["quantiles", str(path), "--column", "ms", "--bounds", "0,1000", "--rho", "0.5", "--seed", "4"]
    assert main([*args, "--delta", "1e-6", "--json"]) == 0
    out, err = capsys.readouterr()
    privacy = json.loads(out)["privacy"]
    want = dpsketch.accounting.calibration.zcdp_epsilon(0.5, 1e-6)
    assert privacy["epsilon"] == pytest.approx(want) and privacy["delta"] == 1e-6
    assert f"epsilon={want:g}, delta=1e-06" in err
    assert main(args) == 0
    assert "that is epsilon=" not in capsys.readouterr().err  # without --delta: zCDP only


def test_integer_mode_and_epsilon(tmp_path, capsys):
    p = tmp_path / "ints.txt"
    p.write_text("".join(f"{i % 1000}\n" for i in range(10_000)))
    assert main(["quantiles", str(p), "--universe-bits", "10", "--epsilon", "1", "--q", "0.5", "--seed", "1",
                 "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert abs(obj["quantiles"][0]["value"] - 500) <= 20 and obj["privacy"]["noise"] == "discrete_laplace"


@pytest.mark.parametrize("extra,needle", [
    (["--bounds", "5,1", "--rho", "1"], "LO < HI"),
    (["--bounds", "0,nan", "--rho", "1"], "finite"),
    (["--bounds", "0", "--rho", "1"], "LO,HI"),
    (["--bounds", "0,1"], "exactly one of --rho"),
    (["--rho", "1"], "--bounds LO,HI"),
    (["--bounds", "0,1", "--rho", "1", "--q", "1.5"], "[0, 1]"),
    (["--bounds", "0,1", "--rho", "-1"], "rho"),
    (["--bounds", "0,1", "--rho", "1", "--universe-bits", "60"], "52"),
])
def test_usage_errors_before_reading(extra, needle, capsys):
    # the file does not exist: validation must fail first, with status 2
    assert main(["quantiles", "/nonexistent/file.csv", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


def _quantiles(capsys, path, *argv):
    code = main(["quantiles", str(path), "--seed", "5", "--q", "0,0.25,0.5,0.75,1", "--json", *map(str, argv)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "error" not in err
    return json.loads(out), err


def test_unparseable_and_nan_values_are_dropped_and_inf_clamped(tmp_path, capsys):
    # Nothing about the values may fail a private run: a value that is not a number (or NaN) is
    # dropped as if absent, ±inf is clamped like any value outside the bounds.
    clean = [str(x) for x in np.linspace(1, 9, 400)] + ["0", "10"]
    dirty = clean[:-2] + ["-inf", "inf", "secret-value", "nan", "NaN", "1.0.0", "0x10", "", "  "]
    for name, lines in (("clean", clean), ("dirty", dirty)):
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n")
    want, _ = _quantiles(capsys, tmp_path / "clean.txt", "--bounds", "0,10", "--rho", "1")
    got, err = _quantiles(capsys, tmp_path / "dirty.txt", "--bounds", "0,10", "--rho", "1")
    assert got == want  # same items, same seed: the same release
    assert "secret-value" not in err and "line" not in err


@pytest.mark.parametrize("method", ["exp", "joint", "recursive"])
def test_in_memory_methods_drop_nan_and_clamp_inf(tmp_path, capsys, method):
    # The in-memory mechanisms read the same values as the sketch: one "inf" line must not turn
    # the release into an error.
    clean = [str(x) for x in np.linspace(1, 9, 300)] + ["0", "10"]
    dirty = clean[:-2] + ["-inf", "inf", "nan", "x-secret"]
    for name, lines in (("clean", clean), ("dirty", dirty)):
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n")
    opts = ("--method", method, "--bounds", "0,10", "--epsilon", "1", "--q", "0.25,0.75")
    want, _ = _quantiles(capsys, tmp_path / "clean.txt", *opts)
    got, err = _quantiles(capsys, tmp_path / "dirty.txt", *opts)
    assert got == want and "x-secret" not in err


def test_integer_mode_clamps_out_of_range_and_drops_non_integers(tmp_path, capsys):
    clean = [str(i % 1000) for i in range(2000)] + ["0", "1023"]
    dirty = clean[:-2] + ["-3", "5000", "x-secret", "1.5", "nan", "1e3", "9" * 5000]
    for name, lines in (("clean", clean), ("dirty", dirty)):
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n")
    want, _ = _quantiles(capsys, tmp_path / "clean.txt", "--universe-bits", "10", "--epsilon", "1")
    got, err = _quantiles(capsys, tmp_path / "dirty.txt", "--universe-bits", "10", "--epsilon", "1")
    assert got == want and "x-secret" not in err and "5000" not in err


def test_parquet_nan_dropped_and_integers_clamped(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    base = np.linspace(1, 9, 300)
    pq.write_table(pa.table({"v": np.concatenate([base, [0.0, 10.0]])}), tmp_path / "clean.parquet")
    pq.write_table(pa.table({"v": pa.array(np.concatenate([base, [-np.inf, np.inf, np.nan, None]]),
                                           pa.float64(), from_pandas=False)}), tmp_path / "dirty.parquet")
    want, _ = _quantiles(capsys, tmp_path / "clean.parquet", "--bounds", "0,10", "--rho", "1")
    got, _ = _quantiles(capsys, tmp_path / "dirty.parquet", "--bounds", "0,10", "--rho", "1")
    assert got == want
    ints = np.arange(500, dtype=np.int64)
    pq.write_table(pa.table({"v": np.concatenate([ints, [0, 255]])}), tmp_path / "ci.parquet")
    pq.write_table(pa.table({"v": np.concatenate([ints, [-7, 2**40]])}), tmp_path / "di.parquet")
    want, _ = _quantiles(capsys, tmp_path / "ci.parquet", "--universe-bits", "8", "--rho", "1")
    got, _ = _quantiles(capsys, tmp_path / "di.parquet", "--universe-bits", "8", "--rho", "1")
    assert got == want
    # a float column in integer mode is a usage error decided by the schema, not by the values
    assert main(["quantiles", str(tmp_path / "clean.parquet"), "--universe-bits", "8", "--rho", "1"]) == 2
    assert "--bounds" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["", "\n\n  \n", "secret-value\n"])
def test_no_values_is_released_like_any_input(tmp_path, capsys, content):
    # Refusing an empty input would tell it apart from its neighbour with one value.
    p = tmp_path / "empty.txt"
    p.write_text(content)
    obj, err = _quantiles(capsys, p, "--bounds", "0,10", "--rho", "1")
    assert len(obj["quantiles"]) == 5 and "secret-value" not in err


def test_skipped_lines_are_not_counted_in_the_output(tmp_path, capsys):
    p = tmp_path / "v.txt"
    p.write_text("\n".join(["1.5"] * 200 + [""] * 37 + ["x"] * 29 + ["2.5"] * 200) + "\n")
    obj, err = _quantiles(capsys, p, "--bounds", "0,10", "--rho", "1")
    text = err.replace(str(p), "") + json.dumps(obj)
    assert "skipped" not in text and "blank" not in text
    assert not re.search(r"\b(37|29|66)\b", err.replace(str(tmp_path), ""))  # blank, unparseable, dropped counts


def test_reader_errors_name_no_line(tmp_path, capsys):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"1\n2\n3\n\xff\n")
    assert main(["quantiles", str(p), "--bounds", "0,10", "--rho", "1", "--seed", "1"]) == 1
    err = capsys.readouterr().err
    assert "not valid utf-8" in err and not re.search(r"line \d", err)


@pytest.mark.parametrize("budget, want", [(["--rho", "0.3"], r"spent: rho=([0-9.e+-]+) "),
                                          (["--epsilon", "0.7"], r"spent: epsilon=([0-9.e+-]+), delta=0 ")])
def test_spent_line_is_what_the_budget_recorded(tmp_path, capsys, budget, want):
    from dpsketch.accounting.budget import used_value

    p = tmp_path / "v.txt"
    p.write_text("".join(f"{i % 10}\n" for i in range(100)))
    _, err = _quantiles(capsys, p, "--bounds", "0,10", *budget)
    m = re.search(want + r"\(dpsketch\.Budget ledger\)", err)
    assert m is not None, err
    assert float(m.group(1)) == pytest.approx(float(used_value(float(budget[1]))), rel=1e-9)
    assert main(["quantiles", str(p), "--bounds", "0,10", "--seed", "1", "--quiet", *budget]) == 0
    assert "spent" not in capsys.readouterr().err


def test_clamped_values_not_reported(tmp_path, capsys):
    p = tmp_path / "v.txt"
    p.write_text("".join(f"{x}\n" for x in [-5.0] * 50 + [0.5] * 500 + [99.0] * 50))
    assert main(["quantiles", str(p), "--bounds", "0,1", "--rho", "1", "--seed", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert not re.search(r"\d+ (values? )?(were )?clamped|clamped: *\d", err)
    assert "clamp" not in json.dumps(json.loads(out)).lower()


@pytest.mark.parametrize("low,high,end", [(200, 250, "upper"), (-50, -10, "lower"), (0, 100, None)])
def test_a_hint_when_every_quantile_sits_at_one_end_of_the_range(tmp_path, capsys, low, high, end):
    # values outside --bounds are clamped, so every quantile lands on the bound they cross
    p = tmp_path / "v.txt"
    p.write_text("".join(f"{float(x)!r}\n" for x in np.random.default_rng(5).uniform(low, high, 5000)))
    assert main(["quantiles", str(p), "--bounds", "0,100", "--rho", "1", "--q", "0.1,0.5,0.9", "--seed", "2"]) == 0
    err = capsys.readouterr().err
    if end is None:
        assert "every quantile sits" not in err
    else:
        assert f"every quantile sits at the {end} end of the range" in err


@pytest.mark.parametrize("method", ["auto", "exp", "joint", "recursive"])
def test_in_memory_methods(values_csv, capsys, method):
    path, v = values_csv
    args = ["quantiles", str(path), "--column", "ms", "--bounds", "0,1000", "--epsilon", "1", "--q", "0.9,0.1,0.5",
            "--method", method, "--seed", "4"]
    assert main([*args, "--json"]) == 0
    out, err = capsys.readouterr()
    obj = json.loads(out)
    assert [r["q"] for r in obj["quantiles"]] == [0.9, 0.1, 0.5]
    got = {r["q"]: r["value"] for r in obj["quantiles"]}
    assert got[0.1] <= got[0.5] <= got[0.9]
    s = np.sort(v)
    for q, x in got.items():
        assert abs(np.searchsorted(s, x) - q * len(v)) < 200  # 1 % of n
    priv = obj["privacy"]
    assert priv["privacy"] == "pure" and priv["delta"] == 0.0 and priv["epsilon"] <= 1
    assert priv["method"] == (method if method != "auto" else "joint")
    assert "read into memory" in err and "epsilon=1" in err and "n is not published" in err


def test_in_memory_method_errors(values_csv, capsys):
    path, _ = values_csv
    base = ["quantiles", str(path), "--column", "ms", "--method", "exp"]
    for extra, msg in ((["--bounds", "0,1000", "--rho", "1"], "pure DP"),
                       (["--epsilon", "1"], "--bounds"),
                       (["--bounds", "0,1000", "--epsilon", "1", "--universe-bits", "20"], "--universe-bits"),
                       (["--bounds", "0,1000", "--epsilon", "1", "--noise-allocation", "joint"], "--noise-allocation")):
        assert main([*base, *extra]) == 2
        assert msg in capsys.readouterr().err


def test_in_memory_log_scale_and_integer(tmp_path, capsys):
    rng = np.random.default_rng(2)
    lat = rng.lognormal(3, 1.5, 5000)
    p = tmp_path / "lat.txt"
    p.write_text("".join(f"{float(x)!r}\n" for x in lat))
    args = ["quantiles", str(p), "--method", "auto", "--epsilon", "2", "--bounds", "0.001,100000", "--q", "0.01,0.5,0.99",
            "--seed", "1", "--json"]
    assert main([*args, "--scale", "log", "--relative-accuracy", "0.02"]) == 0
    out, err = capsys.readouterr()
    obj = json.loads(out)
    assert obj["privacy"]["scale"] == "log" and "relative accuracy 0.02" in err
    for r in obj["quantiles"]:
        assert abs(r["value"] / np.quantile(lat, r["q"]) - 1) < 0.15
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"{v}\n" for v in [3] * 800 + [9] * 800 + list(range(40))))
    assert main(["quantiles", str(ids), "--method", "joint", "--epsilon", "1", "--bounds", "0,100", "--q", "0.25,0.75",
                 "--integer", "--seed", "1", "--json"]) == 0
    assert [r["value"] for r in json.loads(capsys.readouterr().out)["quantiles"]] == [3.0, 9.0]
    for bad in (["--integer", "--bounds", "0,10.5"], ["--scale", "log", "--bounds", "0,10"]):
        assert main(["quantiles", str(ids), "--method", "exp", "--epsilon", "1", *bad]) == 2
    assert main(["quantiles", str(ids), "--epsilon", "1", "--bounds", "0,100", "--integer"]) == 2
    assert "--method" in capsys.readouterr().err
