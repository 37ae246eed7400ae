"""Running the registered pairs: ``audit()``, the text/JSON report and ``dpsketch audit``."""

from __future__ import annotations

import math
import time
from typing import Callable

from ._pairs import Ctx, Pair
from ._registry import PAIRS
from ._stats import AuditResult
from ..errors import ParameterError, ParameterTypeError

DEFAULT_TRIALS = 200_000
QUICK_TRIALS = 10_000
MISCALIBRATED_NOISE = 0.5  # the miscalibrated mode halves every noise scale


def _pairs_of(name: str) -> list[Pair]:
    return [p for p in PAIRS if p.mechanism == name]


def available_mechanisms() -> list[str]:
    """The mechanisms this build can audit, in registry order."""
    names: list[str] = []
    for p in PAIRS:
        if p.mechanism not in names and (p.requires is None or p.requires()):
            names.append(p.mechanism)
    return names


def audit(mechanisms=None, *, epsilon: float = 1.0, delta: float = 1e-6, label_delta: float = 0.2,
          trials: int = DEFAULT_TRIALS, confidence: float = 0.999, seed: int | None = None,
          miscalibrated: bool = False, progress: Callable[[AuditResult], None] | None = None) -> list[AuditResult]:
    """Run the built-in neighbouring pairs of each mechanism (default: all) and return one
    AuditResult per pair (docs/audit.md). ``trials`` runs per side (the heavy-hitter wrappers use
    4× (Count-Min) and 10× (CountSketch) as many, at most 400,000). ``label_delta`` is the δ of the unstable-label pairs (large, so
    the δ-event is frequent enough to measure). ``confidence`` is family-wise: with that
    probability every reported bound holds at once (Bonferroni over all tests), so a correct
    mechanism FAILs with probability at most 1 − confidence.

    ``miscalibrated=True`` runs every pair against a copy of each mechanism whose noise scale is
    halved (built with 2ε, or 4ρ for Gaussian noise) while the verdict still tests the claimed
    guarantee: there every mechanism should FAIL (see :func:`uncaught`)."""
    from ..release import check_privacy_params
    from .._validation import check_int

    epsilon, delta = check_privacy_params(epsilon, delta)
    _, label_delta = check_privacy_params(1.0, label_delta, delta_name="label_delta")
    trials = check_int("trials", trials, 10, 10**8)
    if seed is not None:
        seed = check_int("seed", seed, 0, 2**64 - 1)
    if isinstance(mechanisms, str):
        mechanisms = [mechanisms]
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 <= confidence < 1:
        raise ParameterError(f"confidence must be in [0.5, 1), got {confidence!r}")
    if not isinstance(miscalibrated, bool):
        raise ParameterTypeError("miscalibrated must be True or False")
    names = available_mechanisms()
    chosen = names if not mechanisms else list(dict.fromkeys(mechanisms))
    unknown = [m for m in chosen if m not in names]
    if unknown:
        raise ParameterError(f"unknown mechanism(s) {', '.join(map(repr, unknown))}; choose from {', '.join(names)}")
    pairs = [p for name in chosen for p in _pairs_of(name)]
    tests = sum(p.tests for p in pairs)
    noise = MISCALIBRATED_NOISE if miscalibrated else 1.0
    ctx = Ctx(epsilon, delta, label_delta, trials, 1 - (1 - confidence) / tests, seed, noise)
    results = []
    for p in pairs:
        ctx.mechanism, ctx.case = p.mechanism, p.case
        r = p.fn(ctx)
        r.mechanism, r.noise_factor = p.mechanism, noise
        results.append(r)
        if progress is not None:
            progress(r)
    return results


def uncaught(results: list[AuditResult]) -> list[str]:
    """Mechanisms none of whose pairs FAILed (in the miscalibrated mode: the ones the audit did
    not catch)."""
    names = list(dict.fromkeys(r.mechanism for r in results))
    return [n for n in names if all(r.passed for r in results if r.mechanism == n)]


