"""End-to-end runs of the experiment sweeps at tiny sizes (seconds each): CSV rows, summaries,
claims and figures are produced; metrics lie in their ranges; DPSS precision is 1.0."""

import csv
import json
import math

import numpy as np
import pytest

import experiments

# Every figure the sweeps draw must keep its legend off the panels.
pytestmark = [pytest.mark.filterwarnings("error::experiments.plots.FigureLayoutWarning"),
              pytest.mark.experiments]  # CI stage 'experiments' (pyproject.toml)

PROB = ("recall", "precision", "f1")


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _num(v):
    return math.nan if v == "" else float(v)


def _check_common(outdir, name):
    assert outdir.name == name
    runs = _rows(outdir / "runs.csv")
    assert runs, "no runs written"
    for r in runs:
        for m in PROB:
            if m in r and r[m] != "":
                assert 0.0 <= float(r[m]) <= 1.0, (m, r[m])
        if r.get("are", "") != "":
            assert float(r["are"]) >= 0.0
        assert float(r["update_us"]) > 0.0
        assert float(r["memory_bytes"]) > 0
    summary = _rows(outdir / "summary.csv")
    assert summary
    for r in summary:
        for m in PROB:
            for stat in ("mean", "p5", "p95"):
                col = f"{m}_{stat}"
                if col in r and r[col] != "":
                    assert 0.0 <= float(r[col]) <= 1.0
        for m in ("recall", "precision", "are", "f1"):
            if f"{m}_mean" in r and r[f"{m}_mean"] != "":
                assert float(r[f"{m}_p5"]) <= float(r[f"{m}_mean"]) + 1e-12 <= float(r[f"{m}_p95"]) + 2e-12
    claims = _rows(outdir / "claims.csv")
    assert claims and all(c["holds"] in ("yes", "no", "n/a") for c in claims)
    assert (outdir / "claims.md").read_text().startswith("| id |")
    info = json.loads((outdir / "run_info.json").read_text())
    assert info["experiment"] == name and info["scale"] == "tiny" and info["runs"] == len(runs)
    return runs


def _check_pngs(outdir, names):
    pytest.importorskip("matplotlib")
    for n in names:
        p = outdir / n
        assert p.exists() and p.stat().st_size > 10_000, n
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_names_and_errors(tmp_path):
    assert experiments.NAMES == ("holland-synthetic", "holland-real", "zhao-frequency", "zhao-quantiles",
                                 "dpss-precision")
    with pytest.raises(ValueError, match="unknown experiment"):
        experiments.run("nope", tiny=True, out=tmp_path)
    with pytest.raises(ValueError, match="repeats"):
        experiments.run("zhao-frequency", tiny=True, out=tmp_path, repeats=0)


def test_holland_synthetic_tiny(tmp_path):
    out = experiments.run("holland-synthetic", tiny=True, out=tmp_path, progress=False)
    runs = _check_common(out, "holland-synthetic")
    algs = {r["algorithm"] for r in runs}
    assert algs == {"MisraGries", "SpaceSaving", "CountMinSketch", "CountSketch"}
    assert {r["sweep"] for r in runs} == {"k", "epsilon", "skew"}
    # 2 k + 2 epsilon + 2 skew points, 4 algorithms, 2 repeats
    assert len(runs) == 6 * 4 * 2
    ss = [r for r in runs if r["algorithm"] == "SpaceSaving"]
    assert all(r["mechanism"] == "DPSS" for r in ss)
    assert all(_num(r["precision"]) == 1.0 for r in ss), [r["precision"] for r in ss]
    assert all(_num(r["recall"]) == 1.0 for r in ss)
    # Every released PMG/DPSS count of a heavy item is close to the truth at these sizes.
    assert all(_num(r["are"]) < 0.1 for r in ss)
    _check_pngs(out, ["fig10_synthetic.png", "fig11_synthetic.png"])
    # summary.csv states, per point, the sizes the library chose (from the release metadata) and
    # the number of true heavy hitters.
    summary = _rows(out / "summary.csv")
    for s in summary:
        sel = [r for r in runs if r["sweep"] == s["sweep"] and r["x"] == s["x"] and r["algorithm"] == s["algorithm"]]
        metas = [dict(p.split("=", 1) for p in r["meta"].split(";") if "=" in p) for r in sel]
        assert s["capacity"] == "-".join(dict.fromkeys(sorted({r["capacity"] for r in sel}, key=int)))
        heavy = sorted({int(r["n_heavy"]) for r in sel})
        assert s["true_heavy_hitters"] == (str(heavy[0]) if len(heavy) == 1 else f"{heavy[0]}-{heavy[-1]}")
        if s["algorithm"] in ("CountMinSketch", "CountSketch"):
            assert {m["depth"] for m in metas} == {s["depth"]} and {m["width"] for m in metas} == {s["width"]}
        else:
            assert s["depth"] == "" and s["width"] == ""


