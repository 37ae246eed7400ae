"""End-to-end tests of the command line (dpsketch.cli): input formats, algorithms, output formats,
the demo, and one-line errors with the documented exit codes.

Streams have clear heavy hitters so that "the heavy item is released" holds at epsilon = 1 with a
margin of thousands of noise scales; every private run is seeded, so the tests are deterministic.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli as run

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "python"

N = 20_000
HEAVY = {"a": 8_000, "b": 4_000}  # n/k = 2,000 at k = 10; the other 8,000 items occur once


def _stream(heavy=HEAVY, n=N, seed=5, prefix="c"):
    items = [k for k, c in heavy.items() for _ in range(c)]
    items += [f"{prefix}{i}" for i in range(n - len(items))]
    random.Random(seed).shuffle(items)
    return items


def _int_stream():
    return _stream({"7": 8_000, "42": 4_000}, prefix="10")  # light items "100", "101", ...: ints too


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    items = _stream()
    text = "\n".join(items) + "\n"
    (d / "items.txt").write_text(text)
    with gzip.open(d / "items.txt.gz", "wt") as fh:
        fh.write(text)
    (d / "ints.txt").write_text("\n".join(_int_stream()) + "\n")
    with open(d / "items.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["user", "page", "ms"])
        for i, x in enumerate(items):
            w.writerow([i % 97, x, i % 13])
    (d / "empty.txt").write_text("")
    (d / "blank.txt").write_text("\n  \n\n")
    # CountSketch's envelope is ~8*sqrt(F2/width), so its test stream is more skewed
    skewed = _stream({"a": 80_000, "b": 5_000}, n=100_000)
    (d / "skewed.txt").write_text("\n".join(skewed) + "\n")
    return d


def run_sub(*argv, stdin=None):
    env = dict(os.environ)
    # The subprocess imports the same dpsketch as this process (installed, or the dev tree).
    import dpsketch

    pkg_parent = str(Path(dpsketch.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "dpsketch", *map(str, argv)],
        input=stdin, capture_output=True, env=env, timeout=300,
    )


def table_items(out):
    """(item, noisy count) rows of the aligned table; its interval column (the range that holds
    every released item's true count at once, 95 %) holds each noisy count."""
    lines = out.strip().splitlines()
    assert lines[0].split()[:4] == ["rank", "item", "noisy", "count"]
    intervals = lines[0].split()[4:] == ["true", "count", "(95%,", "all", "at", "once)"]
    rows = []
    for i, line in enumerate(lines[1:], 1):
        if not line.strip() or not line.split()[0].isdigit():
            break
        rank, item, value, *rest = line.split()
        assert int(rank) == i
        if intervals:
            lo, dots, hi = rest
            assert dots == ".." and (lo == "-inf" or float(lo) <= float(value)) and (hi == "inf" or float(value) <= float(hi))
        rows.append((item, float(value)))
    return rows


def assert_one_line_error(err, *needles):
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("dpsketch: warning:")]
    assert len(lines) == 1, err
    assert lines[0].startswith("dpsketch: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, err)


# -- inputs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["items.txt", "items.txt.gz"])
def test_text_and_gzip(capsys, files, name):
    code, out, err = run(capsys, "top", files / name, "--seed", 1)
    assert code == 0, err
    rows = table_items(out)
    assert [r[0] for r in rows] == ["a", "b"]
    assert abs(rows[0][1] - 8_000) < 100 and abs(rows[1][1] - 4_000) < 100
    assert "DPSS" in err and "threshold=" in err and "noisy n=" in err and "epsilon=1 " in err
    assert "n=20000" not in err  # the length is private by default: only n̂ is printed
    assert "spent: epsilon=1," in err  # the totals are exactly what was asked for
    assert "NOT secret" in err  # seeded release warning
    assert "keys: str" in err


def test_same_seed_same_release_and_gzip_matches_plain(capsys, files):
    outs = [run(capsys, "top", files / n, "--seed", 7, "--json")[1] for n in ("items.txt", "items.txt", "items.txt.gz")]
    assert outs[0] == outs[1]
    a, c = json.loads(outs[0]), json.loads(outs[2])
    assert a["items"] == c["items"]


def test_small_chunks_give_the_same_release(capsys, files):
    _, big, _ = run(capsys, "top", files / "items.txt", "--seed", 3, "--csv")
    _, small, _ = run(capsys, "top", files / "items.txt", "--seed", 3, "--csv", "--chunk-size", 777)
    assert big == small


def test_int_keys_are_asked_for_not_detected(capsys, files):
    code, out, err = run(capsys, "top", files / "ints.txt", "--seed", 1, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert [k for k, _ in d["items"]] == ["7", "42"]  # text input gives text keys
    assert d["cli"]["keys"].startswith("str")
    code, out, err = run(capsys, "top", files / "ints.txt", "--seed", 1, "--json", "--str-keys")
    assert [k for k, _ in json.loads(out)["items"]] == ["7", "42"]
    code, out, err = run(capsys, "top", files / "ints.txt", "--seed", 1, "--json", "--int-keys")
    assert [k for k, _ in json.loads(out)["items"]] == [7, 42]  # JSON ints, not strings


def test_text_after_integers_in_a_later_chunk(capsys, tmp_path):
    p = tmp_path / "mixed.txt"
    p.write_text("\n".join(["1", "2", "3", "4", "x-secret", "5"]) + "\n")
    code, out, err = run(capsys, "top", p, "--chunk-size", 3, "--seed", 1, "-k", 1, "--json")
    assert code == 0, err
    assert json.loads(out)["cli"]["keys"].startswith("str") and "x-secret" not in err


def test_csv_column(capsys, files):
    code, out, err = run(capsys, "top", files / "items.csv", "--column", "page", "--seed", 1, "--csv")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["rank", "item", "noisy_count", "low", "high"]
    assert [r[1] for r in rows[1:]] == ["a", "b"]
    assert all(float(r[3]) <= float(r[2]) <= float(r[4]) for r in rows[1:])
    assert [int(r[0]) for r in rows[1:]] == [1, 2]


def test_csv_missing_column(capsys, files):
    code, out, err = run(capsys, "top", files / "items.csv", "--column", "nope")
    assert code == 2
    assert_one_line_error(err, "no column 'nope'", "'page'")
    assert out == ""


def test_csv_needs_column_when_several(capsys, files):
    code, _, err = run(capsys, "top", files / "items.csv")
    assert code == 2
    assert_one_line_error(err, "--column")


def test_csv_gz_tsv_no_header_and_empty_cells(capsys, tmp_path):
    rows = [[str(i), x] for i, x in enumerate(_stream())] + [["999", ""]]
    with gzip.open(tmp_path / "d.tsv.gz", "wt", newline="") as fh:
        csv.writer(fh, delimiter="\t").writerows(rows)
    code, out, err = run(capsys, "top", tmp_path / "d.tsv.gz", "--no-header", "--column", 1, "--seed", 2)
    assert code == 0, err
    assert [r[0] for r in table_items(out)] == ["a", "b"]
    assert "skipped" not in err  # an exact count of the data: not printed with a private length
    code, out, err = run(capsys, "top", tmp_path / "d.tsv.gz", "--no-header", "--column", 1, "--seed", 2,
                         "--public-length")
    assert code == 0, err
    assert "skipped 1 empty values" in err


def test_parquet(capsys, files, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    items = _stream()
    table = pa.table({
        "page": pa.array(items + [None]),
        "code": pa.array([int(x == "a") * 5 + int(x == "b") * 9 + (x[0] == "c") * (100 + i) for i, x in enumerate(items)] + [1]),
        "score": pa.array([0.5] * (len(items) + 1)),
    })
    path = tmp_path / "d.parquet"
    pq.write_table(table, path, row_group_size=3_000)
    code, out, err = run(capsys, "top", path, "--column", "page", "--seed", 1, "--json", "--chunk-size", 5000,
                         "--public-length")
    assert code == 0, err
    d = json.loads(out)
    assert [k for k, _ in d["items"]] == ["a", "b"]
    assert d["n"] == N and d["cli"]["skipped"] == 1
    code, out, err = run(capsys, "top", path, "--column", "page", "--seed", 1, "--json")
    d = json.loads(out)
    assert d["n"] != N and "skipped" not in d["cli"] and d["cli"]["exact_counts_withheld"] is True
    # an integer column gives int keys (from the Parquet type)
    code, out, err = run(capsys, "top", path, "--column", "code", "--seed", 1, "--json")
    assert code == 0, err
    assert [k for k, _ in json.loads(out)["items"]] == [5, 9]
    # with --public-length a sketch gets the Parquet row count as its public length bound
    code, out, err = run(capsys, "top", path, "--column", "page", "-a", "countmin", "--seed", 1, "--json",
                         "--public-length")
    assert code == 0, err
    assert json.loads(out)["metadata"]["max_stream_length"] == N + 1
    # wrong column type / missing column
    code, _, err = run(capsys, "top", path, "--column", "score")
    assert code == 1
    assert_one_line_error(err, "type double")
    code, _, err = run(capsys, "top", path, "--column", "nope")
    assert code == 2
    assert_one_line_error(err, "no column 'nope'")


def test_not_a_parquet_file(capsys, files):
    pytest.importorskip("pyarrow")
    code, _, err = run(capsys, "top", files / "items.txt", "--format", "parquet", "--column", "x")
    assert code == 1
    assert_one_line_error(err, "Parquet")


def test_stdin_subprocess(files):
    data = (files / "items.txt").read_bytes()
    r = run_sub("top", "-", "--seed", 1, "--json", stdin=data)
    assert r.returncode == 0, r.stderr.decode()
    assert [k for k, _ in json.loads(r.stdout)["items"]] == ["a", "b"]
    # gzip on stdin is detected by its magic bytes
    r = run_sub("top", "--seed", 1, "--csv", stdin=gzip.compress(data))
    assert r.returncode == 0, r.stderr.decode()
    assert [row[1] for row in csv.reader(io.StringIO(r.stdout.decode()))][1:] == ["a", "b"]


def test_stdin_in_process(capsys, monkeypatch, files):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((files / "items.txt").read_bytes())))
    code, out, err = run(capsys, "top", "-", "--seed", 1)
    assert code == 0, err
    assert [r[0] for r in table_items(out)] == ["a", "b"]


def test_crlf_bom_and_blank_lines(capsys, tmp_path):
    p = tmp_path / "win.txt"
    p.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(x.encode() for x in _stream()) + b"\r\n\r\n   \r\n")
    code, out, err = run(capsys, "top", p, "--seed", 1, "--public-length")
    assert code == 0, err
    assert [r[0] for r in table_items(out)] == ["a", "b"]
    assert "skipped 2 blank lines" in err


