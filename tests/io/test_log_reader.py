"""The log reader (dpsketch.io.logs, ``Source(log_format=..., regex=...)``) on generated combined
logs (bench/gen_access_log.py): the fields read are the generator's own values, in order, however
the input is cut into blocks and however many threads parse them; gzip, CRLF, a last line
without a newline, a BOM; bad lines under each --on-bad-line policy; JSON lines and a regex."""

from __future__ import annotations

import datetime as dt
import gzip
import json

import numpy as np
import pytest

from access_logs import combined_line as _line, gen

from dpsketch.io import input as _input
from dpsketch.io import logs as _logs

pytest.importorskip("pyarrow")


N = 6000


@pytest.fixture(scope="module")
def recs():
    return list(gen.records(N, 11))


def _path(r, strip=False):
    p = r["path"].replace("\\xc3\\xa9", "\u00e9")  # nginx's \xHH escapes, decoded
    return p.split("?")[0] if strip else p


@pytest.fixture(params=[(1, 1 << 22), (2, 4096), (2, 1 << 22)], ids=["1thread", "2threads-small-blocks", "2threads"])
def blocks(request, monkeypatch):
    threads, size = request.param
    monkeypatch.setattr(_logs, "LOG_THREADS", threads)
    monkeypatch.setattr(_logs, "LOG_BLOCK_BYTES", size)
    return request.param


def _keys(src):
    return [k for batch in src.chunks() for k in batch.to_pylist()]


@pytest.mark.parametrize("strip", [False, True])
def test_paths_of_a_combined_log_come_out_in_order(tmp_path, recs, blocks, strip):
    p = tmp_path / "access.log"
    p.write_text("".join(_line(r) + "\n" for r in recs), encoding="utf-8")
    src = _input.Source(p, column="path", log_format="combined", strip_query=strip)
    assert _keys(src) == [_path(r, strip) for r in recs]
    assert src.bad_lines == 0 and src.skipped == 0


@pytest.mark.parametrize("variant", ["gzip", "crlf", "no-final-newline", "bom", "blank-lines"])
def test_gzip_crlf_last_line_bom_and_blanks(tmp_path, recs, blocks, variant):
    lines = [_line(r) for r in recs[:3000]]
    end = "\r\n" if variant == "crlf" else "\n"
    text = "".join(x + end for x in lines)
    if variant == "no-final-newline":
        text = text[:-1]
    if variant == "blank-lines":
        text = "".join(x + "\n\n  \n" for x in lines)
    raw = text.encode()
    if variant == "bom":
        raw = b"\xef\xbb\xbf" + raw
    p = tmp_path / "access.log"
    p.write_bytes(gzip.compress(raw) if variant == "gzip" else raw)
    src = _input.Source(p, column="path", log_format="combined")
    assert _keys(src) == [_path(r) for r in recs[:3000]]
    assert src.skipped == (2 * 3000 if variant == "blank-lines" else 0)


def test_pairs_values_and_times_are_aligned(tmp_path, recs, blocks):
    p = tmp_path / "access.log"
    p.write_text("".join(_line(r) + "\n" for r in recs), encoding="utf-8")
    src = _input.Source(p, column="path", privacy_id="host", log_format="combined")
    got = [(k, u) for keys, ids in src.pairs() for k, u in zip(keys.to_pylist(), ids.to_pylist())]
    assert got == [(_path(r), r["host"]) for r in recs]
    # quantiles of the int64 bytes field: '-' (a 304) is dropped, the rest read as numbers
    src = _input.Source(p, column="bytes", log_format="combined")
    vals = np.concatenate(list(src.values(integer=False, bits=52)))
    want = [float(r["bytes"]) for r in recs if r["bytes"] != "-"]
    assert vals.tolist() == want and src.skipped == N - len(want)
    ints = np.concatenate(list(_input.Source(p, column="bytes", log_format="combined").values(integer=True, bits=10)))
    assert ints.tolist() == [min(int(x), 1023) for x in want]
    src = _input.Source(p, column="bytes", privacy_id="host", log_format="combined")
    pairs = [(v, u) for vals, ids in src.number_pairs(integer=False, bits=52)
             for v, u in zip(vals.tolist(), ids.to_pylist())]
    assert pairs == [(float(r["bytes"]), r["host"]) for r in recs if r["bytes"] != "-"]
    # event times: the timestamp field (the zone offset applied)
    src = _input.Source(p, column="path", log_format="combined")
    got = [(k, t) for keys, times in src.timed("timestamp") for k, t in zip(keys.to_pylist(), times.tolist())]
    want = [(_path(r), int(dt.datetime.strptime(r["time"], "%d/%b/%Y:%H:%M:%S %z").timestamp()) * 10**9)
            for r in recs]
    assert [(k, int(t)) for k, t in got] == want


def test_json_lines_and_a_regex_read_the_same_paths(tmp_path, recs, blocks):
    js = tmp_path / "access.jsonl"
    js.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    assert _keys(_input.Source(js, column="path", log_format="json")) == [r["path"] for r in recs]
    p = tmp_path / "access.log"
    p.write_text("".join(_line(r) + "\n" for r in recs), encoding="utf-8")
    src = _input.Source(p, column="path", regex=r'^(?P<host>\S+) \S+ \S+ \[[^\]]*\] "\S+ (?P<path>[^ "?]+)')
    assert _keys(src) == [r["path"].split("?")[0] for r in recs]  # a regex's fields are as written