def test_holland_synthetic_reproducible(tmp_path):
    a = experiments.run("holland-synthetic", tiny=True, out=tmp_path / "a", progress=False, repeats=1, seed=7)
    b = experiments.run("holland-synthetic", tiny=True, out=tmp_path / "b", progress=False, repeats=1, seed=7)
    keep = ("algorithm", "sweep", "x", "recall", "precision", "are", "n_reported", "threshold", "memory_bytes")
    ra = [{k: r[k] for k in keep} for r in _rows(a / "runs.csv")]
    rb = [{k: r[k] for k in keep} for r in _rows(b / "runs.csv")]
    assert ra == rb


def test_holland_real_tiny_retail(tmp_path):
    # An empty --data folder: gcide is skipped with a message, retail (bundled) still runs.
    out = experiments.run("holland-real", tiny=True, out=tmp_path / "out", data=tmp_path, progress=False)
    runs = _check_common(out, "holland-real")
    assert {r["dataset"] for r in runs} == {"retail"}
    assert {r["sweep"] for r in runs} == {"k", "epsilon", "factor"}
    assert {int(_num(r["factor"])) for r in runs if r["sweep"] == "factor"} == {1, 2}
    _check_pngs(out, ["fig12_retail.png"])


def test_dpss_precision_tiny(tmp_path):
    # An empty --data folder: the GCIDE windows are skipped, retail and the code stream run.
    out = experiments.run("dpss-precision", tiny=True, out=tmp_path / "out", data=tmp_path, progress=False)
    runs = _rows(out / "runs.csv")
    assert {r["dataset"] for r in runs} == {"retail", "code"}
    assert {r["algorithm"] for r in runs} == {"DPSS", "DPSS+cut", "DPSS-2pass", "DPSS-2pass+cut", "DPSS-2pass+cut+0.25b",
                                              "DPSS-2pass+cut+0.5b"}
    assert len(runs) == 2 * 2 * 2 * 6  # data sets x k x epsilon x (variants + margin cuts), one noise draw
    by = {(r["dataset"], r["k"], r["epsilon"], r["algorithm"]): r for r in runs}
    for (ds, k, eps, alg), r in by.items():
        if alg.endswith("+cut"):  # the cut only removes released items
            assert int(r["n_reported"]) <= int(by[(ds, k, eps, alg[:-4])]["n_reported"])
    two_pass = [r for r in runs if "2pass" in r["algorithm"] and r["are"]]
    assert two_pass and all(_num(r["are"]) < 0.05 for r in two_pass)
    claims = _rows(out / "claims.csv")
    assert {c["holds"] for c in claims} <= {"yes", "no", "n/a"} and len(claims) == 2 * 2 * 3
    info = json.loads((out / "run_info.json").read_text())
    assert info["datasets"] == ["retail", "code"] and "standard library" in info["code_stream"]
    _check_pngs(out, ["fig_dpss_precision.png"])
    # the results page's tables of this sweep are filled from its summary.csv
    from experiments import report

    page = tmp_path / "page.md"
    page.write_text("<!-- generated: dpss out/dpss-precision -->\n<!-- end generated -->\n"
                    "<!-- generated: dpssvariants out/dpss-precision -->\n<!-- end generated -->\n")
    assert report.fill(page) == 2
    text = page.read_text()
    summary = _rows(out / "summary.csv")
    for ds in ("retail", "code"):
        for eps in (0.1, 1.0):
            sel = [s for s in summary if s["dataset"] == ds and _num(s["epsilon"]) == eps
                   and s["algorithm"] == "DPSS-2pass+cut"]
            p = sum(_num(s["precision_mean"]) for s in sel) / len(sel)
            r = sum(_num(s["recall_mean"]) for s in sel) / len(sel)
            row = next(line for line in text.splitlines() if line.startswith(f"| {ds} | {eps:g} | DPSS-2pass+cut |"))
            assert f"| {p:.3f} |" in row and f"| {r:.3f} |" in row
            assert f"{p:.4f} / {r:.3f}" in next(line for line in text.splitlines()
                                                if line.startswith(f"| {ds} | {eps:g} | ") and " / " in line)


