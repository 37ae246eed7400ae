"""``python -m experiments NAME``: run one sweep of the paper reproductions from a checkout and
print its output folder and how many of the papers' claims hold there (claims.md has each claim
with its test and measured value)."""

import argparse
import csv
import os
import sys

from . import NAMES, run


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("name", metavar="NAME", choices=NAMES, help="the sweep to run, one of:\n" + "\n".join(NAMES))
    p.add_argument("--quick", action="store_true", help="small, fast version")
    p.add_argument("--out", metavar="DIR", help="output folder (default: results)")
    p.add_argument("--repeats", type=_positive, metavar="R", help="repetitions")
    p.add_argument("--seed", type=int, metavar="S", help="seed")
    p.add_argument("--data", metavar="PATH", help="folder or file with the real data sets")
    args = p.parse_args(argv)
    kwargs = {"quick": args.quick, "progress": sys.stderr.isatty()}
    for opt in ("out", "repeats", "seed", "data"):  # only what was given: the sweep's defaults apply to the rest
        if getattr(args, opt) is not None:
            kwargs[opt] = getattr(args, opt)
    try:
        outdir = run(args.name, **kwargs)
    except (FileNotFoundError, ValueError) as exc:
        print(f"python -m experiments: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    print(os.fspath(outdir))
    with open(outdir / "claims.csv", newline="") as fh:
        verdicts = [row["holds"] for row in csv.DictReader(fh)]
    print(f"claims: {verdicts.count('yes')} of {len(verdicts)} hold, {verdicts.count('no')} do not, "
          f"{verdicts.count('n/a')} not decidable at this scale (see {os.fspath(outdir / 'claims.md')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
