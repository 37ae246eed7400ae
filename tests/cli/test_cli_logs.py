"""``dpsketch top`` and ``quantiles`` on log lines (--log-format, --regex, --strip-query): a field of
a generated combined log (bench/gen_access_log.py) gives the same release, with the same seed, as
the same values written out as a text or CSV file; bad lines follow --on-bad-line and their count
is printed only with a public length; stdin, gzip and windows."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from access_logs import combined_line as _line, gen

from conftest import one_error_line, run_cli as run

pytest.importorskip("pyarrow")

N = 20_000


def _path(r):
    return r["path"].replace("\\xc3\\xa9", "\u00e9")


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    recs = list(gen.records(N, 3))
    (d / "access.log").write_text("".join(_line(r) + "\n" for r in recs), encoding="utf-8")
    (d / "paths.txt").write_text("".join(_path(r) + "\n" for r in recs), encoding="utf-8")
    (d / "stripped.txt").write_text("".join(_path(r).split("?")[0] + "\n" for r in recs), encoding="utf-8")
    (d / "bytes.txt").write_text("".join(r["bytes"] + "\n" for r in recs), encoding="utf-8")
    (d / "pairs.csv").write_text("path,host,bytes\n" + "".join(
        f'"{_path(r)}",{r["host"]},{"" if r["bytes"] == "-" else r["bytes"]}\n' for r in recs), encoding="utf-8")
    return d


def _json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json", "--seed", "5")
    assert code == 0, err
    obj = json.loads(out)
    obj.get("cli", {}).pop("source", None)
    keys = obj.get("cli", {}).pop("keys", None)
    assert keys is None or keys.startswith("str (")
    return obj


def test_top_of_a_log_field_is_the_top_of_that_field_written_out(capsys, logs):
    a = _json(capsys, "top", logs / "access.log", "--log-format", "combined", "--column", "path", "--top-k", "10")
    b = _json(capsys, "top", logs / "paths.txt", "--top-k", "10")
    assert a == b and len(a["items"]) == 10
    a = _json(capsys, "top", logs / "access.log", "--log-format", "combined", "--column", "path", "--strip-query")
    b = _json(capsys, "top", logs / "stripped.txt")
    assert a == b and a["items"]


def test_privacy_id_from_a_log_field(capsys, logs):
    a = _json(capsys, "top", logs / "access.log", "--log-format", "combined", "--column", "path",
              "--privacy-id", "host", "--max-keys-per-unit", "3", "--max-rows-per-unit", "20")
    b = _json(capsys, "top", logs / "pairs.csv", "--column", "path", "--privacy-id", "host",
              "--max-keys-per-unit", "3", "--max-rows-per-unit", "20")
    for o in (a, b):
        assert o["cli"].pop("privacy_ids").startswith("str (")
    assert a == b and a["items"]


def test_quantiles_of_the_bytes_field(capsys, logs):
    for extra in (["--bounds", "0,100000", "--rho", "1"], ["--universe-bits", "20", "--rho", "1"],
                  ["--method", "exp", "--bounds", "0,100000", "--epsilon", "1"]):
        a = _json(capsys, "quantiles", logs / "access.log", "--log-format", "combined", "--column", "bytes", *extra)
        b = _json(capsys, "quantiles", logs / "bytes.txt", *extra)
        assert a["quantiles"] == b["quantiles"], extra
    a = _json(capsys, "quantiles", logs / "access.log", "--log-format", "combined", "--column", "bytes",
              "--bounds", "0,100000", "--epsilon", "1", "--privacy-id", "host", "--max-rows-per-unit", "3")
    b = _json(capsys, "quantiles", logs / "pairs.csv", "--column", "bytes",
              "--bounds", "0,100000", "--epsilon", "1", "--privacy-id", "host", "--max-rows-per-unit", "3")
    assert a["quantiles"] == b["quantiles"]


def test_bad_lines_follow_the_policy_and_their_count_needs_a_public_length(capsys, logs, tmp_path):
    p = tmp_path / "bad.log"
    p.write_bytes((logs / "access.log").read_bytes() + b"garbage\n\xff not utf-8\n")
    code, _, err = run(capsys, "top", p, "--log-format", "combined", "--column", "path")
    assert code == 1 and "does not match the combined log format" in one_error_line(err)
    assert "20,001" not in err  # a position is a count: not named with a private length
    code, _, err = run(capsys, "top", p, "--log-format", "combined", "--column", "path", "--public-length")
    assert code == 1 and "line 20,001 of" in one_error_line(err)
    code, _, err = run(capsys, "top", p, "--log-format", "combined", "--column", "path", "--on-bad-line", "skip")
    assert code == 0 and "bad line" not in err and "skipped" not in err
    code, _, err = run(capsys, "top", p, "--log-format", "combined", "--column", "path", "--on-bad-line", "skip",
                       "--public-length")
    assert code == 0 and "skipped 2 bad lines (--on-bad-line skip)" in err


def test_stdin_gzip_json_and_regex(capsys, logs, tmp_path):
    import dpsketch

    want = _json(capsys, "top", logs / "paths.txt", "--k", "100")["items"]
    env = dict(os.environ, PYTHONPATH=str(Path(dpsketch.__file__).resolve().parent.parent))
    gz = gzip.compress((logs / "access.log").read_bytes())
    out = subprocess.run([sys.executable, "-m", "dpsketch", "top", "-", "--log-format", "combined", "--column",
                          "path", "--k", "100", "--json", "--seed", "5", "-q"], input=gz, capture_output=True, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["items"] == want
    recs = list(gen.records(N, 3))
    js = tmp_path / "access.jsonl"
    js.write_text("".join(json.dumps(dict(r, path=_path(r))) + "\n" for r in recs), encoding="utf-8")
    assert _json(capsys, "top", js, "--log-format", "json", "--column", "path", "--k", "100")["items"] == want
    got = _json(capsys, "top", logs / "access.log", "--regex", r'"[A-Z]+ (?P<path>[^ "]+) HTTP', "--column", "path",
                "--k", "100")["items"]
    assert got == want


def test_windows_over_the_timestamp_field(capsys, logs, tmp_path):
    recs = list(gen.records(N, 3))
    import datetime as dt

    csv = tmp_path / "timed.csv"
    csv.write_text("path,ts\n" + "".join(
        f'"{_path(r)}",{int(dt.datetime.strptime(r["time"], "%d/%b/%Y:%H:%M:%S %z").timestamp())}\n' for r in recs))
    window = ["--window", "1d", "--start", "2026-03-01T00:00:00+01:00", "--end", "2026-03-04T00:00:00+01:00",
              "--json", "--seed", "5", "-q"]
    code, a, err = run(capsys, "top", logs / "access.log", "--log-format", "combined", "--column", "path",
                       "--time-column", "timestamp", *window)
    assert code == 0, err
    code, b, err = run(capsys, "top", csv, "--column", "path", "--time-column", "ts", *window)
    assert code == 0, err
    strip = [{k: v for k, v in json.loads(x).items() if k != "cli"} for x in a.splitlines()]
    assert strip == [{k: v for k, v in json.loads(x).items() if k != "cli"} for x in b.splitlines()] and len(strip) >= 3


def test_log_options_are_refused_where_they_do_not_fit(capsys, logs):
    for argv, match in [
        (["--log-format", "combined", "--column", "nope"], "has no field 'nope'"),
        (["--log-format", "combined"], "--column FIELD"),
        (["--log-format", "json", "--column", "path", "--strip-query"], "--strip-query"),
        (["--log-format", "combined", "--column", "path", "--format", "csv"], "drop --format csv"),
        (["--regex", "(?P<p>x", "--column", "p"], "not a valid regular expression"),
    ]:
        code, _, err = run(capsys, "top", logs / "access.log", *argv)
        assert code == 2 and match in one_error_line(err), (argv, err)
    code, _, err = run(capsys, "top", "--demo", "--log-format", "combined")
    assert code == 2 and "--log-format does not apply to --demo" in one_error_line(err)


def test_short_help_stays_short_and_completion_knows_the_options(capsys):
    code, out, _ = run(capsys, "top", "--help")
    assert code == 0 and len(out.splitlines()) <= 60 and "--log-format" in out
    code, out, _ = run(capsys, "completion", "bash")
    assert code == 0 and "--log-format" in out and "--strip-query" in out