def test_code_tokens_are_identifiers_in_file_order(tmp_path):
    from experiments.precision import code_tokens
    from experiments.realdata import hash32

    (tmp_path / "b.py").write_text("import os  # x1\nos.path\n")
    (tmp_path / "a.py").write_text("def f(_y): return _y\n")
    toks = ["def", "f", "_y", "return", "_y", "import", "os", "x1", "os", "path"]
    assert code_tokens(100, tmp_path).tolist() == [hash32(t) for t in toks]
    assert code_tokens(3, tmp_path).tolist() == [hash32(t) for t in toks[:3]]


def test_zhao_tiny(tmp_path):
    out = experiments.run("zhao-frequency", tiny=True, out=tmp_path, progress=False)
    runs = _check_common(out, "zhao-frequency")
    assert {r["algorithm"] for r in runs} == {"CountMin", "CountSketch", "PrivateCountMin", "PrivateCountSketch"}
    for r in runs:
        assert _num(r["are"]) >= 0.0 and 0.0 <= _num(r["f1"]) <= 1.0
    # Non-private Count-Min never underestimates, so it recalls the true top-10 at least as well
    # as chance; its ARE is finite and positive at these widths.
    assert all(_num(r["are"]) > 0 for r in runs if r["algorithm"] == "CountMin")
    _check_pngs(out, ["fig1_zhao.png"])


def test_replot_regenerates_claims(tmp_path):
    out = experiments.run("zhao-frequency", tiny=True, out=tmp_path, progress=False, repeats=1)
    before = (out / "claims.csv").read_text()
    (out / "claims.csv").unlink()
    experiments.replot(out, progress=False)
    assert (out / "claims.csv").read_text() == before


def test_progress_bar_on_stderr(tmp_path, capsys):
    experiments.run("zhao-frequency", tiny=True, out=tmp_path, progress=True, repeats=1)
    err = capsys.readouterr().err
    assert "zhao-frequency" in err
    assert "8/8" in err or "100%" in err  # plain bar or tqdm


# --------------------------------------------------------------------- claims, reports, real data
def _summary_row(sweep, x, alg, **metrics):
    row = {"experiment": "e", "dataset": "d", "sweep": sweep, "x": float(x), "algorithm": alg}
    for m, v in metrics.items():
        row[f"{m}_mean"] = v
    return row


@pytest.mark.parametrize("series,direction,expected", [
    ((0.0, 0.0, 0.0), "rises", "no"),     # stuck at 0 does not rise
    ((0.0, 0.0, 0.0), "falls", "no"),     # ... nor "degrade"
    ((0.5, 0.5, 0.5), "rises", "no"),     # flat is not a rise
    ((0.2, 0.9, 0.4), "rises", "no"),     # up and down: a step against the claim (no spread to excuse it)
    ((0.4, 0.3, 0.2), "rises", "no"),
    ((0.4, 0.3, 0.2), "falls", "yes"),
    ((1.0, 1.0, 1.0), "rises", "n/a"),    # already perfect: nothing to test, never "yes"
    ((1.0, 1.0, 1.0), "falls", "no"),
])
def test_trend_claims_are_strict(series, direction, expected):
    from experiments import claims

    rows = [_summary_row("k", x, "A", recall=v) for x, v in zip((32, 64, 128), series)]
    (c,) = claims._trend_claim("e", rows, "k", "A", "recall", direction, "id", "paper", "claim")
    assert c["holds"] == expected, c
    assert all(f"{v:g}" in c["measured"] for v in series)


@pytest.mark.parametrize("series,spread,expected", [
    ((0.40, 0.45, 0.50), 0.05, "yes"),   # a rise of 0.1 against a standard error of 0.0015 per point
    ((0.40, 0.41, 0.42), 0.40, "no"),    # a rise of 0.02 inside the noise (se 0.012 per point)
    ((0.40, 0.38, 0.60), 0.40, "yes"),   # the dip of 0.02 is within two standard errors of its step
    ((0.40, 0.20, 0.60), 0.05, "no"),    # the dip of 0.2 is not
])
def test_trend_claims_weigh_the_run_to_run_spread(series, spread, expected):
    from experiments import claims

    # 100 runs per point, 5th-95th percentiles ``spread`` apart: se = spread / 3.29 / 10
    rows = [dict(_summary_row("k", x, "A", recall=v), recall_p5=v - spread / 2, recall_p95=v + spread / 2, runs=100)
            for x, v in zip((32, 64, 128), series)]
    (c,) = claims._trend_claim("e", rows, "k", "A", "recall", "rises", "id", "paper", "claim")
    assert c["holds"] == expected, c


