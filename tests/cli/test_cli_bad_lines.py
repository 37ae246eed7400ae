"""Input that real logs contain: invalid UTF-8 and overlong lines under --on-bad-line, long lines
read in linear time, Ctrl-C honoured while a long line is read, malformed CSV rows."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dpsketch.io import input as _input
from conftest import one_error_line, run_cli as run

pytest.importorskip("pyarrow")

GOOD = 200_000


def _lines_file(path, bad_at, bad_lines):
    """GOOD numbered log lines (20 distinct values, one heavy), with ``bad_lines`` inserted after
    line ``bad_at`` (1-based)."""
    good = [b"GET /home" if i % 2 else b"GET /p%d" % (i % 19) for i in range(GOOD)]
    path.write_bytes(b"\n".join(good[:bad_at] + bad_lines + good[bad_at:]) + b"\n")
    return path


def _keys(src):
    return [k for batch in src.chunks() for k in batch.to_pylist()]


def _reference(raw: bytes, policy: str, limit: int):
    """What the reader yields, written with Python's own decoder: each line on its own, cut to
    ``limit`` bytes (replace) or dropped (skip) when longer, decoded, stripped, blanks skipped."""
    out = []
    for line in re.split(rb"\r\n|\r|\n", raw):
        if len(line) > limit:
            if policy == "skip":
                continue
            line = line[:limit]
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            if policy == "skip":
                continue
            text = line.decode("utf-8", errors="replace")
        if text.strip():
            out.append(text.strip())
    return out


def test_a_bad_byte_deep_in_a_log_stops_by_default_and_skip_or_replace_go_on(capsys, tmp_path):
    p = _lines_file(tmp_path / "app.log", 150_000, [b"GET /caf\xe9"])  # a latin-1 byte at line 150,001
    code, _, err = run(capsys, "top", p)
    assert code == 1
    line = one_error_line(err)
    assert "not valid utf-8" in line and "--on-bad-line" in line

    code, out, err = run(capsys, "top", p, "--on-bad-line", "skip", "--public-length", "--json", "--seed", 1)
    assert code == 0, err
    d = json.loads(out)
    assert d["n"] == GOOD and d["cli"]["bad_lines"] == 1 and "skipped 1 bad line" in err
    assert d["items"][0][0] == "GET /home"

    code, out, err = run(capsys, "top", p, "--on-bad-line", "replace", "--public-length", "--json", "--seed", 1)
    assert code == 0, err
    d = json.loads(out)
    assert d["n"] == GOOD + 1 and d["cli"]["bad_lines"] == 1 and "replaced 1 bad line" in err
    assert "GET /caf\ufffd" in _keys(_input.Source(p, on_bad_line="replace"))
    # --encoding latin-1 was the only way on, and it turns real UTF-8 into mojibake; replace keeps it
    q = _lines_file(tmp_path / "mixed.log", 10, ["GET /café".encode(), b"GET /caf\xe9"])
    assert "GET /café" in _keys(_input.Source(q, on_bad_line="replace"))


def test_a_long_line_stops_by_default_and_skip_or_replace_go_on(capsys, tmp_path):
    p = _lines_file(tmp_path / "app.log", 1000, [b"POST " + b"x" * (2 << 20)])  # one 2 MB line
    code, _, err = run(capsys, "top", p)
    assert code == 1
    line = one_error_line(err)
    assert "longer than 1,048,576 bytes" in line and "--on-bad-line" in line and "xxx" not in line
    code, out, err = run(capsys, "top", p, "--on-bad-line", "skip", "--public-length", "--json", "--seed", 1)
    assert code == 0, err
    assert json.loads(out)["n"] == GOOD
    src = _input.Source(p, on_bad_line="replace", max_line_bytes=1000)
    keys = _keys(src)
    assert len(keys) == GOOD + 1 and "POST " + "x" * 995 in keys and src.bad_lines == 1


def test_skipped_bad_lines_are_not_counted_in_a_private_release(capsys, tmp_path):
    # Two files that differ only in how many bad lines they hold: the same seed gives the same
    # output byte for byte, so nothing in it counts the bad lines.
    outs = []
    for bad in (1, 7):
        p = _lines_file(tmp_path / f"bad{bad}.log", 500, [b"\xff\xfe" + b"z" * 5] * bad)
        for fmt in ((), ("--json",)):
            code, out, err = run(capsys, "top", p, "--on-bad-line", "skip", "--seed", 3, *fmt)
            assert code == 0, err
            out, err = out.replace(str(p), "FILE"), err.replace(str(p), "FILE")
            outs.append((fmt, out, err))
            assert "bad line" not in err and "bad_lines" not in out
    assert outs[:2] == outs[2:]


def test_split_lines_policies_match_python_across_block_boundaries():
    from dpsketch import _core

    rng = random.Random(11)
    pieces = [b"a", b"bb", b" c ", "\u3000d\u00a0".encode(), "é".encode(), b"\xe9", b"\xe2\x82", b"\xed\xa0\x80",
              b"\xf0\x9f\x98", b"\xc0\xaf", b"\xff", b"x" * 40, "日本".encode() * 12, b"\t", b""]
    ends = [b"\n", b"\r\n", b"\r"]
    raw = b"".join(rng.choice(pieces) + rng.choice(ends) for _ in range(3000)) + b"tail\xe9"
    limit = 30
    for policy, code in (("skip", 1), ("replace", 2)):
        want = _reference(raw, policy, limit)
        for trial in range(4):
            got, rest, scanned, discarding, pos, bad = [], np.zeros(0, np.uint8), 0, False, 0, 0
            while True:
                step = rng.randint(1, 90)
                chunk, pos = np.frombuffer(raw[pos : pos + step], np.uint8), pos + step
                final = chunk.size == 0
                block = np.concatenate([rest, chunk])
                r = _core.split_lines(block, final, limit, code, scanned, discarding)
                assert r["error"] == 0
                data, off = r["data"].tobytes(), r["offsets"]
                got += [data[off[i] : off[i + 1]].decode() for i in range(len(off) - 1)]
                rest, scanned, discarding, bad = block[r["consumed"] :], r["scanned"], r["discarding"], bad + r["bad"]
                if final:
                    break
            assert got == want, (policy, trial)
            assert bad > 0


def _dpsketch_env():
    import dpsketch

    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(dpsketch.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_a_run_that_is_reading_a_long_line():
    # A real dpsketch process reads stdin from a pipe that feeds it one endless line; Ctrl-C
    # (SIGINT) must end it within seconds, with status 130, while bytes keep coming.
    proc = subprocess.Popen([sys.executable, "-m", "dpsketch", "top", "-", "--max-line-length", str(1 << 31)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_dpsketch_env())
    block = b"z" * (1 << 20)
    try:
        for _ in range(48):  # 48 MB of the line, read before the signal
            proc.stdin.write(block)
        proc.stdin.flush()
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        while proc.poll() is None and time.monotonic() - sent < 20:
            try:
                proc.stdin.write(block[: 1 << 16])  # the writer does not stop
                proc.stdin.flush()
            except BrokenPipeError:
                break
            time.sleep(0.01)
        waited = time.monotonic() - sent
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode()
    assert code == 130 and "interrupted" in err, (code, err)
    assert waited < 5, waited


def test_csv_bad_bytes_and_malformed_rows_follow_the_policy(capsys, tmp_path):
    p = tmp_path / "events.csv"
    rows = [b"page,user"] + [b"home,%d" % i if i % 2 else b"p%d,%d" % (i % 7, i) for i in range(5000)]
    rows[3000:3000] = [b"caf\xe9,9", b"too,many,fields", b"short"]
    p.write_bytes(b"\n".join(rows) + b"\n")
    code, _, err = run(capsys, "top", p, "--column", "page")
    assert code == 1 and "--on-bad-line" in one_error_line(err)
    src = _input.Source(p, column="page", on_bad_line="skip")
    keys = _keys(src)
    assert len(keys) == 5000 and src.bad_lines == 3
    src = _input.Source(p, column="page", on_bad_line="replace")
    keys = _keys(src)
    assert len(keys) == 5001 and "caf\ufffd" in keys and src.bad_lines == 3  # a malformed row is skipped
    pairs = list(_input.Source(p, column="page", privacy_id="user", on_bad_line="skip").pairs())
    assert sum(len(k) for k, _ in pairs) == 5000


@pytest.mark.parametrize("policy", ["skip", "replace"])
def test_csv_rows_longer_than_the_limit_are_dropped_under_skip_and_replace(capsys, tmp_path, policy):
    p = tmp_path / "events.csv"
    rows = [b"page,user"] + [b"p%d,%d" % (i % 7, i) for i in range(3000)]
    rows[100:100] = [b"long," + b"u" * (2 << 20)]  # one 2 MB row
    rows[2000:2000] = [b"x" * 1500 + b",1", b"y" * 990 + b",2"]  # limit 1000: the first goes
    p.write_bytes(b"\r\n".join(rows) + b"\r\n")
    code, _, err = run(capsys, "top", p, "--column", "page")
    assert code == 1 and "longer than" in one_error_line(err)
    src = _input.Source(p, column="page", on_bad_line=policy, max_line_bytes=1000)
    keys = _keys(src)
    assert len(keys) == 3001 and "y" * 990 in keys and src.bad_lines == 2
    assert keys[:100] == [f"p{i % 7}" for i in range(100)]


def test_errors_name_the_line_only_when_the_length_is_public(capsys, tmp_path):
    p = _lines_file(tmp_path / "app.log", 150_000, [b"GET /caf\xe9"])
    code, _, err = run(capsys, "top", p, "--public-length")
    assert code == 1 and "line 150,001" in one_error_line(err)
    code, _, err = run(capsys, "top", p)
    assert code == 1 and not re.search(r"\d", one_error_line(err).replace(str(p), "").replace("utf-8", ""))
    q = tmp_path / "bad.csv"
    q.write_bytes(b"page,user\n" + b"a,1\n" * 20 + b"b\n" + b"c,2\n")
    code, _, err = run(capsys, "top", q, "--column", "page", "--public-length")
    assert code == 1 and "row 22" in one_error_line(err)  # the header is row 1
    code, _, err = run(capsys, "top", q, "--column", "page")
    assert code == 1 and not re.search(r"\d", one_error_line(err).replace(str(q), ""))
    q.write_bytes(b"page,user\n" + b"a,1\n" * 30 + b"caf\xe9,2\n")
    code, _, err = run(capsys, "top", q, "--column", "page", "--public-length")
    assert code == 1 and "row 32" in one_error_line(err)
    code, _, err = run(capsys, "top", q, "--column", "page")
    assert code == 1 and not re.search(r"\d", one_error_line(err).replace(str(q), "").replace("utf-8", ""))


@pytest.mark.parametrize("policy", ["skip", "replace"])
def test_the_reader_matches_python_on_long_and_bad_lines_across_blocks(tmp_path, policy):
    # lines from a few bytes to several 1 MiB blocks, some with bad bytes at either end, CRLF and
    # CR ends: what the Source yields is what Python's decoder makes of each line on its own
    rng = random.Random(5)
    parts = []
    for _ in range(400):
        size = rng.choice([0, 3, 50, 2999, 3000, 3001, 70_000, (1 << 20) + 7, 3 << 20])
        body = bytes([rng.choice(b"abc \xc3\xa9")]) * size
        if rng.random() < 0.2:
            body = rng.choice([b"\xff", b"\xe2\x82", b""]) + body + rng.choice([b"\xed\xa0\x80", b"\xc3", b""])
        parts.append(body + rng.choice([b"\n", b"\r\n", b"\r"]))
    raw = b"".join(parts)
    p = tmp_path / "mixed.log"
    p.write_bytes(raw)
    src = _input.Source(p, on_bad_line=policy, max_line_bytes=3000, chunk_size=10_000_000)
    assert _keys(src) == _reference(raw, policy, 3000)
    assert src.bad_lines > 0


def test_auto_keys_are_not_contradicted_by_a_text_key_after_two_million_integers(capsys, tmp_path):
    # the key type is fixed before reading (text for text input), so a text key after two million
    # integer ones is one more item, not a late error
    p = tmp_path / "ids.txt"
    p.write_bytes(b"\n".join(b"%d" % (i % 50) for i in range(2_000_000)) + b"\nuser-x\n")
    code, out, err = run(capsys, "top", p, "--public-length", "--json", "--seed", 1, "--top", 0)
    assert code == 0, err
    d = json.loads(out)
    assert d["n"] == 2_000_001 and d["cli"]["keys"].startswith("str")
    assert all(isinstance(k, str) for k, _ in d["items"])



def test_the_csv_row_filter_drops_exactly_the_overlong_lines():
    import io

    rng = random.Random(9)
    raw = b"".join(bytes([rng.choice(b"ab,")]) * rng.choice([0, 1, 999, 1000, 1001, 70_000, (1 << 20) + 5])
                   + rng.choice([b"\n", b"\r\n", b"\r"]) for _ in range(120)) + b"tail"
    dropped = []
    out = _input._LongRowFilter(io.BytesIO(raw), 1000, dropped=lambda: dropped.append(1)).read()
    rows = [r for r in re.split(rb"\r\n|\r|\n", out) if r]
    want = [r for r in re.split(rb"\r\n|\r|\n", raw) if r and len(r) <= 1000]
    assert rows == want
    assert len(dropped) == sum(1 for r in re.split(rb"\r\n|\r|\n", raw) if len(r) > 1000)
