"""dpsketch top: the Arrow input path (line limits, gzip errors, typing rules), --top, the
no-result hint and parameter checks that run before any input is read."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from dpsketch import _input
from dpsketch.cli import main

pytest.importorskip("pyarrow")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err):
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("dpsketch: warning:")]
    assert len(lines) == 1 and lines[0].startswith("dpsketch: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """Four heavy items (6000, 5000, 4000, 3000 of 30,000) and 12,000 distinct light ones."""
    items = [k for k, c in {"a": 6000, "b": 5000, "c": 4000, "d": 3000}.items() for _ in range(c)]
    items += [f"light{i}" for i in range(30_000 - len(items))]
    random.Random(1).shuffle(items)
    p = tmp_path_factory.mktemp("in") / "heavy.txt"
    p.write_text("\n".join(items) + "\n")
    return p


def test_top_caps_the_printed_list(capsys, heavy):
    code, out, err = run(capsys, "top", heavy, "-k", 10, "--seed", 1, "--top", 2, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert [k for k, _ in d["items"]] == ["a", "b"]
    assert d["cli"]["released"] == 4 and d["cli"]["top"] == 2
    assert "showing the top 2 of 4 released items" in err
    code, out, err = run(capsys, "top", heavy, "-k", 10, "--seed", 1, "--top", 0, "--csv")
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
    assert len(hints) == 1 and "--k" in hints[0]


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


def test_int_detection_rule(capsys, tmp_path):
    p = tmp_path / "ints.txt"
    p.write_text("\n".join(["5", "6", "7", "007"]) + "\n")
    code, _, err = run(capsys, "top", p, "--chunk-size", 3)
    assert code == 1
    assert "line 4" in one_error_line(err) and "--str-keys" in err
    code, out, err = run(capsys, "top", p, "--chunk-size", 4, "-k", 1, "--seed", 1, "--json")
    assert code == 0, err
    assert json.loads(out)["cli"]["keys"].startswith("str")  # '007' in the first chunk: text keys
    big = tmp_path / "big.txt"
    big.write_text("1\n9223372036854775808\n")  # above int64: text, never a wrapped integer
    code, out, err = run(capsys, "top", big, "-k", 1, "--seed", 1, "--json")
    assert json.loads(out)["cli"]["keys"].startswith("str")
    code, out, err = run(capsys, "top", p, "--int-keys", "-k", 1, "--seed", 1, "--json", "--top", 0, "--public-length")
    assert code == 0, err
    d = json.loads(out)
    assert d["cli"]["keys"].startswith("int") and d["n"] == 4
    src = _input.Source(p, keys="int")
    assert sorted(sum((b.tolist() for b in src.chunks()), [])) == [5, 6, 7, 7]  # '007' parsed as 7


def test_unit_separator_lines_are_counted(capsys, tmp_path):
    p = tmp_path / "us.txt"
    p.write_bytes(b"a\x1fb\n" * 50 + b"c\n" * 10)
    code, out, err = run(capsys, "top", p, "-k", 1, "--seed", 1, "--json", "--top", 0, "--public-length")
    assert code == 0, err
    d = json.loads(out)
    assert d["n"] == 60 and d["items"][0][0] == "a\x1fb"


def test_chunks_yield_arrow_or_int64_without_python_items(heavy):
    import numpy as np
    import pyarrow as pa

    src = _input.Source(heavy, chunk_size=7_000)
    batches = list(src.chunks())
    assert all(isinstance(b, pa.Array) and b.type == pa.large_string() for b in batches)
    assert sum(len(b) for b in batches) == 30_000
    assert max(len(b) for b in batches) <= 7_000
    ints = heavy.parent / "i.txt"
    ints.write_text("\n".join(str(i % 13 - 6) for i in range(1000)) + "\n")
    batches = list(_input.Source(ints).chunks())
    assert all(isinstance(b, np.ndarray) and b.dtype == np.int64 for b in batches)


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
