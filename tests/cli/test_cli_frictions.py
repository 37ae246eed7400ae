"""The small frictions of the command line (#38, item 8): the progress bar's default on a terminal,
Ctrl-C after the release was written, wide characters in the table, and the 'dpsketch' logger
(-v/--verbose) that never carries a count or value of the data."""

from __future__ import annotations

import json
import logging

import pytest

from conftest import run_cli as run
from dpsketch.cli import _build_parser
from dpsketch.cli import commands as _commands
from dpsketch.io import input as _input
from dpsketch.io.output import Output, display_width, pad

pytest.importorskip("pyarrow")


# --- wide characters --------------------------------------------------------------------------


def test_display_width_counts_terminal_columns():
    assert display_width("abc") == 3
    assert display_width("東京駅") == 6 and display_width("ｶﾀｶﾅ") == 4  # wide CJK; halfwidth katakana
    assert display_width("😀") == 2 and display_width("e\u0301") == 1  # an emoji; a combining accent
    assert pad("東京", 6) == "東京  " and pad("東京", 6, ">") == "  東京" and display_width(pad("😀x", 9)) == 9


def test_wide_items_do_not_misalign_the_table(capsys, tmp_path):
    items = ["東京駅"] * 3000 + ["😀"] * 2500 + ["abc"] * 2000 + ["cafe\u0301"] * 1500 + ["ｶﾀｶﾅ"] * 1200
    p = tmp_path / "wide.txt"
    p.write_text("\n".join(items) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "top", p, "--k", "20", "--seed", "1", "-q")
    assert code == 0, err
    lines = out.rstrip("\n").splitlines()
    assert len(lines) == 6 and "東京駅" in out and "😀" in out
    # every row ends in the same terminal column (the last column is right-aligned)
    assert len({display_width(line) for line in lines}) == 1, lines
    # the noisy counts end at the same terminal column in every row (a right-aligned column)
    import re

    ends = set()
    for line, item in zip(lines[1:], ["東京駅", "😀", "abc", "cafe\u0301", "ｶﾀｶﾅ"]):
        assert item in line
        m = re.compile(r"\s+\d+").match(line, line.index(item) + len(item))
        ends.add(display_width(line[: m.end()]))
    assert len(ends) == 1, lines


def test_wide_items_do_not_misalign_a_windowed_table(capsys, tmp_path):
    p = tmp_path / "w.csv"
    rows = ["東京駅"] * 400 + ["😀"] * 300 + ["abc"] * 200
    p.write_text("item,ts\n" + "".join(f"{x},{i % 60}\n" for i, x in enumerate(rows)), encoding="utf-8")
    code, out, err = run(capsys, "top", p, "--column", "item", "--time-column", "ts", "--window", "1min",
                         "--start", "0", "--end", "60", "--k", "10", "--seed", "1", "-q")
    assert code == 0, err
    ranked = [line for line in out.splitlines() if not line.startswith("window")]
    assert len(ranked) == 3
    cols = {display_width(line[: line.rindex("  ") + 2]) for line in ranked}
    assert len(cols) == 1, ranked


# --- Ctrl-C after the release ------------------------------------------------------------------


def _items(tmp_path):
    p = tmp_path / "items.txt"
    p.write_text("hot\n" * 5000 + "".join(f"x{i}\n" for i in range(3000)))
    return p


def test_ctrl_c_after_the_release_was_written_exits_0(capsys, tmp_path, monkeypatch):
    release = Output.release

    def release_then_ctrl_c(self, *a, **kw):
        release(self, *a, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(Output, "release", release_then_ctrl_c)
    code, out, err = run(capsys, "top", _items(tmp_path), "--k", "10", "--json")
    assert code == 0 and json.loads(out)["items"][0][0] == "hot"
    assert "interrupted after the release was written" in err


def test_ctrl_c_before_the_release_exits_130(capsys, tmp_path, monkeypatch):
    def ctrl_c(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(_commands, "_row_release", ctrl_c)
    code, out, err = run(capsys, "top", _items(tmp_path), "--k", "10")
    assert code == 130 and out == "" and err.strip().endswith("dpsketch: interrupted")
    # the flag is per run: the next run starts without a release written
    monkeypatch.undo()
    code, _, _ = run(capsys, "top", _items(tmp_path), "--k", "10")
    assert code == 0


# --- the progress bar's default ------------------------------------------------------------------


@pytest.mark.parametrize("argv, tty, want", [
    (["top", "{f}"], True, True),                             # a file on a terminal: a bar over its bytes
    (["top", "{f}"], False, False),                           # stderr not a terminal: none
    (["top", "-"], True, False),                              # stdin would count items: private length
    (["top", "-", "--public-length"], True, True),
    (["top", "-", "--progress"], False, True),
    (["top", "{f}", "--no-progress"], True, False),
    (["top", "{f}", "-q"], True, False),
    (["top", "{pq}", "--column", "q"], True, False),           # Parquet would count rows
    (["top", "{log}", "--log-format", "combined", "--column", "path"], True, True),
])
def test_the_progress_bar_default(tmp_path, monkeypatch, argv, tty, want):
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = _items(tmp_path)
    pq.write_table(pa.table({"q": ["a", "b"]}), tmp_path / "t.parquet")
    (tmp_path / "a.log").write_text('1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5\n')
    names = {"f": f, "pq": tmp_path / "t.parquet", "log": tmp_path / "a.log"}
    argv = [a.format(**names) for a in argv]
    args = _build_parser().parse_args(argv)
    args.on_bad_line = "error"
    monkeypatch.setattr(_commands, "_isatty", lambda stream: tty)
    src = _commands._source(args)
    assert _commands._show_progress(args, src) is want


# --- logging ------------------------------------------------------------------------------------


def test_verbose_logs_through_the_dpsketch_logger_and_never_a_count(capsys, tmp_path):
    p = tmp_path / "items.txt"
    p.write_text("hot\n" * 4321 + "\n" * 17 + "".join(f"x{i}\n" for i in range(2345)))
    code, _, err = run(capsys, "top", p, "--k", "10", "--public-length")
    assert code == 0 and "info:" not in err and "debug:" not in err  # silent without -v
    code, _, err = run(capsys, "top", p, "--k", "10", "-v")
    logged = [ln for ln in err.splitlines() if ln.startswith(("dpsketch: info:", "dpsketch: debug:"))]
    assert code == 0 and any("input " in ln and "items.txt'" in ln for ln in logged)
    assert not any("debug:" in ln for ln in logged)
    (tmp_path / "items.txt.gz").write_bytes(__import__("gzip").compress(p.read_bytes()))
    code, _, err = run(capsys, "top", tmp_path / "items.txt.gz", "--k", "10", "-vv")
    logged = [ln for ln in err.splitlines() if ln.startswith(("dpsketch: info:", "dpsketch: debug:"))]
    assert code == 0 and any("debug:" in ln and "gzip" in ln for ln in logged), err
    for ln in logged:  # nothing the data decides: no line, item or blank count, no item
        for count in ("4321", "4,321", "6683", "6,683", "17 ", "2345", "hot", "x1"):
            assert count not in ln, ln
    assert logging.getLogger("dpsketch").level == logging.DEBUG


def test_verbose_is_an_option_of_the_reading_commands(capsys):
    for command in ("top", "quantiles"):
        code, out, _ = run(capsys, command, "--help-all")
        assert code == 0 and "--verbose" in out
    assert _input.Source  # the reader logs through dpsketch.io.input's logger, a child of 'dpsketch'
    assert logging.getLogger("dpsketch.io.input").parent.name in ("dpsketch.io", "dpsketch")
