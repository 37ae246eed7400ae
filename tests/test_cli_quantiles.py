"""`dpsketch quantiles`: output formats, accuracy on an easy stream, and one-line errors with the
documented exit codes (parameters are validated before any input is read)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

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
    assert obj["privacy"]["noise"] == "gaussian" and obj["privacy"]["reproducible_not_secret"] is True
    assert obj["resolution"] == pytest.approx(1000 / 2**32)
    assert "PrivateDyadicCountSketch" in err and "resolution" in err and "NOT secret" in err
    assert main(["quantiles", *args, "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "q,value" and len(lines) == 4
    assert main(["quantiles", *args]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert table[0].split() == ["q", "value"] and len(table) == 4
    values = [float(line.split()[1]) for line in table[1:]]
    assert values == sorted(values)


def test_integer_mode_and_epsilon(tmp_path, capsys):
    p = tmp_path / "ints.txt"
    p.write_text("".join(f"{i % 1000}\n" for i in range(10_000)))
    assert main(["quantiles", str(p), "--universe-bits", "10", "--epsilon", "1", "--q", "0.5", "--seed", "1",
                 "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert abs(obj["quantiles"][0]["value"] - 500) <= 20 and obj["privacy"]["noise"] == "laplace"


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


@pytest.mark.parametrize("content,needle", [
    ("1.0\n2.0\nsecret-value\n", "line 3 is not a number"),
    ("1.0\nnan\n", "line 2 is NaN"),
])
def test_bad_values_one_line(tmp_path, content, needle, capsys):
    p = tmp_path / "bad.txt"
    p.write_text(content)
    assert main(["quantiles", str(p), "--bounds", "0,10", "--rho", "1", "--seed", "1"]) == 1
    err = capsys.readouterr().err.strip()
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1 and needle in errors[0] and "secret-value" not in err


def test_integer_mode_rejects_out_of_range(tmp_path, capsys):
    p = tmp_path / "ints.txt"
    p.write_text("1\n2\n5000\n")
    assert main(["quantiles", str(p), "--universe-bits", "10", "--rho", "1", "--seed", "1"]) == 1
    err = capsys.readouterr().err
    assert "line 3" in err and "5000" not in err


def test_clamped_values_not_reported(tmp_path, capsys):
    p = tmp_path / "v.txt"
    p.write_text("".join(f"{x}\n" for x in [-5.0] * 50 + [0.5] * 500 + [99.0] * 50))
    assert main(["quantiles", str(p), "--bounds", "0,1", "--rho", "1", "--seed", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert not re.search(r"\d+ (values? )?(were )?clamped|clamped: *\d", err)
    assert "clamp" not in json.dumps(json.loads(out)).lower()