def test_trend_claim_undefined_end_is_not_a_pass():
    from experiments import claims

    rows = [_summary_row("k", 32, "A", are=math.nan), _summary_row("k", 64, "A", are=0.1)]
    (c,) = claims._trend_claim("e", rows, "k", "A", "are", "falls", "id", "paper", "claim")
    assert c["holds"] == "n/a" and "undefined" in c["measured"]


def test_report_fills_generated_blocks(tmp_path):
    from experiments import report

    out = experiments.run("holland-real", tiny=True, out=tmp_path / "res", data=tmp_path, progress=False, repeats=1)
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- generated: claims res/holland-real -->\nstale\n<!-- end generated -->\n"
                    "<!-- generated: setup res/holland-real -->\n<!-- end generated -->\ntail\n")
    assert report.fill(page) == 2
    text = page.read_text()
    assert "stale" not in text and text.startswith("intro\n") and text.endswith("tail\n")
    assert (out / "claims.md").read_text() in text
    summary = _rows(out / "summary.csv")
    depth = {s["depth"] for s in summary if s["algorithm"] == "CountSketch"}
    assert len(depth) == 1 and f"| {depth.pop()} |" in text  # the recorded depth, not a typed one
    with pytest.raises(FileNotFoundError):
        page.write_text("<!-- generated: claims nowhere -->\n<!-- end generated -->\n")
        report.fill(page)


def _fake_gcide(path, tokens):
    import gzip

    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(0, len(tokens), 7):
            fh.write(" ".join(tokens[i:i + 7]) + "\n")


def test_real_stream_hashed_in_order(tmp_path):
    import hashlib

    import numpy as np

    from experiments import realdata

    tokens = [f"w{i % 13}" for i in range(50)]
    _fake_gcide(tmp_path / "gcide_words.txt.gz", tokens)
    got = realdata.gcide_hashed32(40, tmp_path)
    want = [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=4).digest(), "little") for t in tokens[:40]]
    assert got.dtype == np.int64 and got.tolist() == want
    assert realdata.gcide_hashed32(40, tmp_path / "absent") is None
    with pytest.raises(ValueError, match="fewer"):
        realdata.gcide_hashed32(51, tmp_path)


def test_zhao_frequency_real_stream(tmp_path):
    from experiments import zhao

    import numpy as np

    rng = np.random.default_rng(1)
    tokens = [f"t{int(v)}" for v in rng.zipf(1.3, size=4000) % 500]
    _fake_gcide(tmp_path / "gcide_words.txt.gz", tokens)
    cfg = zhao.ZhaoConfig(n=2000, rhos=(1.0,), target_kb=(9.2,), repeats=2, real=True)
    rows = []
    used = zhao.frequency(cfg, seed=3, writer=rows.append, progress=False, data=tmp_path)
    assert used == ["zipf1.0", zhao.REAL_DATASET]
    real = [r for r in rows if r["dataset"] == zhao.REAL_DATASET]
    assert len(real) == 2 * 4 and {r["repeat"] for r in real} == {0, 1}
    # Non-private Count-Min never underestimates: its ARE is >= 0 and F1 of the top-10 is high.
    for r in real:
        assert r["are"] >= 0 and 0 <= r["f1"] <= 1
    # Absent data: the real panels are skipped, the Zipf ones still run.
    rows2 = []
    assert zhao.frequency(cfg, seed=3, writer=rows2.append, progress=False, data=tmp_path / "none") == ["zipf1.0"]
    assert {r["dataset"] for r in rows2} == {"zipf1.0"}


def test_zhao_quantiles_tiny(tmp_path):
    import dpsketch

    if not hasattr(dpsketch, "PrivateDyadicCountSketch"):
        with pytest.raises(ValueError, match="DyadicCountSketch"):
            experiments.run("zhao-quantiles", tiny=True, out=tmp_path, progress=False)
        return
    out = experiments.run("zhao-quantiles", tiny=True, out=tmp_path, progress=False)
    runs = _rows(out / "runs.csv")
    assert {r["algorithm"] for r in runs} == {"DCS", "PrivateDCS"}
    assert {r["allocation"] for r in runs if r["algorithm"] == "PrivateDCS"} == {"joint", "zhao"}
    assert {int(_num(r["x"])) for r in runs} == {1, 5}
    n = int(_num(runs[0]["n"]))
    for r in runs:
        assert 0 <= _num(r["rank_error"]) <= n and 0 <= _num(r["quantile_error"]) <= n
    claims = {c["id"]: c for c in _rows(out / "claims.csv")}
    assert any(k.startswith("rank-error-order-below-gammaN") for k in claims)
    assert all(c["holds"] in ("yes", "no", "n/a") for c in claims.values())
    _check_pngs(out, ["fig2_zhao_quantiles.png"])


