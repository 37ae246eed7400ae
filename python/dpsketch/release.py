"""The shared release protocol: every ``release()`` is keyword-only and returns a :class:`Release`.

A heavy-hitter release holds ``(key, noisy value)`` items sorted by noisy value (descending; ties by
key) -- never by true count; only labels that passed the threshold appear anywhere in it
(docs/algorithms.md §0). A private sketch's release holds the published, read-only sketch in
``sketch`` (queries on it are post-processing) and no items. Either way ``metadata`` is the one
record of what was released and ``guarantee`` its typed summary.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import MissingDependencyError, ParameterError, ReleaseBudgetError
from .accounting.calibration import (PRIVACY_UNIT, Guarantee, calibrate, check_privacy_params, make_length, privacy_record)  # noqa: F401

__all__ = ["Release", "ReleaseBudgetError", "check_privacy_params", "calibrate"]


def _finite(x):
    """A bound as JSON writes it: None for an unbounded side."""
    return None if isinstance(x, float) and math.isinf(x) else x


_INT_META = {"k", "capacity", "gamma", "t", "width", "depth", "noisy_cells", "l1_sensitivity", "max_stream_length", "length_t"}




@dataclass(frozen=True)
class Release:
    """A differentially private release.

    :ivar items: list of (key, noisy value), noisy value descending (ties by key); empty for a
                  sketch release; (q, value) in the order of the levels asked for, for
                  :func:`dpsketch.quantiles`
    :ivar threshold: released values are > threshold (>= for PMG; see metadata['threshold_inclusive']);
                  None for a sketch release
    :ivar epsilon: total ε of this release: at most the ε asked for (the length's share included);
                  None for a ρ-zCDP sketch released without a conversion δ (its guarantee is ``rho``)
    :ivar delta: total δ, at most the δ asked for (0 for pure DP; None with ``epsilon`` None)
    :ivar rho: zCDP ρ where the mechanism is zCDP, else None
    :ivar mechanism: 'PMG', 'DPSS', 'SketchHeavyHitters[countmin]', ...
    :ivar n: the stream length the release used: the noisy n̂ (default), the public n
                  (``public_length=True``), or None when the mechanism reads no length
    :ivar metadata: the guarantee record (privacy_unit, neighbours, length, epsilon/delta requested
                  and of the mechanism proper) and every parameter and derived constant (γ, τ, d,
                  w, envelope terms, reproducible_not_secret, release_index, ...)
    :ivar sketch: the published sketch (read-only; ``to_bytes``, queries) for a sketch release, else None
    :ivar intervals: list of (low, high) aligned with ``items``: with probability at least
                  ``interval_level`` every released item's true value lies in its interval
                  (simultaneous coverage; docs/privacy.md §Intervals; the rule is
                  ``metadata['interval']``). None where no rule is derived yet. Post-processing:
                  computed from the released values, the published length and public parameters
    :ivar interval_level: the level of ``intervals`` (0.95 by default), None without intervals
    """

    items: list
    threshold: float | None
    epsilon: float | None
    delta: float | None
    mechanism: str
    n: float | None
    metadata: dict = field(default_factory=dict)
    rho: float | None = None
    sketch: Any = None
    intervals: list | None = None
    interval_level: float | None = None

    @property
    def guarantee(self) -> Guarantee:
        """The guarantee as a typed record (privacy unit, neighbours, length handling, ε, δ, ρ,
        seeded, release index), read from this release's metadata."""
        m = self.metadata
        return Guarantee(
            mechanism=self.mechanism,
            privacy_unit=m.get("privacy_unit", PRIVACY_UNIT),
            neighbours=m.get("neighbours", "add_remove"),
            length=m.get("length", "public" if m.get("assumes_public_length") else "unused"),
            epsilon=self.epsilon,
            delta=self.delta,
            rho=self.rho,
            reproducible_not_secret=bool(m.get("reproducible_not_secret", False)),
            release_index=m.get("release_index"),
        )

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def keys(self) -> list:
        return [k for k, _ in self.items]

    def values(self) -> list:
        """The second member of every item: the noisy values (heavy hitters) or the released
        quantile values (``dpsketch.quantiles``, in the order of the levels asked for)."""
        return [v for _, v in self.items]

    def intervals_at(self, level: float) -> list | None:
        """The intervals of this release at another ``level`` (simultaneous coverage, docs/privacy.md
        §Intervals). Post-processing of what was released: no budget is spent; None where no rule is
        derived for this mechanism yet."""
        from .intervals import for_release

        return for_release(self.mechanism, self.items, self.metadata, level)[0] if self.sketch is None else None

    def interval(self, key, level: float | None = None) -> tuple:
        """(noisy value, low, high) of a released ``key`` at ``level`` (default: this release's).
        Only released keys have one; the coverage statement is the simultaneous one of ``intervals``.
        For a published Count-Min (``sketch``): the sketch's ``estimate_interval(key)``, any key."""
        if self.sketch is not None:
            if not hasattr(self.sketch, "estimate_interval"):
                raise ParameterError(f"{type(self.sketch).__name__} has no point-query interval yet "
                                     "(docs/privacy.md §Intervals)")
            return self.sketch.estimate_interval(key, level=self.interval_level or 0.95 if level is None else level)
        ivs = self.intervals if level is None else self.intervals_at(level)
        if ivs is None:
            raise ParameterError(f"{self.mechanism} releases carry no intervals yet (docs/privacy.md §Intervals)")
        for (k, v), (lo, hi) in zip(self.items, ivs):
            if k == key:
                return v, lo, hi
        raise ParameterError("that key is not in this release (only released keys have an interval)")

    def _bounds(self) -> tuple[list, list]:
        if self.intervals is None:
            return [None] * len(self.items), [None] * len(self.items)
        return [lo for lo, _ in self.intervals], [hi for _, hi in self.intervals]

    def to_dict(self) -> dict[str, Any]:
        """Everything released, JSON-ready; a published sketch as its class name and base64 bytes.
        ``intervals`` holds [low, high] per item (null for an unbounded side), or null."""
        out = {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho": self.rho,
            "threshold": self.threshold,
            "n": self.n,
            "items": [[k, v] for k, v in self.items],
            "metadata": dict(self.metadata),
            "interval_level": self.interval_level,
            "intervals": None if self.intervals is None else [[_finite(lo), _finite(hi)] for lo, hi in self.intervals],
        }
        if self.sketch is not None:
            import base64

            out["sketch"] = {"class": type(self.sketch).__name__,
                             "bytes_base64": base64.b64encode(self.sketch.to_bytes()).decode("ascii")}
        return out

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def _columns(self) -> dict[str, list]:
        low, high = self._bounds()
        return {"key": self.keys(), "noisy_value": self.values(), "low": low, "high": high}

    def to_pandas(self):
        """DataFrame with columns key, noisy_value, low, high (the interval at ``interval_level``;
        None without intervals); release info in ``.attrs`` (pandas required)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError("to_pandas needs pandas: pip install pandas") from exc

        df = pd.DataFrame(self._columns(), columns=["key", "noisy_value", "low", "high"])
        df.attrs.update({k: v for k, v in self.to_dict().items() if k not in ("items", "intervals")})
        return df

    def to_arrow(self):
        """A pyarrow Table with columns key, noisy_value, low, high; the release record (everything
        but the items) as JSON under the schema metadata key ``dpsketch.release`` (pyarrow required)."""
        try:
            import pyarrow as pa
        except ImportError as exc:
            raise MissingDependencyError("to_arrow needs pyarrow: pip install pyarrow") from exc

        record = {k: v for k, v in self.to_dict().items() if k not in ("items", "intervals")}
        cols = self._columns()
        cols["low"] = [_finite(x) if x is not None else None for x in cols["low"]]
        cols["high"] = [_finite(x) if x is not None else None for x in cols["high"]]
        return pa.table(cols).replace_schema_metadata({"dpsketch.release": json.dumps(record)})

    def to_polars(self):
        """A polars DataFrame with columns key, noisy_value, low, high (polars required; the release
        record is in :meth:`to_dict`)."""
        try:
            import polars as pl
        except ImportError as exc:
            raise MissingDependencyError("to_polars needs polars: pip install polars") from exc

        cols = self._columns()
        cols["low"] = [_finite(x) if x is not None else None for x in cols["low"]]
        cols["high"] = [_finite(x) if x is not None else None for x in cols["high"]]
        return pl.DataFrame(cols, strict=False)

    def _repr_html_(self) -> str:
        """A notebook table: the guarantee line, then key, noisy value and interval per item."""
        import html

        g = self.guarantee
        if g.epsilon is None:
            line = f"{html.escape(self.mechanism)}: rho={g.rho:g}-zCDP"
        else:
            line = f"{html.escape(self.mechanism)}: ({g.epsilon:g}, {g.delta:g})-DP"
        line += f", privacy unit: {html.escape(str(g.privacy_unit))}, length: {html.escape(str(g.length))}"
        if g.reproducible_not_secret:
            line += ", <b>seeded: reproducible, NOT secret</b>"
        if self.sketch is not None:
            return f"<div><p>{line}</p><p>published sketch: {html.escape(type(self.sketch).__name__)}</p></div>"
        if self.intervals is not None:
            line += (f"; with probability &ge; {self.interval_level:g} every interval holds its item's true "
                     "value (simultaneously)")
        low, high = self._bounds()
        head = "<tr><th>key</th><th>noisy value</th>" + ("<th>low</th><th>high</th>" if self.intervals else "") + "</tr>"
        rows = []
        limit = 50
        for (k, v), lo, hi in list(zip(self.items, low, high))[:limit]:
            cells = f"<td>{html.escape(str(k))}</td><td>{v}</td>"
            if self.intervals is not None:
                cells += f"<td>{lo}</td><td>{hi}</td>"
            rows.append(f"<tr>{cells}</tr>")
        more = f"<p>... {len(self.items) - limit} more items</p>" if len(self.items) > limit else ""
        return f"<div><p>{line}</p><table>{head}{''.join(rows)}</table>{more}</div>"

    def __repr__(self) -> str:
        seeded = ", reproducible_not_secret=True" if self.metadata.get("reproducible_not_secret") else ""
        if self.sketch is not None:
            g = f"rho={self.rho:g}" if self.epsilon is None else f"epsilon={self.epsilon:g}, delta={self.delta:g}"
            return f"Release(mechanism={self.mechanism!r}, sketch={type(self.sketch).__name__}, {g}{seeded})"
        g = f"rho={self.rho:g}" if self.epsilon is None else f"epsilon={self.epsilon:g}, delta={self.delta:g}"
        t = "" if self.threshold is None else f", threshold={self.threshold:.6g}"
        return f"Release(mechanism={self.mechanism!r}, items={len(self.items)}, {g}{t}{seeded})"


def build_release(raw, *, mechanism, cal, epsilon, delta, seeded, extra):
    """Turn the native (items, threshold, inclusive, metadata) tuple into a Release whose ε and δ
    are the totals of ``cal`` (never above the request)."""
    items, threshold, inclusive, meta = raw
    meta = {k: int(v) if k in _INT_META and float(v).is_integer() else v for k, v in meta.items()}
    meta.update(privacy_record(cal, epsilon_requested=epsilon, delta_requested=delta))
    meta["threshold_inclusive"] = bool(inclusive)
    meta["reproducible_not_secret"] = bool(seeded)
    meta.update(extra)
    n_used = meta.get("n_used")
    intervals, level = with_intervals(mechanism, items, meta)
    return Release(
        items=items,
        threshold=threshold,
        epsilon=cal["epsilon_total"],
        delta=cal["delta_total"],
        mechanism=mechanism,
        n=n_used,
        metadata=meta,
        intervals=intervals,
        interval_level=level,
    )


def with_intervals(mechanism: str, items: list, meta: dict, level: float | None = None) -> tuple:
    """(intervals, level) of a release about to be built, and its rule in ``meta['interval']``
    (docs/privacy.md §Intervals): post-processing of ``items`` and the published metadata only."""
    from .intervals import DEFAULT_LEVEL, for_release

    lv = DEFAULT_LEVEL if level is None else level
    intervals, rule = for_release(mechanism, items, meta, lv)
    meta["interval"] = rule
    return intervals, (lv if intervals is not None else None)


def with_metadata(rel: Release, updates: dict, *, base: dict | None = None, **fields) -> Release:
    """``rel`` with its metadata extended by ``updates`` (a copy of ``base``, default
    ``rel.metadata``, then ``updates``) and the Release ``fields`` given replaced: how a series
    (windows, cumulative nodes) records a release's place and composition without building a
    Release or its metadata by hand. Items, values and intervals are kept as they are."""
    from dataclasses import fields as _fields, replace

    known = {f.name for f in _fields(Release)} - {"metadata", "items", "intervals"}
    bad = sorted(set(fields) - known)
    if bad:
        raise ParameterError(f"with_metadata: cannot replace {bad}; it replaces {sorted(known)}")
    meta = dict(rel.metadata if base is None else base)
    meta.update(updates)
    return replace(rel, metadata=meta, **fields)


def mechanism_release(items: list, *, threshold, epsilon, delta, mechanism: str, n, metadata: dict,
                      rho=None, sketch=None, level: float | None = None) -> Release:
    """A Release whose guarantee and record a mechanism module computed (ε, δ, ρ as the mechanism
    reports them; ``metadata`` its record), with the intervals of :func:`with_intervals` at ``level``
    (default 95 %) and their rule in ``metadata['interval']``. The one constructor of releases the
    distributed routes use (docs/mechanisms/distributed.md)."""
    intervals, lv = with_intervals(mechanism, items, metadata, level)
    return Release(items=items, threshold=threshold, epsilon=epsilon, delta=delta, mechanism=mechanism, n=n,
                   metadata=metadata, rho=rho, sketch=sketch, intervals=intervals, interval_level=lv)


def quantiles_release(noisy, qs: list, *, mechanism: str, epsilon, delta, rho, metadata: dict, published=None,
                      level: float | None = None) -> Release:
    """The quantiles ``qs`` of a noisy dyadic hierarchy ``noisy`` (a PrivateDyadicCountSketch) as a
    Release: items (q, value) in the order of ``qs``, the guarantee and record the mechanism
    computed, ``published`` (the publishable sketch, or None where the hierarchy stays inside) in
    ``sketch``, and per value the interval of ``noisy.quantile_intervals``: with probability at
    least ``level`` (default 95 %), for every q at once, the true rank range of the value meets
    [low, high] (docs/privacy.md §Intervals). A hierarchy with CountSketch levels has none: the
    reason is in ``metadata['interval']``."""
    from .intervals import DEFAULT_LEVEL

    lv = DEFAULT_LEVEL if level is None else level
    meta = dict(metadata)
    try:
        ivs = noisy.quantile_intervals(qs, level=lv)
    except ParameterError as e:
        intervals, out_level = None, None
        meta["interval"] = {"coverage": "none", "reason": str(e)}
        values = [v.item() if hasattr(v, "item") else v for v in noisy.quantiles(qs)]
    else:
        values = [v for v, _, _ in ivs]
        intervals, out_level = [(lo, hi) for _, lo, hi in ivs], lv
        meta["interval"] = {"coverage": "simultaneous", "level": lv,
                            "bounds": "the true rank range of the value: (items < value) <= high and "
                                      "(items <= value) >= low (with bounds, ranks count buckets)",
                            "noise": "a bound uniform over all positions of the exact noise sums of a rank "
                                     "(PrivateDyadicCountSketch.quantile_intervals)",
                            "summary_error": "none (exact levels only)",
                            "reference": "docs/privacy.md §Intervals"}
    return Release(items=list(zip(list(qs), values)), threshold=None, epsilon=epsilon, delta=delta,
                   mechanism=mechanism, n=None, metadata=meta, rho=rho, sketch=published, intervals=intervals,
                   interval_level=out_level)


def sketch_quantiles_release(published: Release, qs: list, *, level: float | None = None, **extra) -> Release:
    """The quantiles ``qs`` of a published private dyadic sketch (``published``, a sketch release)
    as a :func:`quantiles_release`: the sketch's record and guarantee, the published sketch in
    ``sketch`` (further queries are post-processing). ``extra`` joins the record (front end)."""
    return quantiles_release(published.sketch, list(qs), mechanism=published.mechanism, epsilon=published.epsilon,
                             delta=published.delta, rho=published.rho,
                             metadata={**published.metadata, "qs": list(qs), **extra}, published=published.sketch,
                             level=level)


def sketch_release(published, metadata: dict) -> Release:
    """The Release of a published private sketch: the sketch itself, its metadata record, and the
    guarantee read from that record (ε and δ of the noise as drawn; ε None for ρ-zCDP without a
    conversion δ)."""
    return Release(items=[], threshold=None, epsilon=metadata.get("epsilon"), delta=metadata.get("delta"),
                   mechanism=metadata["mechanism"], n=None, metadata=metadata, rho=metadata.get("rho"),
                   sketch=published)


class ReleaseGuard:
    """Single-observation bookkeeping (§0): a second release raises unless explicitly allowed."""

    def __init__(self, count: int = 0):
        # The count travels with copies, pickles and bytes (docs/format.md, release-state trailer);
        # in-process copies share one guard, so releasing any copy spends the same budget.
        import threading

        self.count = count
        self._lock = threading.Lock()  # copies with their own object locks may release concurrently

    def next(self, owner: str, allow_repeat: bool) -> dict:
        with self._lock:
            if self.count and not allow_repeat:
                raise ReleaseBudgetError(
                    f"this {owner} was already released {self.count} time(s) and its privacy budget is spent; "
                    "pass allow_repeat=True to release again and accept the composed privacy loss"
                )
            self.count += 1
            return {"release_index": self.count, "composed_with_previous_releases": self.count > 1}