def _fmt(v, spec=".3f"):
    return "—" if v is None else format(v, spec)


def format_table(results: list[AuditResult]) -> str:
    """A plain-text report, one line per neighbouring pair."""
    lines = [f"{'mechanism':<40} {'case':<44} {'ε':>7} {'ε̂':>7} {'μ':>6} {'μ̂':>7} "
             f"{'label rate [CI] vs δ':>30} {'trials':>7}  verdict"]
    for r in results:
        if r.label_rate is not None:
            lab = f"{r.label_rate:.4f} [{r.label_rate_lower:.4f},{r.label_rate_upper:.4f}] vs {r.delta:g}"
            eh = "n/a"
        else:
            lab, eh = "", _fmt(r.epsilon_hat)
        mu = "" if r.mu is None else f"{r.mu:.3f}"
        mh = "" if r.mu is None else _fmt(r.mu_hat)
        lines.append(f"{r.mechanism:<40} {r.case[:44]:<44} {r.epsilon:>7.3f} {eh:>7} {mu:>6} {mh:>7} {lab:>30} "
                     f"{r.trials:>7}  {r.verdict}")
    return "\n".join(lines)


def run_command(mechanisms, *, epsilon, delta, label_delta, trials, quick, confidence, seed, as_json, quiet,
                out, err, miscalibrated=False) -> int:
    """``dpsketch audit``: print the report (table or JSON) and return the exit status. Normal
    mode: 0 iff every pair passed (1: some ε̂ > ε, μ̂ > μ or label rate significantly > δ).
    ``--miscalibrated``: 0 iff every mechanism FAILed (its halved-noise copy was caught)."""
    import json

    if trials is None:
        trials = QUICK_TRIALS if quick else DEFAULT_TRIALS
    t0 = time.perf_counter()

    def progress(r):
        if not quiet and not as_json:
            eh = "n/a" if r.label_rate is not None else _fmt(r.epsilon_hat)
            mu = "" if r.mu is None else f", μ̂ {_fmt(r.mu_hat)} vs μ {r.mu:.3f}"
            print(f"dpsketch: audited {r.mechanism}: {r.case} ({r.seconds:.1f} s, ε̂ {eh}{mu}, {r.verdict})", file=err)

    results = audit(mechanisms, epsilon=epsilon, delta=delta, label_delta=label_delta, trials=trials,
                    confidence=confidence, seed=seed, miscalibrated=miscalibrated, progress=progress)
    missed = uncaught(results)
    ok = not missed if miscalibrated else all(r.passed for r in results)
    seconds = time.perf_counter() - t0
    if as_json:
        json.dump({"epsilon": epsilon, "delta": delta, "label_delta": label_delta, "trials": trials,
                   "confidence": confidence, "seeded": seed is not None, "miscalibrated": miscalibrated,
                   "passed": ok, "uncaught": missed if miscalibrated else None, "seconds": seconds,
                   "results": [r.to_dict() for r in results]},
                  out, indent=2, default=lambda o: None if isinstance(o, float) and not math.isfinite(o) else str(o))
        out.write("\n")
        return 0 if ok else 1
    out.write(format_table(results) + "\n")
    if miscalibrated:
        mechs = list(dict.fromkeys(r.mechanism for r in results))
        if ok:
            out.write(f"PASS: the audit caught all {len(mechs)} mechanisms with halved noise (each FAILs at least one "
                      f"pair against its claimed guarantee). {seconds:.0f} s\n")
        else:
            out.write(f"FAIL: {len(missed)}/{len(mechs)} mechanisms with halved noise were NOT caught (every pair "
                      f"passed): {', '.join(missed)}. {seconds:.0f} s\n")
    else:
        out.write(f"{'PASS' if ok else 'FAIL'}: {sum(r.passed for r in results)}/{len(results)} pairs within the claimed "
                  f"guarantee; ε̂ and μ̂ are {confidence:.1%}-confidence lower bounds (family-wise), not proofs "
                  f"(docs/audit.md). {seconds:.0f} s\n")
    return 0 if ok else 1
