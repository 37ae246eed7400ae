"""End-to-end runs of the experiment sweeps at tiny sizes (seconds each): CSV rows, summaries,
claims and figures are produced; metrics lie in their ranges; DPSS precision is 1.0."""

import csv
import json
import math

import pytest

from dpsketch import experiments

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
    assert experiments.NAMES == ("holland-synthetic", "holland-real", "zhao-frequency")
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


def test_zhao_tiny(tmp_path):
    out = experiments.run("zhao-frequency", tiny=True, out=tmp_path, progress=False)
    runs = _check_common(out, "zhao-frequency")
    assert {r["algorithm"] for r in runs} == {"CountMin", "CountSketch", "PrivateCountMin", "PrivateCountSketch"}
    for r in runs:
        assert _num(r["are"]) >= 0.0 and 0.0 <= _num(r["f1"]) <= 1.0
    # Non-private Count-Min never underestimates, so it recalls the true top-10 at least as well
    # as chance; its ARE is finite and positive at these widths.
    assert all(_num(r["are"]) > 0 for r in runs if r["algorithm"] == "CountMin")
    _check_pngs(out, ["fig1_zhao_zipf.png"])


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
