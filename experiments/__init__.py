"""Reproductions of the experiments of the two source papers (docs/algorithms.md §7).

Run from a checkout of the repository (the folder is not part of the installed package)::

    python -m experiments holland-synthetic --quick --out results/

``run(name, ...)`` runs one sweep and writes, into ``<out>/<name>/``:

- ``runs.csv``    one row per run (algorithm x parameter point x repeat), written as runs finish;
- ``summary.csv`` per point: mean, 5th and 95th percentile over repeats of every metric;
- ``claims.csv`` / ``claims.md``  the papers' headline claims with the measured value and whether
  it holds (computed from ``summary.csv``);
- ``fig*.png``    one panel per panel of the paper's figure (skipped, with a message, when
  matplotlib is not installed);
- ``run_info.json`` parameters, sizes, seed and wall time.

Sweeps (``NAMES``): ``holland-synthetic`` (Holland Fig. 10-11), ``holland-real`` (Fig. 12 on the
bundled retail stream and, when found, the GCIDE word stream), ``zhao-frequency`` (Zhao Fig. 1:
Zipf panels and, when the GCIDE file is found, the real-stream panels on GCIDE tokens hashed to 32
bits in place of CAIDA), ``zhao-quantiles`` (Zhao Fig. 2: average rank error of m evenly spaced
quantiles for the dyadic CountSketch, private and not, on Zipf over 2^16 and the hashed GCIDE stream
over 2^32), ``dpss-precision`` (not a paper figure: DPSS against its n/k cut and its two-pass
release at equal memory, on GCIDE windows, retail and a source-code token stream;
`experiments/precision.py`). ``quick=True`` shrinks the Holland synthetic stream to 2^20 items and uses fewer
repeats; ``tiny=True`` (for tests) runs a handful of small points in seconds.
"""

from __future__ import annotations

import csv
import json
import math
import platform
import time
from pathlib import Path

from . import claims as _claims
from . import holland, plots, precision, quantiles, realdata, zhao
from ._common import log, read_csv, summary_rows, write_csv
from dpsketch.errors import ParameterError

__all__ = ["run", "replot", "resummarize", "NAMES"]

NAMES = ("holland-synthetic", "holland-real", "zhao-frequency", "zhao-quantiles", "dpss-precision")

_GROUP = {
    "holland-synthetic": ["experiment", "dataset", "sweep", "x", "algorithm", "k", "factor", "epsilon", "skew", "n"],
    "holland-real": ["experiment", "dataset", "sweep", "x", "algorithm", "k", "factor", "epsilon", "n"],
    "zhao-frequency": ["experiment", "dataset", "sweep", "x", "algorithm", "rho", "width", "depth", "n"],
    "dpss-precision": precision.GROUP,
    "zhao-quantiles": ["experiment", "dataset", "sweep", "x", "algorithm", "allocation", "rho", "n", "universe_bits",
                       "gamma", "width", "depth"],
}


class _RowWriter:
    """Appends rows to runs.csv as they finish (a long run keeps what it measured)."""

    def __init__(self, path: Path, columns: list[str]):
        self.rows: list[dict] = []
        self._fh = open(path, "w", newline="")
        self._w = csv.DictWriter(self._fh, fieldnames=columns, extrasaction="ignore")
        self._w.writeheader()
        self._columns = columns

    def __call__(self, row: dict) -> None:
        self.rows.append(row)
        self._w.writerow({c: _cell(row.get(c, "")) for c in self._columns})
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "_RowWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _real_stream(used) -> str:
    """run_info.json's description of the real stream (or that it was not run)."""
    return realdata.REAL_STREAM if realdata.REAL_DATASET in used else "not run (GCIDE file not found)"


