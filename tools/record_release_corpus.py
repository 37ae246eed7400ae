#!/usr/bin/env python3
"""Record the seeded release corpus: run every case of tests/release_corpus_cases.py with the
dpsketch that ``import dpsketch`` finds and write tests/data/release_corpus.json
(docs/testing.md, "Release corpus"; checked by tests/api/test_release_corpus.py).

    python3 tools/record_release_corpus.py            # write it (first recording, or new cases only)
    python3 tools/record_release_corpus.py --check    # compare with the stored corpus, write nothing
    python3 tools/record_release_corpus.py --force    # overwrite changed values (see below)

The corpus is the contract that a refactoring changes no release: once recorded, a stored value
is not rewritten. Without ``--force`` the script adds cases that are new and refuses to change a
stored one, printing where it differs. ``--force`` is for an intended and explained change of what
a seeded call releases (a mechanism fix, a new noise sampler); say in the commit which cases moved
and why.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "release_corpus.json"
sys.path.insert(0, str(ROOT / "tests"))

import release_corpus_cases as C  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=pathlib.Path, default=OUT, help=f"corpus file (default {OUT.relative_to(ROOT)})")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the stored corpus; write nothing")
    mode.add_argument("--force", action="store_true", help="overwrite stored values that changed")
    args = p.parse_args(argv)

    import dpsketch

    print(f"dpsketch {dpsketch.__version__} from {pathlib.Path(dpsketch.__file__).parent}", file=sys.stderr)
    fresh = C.record_corpus(dpsketch)
    stored = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else None
    diffs: list[str] = []
    if stored is not None:
        diffs += C.differences(stored["inputs"], fresh["inputs"], "inputs")
        for name, rec in stored["cases"].items():
            if name not in fresh["cases"]:
                diffs.append(f"{name}: case removed")
            else:
                diffs += C.differences(rec, fresh["cases"][name], name)
        new = [name for name in fresh["cases"] if name not in stored["cases"]]
    else:
        new = list(fresh["cases"])
    for d in diffs:
        print(f"differs: {d}", file=sys.stderr)
    if args.check:
        print(f"{len(diffs)} difference(s); {len(new)} case(s) not in the corpus", file=sys.stderr)
        return 1 if diffs or new else 0
    if diffs and not args.force:
        print(f"refusing to change stored values in {args.out} ({len(diffs)} difference(s)); rerun with --force "
              "only if the change is intended, and explain it in the commit", file=sys.stderr)
        return 1
    if stored is not None and not args.force:
        # keep the stored records byte for byte; add only the new cases
        stored["cases"].update({name: fresh["cases"][name] for name in new})
        fresh = stored
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(C.dumps(fresh) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(fresh['cases'])} cases, {args.out.stat().st_size} bytes; new: {len(new)})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
