"""`dpsketch top` with its default private length: nothing exact about the stream length is printed
or recorded; `--public-length` opts in to exact counts. docs/cli.md; docs/algorithms.md §0."""

from __future__ import annotations

import json
import random

import pytest

from conftest import run_cli as run

N, BLANKS = 20_000, 37


@pytest.fixture(scope="module")
def stream_file(tmp_path_factory):
    items = ["a"] * 8_000 + ["b"] * 4_000 + [f"c{i}" for i in range(N - 12_000)]
    random.Random(3).shuffle(items)
    lines = items + [""] * BLANKS
    random.Random(4).shuffle(lines)
    path = tmp_path_factory.mktemp("plen") / "items.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _exact_strings():
    return [str(N), f"{N:,}", f"{BLANKS} blank", f"{BLANKS:,} blank", "items_read", "skipped"]


@pytest.mark.parametrize("length", [[], ["--length-epsilon", 0.05]])
@pytest.mark.parametrize("algorithm", ["spacesaving", "misragries", "countmin"])
@pytest.mark.parametrize("fmt", ["--json", "--csv", None])
def test_private_length_prints_nothing_exact(capsys, stream_file, algorithm, fmt, length):
    extra = ["--max-stream-length", 10**6] if algorithm == "countmin" else []
    extra += length
    for seed in range(1, 20):  # a seed whose noisy length differs from n, so n cannot hide in n̂
        code, out, err = run(capsys, "top", stream_file, "-a", algorithm,
                             "--seed", seed, "--json", *extra)
        assert code == 0, err
        if json.loads(out)["n"] != N:
            break
    argv = ["top", stream_file, "-a", algorithm, "--seed", seed, *extra]
    code, out, err = run(capsys, *argv, *([fmt] if fmt else []))
    assert code == 0, err
    for s in _exact_strings():
        assert s not in out and s not in err, (s, out, err)
    if fmt == "--json":
        d = json.loads(out)
        assert d["cli"]["exact_counts_withheld"] is True
        assert d["metadata"]["assumes_public_length"] is False


def test_public_length_still_reports_counts(capsys, stream_file):
    code, out, err = run(capsys, "top", stream_file, "--seed", 1, "--json", "--public-length")
    assert code == 0, err
    d = json.loads(out)
    assert d["cli"]["items_read"] == N and d["cli"]["skipped"] == BLANKS
    assert d["metadata"]["neighbours"] == "replace" and d["n"] == N
    assert f"skipped {BLANKS} blank lines" in err


def test_auto_length_bound_is_refused_with_private_length(capsys, stream_file):
    code, out, err = run(capsys, "top", stream_file, "-a", "countmin", "--max-stream-length", "auto",
                         "--seed", 1, "--json")
    assert code == 2 and out == ""
    assert "--max-stream-length N" in err and str(N) not in err and f"{N:,}" not in err


def test_parquet_row_count_is_not_used_with_private_length(capsys, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"page": ["a"] * 50 + ["b"] * 30}), path)
    code, out, err = run(capsys, "top", path, "-a", "countmin", "--seed", 1, "--json")
    assert code == 2 and out == ""
    assert "--max-stream-length" in err and "80" not in err