# -- algorithms ---------------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm,mechanism", [
    ("spacesaving", "DPSS"), ("misragries", "PMG"), ("countmin", "SketchHeavyHitters[countmin]"),
])
def test_algorithms(capsys, files, algorithm, mechanism):
    code, out, err = run(capsys, "top", files / "items.txt", "-a", algorithm, "--seed", 1, "-k", 10,
                         "--max-stream-length", N, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["mechanism"] == mechanism
    keys = [k for k, _ in d["items"]]
    assert "a" in keys and set(keys) <= {"a", "b"}  # heavy item released, no light item
    values = [v for _, v in d["items"]]
    assert values == sorted(values, reverse=True)
    assert all(v > d["threshold"] or (v >= d["threshold"] and mechanism == "PMG") for v in values)
    assert d["n"] != N and d["metadata"]["reproducible_not_secret"] is True
    assert d["metadata"]["length"] == "private" and d["metadata"]["neighbours"] == "add_remove"
    assert d["epsilon"] == 1.0 and d["delta"] == pytest.approx(1e-6)
    assert d["cli"]["algorithm"] == algorithm and d["cli"]["capacity"] == 20


def test_countsketch(capsys, files):
    code, out, err = run(capsys, "top", files / "skewed.txt", "-a", "countsketch", "--oversample", 16,
                         "--max-stream-length", "auto", "--seed", 1, "--json", "--public-length")
    assert code == 0, err
    d = json.loads(out)
    assert d["mechanism"] == "SketchHeavyHitters[countsketch]"
    assert d["metadata"]["neighbours"] == "replace"
    assert [k for k, _ in d["items"]] == ["a"]
    assert d["metadata"]["max_stream_length"] == 100_000
    assert "counted in a first pass" in err


def test_sketch_needs_max_stream_length(capsys, files):
    code, out, err = run(capsys, "top", files / "items.txt", "-a", "countmin")
    assert code == 2
    assert_one_line_error(err, "--max-stream-length")


def test_sketch_stream_longer_than_bound(capsys, files):
    code, out, err = run(capsys, "top", files / "items.txt", "-a", "countmin", "--max-stream-length", 1000)
    assert code == 1
    assert_one_line_error(err, "max_stream_length")


def test_length_epsilon(capsys, files):
    code, out, err = run(capsys, "top", files / "items.txt", "--seed", 1, "--length-epsilon", 0.25, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["metadata"]["assumes_public_length"] is False
    assert d["metadata"]["length_epsilon"] == 0.25 and d["metadata"]["epsilon_used"] == 0.75
    assert d["epsilon"] == 1.0  # carved out of --epsilon: the total is what was asked for
    assert [k for k, _ in d["items"]] == ["a", "b"]
    code, _, err = run(capsys, "top", files / "items.txt", "--length-epsilon", 1.0)
    assert code == 2
    assert_one_line_error(err, "below epsilon")
    code, _, err = run(capsys, "top", files / "items.txt", "--length-epsilon", 0.1, "--public-length")
    assert code == 2


# -- demo ---------------------------------------------------------------------------------------


def _metric(out, name):
    line = next(ln for ln in out.splitlines() if ln.startswith(name))
    return float(line.split()[1])


def test_demo(capsys):
    code, out, err = run(capsys, "top", "--demo", "--seed", 1)
    assert code == 0, err
    recall, precision = _metric(out, "recall"), _metric(out, "precision")
    assert 0 <= recall <= 1 and 0 <= precision <= 1
    assert recall == 1.0 and precision == 1.0  # DPSS on retail at k = 100: five clear heavy hitters
    assert "noisy n=" in err and "n=908576" not in err and "k=100" in err
    assert [r[0] for r in table_items(out)] == ["39", "48", "38", "32", "41"]


@pytest.mark.parametrize("algorithm", ["misragries", "countmin"])
def test_demo_json_other_algorithms(capsys, algorithm):
    code, out, err = run(capsys, "top", "--demo", "-a", algorithm, "--seed", 2, "--json", "-k", 50)
    assert code == 0, err
    ev = json.loads(out)["evaluation"]
    assert 0 <= ev["recall"] <= 1 and 0 <= ev["precision"] <= 1
    assert ev["true_heavy_hitters"] == 2 and ev["precision"] == 1.0


def test_demo_subprocess():
    r = run_sub("top", "--demo", "--seed", 3, "--csv")
    assert r.returncode == 0, r.stderr.decode()
    rows = list(csv.reader(io.StringIO(r.stdout.decode())))
    assert rows[0] == ["rank", "item", "noisy_count", "low", "high"] and len(rows) == 6
    err = r.stderr.decode()
    assert 0 <= _metric(err, "recall") <= 1 and 0 <= _metric(err, "precision") <= 1


def test_demo_rejects_file(capsys, files):
    code, _, err = run(capsys, "top", "--demo", files / "items.txt")
    assert code == 2
    assert_one_line_error(err, "--demo")


# -- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv,needle", [
    (["--epsilon", "0"], "epsilon"),
    (["--epsilon", "-1"], "epsilon"),
    (["--epsilon", "nan"], "epsilon"),
    (["--epsilon", "abc"], "epsilon"),
    (["--delta", "1"], "delta"),
    (["--delta", "0"], "delta"),
    (["--delta", "2.5"], "delta"),
    (["--k", "0"], "k must be"),
    (["-k", "-3"], "k must be"),
    (["--oversample", "0.5"], "oversample"),
    (["--seed", "-1"], "seed"),
    (["--chunk-size", "0"], "chunk-size"),
    (["--algorithm", "bogus"], "bogus"),
    (["--json", "--csv"], "--csv"),
    (["--int-keys", "--str-keys"], "--str-keys"),
    (["--column", "x"], "--column"),
    (["--bogus-option"], "bogus-option"),
    (["-a", "countmin", "--oversample", "1", "--max-stream-length", "20000"], "capacity"),
])
def test_bad_parameters(capsys, files, argv, needle):
    code, out, err = run(capsys, "top", files / "items.txt", *argv)
    assert code == 2, err
    assert_one_line_error(err, needle)
    assert out == ""


