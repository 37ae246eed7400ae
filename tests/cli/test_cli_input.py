"""dpsketch top: the text and CSV input paths (line limits, gzip errors, typing rules), --top, the
no-result hint and parameter checks that run before any input is read."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpsketch.io import input as _input
from conftest import one_error_line, run_cli as run

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """Four heavy items (6000, 5000, 4000, 3000 of 30,000) and 12,000 distinct light ones."""
    items = [k for k, c in {"a": 6000, "b": 5000, "c": 4000, "d": 3000}.items() for _ in range(c)]
    items += [f"light{i}" for i in range(30_000 - len(items))]
    random.Random(1).shuffle(items)
    p = tmp_path_factory.mktemp("in") / "heavy.txt"
    p.write_text("\n".join(items) + "\n")
    return p


def test_show_caps_the_table_and_machine_output_is_the_whole_release(capsys, heavy):
    code, out, err = run(capsys, "top", heavy, "-k", 12, "--seed", 1, "--show", 2)
    assert code == 0, err
    rows = out.strip().splitlines()[1:]
    assert [r.split()[1] for r in rows] == ["a", "b"]
    assert "showing the top 2 of 4 released items" in err
    # a release is single-shot: --json and --csv write every released item whatever --show says
    code, out, err = run(capsys, "top", heavy, "-k", 12, "--seed", 1, "--show", 2, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert [k for k, _ in d["items"]] == ["a", "b", "c", "d"] and len(d["intervals"]) == 4
    assert d["cli"]["released"] == 4 and "showing the top" not in err
    code, out, err = run(capsys, "top", heavy, "-k", 12, "--seed", 1, "--show", 2, "--csv")
    assert [ln.split(",")[1] for ln in out.strip().splitlines()[1:]] == ["a", "b", "c", "d"]
    assert "showing the top" not in err


def test_default_releases_something_and_the_hint_when_nothing_passes(capsys, heavy, tmp_path):
    code, out, err = run(capsys, "top", heavy, "--seed", 2)
    assert code == 0, err
    assert "hint" not in err and "a " in out  # default k = 1000 releases the heavy items
    flat = tmp_path / "flat.txt"
    flat.write_text("\n".join(f"x{i}" for i in range(5_000)) + "\n")
    code, out, err = run(capsys, "top", flat, "-k", 2, "--seed", 2)
    assert code == 0, err
    assert "(no item passed the threshold" in out
    hints = [ln for ln in err.splitlines() if "hint:" in ln]
    assert len(hints) == 1 and "--frequency-k" in hints[0]


@pytest.mark.parametrize("argv,needle", [
    (["--epsilon", "1e10"], "epsilon"),          # above the representable range
    (["--epsilon", "1e-12"], "epsilon"),         # below 2**-32
    (["--length-epsilon", "1e-12"], "length_epsilon"),
    (["-a", "countmin", "--oversample", "1", "--max-stream-length", "50"], "capacity"),
])
def test_parameters_are_checked_before_any_input_is_read(capsys, monkeypatch, heavy, argv, needle):
    def no_reading(self):
        raise AssertionError("input was read before the parameters were checked")
        yield  # pragma: no cover

    monkeypatch.setattr(_input.Source, "chunks", no_reading)
    code, out, err = run(capsys, "top", heavy, *argv)
    assert code == 2
    assert needle in one_error_line(err)
    assert out == ""


def test_long_line_is_an_error(capsys, tmp_path):
    p = tmp_path / "long.txt"
    p.write_bytes(b"a\nb\n" + b"x" * 5000 + b"\nc\n")
    code, _, err = run(capsys, "top", p, "--max-line-length", 1000)
    assert code == 1
    line = one_error_line(err)
    assert "longer than 1,000 bytes" in line and "--max-line-length" in line
    assert "xxx" not in line
    code, _, err = run(capsys, "top", p, "--max-line-length", 10_000, "-k", 1, "--seed", 1)
    assert code == 0, err


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_input_without_newlines_stops_with_bounded_memory():
    env = dict(os.environ)
    import dpsketch

    env["PYTHONPATH"] = str(Path(dpsketch.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "dpsketch", "top", "/dev/zero"], capture_output=True,
                       env=env, timeout=120)
    assert r.returncode == 1
    assert "longer than" in one_error_line(r.stderr.decode())


def test_corrupt_gzip_body_is_one_line(capsys, tmp_path):
    blob = bytearray(gzip.compress(("\n".join(f"w{i % 500}" for i in range(200_000)) + "\n").encode()))
    blob[len(blob) // 2 : len(blob) // 2 + 64] = bytes(64)
    p = tmp_path / "bad.txt.gz"
    p.write_bytes(bytes(blob))
    code, _, err = run(capsys, "top", p)
    assert code == 1
    assert "gzip" in one_error_line(err)


def test_csv_row_errors_do_not_echo_the_row(capsys, tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("page,user\nsecret-a,1\nsecret-b\n")
    code, _, err = run(capsys, "top", p, "--column", "page")
    assert code == 1
    line = one_error_line(err)
    assert "secret" not in line and "field" in line


def test_auto_keys_of_text_never_depend_on_the_items(capsys, tmp_path):
    # A type read off the items would be printed with the release (and could be contradicted by a
    # later chunk): text and CSV items are text unless --int-keys says otherwise.
    p = tmp_path / "ints.txt"
    p.write_text("\n".join(["5", "6", "7", "007", "9223372036854775808"]) + "\n")
    for chunk in (2, 100):
        code, out, err = run(capsys, "top", p, "--chunk-size", chunk, "-k", 1, "--seed", 1, "--json", "--public-length", "--top", 0)
        assert code == 0, err
        d = json.loads(out)
        assert d["cli"]["keys"].startswith("str") and d["n"] == 5
        assert all(isinstance(k, str) for k, _ in d["items"])
    batches = list(_input.Source(p, chunk_size=2).chunks())
    assert [b.to_pylist() for b in batches] == [["5", "6"], ["7", "007"], ["9223372036854775808"]]


def test_int_keys_drop_what_is_not_an_int64_without_an_error(capsys, tmp_path):
    items = ["5", " +7 ", "007", "x-secret", "1.0", "9223372036854775807", "9223372036854775808",
             "-9223372036854775808", "-9223372036854775809", "+0000000000000000000000042", "9" * 5000]
    p = tmp_path / "mixed.txt"
    p.write_text("\n".join(items) + "\n")
    kept = [5, 7, 7, 2**63 - 1, -(2**63), 42]
    for chunk in (1, 3, 100):
        src = _input.Source(p, keys="int", chunk_size=chunk)
        batches = list(src.chunks())
        assert all(isinstance(b, np.ndarray) and b.dtype == np.int64 and len(b) for b in batches)
        assert sorted(sum((b.tolist() for b in batches), [])) == sorted(kept)
    code, out, err = run(capsys, "top", p, "--int-keys", "-k", 1, "--seed", 1, "--json", "--public-length", "--top", 0,
                         "--chunk-size", 3)
    assert code == 0, err
    d = json.loads(out)
    assert d["cli"]["keys"].startswith("int") and d["n"] == len(kept)
    assert "error:" not in err and "x-secret" not in err and "line" not in err
    assert "dropped" not in err and "skipped" not in err  # how many were dropped is data


def test_parquet_key_types(capsys, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    big = 2**63 + 5
    path = tmp_path / "k.parquet"
    pq.write_table(pa.table({"u": pa.array([1, 2, big, 2], pa.uint64()),
                             "s": pa.array(["1", " 2 ", "x-secret", "99999999999999999999"])}), path)
    # auto: a uint64 column may hold values outside int64, so its keys are text (nothing lost)
    src = _input.Source(path, column="u")
    assert sum((b.to_pylist() for b in src.chunks()), []) == ["1", "2", str(big), "2"]
    assert src.keys.chosen == "str"
    # --int-keys: values outside int64 are dropped, never an error
    assert sum((b.tolist() for b in _input.Source(path, column="u", keys="int").chunks()), []) == [1, 2, 2]
    assert sum((b.tolist() for b in _input.Source(path, column="s", keys="int").chunks()), []) == [1, 2]
    code, out, err = run(capsys, "top", path, "--column", "s", "--int-keys", "-k", 1, "--seed", 1, "--json", "--public-length")
    assert code == 0, err
    assert "x-secret" not in err and json.loads(out)["n"] == 2


def test_reader_errors_name_no_line_or_row(capsys, tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"a\nb\nc\n\xff\xfe\n")
    code, _, err = run(capsys, "top", p)
    assert code == 1
    line = one_error_line(err)
    assert "not valid utf-8" in line and not re.search(r"\d", line.replace(str(p), "").replace("utf-8", ""))
    p = tmp_path / "long.txt"
    p.write_bytes(b"a\nb\nc\n" + b"x" * 5000 + b"\n")
    code, _, err = run(capsys, "top", p, "--max-line-length", 1000)
    assert code == 1
    assert not re.search(r"line \d", one_error_line(err))
    p = tmp_path / "bad.csv"
    p.write_text("page,user\na,1\nb,2\nc\n")
    code, _, err = run(capsys, "top", p, "--column", "page")
    assert code == 1
    line = one_error_line(err)
    assert "different number of fields" in line and not re.search(r"\d", line.replace(str(p), ""))


def test_unit_separator_lines_are_counted(capsys, tmp_path):
    p = tmp_path / "us.txt"
    p.write_bytes(b"a\x1fb\n" * 50 + b"c\n" * 10)
    code, out, err = run(capsys, "top", p, "-k", 2, "--seed", 1, "--json", "--public-length", "--top", 0,
                         "--epsilon", 5)
    assert code == 0, err
    d = json.loads(out)
    assert d["n"] == 60 and d["items"][0][0] == "a\x1fb"


def test_text_chunks_are_byte_buffers_or_int64_without_python_items(heavy):
    import numpy as np

    from dpsketch.sketches._keys import Utf8Lines

    src = _input.Source(heavy, chunk_size=7_000)
    batches = list(src.chunks())
    assert all(isinstance(b, Utf8Lines) and b.data.dtype == np.uint8 and b.offsets.dtype == np.int64 for b in batches)
    assert sum((b.to_pylist() for b in batches), []) == [line.strip() for line in heavy.read_text().splitlines()
                                                         if line.strip()]
    assert max(len(b) for b in batches) <= 7_000
    assert batches[1].to_arrow().to_pylist() == batches[1].to_pylist()
    ints = heavy.parent / "i.txt"
    ints.write_text("\n".join(str(i % 13 - 6) for i in range(1000)) + "\n")
    batches = list(_input.Source(ints, keys="int", chunk_size=300).chunks())
    assert all(isinstance(b, np.ndarray) and b.dtype == np.int64 for b in batches)
    assert sum((b.tolist() for b in batches), []) == [i % 13 - 6 for i in range(1000)]


def test_split_lines_matches_python_across_block_boundaries():
    import re

    import numpy as np

    from dpsketch import _core

    rng = random.Random(7)
    pieces = ["a", "bb", " c ", "\u3000d\u00a0", "é", "日本", "\t", "", "x\x1fy", "\u2028z"]
    ends = ["\n", "\r\n", "\r"]
    text = "".join(rng.choice(pieces) + rng.choice(ends) for _ in range(3000)) + "tail"
    want = [s.strip() for s in re.split(r"\r\n|\r|\n", text)]
    blob = np.frombuffer(text.encode(), dtype=np.uint8)
    for trial in range(5):
        got, blanks, carry, pos = [], 0, np.zeros(0, np.uint8), 0
        while True:
            step = rng.randint(1, 700)
            chunk, pos = blob[pos : pos + step], pos + step
            final = chunk.size == 0
            block = np.concatenate([carry, chunk])
            r = _core.split_lines(block, final, 1 << 20)
            assert r["error"] == 0
            data, off = r["data"].tobytes(), r["offsets"]
            got += [data[off[i]:off[i + 1]].decode() for i in range(len(off) - 1)]
            blanks += len(r["blank"])
            carry = block[r["consumed"]:]
            if final:
                break
        assert got == [s for s in want if s]
        assert blanks == sum(1 for s in want if not s)


def test_table_hashes_of_the_split_are_the_summaries_own():
    # split_lines(table_hashes=True) hashes each line in the split thread (from a 16-byte read of
    # the block for lines up to 16 bytes, else the general hash); a counter summary fed those
    # hashes must end in exactly the state it reaches hashing the keys itself, which it cannot if
    # one hash differs (the repeated key would take a second slot).
    from dpsketch import _core

    rng = random.Random(5)
    alphabet = "abcxyz0189 é日\u00a0"
    keys = ["".join(rng.choice(alphabet) for _ in range(n)) for n in list(range(0, 41)) * 3]
    keys += ["\xff-bad", "ok"]  # a line replaced under on_bad=replace is hashed from its mended copy
    lines = [rng.choice(keys) for _ in range(20_000)]
    blob = np.frombuffer("\n".join(lines).replace("\xff-bad", "\udcff-bad").encode("utf-8", "surrogateescape"),
                         dtype=np.uint8)
    for cls in ("SpaceSavingStr", "MisraGriesStr"):
        for capacity in (16, 200):
            hashed, plain = getattr(_core, cls)(capacity), getattr(_core, cls)(capacity)
            carry, pos = np.zeros(0, np.uint8), 0
            while True:
                step = rng.randint(1, 900)  # lines cut at block ends take the general hash
                chunk, pos = blob[pos : pos + step], pos + step
                final = chunk.size == 0
                block = np.concatenate([carry, chunk])
                r = _core.split_lines(block, final, 1 << 20, 2, table_hashes=True)
                assert r["hashes"].dtype == np.uint64 and len(r["hashes"]) == len(r["offsets"]) - 1
                hashed.update_many_utf8_hashed(r["data"], r["offsets"], r["hashes"])
                plain.update_many_utf8(r["data"], r["offsets"])
                carry = block[r["consumed"]:]
                if final:
                    break
            assert hashed.to_bytes() == plain.to_bytes()
            assert hashed.n == len([s for s in lines if s.strip()])
            py = getattr(_core, cls)(capacity)  # Python str keys: the general hash on every key
            py.update_many([s.replace("\xff", "\ufffd").strip() for s in lines if s.strip()])
            assert py.to_bytes() == plain.to_bytes()
    with pytest.raises(ValueError, match="one table hash per key"):
        _core.SpaceSavingStr(4).update_many_utf8_hashed(np.frombuffer(b"ab", np.uint8), np.array([0, 1, 2]),
                                                        np.zeros(1, np.uint64))


def test_text_chunks_carry_table_hashes_only_when_asked(heavy):
    plain = list(_input.Source(heavy, chunk_size=7_000).chunks())
    hashed = list(_input.Source(heavy, chunk_size=7_000).chunks(table_hashes=True))
    assert all(b.hashes is None for b in plain)
    assert all(b.hashes is not None and len(b.hashes) == len(b) for b in hashed)
    import dpsketch

    a, b = dpsketch.SpaceSaving(50), dpsketch.SpaceSaving(50)
    for batch in plain:
        a.update_many(batch)
    for batch in hashed:
        b.update_many(batch)
    assert a.to_bytes() == b.to_bytes()


def test_split_lines_errors_name_the_line():
    import numpy as np

    from dpsketch import _core

    bad = np.frombuffer(b"ok\nfine\n\xc3(\nmore\n", dtype=np.uint8)
    r = _core.split_lines(bad, True, 100)
    assert r["error"] == 1 and r["error_line"] == 2
    long = np.frombuffer(b"a\n" + b"z" * 50, dtype=np.uint8)
    r = _core.split_lines(long, False, 10)
    assert r["error"] == 2 and r["error_line"] == 1
    for surrogate in (b"\xed\xa0\x80\n", b"\xc0\xaf\n", b"\xf4\x90\x80\x80\n"):  # surrogate, overlong, > U+10FFFF
        assert _core.split_lines(np.frombuffer(surrogate, dtype=np.uint8), True, 100)["error"] == 1


def test_int_keys_of_text_follow_the_arrow_rule_line_by_line():
    # Text under --int-keys is parsed in the C++ split; CSV, Parquet and Arrow strings go through
    # _lenient_ints. Both must keep and drop exactly the same items, with the same values.
    import pyarrow as pa

    from dpsketch import _core

    rng = random.Random(11)
    edge = ["0", "-0", "+0", "007", "-007", "+", "-", "+-1", "--1", "1-", "1 2", "0x10", "1e3", "1.0", "١٢",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
            "00000000000000000000009223372036854775807", "+00000000000000000000000000000000000000000",
            "18446744073709551616", "99999999999999999999", "9" * 400, "-" + "9" * 400, "12a", "a12", " 5 "]
    alphabet = "0123456789+- x"
    random_items = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 22))) for _ in range(3000)]
    items = [s for s in edge + random_items if s.strip()]
    got = _core.split_lines(np.frombuffer(("\n".join(items) + "\n").encode(), dtype=np.uint8), True, 1 << 20,
                            int_keys=True)["ints"].tolist()
    stripped = pa.array([s.strip() for s in items], type=pa.large_string())
    want, _ = _input._lenient_ints(stripped)
    assert got == want.tolist()
    assert 2**63 - 1 in got and -(2**63) in got and 0 in got  # the ends of int64 are kept
    # Items of up to 16 digits are read from a 16-byte load when those bytes lie in the block, by
    # the digit loop otherwise: cut the same text into random blocks so that both paths see every
    # kind of item (and the bytes before an item belong to another item or to nothing).
    blob = np.frombuffer(("\n".join(items) + "\n").encode(), dtype=np.uint8)
    for _ in range(3):
        cut, carry, pos = [], np.zeros(0, np.uint8), 0
        while True:
            step = rng.randint(1, 60)
            chunk, pos = blob[pos : pos + step], pos + step
            block = np.concatenate([carry, chunk])
            r = _core.split_lines(block, chunk.size == 0, 1 << 20, int_keys=True)
            cut += r["ints"].tolist()
            carry = block[r["consumed"]:]
            if chunk.size == 0:
                break
        assert cut == got


def _inflaters():
    import zlib

    out = [pytest.param((zlib, zlib.error), id="zlib")]
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - isal is a dependency where it has wheels
        return out
    return out + [pytest.param((isal_zlib, isal_zlib.error), id="isal")]


@pytest.mark.parametrize("inflater", _inflaters())
def test_both_inflaters_read_members_and_refuse_bad_streams_alike(inflater):
    import io

    def inflate(blob):
        return b"".join(_input._gunzip(io.BytesIO(blob), 1 << 16, inflater))

    body = os.urandom(200_000).hex().encode()  # incompressible: members span many reads
    two = gzip.compress(body) + gzip.compress(b"c\n" * 30_000, compresslevel=1)
    assert inflate(two) == body + b"c\n" * 30_000
    assert inflate(gzip.compress(b"")) == b""
    for tail in (b"garbage", b"\0" * 16):
        with pytest.raises(OSError):
            inflate(gzip.compress(b"a\n") + tail)
    with pytest.raises(EOFError):
        inflate(two[: len(gzip.compress(body)) - 9])
    corrupt = bytearray(gzip.compress(body))
    corrupt[len(corrupt) // 2 : len(corrupt) // 2 + 64] = bytes(64)
    with pytest.raises(OSError):
        inflate(bytes(corrupt))


def test_gzip_members_trailing_bytes_and_truncation(capsys, tmp_path):
    two = tmp_path / "two.txt.gz"
    two.write_bytes(gzip.compress(b"a\nb\n" * 40_000) + gzip.compress(b"c\n" * 30_000))
    batches = list(_input.Source(two).chunks())
    assert sum(len(b) for b in batches) == 110_000  # both members are read
    assert sum(b.to_pylist().count("c") for b in batches) == 30_000
    for tail, needle in ((b"garbage", "gzip"), (b"\0" * 16, "gzip")):
        bad = tmp_path / "tail.txt.gz"
        bad.write_bytes(gzip.compress(b"a\n" * 10) + tail)
        code, _, err = run(capsys, "top", bad)
        assert code == 1
        assert needle in one_error_line(err)
    cut = tmp_path / "cut.txt.gz"
    blob = gzip.compress(os.urandom(300_000).hex().encode())  # incompressible: the cut is mid-stream
    cut.write_bytes(blob[: len(blob) - 9])
    code, _, err = run(capsys, "top", cut)
    assert code == 1
    assert "truncated" in one_error_line(err)


@pytest.mark.parametrize("content,match", [
    (b"query,user\r1,a\r2,b\r", "bare carriage return"),              # old Mac / Excel line ends
    (bytes(range(256)) * 2, "control or binary bytes"),               # binary bytes read as CSV
    (b"\x00\x01PK\x03\x04query\n1\n", "control or binary bytes"),
])
@pytest.mark.parametrize("command", [["top", "--column", "query"], ["quantiles", "--column", "query",
                                                                      "--bounds", "0,10", "--epsilon", "1"]])
def test_csv_that_cannot_be_read_is_a_clear_error_not_a_traceback(capsys, tmp_path, content, match, command):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    code, out, err = run(capsys, command[0], path, *command[1:])
    assert code == 1 and out == ""
    line = one_error_line(err)
    assert match in line and "Traceback" not in err
    assert all(ch.isprintable() for ch in line)  # no raw bytes of the input echoed


def test_a_column_on_stdin_implies_csv(tmp_path):
    """``cat events.csv | dpsketch top --column q``: stdin has no name to tell its format, and a
    named column means a table, so it is read as CSV (a file still needs a CSV/Parquet/Arrow name)."""
    import subprocess
    import sys

    import dpsketch

    env = dict(os.environ, PYTHONPATH=str(Path(dpsketch.__file__).resolve().parent.parent))
    rows = "q,u\n" + "".join(f"hot,{i}\n" for i in range(3000))
    out = subprocess.run([sys.executable, "-m", "dpsketch", "top", "--column", "q", "--k", "2", "--json", "-q"],
                         input=rows, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert [key for key, _ in json.loads(out.stdout)["items"]] == ["hot"]


def test_plain_ints_fast_path_agrees_with_the_arrow_cast():
    """_core.plain_ints (the C++ read of _plain_ints' common case) answers only where Arrow's cast
    of the -?[0-9]+ language would, and with the same values; None leaves the column to that path."""
    import random

    import pyarrow as pa
    import pyarrow.compute as pc

    from dpsketch import _core

    rng = random.Random(5)
    alphabet = "0123456789" * 3 + "-+ x"
    answered = 0
    for _ in range(3000):
        items = ["".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 3, 7, 17, 18, 19, 20])))
                 for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.5:
            items = [x.lstrip("-+ x").replace("-", "").replace("+", "").replace(" ", "").replace("x", "") or "0"
                     for x in items]
            items = [("-" + x if rng.random() < 0.3 else x) for x in items]
        for typ in (pa.string(), pa.large_string()):
            arr = pa.array(["pad"] + items, type=typ).slice(1)
            _v, ob, db = arr.buffers()
            width = np.int32 if typ == pa.string() else np.int64
            offsets = np.frombuffer(ob, dtype=width)[arr.offset : arr.offset + len(arr) + 1]
            fast = _core.plain_ints(offsets, np.frombuffer(db, dtype=np.uint8))
            if fast is None:
                continue
            answered += 1
            assert all(x and len(x.lstrip("-")) <= 18 and x.lstrip("-").isdigit() and x.count("-") <= 1
                       and not x.endswith("-") for x in items), items
            assert fast.tolist() == pc.cast(arr, pa.int64()).to_pylist() == [int(x) for x in items]
    assert answered > 1000
