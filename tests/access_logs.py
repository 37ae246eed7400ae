"""Combined-format access logs for the log tests: bench/gen_access_log.py's generator (``gen``)
and one of its records written back as a log line (``combined_line``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("gen_access_log", ROOT / "bench" / "gen_access_log.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def combined_line(r) -> str:
    """The combined-format line of a generated record ``r``."""
    return (f'{r["host"]} {r["ident"]} {r["user"]} [{r["time"]}] "{r["method"]} {r["path"]} {r["protocol"]}" '
            f'{r["status"]} {r["bytes"]} "{r["referer"]}" "{r["user_agent"]}"')