def test_quantile_metrics_against_brute_force():
    import numpy as np

    from experiments import quantiles as Q

    rng = np.random.default_rng(5)
    s = np.sort(rng.integers(0, 20, size=301))
    for m in (1, 2, 7):
        qs = Q.levels(m)
        assert np.allclose(qs, [i / (m + 1) for i in range(1, m + 1)])
        items = Q.true_quantile_items(s, qs)
        for q, x in zip(qs, items):
            assert x == sorted(s.tolist())[int(q * len(s))]
    # A returned value whose [#<x, #<=x] interval contains the target has distance 0; otherwise the
    # distance to the interval, checked against counting.
    for x in range(-1, 22):
        for t in (0.0, 37.5, 150.0, 301.0):
            lt, le = sum(v < x for v in s), sum(v <= x for v in s)
            want = 0.0 if lt <= t <= le else min(abs(t - lt), abs(t - le))
            assert Q.quantile_rank_distance(s, [x], np.array([t]))[0] == want


def test_margin_cut_is_the_library_cut_at_zero_and_a_subset_above():
    # The experiment's margin variants post-process the same noise draw as the library's n/k cut.
    import dpsketch
    from dpsketch.mechanisms.dpss import release_exact_counts
    from experiments.precision import margin_cut

    stream = np.asarray(dpsketch.datasets.retail(), dtype=np.int64)[:200_000]
    k = 64
    ss = dpsketch.SpaceSaving(2 * k)
    ss.update_many(stream)
    keys, counts = np.unique(stream, return_counts=True)
    freq = dict(zip(keys.tolist(), counts.tolist()))
    exact = [freq[key] for key, _ in ss.items()]
    for seed in range(5):
        plain = release_exact_counts(ss, exact, epsilon=0.1, delta=1e-3, k=k, cut=None, seed=seed, allow_repeat=True)
        cut = release_exact_counts(ss, exact, epsilon=0.1, delta=1e-3, k=k, cut="n/k", seed=seed, allow_repeat=True)
        assert margin_cut(plain, k, 0.0)[0] == cut.items
        items, threshold = margin_cut(plain, k, 0.5)
        floor = plain.metadata["n_used"] / k + 0.5 / plain.metadata["epsilon_used"]
        assert set(items) <= set(cut.items) and all(v >= floor for _, v in items)
        assert threshold == max(floor, plain.threshold)


def test_figure_legend_sits_outside_the_panels():
    pytest.importorskip("matplotlib")
    from experiments import plots

    plt = plots._plt()

    def draw():
        fig, axes = plt.subplots(1, 2, figsize=(8, 3))
        for ax in axes:
            for i, name in enumerate(("a", "b", "c")):
                ax.plot([1, 2, 3], [i, i + 1, i + 2], label=name)
            ax.set_title(f"panel {id(ax) % 7}")
        return fig, axes

    fig, axes = draw()
    plots._layout(fig, list(axes))
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in axes)
    assert plots._overlaps(fig) == []
    plt.close(fig)
    fig, axes = draw()  # a figure legend placed over the panels is caught
    fig.legend(loc="center")
    fig.tight_layout()
    assert plots._overlaps(fig)
    plt.close(fig)


def test_python_m_experiments_runs_a_sweep_and_counts_its_claims(capsys, tmp_path):
    import csv

    from experiments.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and all(name in out for name in experiments.NAMES)
    assert main(["zhao-quantiles", "--quick", "--repeats", "1", "--out", str(tmp_path)]) == 0
    folder, line = capsys.readouterr().out.strip().splitlines()
    assert folder == str(tmp_path / "zhao-quantiles")
    with open(tmp_path / "zhao-quantiles" / "claims.csv", newline="") as fh:
        verdicts = [row["holds"] for row in csv.DictReader(fh)]
    assert line.startswith(f"claims: {verdicts.count('yes')} of {len(verdicts)} hold, {verdicts.count('no')} do not")
    for bad in (["nope"], ["zhao-quantiles", "--repeats", "0"]):
        with pytest.raises(SystemExit) as exit_:
            main(bad)
        assert exit_.value.code == 2
