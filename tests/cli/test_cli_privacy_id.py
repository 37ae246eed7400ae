"""`dpsketch top --privacy-id`: the user-level release (docs/privacy.md §Privacy unit, docs/cli.md)
on CSV and Parquet files written here from dpsketch.datasets.event_log, whose "bots" put hundreds
of rows on keys nobody else uses. Checked: no single-user key is released while the row-level
release of the same file releases some, the keys of >= 150 users are found, the metadata and
header state the unit-level guarantee, the two formats read the same rows, dropped rows stay
unreported, and every parameter is checked before any input is read."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from dpsketch.io import input as _input
from dpsketch.datasets import distinct_units_per_key, event_log

from conftest import check_unit_utility, one_error_line, run_cli as run, write_event_log

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS = 200_000


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """The same event log as events.csv (text cells, an extra column) and events.parquet (int64)."""
    users, keys = event_log(ROWS, universe=5_000, heavy_users=10, heavy_rows=1_000, seed=11)
    d = write_event_log(tmp_path_factory.mktemp("events"), users, keys)
    return d, users, keys


def _release(capsys, path, *extra):
    code, out, err = run(capsys, "top", path, "--column", "query", "--privacy-id", "user_id",
                         "--max-keys-per-unit", 10, "--top", 0, "--json", "--seed", 1, *extra)
    assert code == 0, err
    return json.loads(out), err


@pytest.mark.parametrize("name", ["events.csv", "events.parquet"])
def test_user_level_release(capsys, log, name):
    d, users, keys = log
    rel, err = _release(capsys, d / name)
    released = [int(k) for k, _ in rel["items"]]  # CSV items are text keys, Parquet ones int64
    check_unit_utility(released, users, keys)  # recall of keys with >= 150 users, no single-user key
    meta = rel["metadata"]
    assert meta["privacy_unit"] == "privacy_id" and meta["neighbours"] == "add_remove_unit"
    assert meta["route"] == "exact" and meta["max_keys_per_unit"] == 10 and meta["max_rows_per_key"] == 1
    assert meta["reproducible_not_secret"] is True and rel["mechanism"] == "unit.exact[discrete_gaussian]"
    assert 0.99 < rel["epsilon"] <= 1.0 and 0 < rel["delta"] <= 1e-6 and rel["n"] is None
    assert rel["cli"]["privacy_id_column"] == "user_id" and rel["cli"]["exact_counts_withheld"] is True
    assert rel["cli"]["released"] == len(released)
    eps = re.search(r"spent: epsilon=([0-9.e+-]+), delta=([0-9.e+-]+) ", err)
    assert eps is not None and float(eps.group(1)) == pytest.approx(rel["epsilon"], rel=1e-9)
    assert float(eps.group(2)) == pytest.approx(rel["delta"], rel=1e-9)
    for needle in ("privacy unit: privacy_id = column 'user_id'", "neighbours: add_remove_unit", "m=10", "c=1",
                   "exact route", f"threshold={rel['threshold']:g} for one privacy unit"):
        assert needle in err, (needle, err)
    # nothing per row and nothing exact about the data: rows, units, n
    exact = [ROWS, len(np.unique(users)), len(np.unique(keys))]
    text = err.replace(str(d), "") + json.dumps({k: v for k, v in rel.items() if k != "items"})
    assert "per_row" not in text and "noisy n" not in text
    assert not any(re.search(rf"\b{x}\b|\b{x:,}\b", text) for x in exact)


def test_row_level_release_of_the_same_file_has_single_user_keys(capsys, log):
    # what the user-level test guards against: counting rows, one bot's own key passes
    d, users, keys = log
    code, out, err = run(capsys, "top", d / "events.csv", "--column", "query", "--top", 0, "--json", "--seed", 1)
    assert code == 0, err
    by = distinct_units_per_key(keys, users)
    assert any(by[int(k)] == 1 for k, _ in json.loads(out)["items"])


def test_csv_and_parquet_read_the_same_rows(capsys, log):
    d = log[0]
    parquet, _ = _release(capsys, d / "events.parquet")
    typed, _ = _release(capsys, d / "events.csv", "--int-keys", "--int-ids", "--chunk-size", 7_777)
    assert typed["items"] == parquet["items"] and typed["cli"]["privacy_ids"].startswith("int")
    text, _ = _release(capsys, d / "events.csv")
    assert text["cli"]["privacy_ids"].startswith("str") and text["cli"]["keys"].startswith("str")


def test_gumbel_top_k_and_laplace(capsys, log):
    d, users, keys = log
    by = distinct_units_per_key(keys, users)
    rel, err = _release(capsys, d / "events.parquet", "--top-k", 5, "--selection", "gumbel")
    assert len(rel["items"]) == 5 and rel["metadata"]["selection"] == "gumbel" and rel["metadata"]["k"] == 5
    assert rel["mechanism"] == "unit.exact[discrete_gaussian+gumbel]" and "Gumbel selection of the top 5" in err
    assert all(by[k] >= 150 for k, _ in rel["items"])
    rel, err = _release(capsys, d / "events.parquet", "--noise", "laplace", "--max-rows-per-key", 2)
    meta = rel["metadata"]
    assert meta["noise"] == "discrete_laplace" and meta["l1_sensitivity"] == 20 and meta["max_rows_per_key"] == 2
    assert rel["rho"] is None and "rho=" not in err and "c=2" in err
    assert not any(by[k] == 1 for k, _ in rel["items"])


def test_bounded_memory_route_on_stdin_and_with_max_rows_per_unit(capsys, log):
    # stdin is a stream: the first r rows of each id into DPSS at epsilon/r per row (UnitStream);
    # a file takes the same route with --max-rows-per-unit, and both read the same rows
    import subprocess
    import sys

    d, users, keys = log
    by = distinct_units_per_key(keys, users)
    argv = ["top", "--format", "csv", "--column", "query", "--privacy-id", "user_id", "--max-keys-per-unit", 5,
            "--top", 0, "--json", "--seed", 3]
    with open(d / "events.csv", "rb") as fh:
        piped = subprocess.run([sys.executable, "-m", "dpsketch", *map(str, argv), "-"], stdin=fh,
                               capture_output=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    rel = json.loads(piped.stdout)
    meta = rel["metadata"]
    assert meta["route"] == "bounded_memory" and meta["max_rows_per_unit"] == 5 and meta["privacy_unit"] == "privacy_id"
    assert meta["neighbours"] == "add_remove_unit" and rel["mechanism"] == "unit.bounded_memory[DPSS]"
    assert 0.99 < rel["epsilon"] <= 1.0 and 0 < rel["delta"] <= 1e-6
    assert meta["per_row_calibration"]["privacy_unit_of_these_figures"] == "one stream element"
    released = [int(k) for k, _ in rel["items"]]
    assert released and not any(by[k] == 1 for k in released)
    err = piped.stderr.decode()
    assert "bounded_memory route" in err and "r=5 rows" in err and "spent: epsilon=" in err
    code, out, err = run(capsys, "top", d / "events.csv", "--column", "query", "--privacy-id", "user_id",
                         "--max-rows-per-unit", 5, "--top", 0, "--json", "--seed", 3)
    assert code == 0, err
    assert json.loads(out)["items"] == rel["items"]


def test_dropped_rows_leave_no_trace(capsys, tmp_path):
    # rows with an empty item, an empty id or (with --int-ids) an id that is not an integer are
    # dropped as if absent, and how many is not reported
    users, keys = event_log(20_000, universe=300, heavy_users=2, heavy_rows=500, seed=5)
    rows = [[str(k), str(u)] for k, u in zip(keys.tolist(), users.tolist())]
    dirty = rows[:5_000] + [["", "17"], ["9", ""], ["9", "x-secret"], [" ", "3"]] * 13 + rows[5_000:]
    for name, body in (("clean.csv", rows), ("dirty.csv", dirty)):
        with open(tmp_path / name, "w", newline="") as fh:
            csv.writer(fh).writerows([["query", "user_id"], *body])
    want, _ = _release(capsys, tmp_path / "clean.csv", "--int-ids")
    got, err = _release(capsys, tmp_path / "dirty.csv", "--int-ids")
    assert got == want | {"cli": got["cli"]} and got["cli"]["source"] != want["cli"]["source"]
    assert want["items"]
    err = err.replace(str(tmp_path), "")
    assert "x-secret" not in err and "skipped" not in err and "dropped" not in err and not re.search(r"\b52\b", err)
    pairs = list(_input.Source(tmp_path / "dirty.csv", column="query", privacy_id="user_id", ids="int",
                               chunk_size=1_000).pairs())
    assert sum(len(k) for k, _ in pairs) == len(rows) == sum(len(i) for _, i in pairs)


def test_text_input_and_a_missing_id_column_are_usage_errors(capsys, log, tmp_path):
    d = log[0]
    p = tmp_path / "items.txt"
    p.write_text("a\nb\n")
    code, out, err = run(capsys, "top", p, "--privacy-id", "user_id", "--max-keys-per-unit", 3)
    assert code == 2 and out == ""
    assert "CSV, Parquet or Arrow" in one_error_line(err)
    for name in ("events.csv", "events.parquet"):
        code, out, err = run(capsys, "top", d / name, "--column", "query", "--privacy-id", "uid",
                             "--max-keys-per-unit", 3)
        assert code == 2 and out == ""
        line = one_error_line(err).replace(str(d / name), "")
        assert "no column 'uid'" in line and "--privacy-id" in line and "'user_id'" in line
        assert not re.search(r"\d", line)  # the column names, never a value of the data


@pytest.mark.parametrize("argv,needle", [
    (["--privacy-id", "user_id"], "--max-keys-per-unit"),
    (["--privacy-id", "user_id", "--max-keys-per-unit", "10", "-k", "5"], "--k does not apply"),
    (["--privacy-id", "user_id", "--max-keys-per-unit", "10", "--public-length"], "--public-length"),
    (["--privacy-id", "user_id", "--max-keys-per-unit", "10", "-a", "misragries"], "--algorithm"),
    (["--privacy-id", "user_id", "--max-keys-per-unit", "10", "--top-k", "3"], "--selection gumbel"),
    (["--privacy-id", "user_id", "--max-keys-per-unit", "10", "--epsilon", "1e-12"], "epsilon"),
    (["--privacy-id", "user_id", "--max-keys-per-unit", str(2**21)], "max_keys_per_unit"),
    (["--privacy-id", "user_id", "--max-keys-per-unit", "0"], "max-keys-per-unit"),
    (["--privacy-id", "query", "--max-keys-per-unit", "10"], "another column"),
    (["--max-keys-per-unit", "10"], "--privacy-id"),
    (["--noise", "laplace"], "--privacy-id"),
    (["--int-ids"], "--privacy-id"),
    (["--max-rows-per-unit", "5"], "--privacy-id"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--noise", "laplace"], "bounded-memory"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--public-length"], "bounded-memory"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "-a", "countmin"], "no bounded-memory"),
    (["--privacy-id", "user_id", "--max-rows-per-unit", "5", "--epsilon", "1e-12"], "epsilon"),
])
def test_parameters_are_checked_before_any_input_is_read(capsys, monkeypatch, log, argv, needle):
    def no_reading(self):
        raise AssertionError("input was read before the parameters were checked")
        yield  # pragma: no cover

    monkeypatch.setattr(_input.Source, "pairs", no_reading)
    monkeypatch.setattr(_input.Source, "chunks", no_reading)
    code, out, err = run(capsys, "top", log[0] / "events.csv", "--column", "query", *argv)
    assert code == 2 and out == ""
    assert needle in one_error_line(err)


def test_int_typing_reads_the_same_language_in_every_chunking(tmp_path):
    # plain integers take Arrow's cast, the rest the exact path; Arrow's cast alone would read '0x10'
    items = ["7", "-7", "007", "+7", "0x10", "-", "--1", "1-2", "9223372036854775807", "9223372036854775808",
             "-9223372036854775808", "-9223372036854775809", "0" * 30 + "42", "1e3", "\u0663"]
    kept = [7, -7, 7, 7, 2**63 - 1, -(2**63), 42]
    p = tmp_path / "ints.csv"
    p.write_text("k,u\n" + "".join(f"{x},{i}\n" for i, x in enumerate(items)))
    for chunk in (1, 2, 5, 100):
        src = _input.Source(p, column="k", privacy_id="u", keys="int", ids="int", chunk_size=chunk)
        pairs = list(src.pairs())
        assert sorted(int(v) for k, _ in pairs for v in k) == sorted(kept)
        assert sorted(int(v) for _, i in pairs for v in i) == [0, 1, 2, 3, 8, 10, 12]
        assert sorted(sum((b.tolist() for b in _input.Source(p, column="k", keys="int", chunk_size=chunk).chunks()),
                          [])) == sorted(kept)


@pytest.mark.parametrize("int_options", [(), ("--int-keys", "--int-ids")])
def test_release_equals_the_library_on_the_columns_read(capsys, log, int_options):
    """The command codes the batches as the reader hands them over (dpsketch.mechanisms.unit_level.ContributionBounder);
    its release is the library's unit_heavy_hitters on the whole columns, item for item."""
    from dpsketch.mechanisms.unit_level import unit_heavy_hitters

    d, users, keys = log
    rel, _ = _release(capsys, d / "events.csv", "--epsilon", 1, "--delta", 1e-6, *int_options)
    with open(d / "events.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    col_keys = [r["query"] for r in rows]
    col_ids = [r["user_id"] for r in rows]
    if int_options:
        col_keys, col_ids = np.array(col_keys, dtype=np.int64), np.array(col_ids, dtype=np.int64)
    want = unit_heavy_hitters(col_keys, col_ids, epsilon=1, delta=1e-6, max_keys_per_unit=10, seed=1)
    assert [(k, v) for k, v in rel["items"]] == [(k, v) for k, v in want.items]
    assert len(want.items) > 10