def test_bad_parameter_subprocess(files):
    r = run_sub("top", files / "items.txt", "--epsilon", "0")
    assert r.returncode == 2
    assert_one_line_error(r.stderr.decode(), "epsilon")


def test_missing_file(capsys, tmp_path):
    code, out, err = run(capsys, "top", tmp_path / "nope.txt")
    assert code == 1
    assert_one_line_error(err, "nope.txt")
    r = run_sub("top", tmp_path / "nope.txt")
    assert r.returncode != 0
    assert_one_line_error(r.stderr.decode(), "nope.txt")


def test_directory(capsys, tmp_path):
    code, _, err = run(capsys, "top", tmp_path)
    assert code == 1
    assert_one_line_error(err, "directory")


@pytest.mark.parametrize("name", ["empty.txt", "blank.txt"])
def test_empty_input(capsys, files, name):
    # a private length: an empty input is released like any other (nothing passes), no error
    code, out, err = run(capsys, "top", files / name, "--json")
    assert code == 0, err
    assert json.loads(out)["items"] == []
    code, _, err = run(capsys, "top", files / name, "--public-length")
    assert code == 1
    assert_one_line_error(err, "no items")


def test_empty_csv(capsys, tmp_path):
    (tmp_path / "e.csv").write_text("")
    code, _, err = run(capsys, "top", tmp_path / "e.csv")
    assert code == 1
    assert_one_line_error(err, "empty")
    (tmp_path / "h.csv").write_text("page\n")
    code, _, err = run(capsys, "top", tmp_path / "h.csv")
    assert code == 0, err
    code, _, err = run(capsys, "top", tmp_path / "h.csv", "--public-length")
    assert code == 1
    assert_one_line_error(err, "no items")


