"""Releases over time (docs/privacy.md §Windows): dpsketch.time.windows.Windowed, Budget.disjoint and
``dpsketch top --time-column --window``.

C2: the Budget is charged once for the disjoint windows of a series. C3: no published object is a
deterministic function of another plus exact data (each window's release, noisy length included,
draws fresh noise). A windowed release equals releasing each window's slice on its own with the
window's seed. Stdin that keeps growing gives releases as windows close, before its end."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dpsketch
from dpsketch import Budget
from dpsketch.errors import BudgetExceededError
from dpsketch.time.windows import NS, Windowed, assign, parse_duration, parse_instant, window_seed

from conftest import one_error_line, run_cli as run

pytest.importorskip("pyarrow")

HOUR = 3600


def _events(n=40_000, hours=4, seed=1):
    rng = np.random.default_rng(seed)
    times = rng.uniform(0, hours * HOUR, n)
    items = np.minimum(rng.zipf(1.4, n), 400).astype(np.int64)
    return items, times


def _windowed(budget=None, seed=None, hours=4, **kw):
    opts = dict(period="1h", make=lambda: dpsketch.SpaceSaving(40), epsilon=1.0, delta=1e-6, k=20, start=0,
                end=hours * HOUR, seed=seed, budget=budget)
    opts.update(kw)
    return Windowed(**opts)


# -- C2: one charge for the series --------------------------------------------------------------

def test_budget_is_charged_once_for_disjoint_windows():
    items, times = _events()
    b = Budget(1.0, 1e-6)
    rels = list(_windowed(b).releases([(items, times)]))
    assert len(rels) == 4 and all(r.epsilon <= 1.0 and r.delta <= 1e-6 for r in rels)
    assert b.spent().epsilon == 1.0 and b.spent().delta == 1e-6
    assert len(b.ledger) == 1 and "parallel composition" in b.ledger[0].mechanism
    # the same four releases charged one by one (no disjointness) do not fit the cap
    b2 = Budget(1.0, 1e-6)
    ss = [dpsketch.SpaceSaving(40) for _ in range(2)]
    for s in ss:
        s.update_many(items[:100])
    ss[0].release(epsilon=1.0, delta=1e-6, k=20, budget=b2)
    with pytest.raises(BudgetExceededError):
        ss[1].release(epsilon=1.0, delta=1e-6, k=20, budget=b2)


def test_a_series_that_does_not_fit_is_refused_before_any_window_opens():
    b = Budget(1.0, 1e-6)
    b.spend("earlier", epsilon=0.5)
    with pytest.raises(BudgetExceededError):
        _windowed(b)
    assert len(b.ledger) == 1


def test_disjoint_scope_serves_each_part_once_and_caps_it():
    scope = Budget(2.0, 1e-6).disjoint("m", epsilon=1.0, delta=1e-6)
    part = scope.part(0)
    assert (part.epsilon, part.delta) == (1.0, 1e-6)
    with pytest.raises(ValueError, match="already has its budget"):
        scope.part(0)
    part.spend("a", epsilon=1.0)
    with pytest.raises(BudgetExceededError):
        part.spend("b", epsilon=0.1)
    assert len(scope) == 1


def test_budget_file_is_charged_once(tmp_path):
    items, times = _events(2000)
    fb = dpsketch.Budget.open(tmp_path / "b.json", epsilon=1.5, delta=1e-5)
    list(_windowed(fb).releases([(items, times)]))
    again = dpsketch.Budget.open(tmp_path / "b.json")
    assert again.spent().epsilon == 1.0 and len(again.ledger) == 1


# -- C3: every release draws fresh noise --------------------------------------------------------

def test_windows_with_identical_data_get_independent_noise():
    # 60 keys with count 200 in each of four windows: identical exact data, so any equality between
    # two windows' releases would come from shared noise (k = 120: every key is far above n/k = 100)
    keys = np.repeat(np.arange(60, dtype=np.int64), 200)
    items = np.concatenate([keys] * 4)
    times = np.concatenate([np.full(len(keys), h * HOUR + 5.0) for h in range(4)])
    w = _windowed(make=lambda: dpsketch.SpaceSaving(240), k=120)
    rels = list(w.releases([(items, times)]))
    values = [dict(r.items) for r in rels]
    common = set.intersection(*(set(v) for v in values))
    assert len(common) > 40
    for a in range(4):
        for b in range(a + 1, 4):
            diffs = np.array([values[a][key] - values[b][key] for key in common])
            assert np.count_nonzero(diffs) > len(common) // 3  # independent DLap draws differ mostly
            assert len(set(diffs.tolist())) > 3  # not a shift of one shared draw
    assert len({r.n for r in rels}) > 1  # each window's own noisy length, never the exact 12,000
    assert all(r.metadata["length"] == "private" for r in rels)
    assert len({window_seed(7, i) for i in range(100)}) == 100 and window_seed(None, 3) is None


# -- the windowed release is the per-window releases ---------------------------------------------

def test_windowed_release_equals_each_window_slice_released_on_its_own():
    items, times = _events()
    rels = list(_windowed(seed=9).releases([(items[i:i + 7000], times[i:i + 7000]) for i in range(0, 40_000, 7000)]))
    assert [r.metadata["window"]["index"] for r in rels] == [0, 1, 2, 3]
    for i, rel in enumerate(rels):
        inside = (times >= i * HOUR) & (times < (i + 1) * HOUR)
        alone = dpsketch.SpaceSaving(40)
        alone.update_many(items[inside])
        ref = alone.release(epsilon=1.0, delta=1e-6, k=20, seed=window_seed(9, i))
        assert rel.items == ref.items and rel.threshold == ref.threshold and rel.n == ref.n
        w = rel.metadata["window"]
        assert (w["start_ns"], w["end_ns"]) == (i * HOUR * NS, (i + 1) * HOUR * NS)
        assert rel.metadata["composition"]["rule"] == "parallel"


def test_input_order_does_not_matter_with_the_input_clock():
    items, times = _events(5000)
    order = np.random.default_rng(3).permutation(len(items))
    a = [r.items for r in _windowed(seed=4).releases([(items, times)])]
    b = [r.items for r in _windowed(seed=4).releases([(items[order], times[order])])]
    assert a == b


def test_empty_windows_are_released_and_events_outside_the_range_dropped():
    items = np.array([1] * 50 + [2] * 50, dtype=np.int64)
    times = np.array([10.0] * 50 + [-10.0] * 50)  # window 0, and before start
    rels = list(_windowed(seed=1, hours=3).releases([(items, times)]))
    assert [r.metadata["window"]["index"] for r in rels] == [0, 1, 2]
    assert rels[0].keys() == [1] or rels[0].keys() == []  # item 2 is outside [start, end)
    assert rels[1].items == [] and rels[2].items == []


def test_an_event_at_a_boundary_belongs_to_the_window_that_starts_there():
    t = np.array([0, HOUR * NS - 1, HOUR * NS, 2 * HOUR * NS - 1, -1], dtype=np.int64)
    assert assign(t, HOUR * NS).tolist() == [0, 0, 1, 1, -1]
    items = np.array([5, 6], dtype=np.int64)
    w = _windowed(seed=2, make=lambda: dpsketch.MisraGries(40), k=None)
    w.update(items, np.array([HOUR * NS - 1, HOUR * NS], dtype="datetime64[ns]"))
    assert {i: dict(s.items()) for i, s in w._open.items()} == {0: {5: 1}, 1: {6: 1}}


def test_wall_clock_drops_late_and_early_events_and_releases_on_schedule():
    clock = [100.0]
    w = Windowed(period=10, make=lambda: dpsketch.MisraGries(8), epsilon=1.0, delta=1e-6, clock="wall",
                 allowed_lateness=2, start=100, end=140, now=lambda: clock[0], seed=5)
    assert w.next_deadline() == 112.0
    one = np.ones(500, dtype=np.int64)
    assert w.update(one, np.full(500, 105.0), now=101.0) == []
    assert w.update(one * 2, np.full(500, 125.0), now=101.5) == []  # early: window 2 has not begun
    assert w.open_windows == 1
    out = w.update(one * 3, np.full(500, 104.0), now=113.0)  # late: window 0 closed at 112
    assert [r.metadata["window"]["index"] for r in out] == [10]  # [100 s, 110 s)
    assert out[0].keys() == [1]
    w.update(one * 4, np.full(500, 115.0), now=119.0)
    assert w.advance(now=121.9) == []
    out = w.advance(now=122.0)
    assert [r.keys() for r in out] == [[4]]
    rest = w.close(now=123.0)  # through end: windows 2 and 3, empty
    assert [r.metadata["window"]["index"] for r in rest] == [12, 13] and all(r.items == [] for r in rest)
    assert w.open_windows == 0


def test_parameters_are_checked():
    mk = lambda: dpsketch.SpaceSaving(40)  # noqa: E731
    with pytest.raises(ValueError, match="start and end"):
        Windowed(period="1h", make=mk, epsilon=1, delta=1e-6, k=20, end=10)
    with pytest.raises(ValueError, match="needs end"):
        Windowed(period="1h", make=mk, epsilon=1, delta=1e-6, k=20, start=0)
    with pytest.raises(ValueError, match="capacity >= k"):
        Windowed(period="1h", make=mk, epsilon=1, delta=1e-6, k=50, start=0, end=10)
    with pytest.raises(TypeError, match="SpaceSaving"):
        Windowed(period="1h", make=lambda: dpsketch.CountMin(64, 4), epsilon=1, delta=1e-6, k=5, start=0, end=10)
    with pytest.raises(ValueError, match="duration"):
        parse_duration("1 hour")
    assert parse_duration("1h30m") == 5400 * NS and parse_duration("250ms") == NS // 4
    assert parse_instant("1970-01-01T01:00:00Z") == parse_instant(3600) == parse_instant("1970-01-01T02:00:00+01:00")


# -- one privacy id as the unit -----------------------------------------------------------------

def _unit_windowed(**kw):
    opts = dict(period=10, make=lambda: dpsketch.MisraGries(64), epsilon=1.0, delta=1e-6, start=0, end=50,
                max_rows_per_unit=2, seed=1)
    opts.update(kw)
    return Windowed(**opts)


def _kept(w):
    return {i: dict(s.items()) for i, s in sorted(w._open.items())}


def test_a_unit_keeps_its_first_r_rows_over_the_whole_series():
    w = _unit_windowed()
    # unit 7 has one row in each of the five windows, in input order 4, 0, 3, 1, 2; unit 8 one row
    w.update(np.array([40, 0, 30, 10, 20, 99], dtype=np.int64), np.array([45.0, 5, 35, 15, 25, 5]),
             np.array([7, 7, 7, 7, 7, 8], dtype=np.int64))
    assert _kept(w) == {0: {0: 1, 99: 1}, 4: {40: 1}}  # its first two rows: at most r = 2 windows
    w.update(np.array([11], dtype=np.int64), np.array([15.0]), np.array([7], dtype=np.int64))
    assert 1 not in _kept(w)


def test_adding_a_unit_changes_at_most_r_windows_by_its_own_rows():
    rng = np.random.default_rng(4)
    n = 3000
    items, times, ids = rng.integers(0, 30, n), rng.uniform(0, 50, n), rng.integers(0, 200, n)
    unit = np.full(12, 1000)  # the added unit: 12 rows spread over all windows
    u_items, u_times = np.full(12, 31), np.linspace(0, 49, 12)
    pos = np.sort(rng.choice(n, 12, replace=False))
    with_unit = [np.insert(a, pos, b) for a, b in ((items, u_items), (times, u_times), (ids, unit))]
    a, b = _unit_windowed(), _unit_windowed()
    a.update(*with_unit)
    b.update(items, times, ids)
    ka, kb = _kept(a), _kept(b)
    changed = [i for i in set(ka) | set(kb) if ka.get(i) != kb.get(i)]
    assert 1 <= len(changed) <= 2  # at most r windows
    total = 0
    for i in changed:  # the difference is the unit's own key: the other units keep what they kept
        diff = {key: ka[i].get(key, 0) - kb.get(i, {}).get(key, 0) for key in set(ka[i]) | set(kb.get(i, {}))}
        diff = {key: d for key, d in diff.items() if d}
        assert set(diff) == {31}
        total += diff[31]
    assert total == 2  # its first r = 2 rows


def test_unit_series_reports_the_unit_level_guarantee_and_is_charged_once():
    b = Budget(1.0, 1e-6)
    w = _unit_windowed(budget=b, max_rows_per_unit=4)
    rels = list(w.releases([(np.arange(100) % 7, np.arange(100) / 2.0, np.arange(100) % 13)]))
    assert len(rels) == 5 and len(b.ledger) == 1 and b.spent().epsilon <= 1.0
    for r in rels:
        m = r.metadata
        assert r.mechanism == "unit.bounded_memory[PMG]" and r.epsilon <= 1.0 and r.delta <= 1e-6
        assert m["privacy_unit"] == "privacy_id" and m["neighbours"] == "add_remove_unit"
        assert m["max_rows_per_unit"] == 4 and "whole series" in m["bounding"]
        assert m["per_row_calibration"]["epsilon_per_row"] == 0.25
        assert {key for key in m if "epsilon" in key or "delta" in key} == {
            "epsilon", "delta", "epsilon_requested", "delta_requested"}  # per-row figures only under per_row
        assert "delta_unstable_labels" in m["per_row_calibration"]
        assert "group privacy" in m["composition"]["rule"]
    with pytest.raises(ValueError, match="privacy_id"):
        _unit_windowed().update(np.arange(3), np.arange(3.0))


# -- the command line --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def event_csv(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 30_000
    t = np.sort(rng.integers(1_700_000_000, 1_700_000_000 + 3 * HOUR, n))
    q = np.minimum(rng.zipf(1.3, n), 300)
    path = tmp_path_factory.mktemp("win") / "events.csv"
    with open(path, "w") as f:
        f.write("query,ts,user\n")
        for qi, ti, ui in zip(q.tolist(), t.tolist(), rng.integers(0, 2000, n).tolist()):
            f.write(f"q{qi},{ti},u{ui}\n")
    return path


# windows start at --origin (1700000000 = 2023-11-14T22:13:20Z), not on the hour
WINDOW_ARGS = ["--column", "query", "--time-column", "ts", "--window", "1h", "--origin", "1700000000",
               "--start", "2023-11-14T22:13:20Z", "--end", "1700010800", "--k", "20"]


def test_cli_json_lines_parse_back_one_per_window(capsys, event_csv):
    code, out, err = run(capsys, "top", event_csv, *WINDOW_ARGS, "--seed", 3, "--json")
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert [o["metadata"]["window"]["start"] for o in objs] == [
        "2023-11-14T22:13:20Z", "2023-11-14T23:13:20Z", "2023-11-15T00:13:20Z"]
    for o in objs:
        assert o["mechanism"] == "DPSS" and o["items"] and o["items"][0][0] == "q1"
        assert o["cli"]["exact_counts_withheld"] is True
        assert o["metadata"]["composition"]["series_epsilon"] == 1.0
    assert "spent: epsilon=1, delta=1e-06" in err
    # the same seed gives the same release, also through CSV
    code, out2, _ = run(capsys, "top", event_csv, *WINDOW_ARGS, "--seed", 3, "--csv")
    rows = list(csv.DictReader(io.StringIO(out2)))
    assert rows and rows[0]["window_start"] == "2023-11-14T22:13:20Z" and rows[0]["item"] == "q1"
    assert int(rows[0]["noisy_count"]) == objs[0]["items"][0][1]
    # --show cuts the table only: every window's JSON line and CSV rows hold its whole release
    code, out3, _ = run(capsys, "top", event_csv, *WINDOW_ARGS, "--seed", 3, "--json", "--show", 1)
    assert [json.loads(line)["items"] for line in out3.splitlines()] == [o["items"] for o in objs]
    assert any(len(o["items"]) > 1 for o in objs)
    code, out4, _ = run(capsys, "top", event_csv, *WINDOW_ARGS, "--seed", 3, "--csv", "--show", 1)
    assert out4 == out2


def test_cli_refusals(capsys, event_csv):
    for extra, needle in (
        (["--column", "query", "--time-column", "ts", "--window", "1h"], "--start TIME and --end TIME"),
        ([*WINDOW_ARGS, "--privacy-id", "user"], "needs --max-rows-per-unit R"),
        ([*WINDOW_ARGS, "--max-rows-per-unit", "3"], "applies to the user-level release"),
        ([*WINDOW_ARGS, "--allowed-lateness", "5s"], "--allowed-lateness applies with --follow"),
        ([*WINDOW_ARGS, "--algorithm", "countmin"], "no windowed release"),
        ([*WINDOW_ARGS, "--public-length"], "--public-length does not apply"),
        (["--column", "query", "--follow"], "--follow applies to windowed releases"),
        ([*WINDOW_ARGS, "--follow", "--on-bad-line", "error"], "--on-bad-line error is not available with --follow"),
        ([*WINDOW_ARGS[:-4], "--start", "yesterday", "--end", "1700010800"], "cannot read 'yesterday' as a time"),
    ):
        code, out, err = run(capsys, "top", event_csv, *extra)
        assert code == 2 and out == "" and needle in one_error_line(err), (extra, err)


def _window_releases(out):
    return [(o["metadata"]["window"]["start"], o["items"], o["n"], o["threshold"])
            for o in map(json.loads, out.splitlines())]


@pytest.mark.parametrize("policy", ["skip", "replace"])
def test_cli_bad_rows_are_decided_one_by_one_with_window(capsys, tmp_path, policy):
    # --on-bad-line skip and replace apply to a windowed run: each bad row is dropped or mended on
    # its own bytes, and the series equals that of the input without (or with the mended) rows.
    rng = np.random.default_rng(8)
    t = np.sort(rng.integers(1_700_000_000, 1_700_000_000 + 2 * HOUR, 3000))
    good = [f"q{min(int(z), 50)},{ti}".encode() for z, ti in zip(rng.zipf(1.5, 3000), t.tolist())]
    bad = {500: b"q1,1700000100,extra", 1500: b"q\xff\xfe,1700003700", 2500: b"q1," + b"9" * 3000}
    rows = list(good)
    for at in sorted(bad, reverse=True):
        rows.insert(at, bad[at])
    (tmp_path / "bad.csv").write_bytes(b"query,ts\n" + b"\n".join(rows) + b"\n")
    kept = good + ([b"q\xef\xbf\xbd\xef\xbf\xbd,1700003700"] if policy == "replace" else [])
    (tmp_path / "clean.csv").write_bytes(b"query,ts\n" + b"\n".join(kept) + b"\n")
    args = [*WINDOW_ARGS[:-4], "--end", "1700007200", "--k", "5", "--seed", "3", "--json",
            "--max-line-length", "1000"]
    code, want, err = run(capsys, "top", tmp_path / "clean.csv", *args)
    assert code == 0, err
    code, got, err = run(capsys, "top", tmp_path / "bad.csv", *args, "--on-bad-line", policy)
    assert code == 0, err
    assert _window_releases(got) == _window_releases(want) and len(_window_releases(got)) == 2
    assert "bad line" not in err  # how many were skipped is data: not shown
    # without --follow the default still stops the run, before any window is released
    code, out, err = run(capsys, "top", tmp_path / "bad.csv", *args)
    last = err.strip().splitlines()[-1]
    assert code == 1 and out == "" and last.startswith("dpsketch: error:") and "--on-bad-line skip" in last


def test_follow_skips_bad_rows_by_default_and_releases_the_whole_series():
    # A bad row arriving mid-series must not stop a --follow run: the windows already printed
    # would be all there is, and the stop time would tell when the row arrived.
    import dpsketch as pkg

    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(pkg.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    now = time.time()
    rows = ([f"hot,{now:.6f}" for _ in range(200)] + ["hot,1,extra", "q\udcff,1", "x," + "9" * 5000]
            + [f"late,{now:.6f}" for _ in range(200)])
    data = ("query,ts\n" + "\n".join(rows) + "\n").encode("utf-8", "surrogateescape")
    proc = subprocess.run(
        [sys.executable, "-m", "dpsketch", "top", "-", "--column", "query", "--time-column", "ts", "--window", "1h",
         "--follow", "--k", "5", "--json", "--max-line-length", "1000"],
        input=data, capture_output=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    objs = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert objs
    released = {k for o in objs for k, _ in o["items"]}
    assert {"hot", "late"} <= released  # the rows after the bad ones were read too
    assert b"bad line" not in proc.stderr


def test_follow_takes_gzip_magic_only_from_the_first_bytes():
    # A later read that happens to start with the gzip magic is a row (a bad one), not a gzip file:
    # it must not stop the series.
    import dpsketch as pkg

    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(pkg.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpsketch", "top", "-", "--column", "query", "--time-column", "ts", "--window", "1h",
         "--follow", "--k", "5", "--json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        now = time.time()
        for chunk in (b"query,ts\n" + b"".join(b"hot,%.6f\n" % now for _ in range(100)),
                      b"\x1f\x8bq,1\n",  # its own write: a read is likely to start on it
                      b"".join(b"late,%.6f\n" % now for _ in range(100))):
            proc.stdin.write(chunk)
            proc.stdin.flush()
            time.sleep(1.0)
        out, err = proc.communicate(timeout=120)
    except BaseException:
        proc.kill()
        raise
    assert proc.returncode == 0, err.decode()
    released = {k for line in out.decode().splitlines() for k, _ in json.loads(line)["items"]}
    assert {"hot", "late"} <= released


def test_cli_privacy_id_series(capsys, event_csv):
    code, out, err = run(capsys, "top", event_csv, *WINDOW_ARGS, "--privacy-id", "user", "--max-rows-per-unit", 2,
                         "--json", "--seed", 1)
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert len(objs) == 3
    for o in objs:
        assert o["mechanism"] == "unit.bounded_memory[DPSS]" and o["metadata"]["max_rows_per_unit"] == 2
        assert o["metadata"]["privacy_unit"] == "privacy_id"
    assert "bound per unit: r=2 rows over the whole series" in err


def test_cli_budget_file_charged_once(capsys, event_csv, tmp_path):
    ledger = tmp_path / "b.json"
    assert run(capsys, "budget", "new", ledger, "--epsilon", 1.5, "--delta", 1e-5)[0] == 0
    code, out, err = run(capsys, "top", event_csv, *WINDOW_ARGS, "--budget", ledger, "--json")
    assert code == 0, err and len(out.splitlines()) == 3
    fb = dpsketch.Budget.open(ledger)
    assert fb.spent().epsilon == 1.0 and len(fb.ledger) == 1
    code, _, err = run(capsys, "top", event_csv, *WINDOW_ARGS, "--budget", ledger, "--json")
    assert code == 2 and "has epsilon=0.5" in one_error_line(err)


def test_growing_stdin_releases_windows_before_its_end():
    import queue
    import threading

    import dpsketch as pkg

    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(pkg.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpsketch", "top", "-", "--column", "query", "--time-column", "ts", "--window", "1s",
         "--follow", "--allowed-lateness", "3s", "--k", "5", "--json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, bufsize=1)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    reader.start()
    early = []
    try:
        assert "released each at its end" in proc.stderr.readline() + proc.stderr.readline()  # reading begins
        proc.stdin.write("query,ts\n")
        for burst in range(3):
            now = time.time()
            proc.stdin.write("".join(f"hot,{now:.6f}\nq{j},{now:.6f}\n" for j in range(300)))
            proc.stdin.flush()
            # stdin stays open: a release must come within period + lateness (plus slack for a busy machine);
            # the lateness is long enough that a starved process still reads each burst in its window
            early.append(lines.get(timeout=20))
            time.sleep(0.2)
        assert proc.poll() is None  # still running: nothing has ended the input
        proc.stdin.close()  # the end of the input
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    except BaseException:
        proc.kill()
        raise
    reader.join(timeout=10)
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    objs = [json.loads(line) for line in early + rest]
    starts = [o["metadata"]["window"]["start_ns"] for o in objs]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert all(b - a == NS for a, b in zip(starts, starts[1:]))  # consecutive: empty windows released too
    hot = [dict(o["items"]).get("hot") for o in objs]
    assert sum(v is not None and v > 200 for v in hot) >= 2  # the bursts arrived in their windows


# -- window indices computed elsewhere (the Spark front ends) ----------------------------------------

def _same(a, b):
    assert (a.items, a.threshold, a.n, a.metadata["window"]) == (b.items, b.threshold, b.n, b.metadata["window"])


def test_update_windows_equals_update_with_the_assigned_windows():
    items, times = _events(n=8000)
    a, b = _windowed(seed=4), _windowed(seed=4)
    for lo in range(0, len(items), 3000):
        a.update(items[lo:lo + 3000], times[lo:lo + 3000])
        b.update_windows(items[lo:lo + 3000], assign(np.floor(times[lo:lo + 3000] * NS).astype(np.int64), HOUR * NS))
    for x, y in zip(a.close(), b.close()):
        _same(x, y)
    with pytest.raises(ValueError, match="differ in length"):
        _windowed().update_windows(items[:3], np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="privacy ids"):
        _windowed(max_rows_per_unit=2).update_windows(items[:3], np.zeros(3, np.int64))


class _Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def test_wall_clock_releaser_releases_due_windows_in_order_once():
    from dpsketch.time.windows import WallClockReleaser

    clock = _Clock(5.0)
    w = Windowed(period=10, make=lambda: dpsketch.SpaceSaving(4), epsilon=1.0, delta=1e-6, k=2, start=0, end=40,
                 clock="wall", allowed_lateness=2, seed=1, now=clock)
    got = []
    rel = WallClockReleaser(w, got.append, max_wait=0.01)
    rel.feed(np.array([7] * 500 + [8] * 3, dtype=np.int64), np.zeros(503, np.int64))
    rel.feed(np.array([9] * 500), np.ones(500, np.int64))  # window 1 has not begun at 5: early, dropped
    clock.t = 12.5  # window 0's deadline (12) passed: the clock thread releases it
    deadline = time.time() + 10
    while not got and time.time() < deadline:
        time.sleep(0.01)
    assert [r.metadata["window"]["index"] for r in got] == [0]
    rel.feed(np.array([7] * 500), np.zeros(500, np.int64))  # late for window 0: dropped
    rel.close()
    assert [r.metadata["window"]["index"] for r in got] == [0, 1, 2, 3]
    assert [k for k, _ in got[0].items] == [7] and abs(dict(got[0].items)[7] - 500) < 50
    assert all(r.items == [] for r in got[1:])
    with pytest.raises(ValueError, match="clock='wall'"):
        WallClockReleaser(_windowed(), got.append)


def test_release_windows_releases_every_window_over_every_partition():
    from dpsketch.distributed import release_windows

    def empty():
        return dpsketch.SpaceSaving(8)

    s = empty()
    s.update_many(np.array([3] * 400 + [4] * 5, dtype=np.int64))
    b = Budget(1.0, 1e-6)
    opts = dict(first=5, last=7, period_ns=HOUR * NS, origin_ns=0, partitions=3, empty=empty, k=4, epsilon=1.0,
                delta=1e-6, seed=2)
    rels = release_windows({6: [(2, s)]}, budget=b, **opts)
    assert [r.metadata["window"]["index"] for r in rels] == [5, 6, 7] and len(b.ledger) == 1
    assert [r.metadata["partitions"] for r in rels] == [3, 3, 3]  # never the number of partitions with rows
    assert rels[0].items == rels[2].items == [] and [k for k, _ in rels[1].items] == [3]
    assert rels[1].metadata["composition"]["series_epsilon"] == 1.0
    b2 = Budget(1.0, 1e-6)
    with pytest.raises(ValueError, match="partition ids"):
        release_windows({6: [(3, s)]}, budget=b2, **opts)
    with pytest.raises(ValueError, match="k must be"):
        release_windows({}, budget=b2, **dict(opts, k=0))
    with pytest.raises(ValueError, match="first..last"):
        release_windows({9: [(0, s)]}, budget=b2, **opts)
    assert b2.ledger == []  # every refusal before the charge