def _cell(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return v


def _scale(quick: bool, tiny: bool) -> str:
    return "tiny" if tiny else "quick" if quick else "full"


def run(name: str, *, quick: bool = False, out="results", repeats: int | None = None, seed: int = 0,
        data=None, progress: bool = True, tiny: bool = False) -> Path:
    """Run sweep ``name`` (one of ``NAMES``) and return the folder ``<out>/<name>`` holding its CSVs,
    claims and figures. ``repeats`` overrides the sweep's default number of repeats; ``seed`` fixes
    every stream and every noise draw (the releases are then reproducible, not secret); ``data`` is
    the folder (or file) holding ``gcide_words.txt.gz`` for ``holland-real``."""
    if name not in NAMES:
        raise ParameterError(f"unknown experiment {name!r}; choose one of {', '.join(NAMES)}")
    if repeats is not None and int(repeats) < 1:
        raise ParameterError(f"repeats must be at least 1, got {repeats}")
    scale = _scale(quick, tiny)
    outdir = Path(out) / name
    outdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    info: dict = {"experiment": name, "scale": scale, "seed": seed, "python": platform.python_version(),
                  "machine": platform.machine(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    if name == "dpss-precision":
        pcfg = precision.with_repeats(precision.CONFIGS[scale], repeats)
        with _RowWriter(outdir / "runs.csv", precision.COLUMNS) as writer:
            used = precision.precision(pcfg, seed=seed, writer=writer, data=data, progress=progress)
        info.update(datasets=used, ks=list(pcfg.ks), epsilons=list(pcfg.epsilons), delta=pcfg.delta,
                    factor=pcfg.factor, length="private (library default)",
                    repeats_desc=(f"{pcfg.windows_1e5} windows (gcide-1e5), {pcfg.windows_2_20} windows "
                                  f"(gcide-2^20), {pcfg.window_draws} noise draws per window; "
                                  f"{pcfg.repeats} noise draws (retail, code)"),
                    real_stream=_real_stream([realdata.REAL_DATASET] if any(d.startswith("gcide") for d in used) else []),
                    code_stream=f"identifiers of the Python {platform.python_version()} standard library sources, "
                                f"sorted paths, first {pcfg.code_limit} tokens, hashed to 32 bits")
    elif name == "zhao-quantiles":
        cfg = quantiles.with_repeats(quantiles.CONFIGS[scale], repeats)
        with _RowWriter(outdir / "runs.csv", quantiles.COLUMNS) as writer:
            used = quantiles.quantiles(cfg, seed=seed, writer=writer, progress=progress, data=data)
        info.update(datasets=used, n=cfg.n, repeats=cfg.repeats, rhos=list(cfg.rhos), gamma=cfg.gamma,
                    allocations=list(cfg.allocations), ms=list(cfg.ms), neighbours=cfg.neighbours,
                    universe_bits={"zipf": cfg.zipf_bits, "real": cfg.real_bits}, skew=cfg.skew,
                    real_stream=_real_stream(used))
    elif name == "zhao-frequency":
        cfg = zhao.with_repeats(zhao.CONFIGS[scale], repeats)
        with _RowWriter(outdir / "runs.csv", zhao.COLUMNS) as writer:
            used = zhao.frequency(cfg, seed=seed, writer=writer, progress=progress, data=data)
        info.update(datasets=used, real_stream=_real_stream(used), n=cfg.n, repeats=cfg.repeats, rhos=list(cfg.rhos), beta=cfg.beta, depth=cfg.depth,
                    target_kb=list(cfg.target_kb), skew=cfg.skew, universe=[cfg.lo, cfg.hi])
        metrics = zhao.METRICS
    else:
        table = holland.SYNTHETIC if name == "holland-synthetic" else holland.REAL
        cfg = holland.with_repeats(table[scale], repeats)
        with _RowWriter(outdir / "runs.csv", holland.COLUMNS) as writer:
            if name == "holland-synthetic":
                holland.synthetic(cfg, seed=seed, writer=writer, progress=progress)
                info.update(n=cfg.n, skews=list(cfg.skews), universe=cfg.universe)
            else:
                used = holland.real(cfg, seed=seed, writer=writer, data=data, progress=progress)
                info.update(datasets=used, n={ds: next(int(r["n"]) for r in writer.rows if r["dataset"] == ds) for ds in used},
                            prefix_limits=dict(cfg.real_limit))
        info.update(repeats=cfg.repeats, ks=list(cfg.ks), epsilons=list(cfg.epsilons), factors=list(cfg.factors),
                    defaults={"k": cfg.k, "epsilon": cfg.epsilon, "skew": cfg.skew, "factor": cfg.factor},
                    delta=cfg.delta, sketch_capacity=f"{cfg.sketch_capacity_ratio} * factor * k",
                    algorithms=list(cfg.algorithms))
        metrics = holland.METRICS
    write_csv(outdir / "summary.csv", _summary(name, writer.rows))
    info["runs"] = len(writer.rows)
    info["wall_seconds"] = round(time.perf_counter() - t0, 1)
    (outdir / "run_info.json").write_text(json.dumps(info, indent=2) + "\n")
    replot(outdir, progress=progress)
    log(f"{name}: {len(writer.rows)} runs in {info['wall_seconds']:.0f}s -> {outdir}", progress)
    return outdir


def _summary(name: str, runs: list[dict]) -> list[dict]:
    if name == "dpss-precision":
        return summary_rows(runs, _GROUP[name], list(precision.METRICS))
    if name == "zhao-frequency":
        return summary_rows(runs, _GROUP[name], list(zhao.METRICS), {"distinct_items": lambda r: r.get("n_distinct")})
    if name == "zhao-quantiles":
        return summary_rows(runs, _GROUP[name], list(quantiles.METRICS))
    return summary_rows(runs, _GROUP[name], list(holland.METRICS), holland.SPANS)


def resummarize(outdir, *, progress: bool = True) -> list[Path]:
    """Recompute summary.csv from a finished run's runs.csv, then its claims and figures (for a
    change in the post-processing; no measurement is repeated). Notes the regeneration in
    run_info.json."""
    outdir = Path(outdir)
    info = json.loads((outdir / "run_info.json").read_text())
    runs = read_csv(outdir / "runs.csv")
    write_csv(outdir / "summary.csv", _summary(info["experiment"], runs))
    info["summary_regenerated_from_runs_csv"] = time.strftime("%Y-%m-%d %H:%M:%S")
    (outdir / "run_info.json").write_text(json.dumps(info, indent=2) + "\n")
    return replot(outdir, progress=progress)


def replot(outdir, *, progress: bool = True) -> list[Path]:
    """(Re)compute claims.csv / claims.md and the figures of a finished run from its CSVs."""
    outdir = Path(outdir)
    info = json.loads((outdir / "run_info.json").read_text())
    name = info["experiment"]
    rows = read_csv(outdir / "summary.csv")
    if name == "zhao-frequency":
        claim_rows = _claims.zhao(rows)
    elif name == "zhao-quantiles":
        claim_rows = _claims.zhao_quantiles(rows)
    elif name == "dpss-precision":
        claim_rows = precision.claims(rows)
    else:
        claim_rows = _claims.holland(rows, name)
    write_csv(outdir / "claims.csv", claim_rows, _claims.COLUMNS)
    (outdir / "claims.md").write_text(_claims.markdown(claim_rows))
    if not plots.available():
        log(f"{name}: matplotlib is not installed; wrote the CSVs, skipped the figures "
            "(pip install matplotlib, then experiments.replot(dir))")
        return []
    if name == "holland-synthetic":
        return plots.holland_synthetic(rows, outdir, holland.ALGORITHMS, info)
    if name == "holland-real":
        return plots.holland_real(rows, outdir, holland.ALGORITHMS, info)
    if name == "zhao-quantiles":
        return plots.zhao_quantiles(rows, outdir, info)
    if name == "dpss-precision":
        return plots.dpss_precision(rows, outdir, info)
    return plots.zhao(rows, outdir, info)
