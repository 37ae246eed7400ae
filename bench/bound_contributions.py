"""Time and peak memory of ``dpsketch.mechanisms.unit_level.bound_contributions`` on ``datasets.event_log`` (docs/privacy.md
§Privacy unit, contribution bounding).

One configuration per process. Peak memory: the increase of the resident set's high-water mark
over what the process held once the data was built (Linux: the mark is reset then through
/proc/self/clear_refs; elsewhere the process's maximum RSS, which data generation may exceed). Reported: wall and
CPU seconds (medians of ``--repeats`` runs). ``--kind int``
passes the int64 columns as generated; ``--kind str`` passes both columns as numpy str arrays
(the decimal digits of the same ids). Run::

    python bench/bound_contributions.py --rows 5000000 --kind str --repeats 3
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import resource
import statistics
import sys
import time


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--kind", choices=["int", "str"], default="int")
    ap.add_argument("--m", type=int, default=10, help="max distinct keys per unit")
    ap.add_argument("--c", type=int, default=1, help="max rows per (unit, key)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    import dpsketch
    from dpsketch.datasets import event_log

    users, keys = event_log(args.rows, seed=args.seed)
    if args.kind == "str":
        users, keys = users.astype(str), keys.astype(str)
    gc.collect()
    hwm = _reset_peak() and _status_kb("VmRSS") is not None
    rss0 = _status_kb("VmRSS") if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times, cpu = [], []
    for _ in range(args.repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        b = dpsketch.mechanisms.unit_level.bound_contributions(keys, users, max_keys_per_unit=args.m, max_rows_per_key=args.c, seed=args.seed)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        del b
    rss = _status_kb("VmHWM") if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"machine": f"{platform.machine()} {platform.node()}", "module": dpsketch.__file__, "rows": args.rows,
           "kind": args.kind, "m": args.m, "c": args.c, "seconds": statistics.median(times), "times": times,
           "cpu_seconds": statistics.median(cpu),
           "peak_rss_increase_mb": (rss - rss0) / 1024,
           "peak_measure": "VmHWM" if hwm else "ru_maxrss"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