def test_bad_utf8_and_truncated_gzip(capsys, tmp_path):
    (tmp_path / "bin.txt").write_bytes(b"ok\n\xff\xfe\x00bad\n")
    code, _, err = run(capsys, "top", tmp_path / "bin.txt")
    assert code == 1
    assert_one_line_error(err, "--encoding")
    (tmp_path / "bin.txt").write_bytes(b"ok\n\xe9t\xe9\n")
    code, _, err = run(capsys, "top", tmp_path / "bin.txt", "--encoding", "latin-1", "-k", 1, "--seed", 1)
    assert code == 0, err
    (tmp_path / "cut.txt.gz").write_bytes(gzip.compress(b"a\n" * 100_000)[:200])
    code, _, err = run(capsys, "top", tmp_path / "cut.txt.gz")
    assert code == 1
    assert_one_line_error(err, "truncated")


def test_no_command_and_help(capsys):
    code, _, err = run(capsys)
    assert code == 2 and "top" in err
    code, out, _ = run(capsys, "top", "--help-all")
    assert code == 0 and "--epsilon" in out and "--max-stream-length" in out


@pytest.mark.parametrize("command", ["top", "quantiles"])
def test_the_short_help_has_examples_first_and_only_real_options(capsys, command):
    import re
    import shlex

    from dpsketch.cli import _build_parser

    for flag in ("--help", "-h"):
        code, out, _ = run(capsys, command, flag)
        assert code == 0 and len(out.splitlines()) <= 60
        assert out.index("examples:") < out.index("input:")
    full = run(capsys, command, "--help-all")[1]
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", out))
    assert named and not {n for n in named if n not in full and n != "--help-all"}
    # every example parses as written (the continuation lines joined)
    text = out.replace("\\\n", " ")
    examples = [ln.strip() for ln in text.split("examples:")[1].split("\n\n")[0].splitlines()
                if ln.strip().startswith("dpsketch ")]
    assert len(examples) >= 3
    parser = _build_parser()
    for line in examples:
        argv = shlex.split(re.split(r"\s{2,}", line)[0])[1:]
        parser.parse_args(argv)




def test_bash_completion_completes_the_options_of_a_command(capsys, tmp_path):
    import shutil
    import subprocess

    pytest.importorskip("shtab")
    code, script, _ = run(capsys, "completion", "bash")
    assert code == 0 and "dpsketch" in script
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    (tmp_path / "dpsketch.bash").write_text(script)
    probe = ('source "$1"; COMP_WORDS=(dpsketch "$2" "$3"); COMP_CWORD=2; COMP_LINE="dpsketch $2 $3"; '
             'COMP_POINT=${#COMP_LINE}; fn=$(complete -p dpsketch | sed -E "s/.*-F ([^ ]+).*/\\1/"); '
             '$fn dpsketch "$3" "$2"; echo "${COMPREPLY[@]}"')
    for command, prefix, want in (("top", "--priv", "--privacy-id"), ("quantiles", "--max-rows", "--max-rows-per-unit"),
                                  ("top", "--dry", "--dry-run")):
        out = subprocess.run(["bash", "-c", probe, "probe", str(tmp_path / "dpsketch.bash"), command, prefix],
                             capture_output=True, text=True, check=True).stdout.split()
        assert want in out, (command, prefix, out)
    assert run(capsys, "completion", "fish")[0] == 2