def _mixed(tmp_path, recs):
    """Good lines with, after line 1000, a line of another shape, a good line with a latin-1 byte,
    and an overlong line."""
    good = [_line(r).encode() for r in recs[:3000]]
    latin = _line(dict(recs[0], path="/caf\xe9")).encode("latin-1")
    long = _line(dict(recs[1], path="/" + "x" * 5000)).encode()
    p = tmp_path / "mixed.log"
    p.write_bytes(b"\n".join(good[:1000] + [b"not a log line", latin, long] + good[1000:]) + b"\n")
    return p, [_path(r) for r in recs[:3000]]


@pytest.mark.parametrize("policy", ["error", "skip", "replace"])
def test_bad_lines_follow_the_policy(tmp_path, recs, blocks, policy):
    p, want = _mixed(tmp_path, recs)
    src = _input.Source(p, column="path", log_format="combined", on_bad_line=policy, max_line_bytes=4096,
                        name_positions=True)
    if policy == "error":
        with pytest.raises(_input.InputError, match="line 1,001 of .* does not match the combined log format"):
            _keys(src)
        return
    got = _keys(src)
    if policy == "skip":
        assert got == want and src.bad_lines == 3
    else:  # the latin-1 byte becomes U+FFFD; the other two cannot be mended
        assert got == want[:1000] + ["/caf\ufffd"] + want[1000:] and src.bad_lines == 2


def test_errors_name_the_line_only_when_positions_are_public(tmp_path, recs):
    p, _ = _mixed(tmp_path, recs)
    with pytest.raises(_input.InputError) as e:
        _keys(_input.Source(p, column="path", log_format="combined"))
    assert "a line of" in str(e.value) and "1,001" not in str(e.value)


@pytest.mark.parametrize("policy", ["error", "skip"])
def test_input_without_newlines_stops_or_is_dropped_at_the_line_limit(tmp_path, recs, blocks, policy):
    p = tmp_path / "zero.log"
    p.write_bytes(_line(recs[0]).encode() + b"\n" + b"x" * 200_000)
    src = _input.Source(p, column="path", log_format="combined", on_bad_line=policy, max_line_bytes=1000)
    if policy == "error":
        with pytest.raises(_input.InputError, match="longer than 1,000 bytes"):
            _keys(src)
    else:
        assert _keys(src) == [_path(recs[0])] and src.bad_lines == 1


def test_options_that_do_not_fit_a_log_are_usage_errors(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("x\n")
    cases = [
        (dict(column="pth", log_format="combined"), "has no field 'pth'"),
        (dict(log_format="combined"), "name the field to read with --column"),
        (dict(column="path", log_format="json", strip_query=True), "--strip-query applies"),
        (dict(column="path", strip_query=True), "--strip-query applies"),
        (dict(column="path", log_format="combined", format="csv"), "drop --format csv"),
        (dict(column="path", regex="(?P<host>x)"), "no group named 'path'"),
        (dict(column="path", regex="(?P<path>x", ), "not a valid regular expression"),
        (dict(column="path", log_format="combined", regex="(?P<path>x)"), "not both"),
    ]
    for kwargs, match in cases:
        with pytest.raises(_input.InputUsageError, match=match):
            _input.Source(p, **kwargs)


def test_missing_empty_and_padded_fields(tmp_path, blocks):
    """A missing, null or empty field gives no item (counted as skipped); white space at a value's
    edges is trimmed as a CSV cell's is (the Arrow path), and keys come out in input order."""
    p = tmp_path / "app.jsonl"
    rows = [{"k": " a "}, {"k": ""}, {"k": None}, {}, {"k": "b"}, {"k": "caf\u00e9"}, {"k": "\u00e9t\u00e9"}] * 500
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    src = _input.Source(p, column="k", log_format="json")
    assert _keys(src) == ["a", "b", "caf\u00e9", "\u00e9t\u00e9"] * 500 and src.skipped == 3 * 500
    ascii_rows = [{"k": ""}, {"k": None}, {}, {"k": "b"}, {"k": "x/y"}] * 500  # compacted without pyarrow
    p.write_text("".join(json.dumps(r) + "\n" for r in ascii_rows), encoding="utf-8")
    src = _input.Source(p, column="k", log_format="json")
    assert _keys(src) == ["b", "x/y"] * 500 and src.skipped == 3 * 500


def test_follow_reads_a_pipe_as_lines_arrive(tmp_path, recs):
    """``timed(follow=True)`` on a FIFO: batches come out while the writer is still writing (the
    first before the writer's second half is sent), and the whole is the log's own order."""
    import os
    import threading

    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    lines = [(_line(r) + "\n").encode() for r in recs[:2000]]
    sent_second_half = threading.Event()
    got_first = threading.Event()

    def writer():
        with open(fifo, "wb", buffering=0) as w:
            w.write(b"".join(lines[:1000]))
            got_first.wait(10)
            sent_second_half.set()
            w.write(b"".join(lines[1000:]))

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    src = _input.Source(fifo, column="path", log_format="combined", on_bad_line="skip")
    keys, early = [], None
    for batch, _times in src.timed("timestamp", follow=True):
        if early is None:
            early = not sent_second_half.is_set()
            got_first.set()
        keys += batch.to_pylist()
    t.join(5)
    assert early and keys == [_path(r) for r in recs[:2000]]
