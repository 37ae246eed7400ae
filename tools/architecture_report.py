"""Architecture figures for the package: lines per layer, top-level names, and the Python call
traces (hops, depth, files) of three everyday calls.

    python tools/architecture_report.py            # the installed or PYTHONPATH package
    python tools/architecture_report.py --json     # the same as JSON

A *hop* is a distinct dpsketch Python function entered during the call; *depth* is the deepest
stack of dpsketch frames; *files* are the distinct package files those functions live in. The
compiled core counts as no hop: the figures show how much Python stands between a caller and it.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout


def lines_per_layer(pkg: pathlib.Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in sorted(pkg.rglob("*.py")):
        rel = p.relative_to(pkg)
        layer = rel.parts[0] if len(rel.parts) > 1 else "(top) " + rel.stem
        n = sum(1 for _ in p.open(encoding="utf-8"))
        out[layer] = out.get(layer, 0) + n
    return out


class Tracer:
    def __init__(self, pkg: pathlib.Path):
        self.pkg = str(pkg)
        self.funcs: set[tuple[str, str]] = set()
        self.depth = 0
        self.max_depth = 0

    def __call__(self, frame, event, arg):
        if event not in ("call", "return"):
            return
        fn = frame.f_code.co_filename
        if not fn.startswith(self.pkg):
            return
        if event == "call":
            self.funcs.add((os.path.relpath(fn, self.pkg), frame.f_code.co_name))
            self.depth += 1
            self.max_depth = max(self.max_depth, self.depth)
        else:
            self.depth -= 1

    def summary(self) -> dict:
        files = sorted({f for f, _ in self.funcs})
        return {"hops": len(self.funcs), "depth": self.max_depth, "files": len(files),
                "file_list": files}


def trace(pkg, scenario):
    """Trace scenario's call only: scenario() does its setup untraced and returns the call."""
    call = scenario()
    t = Tracer(pkg)
    sys.setprofile(t)
    try:
        call()
    finally:
        sys.setprofile(None)
    return t.summary()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import numpy as np

    import dpsketch

    pkg = pathlib.Path(dpsketch.__file__).parent
    rng = np.random.default_rng(7)
    keys = rng.zipf(1.3, 200_000) % 5000
    ids = rng.integers(0, 20_000, keys.size)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp, "items.txt")
        path.write_text("\n".join(map(str, keys)) + "\n")

        def cli_top():
            from dpsketch.cli import main

            def call():
                with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                    try:
                        main(["top", str(path), "--seed", "1", "-q"])
                    except SystemExit:
                        pass
            return call

        def spacesaving_release():
            s = dpsketch.SpaceSaving(256)
            s.update_many(keys)
            return lambda: s.release(epsilon=1.0, delta=1e-6, k=64, seed=1)

        def user_level():
            unit = dpsketch.Person(ids, max_keys=4)
            return lambda: dpsketch.heavy_hitters(keys, epsilon=1.0, delta=1e-6, top_k=10, unit=unit, seed=1)

        # Warm the imports so that the traces count calls, not module bodies.
        for f in (cli_top, spacesaving_release, user_level):
            f()()
        traces = {"dpsketch top FILE": trace(pkg, cli_top),
                  "SpaceSaving.release": trace(pkg, spacesaving_release),
                  "heavy_hitters(unit=Person)": trace(pkg, user_level)}
    report = {
        "lines_per_layer": lines_per_layer(pkg),
        "lines_total": sum(lines_per_layer(pkg).values()),
        "top_level_names": len(dpsketch.__all__),
        "traces": traces,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"top-level names: {report['top_level_names']}")
    print(f"lines: {report['lines_total']}")
    for layer, n in sorted(report["lines_per_layer"].items(), key=lambda kv: -kv[1]):
        print(f"  {layer:28s} {n:6d}")
    for name, t in traces.items():
        print(f"{name}: {t['hops']} hops, depth {t['depth']}, {t['files']} files: "
              + ", ".join(t["file_list"]))


if __name__ == "__main__":
    main()
