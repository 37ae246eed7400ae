"""Releases over time: tumbling event-time windows, each released once (docs/privacy.md §Windows).

:class:`Windowed` routes every event, by its event time, into the one window
``[origin + i·period, origin + (i+1)·period)`` that contains it, keeps one summary per open
window and releases each window's summary once, with its own noisy length and its own
per-window seed, when the window closes. The series is accounted as parallel composition:
every event lies in at most one window, so the releases of all windows together are (ε, δ)-DP
for neighbours that add or remove one event, and a :class:`~dpsketch.Budget` is charged (ε, δ)
once for the whole series (:meth:`Budget.disjoint`).

That argument needs the set of windows released, and which events each window takes, to depend
on public parameters and on each event's own fields only (docs/privacy.md §Windows). So:

* the windows released are fixed by ``period``, ``origin``, ``start`` and ``end`` -- never by the
  smallest or largest event time -- and a window without events is released like any other;
* a window closes on a **public clock**, never on a watermark read off the data (one event with a
  far-future time would otherwise close other windows early and change what they contain):

  - ``clock="input"``: every window closes at the end of the input (``close()``); no event is
    late. ``end`` is required, so that the last window is public.
  - ``clock="wall"``: window i accepts an event that arrives (``now``) while
    ``start_i <= now < end_i + allowed_lateness`` and is released at ``end_i + allowed_lateness``
    on the wall clock, so the release times are a public schedule. An event that arrives after
    its window's deadline (late) or before its window began (early) is dropped; nothing
    publishes how many were.

Events outside ``[start, end)`` are dropped the same way.

With ``max_rows_per_unit=r`` one privacy id (all of its rows) is the privacy unit: each unit keeps
its first r rows in input order over the whole series (so it is in at most r windows), each
window's release runs at the per-row (ε', δ') of :func:`dpsketch.privacy_unit.unit_calibration`,
and group privacy over the unit's r events of the (ε', δ')-DP series gives the requested (ε, δ)
for one unit (docs/privacy.md §Windows).

A front end that computes window indices where the data live (``dpsketch.spark``) feeds
:meth:`Windowed.update_windows`; :class:`WallClockReleaser` runs a wall-clock series whose batches
come from another thread (a streaming engine's micro-batches) and releases each window at its
deadline even while none arrives. The class is the event-level, one-release-per-window form;
cumulative ("since start") releases of a linear sketch over the same windows are
:meth:`dpsketch.Cumulative.releases` (docs/privacy.md §Cumulative).
"""

from __future__ import annotations

import datetime as _dt
import math
import queue
import re
import threading
import time as _time
from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np

from .. import _seeds
from .._prefetch import Prefetch
from ..accounting.budget import Budget, DisjointScope
from ..mechanisms.series import WindowSeries, iso, window_series
from ..mechanisms.unit_level import UnitRowLimiter
from ..release import Release, calibrate, with_metadata
from ..sketches.counters import MisraGries, SpaceSaving
from ..errors import ParameterError, ParameterTypeError
from .._validation import validate_params

__all__ = ["Windowed", "WallClockReleaser", "assign", "window_seed", "parse_duration", "parse_instant", "CLOCKS"]

NS = 1_000_000_000
CLOCKS = ("input", "wall")
_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": NS, "m": 60 * NS, "min": 60 * NS, "h": 3600 * NS,
          "d": 86400 * NS, "w": 7 * 86400 * NS}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|ms|min|s|m|h|d|w)")
_TIME_LIMIT = 2**62  # |t| in ns beyond this (year ~2116) is not a time: such events are dropped


def window_seed(seed: Optional[int], index: int) -> Optional[int]:
    """The user seed of window ``index``'s release: ``derive_seed(seed, "window/<index>")``
    (docs/privacy.md §Seeds), or None without a seed. Each window's noise is a fresh stream."""
    s = _seeds.check_user_seed(seed)
    return None if s is None else _seeds.derive_seed(s, f"window/{int(index)}")


def parse_duration(text: Any) -> int:
    """A duration in nanoseconds from seconds (a number), a ``datetime.timedelta``, or text such
    as ``1h``, ``15min``, ``90s``, ``1h30m``, ``250ms`` (units ns us ms s m/min h d w)."""
    if isinstance(text, _dt.timedelta):
        return (text.days * 86400 + text.seconds) * NS + text.microseconds * 1000
    if isinstance(text, np.timedelta64):
        return int(text.astype("timedelta64[ns]").astype(np.int64))
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if not math.isfinite(text):
            raise ParameterError(f"a duration must be finite, got {text!r}")
        return int(round(text * NS))
    if not isinstance(text, str):
        raise ParameterTypeError(f"a duration is seconds, a timedelta or text like '1h', got {type(text).__name__}")
    s = text.strip().lower()
    try:
        return int(round(float(s) * NS))
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ParameterError(f"cannot read {text!r} as a duration; use e.g. 1h, 15min, 90s, 1h30m or seconds")
    return int(round(total))


def parse_instant(value: Any) -> int:
    """An instant in nanoseconds since 1970-01-01T00:00:00Z from epoch seconds (a number), a
    ``datetime`` (naive: UTC), a ``numpy.datetime64`` or ISO 8601 text (no zone: UTC)."""
    if isinstance(value, np.datetime64):
        return int(value.astype("datetime64[ns]").astype(np.int64))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        since_epoch = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return parse_duration(since_epoch)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_duration(value)
    if isinstance(value, str):
        s = value.strip()
        try:
            return parse_duration(float(s))
        except ValueError:
            pass
        try:
            parsed = _dt.datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
        except ValueError:
            raise ParameterError(f"cannot read {value!r} as a time; use ISO 8601 (2024-05-01T00:00:00Z) "
                             "or epoch seconds") from None
        return parse_instant(parsed)
    raise ParameterTypeError(f"a time is epoch seconds, a datetime or ISO 8601 text, got {type(value).__name__}")


def times_ns(times: Any) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """(int64 nanoseconds, None or the mask of the times that are usable). Numbers are epoch
    seconds; numpy datetime64 and pyarrow timestamp arrays are converted exactly; NaN, NaT and
    times beyond ±2^62 ns are not usable (their events are dropped, each on its own)."""
    if type(times).__module__.startswith("pyarrow"):
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_timestamp(times.type):
            ok = times.is_valid()
            times = pc.fill_null(times.cast(pa.timestamp("ns", tz=times.type.tz)), 0)
            t = times.cast(pa.int64()).to_numpy(zero_copy_only=False)
            okn = ok.to_numpy(zero_copy_only=False)
            return t, (None if okn.all() else okn)
        times = times.to_numpy(zero_copy_only=False)
    arr = np.asarray(times)
    if arr.dtype.kind == "M":
        t = (arr if arr.dtype == np.dtype("datetime64[ns]") else arr.astype("datetime64[ns]")).view(np.int64)
        ok = t != np.iinfo(np.int64).min  # NaT
        if not ok.all():
            ok &= np.abs(np.where(ok, t, 0)) < _TIME_LIMIT
            return t, ok
        return t, None
    elif arr.dtype.kind in "iu":
        a = arr.astype(np.int64)
        ok = np.abs(a) < _TIME_LIMIT // NS
        t = np.where(ok, a, 0) * NS
    elif arr.dtype.kind == "f":
        ok = np.isfinite(arr) & (np.abs(arr) < _TIME_LIMIT / NS)
        t = np.floor(np.where(ok, arr, 0.0) * NS).astype(np.int64)
    else:
        raise ParameterTypeError(f"times must be numbers (epoch seconds) or datetime64, got dtype {arr.dtype}")
    return t, (None if ok.all() else ok)


def window_record(i: int, period_ns: int, origin_ns: int) -> dict:
    """Window ``i``'s entry in a release's metadata: its index and [start, end), public parameters."""
    s = int(origin_ns) + int(i) * int(period_ns)
    e = s + int(period_ns)
    return {"index": int(i), "start": iso(s), "end": iso(e), "start_ns": s, "end_ns": e}


def composition_record(clock: str, series_epsilon: float, series_delta: float, period_ns: int, origin_ns: int,
                       allowed_lateness_ns: int = 0, reason: Optional[str] = None) -> dict:
    """The accounting of a series of window releases at (``series_epsilon``, ``series_delta``),
    one event the unit (:meth:`dpsketch.mechanisms.series.WindowSeries.composition`)."""
    plan = WindowSeries(series_epsilon, series_delta, series_epsilon, series_delta, series_epsilon, series_delta)
    return plan.composition(clock, period_ns, origin_ns, allowed_lateness_ns, reason)


def assign(t_ns: np.ndarray, period_ns: int, origin_ns: int = 0) -> np.ndarray:
    """The window index of each instant (int64 ns): floor((t − origin) / period), so window i is
    the half-open ``[origin + i·period, origin + (i+1)·period)`` and every instant is in exactly
    one window (an event at a boundary belongs to the window that starts there)."""
    return np.floor_divide(np.asarray(t_ns, dtype=np.int64) - np.int64(origin_ns), np.int64(period_ns))


def _series_unit(unit: Any, max_rows_per_unit: Optional[int]):
    """The privacy unit of a window series from ``unit=`` (or the older ``max_rows_per_unit``):
    ``Row()`` or ``Person(id, max_rows=r)``."""
    from ..units import Person, Row

    if unit is None:
        return Row() if max_rows_per_unit is None else Person("privacy_id", max_rows=max_rows_per_unit)
    if max_rows_per_unit is not None:
        raise ParameterError("pass the privacy unit once: unit=dpsketch.Person(id=..., max_rows=r) or "
                             "max_rows_per_unit=r, not both")
    if isinstance(unit, Row):
        if unit.public_length:
            raise ParameterError("a window's number of events is private: Windowed takes unit=dpsketch.Row() "
                                 "without public_length")
        return unit
    if isinstance(unit, Person):
        if unit.max_rows is None:
            raise ParameterError("Windowed keeps each person's first r rows over the series: pass "
                                 "unit=dpsketch.Person(id=..., max_rows=r) (max_keys is the in-memory exact route)")
        return unit
    raise ParameterTypeError(f"unit must be dpsketch.Row(...) or dpsketch.Person(...), got {type(unit).__name__}")


def _summary_factory(method: Any, k: Optional[int], capacity: Optional[int], key_type: Optional[str]):
    """The per-window summary of ``method`` ('auto': DPSS with ``k``, PMG without), ``capacity``
    counters (default 2k)."""
    from .._validation import Options, check

    m = check("method", method, Options(("auto", "dpss", "pmg")))
    if m == "auto":
        m = "dpss" if k is not None else "pmg"
    if capacity is None:
        if k is None:
            raise ParameterError(f"method={m!r} needs capacity= (counters per window), or k to size it (2k)")
        capacity = 2 * k
    cls = SpaceSaving if m == "dpss" else MisraGries
    return lambda: cls(capacity, key_type=key_type)


class Windowed:
    """One private release per tumbling event-time window (module docstring; docs/privacy.md §Windows).

    ``Windowed(period=..., epsilon=..., delta=..., k=..., method="auto", unit=..., start=..., end=...)``
    takes the mechanism arguments of :func:`dpsketch.heavy_hitters`; each window that receives
    events gets its own summary, released once when the window closes.

    * ``period``: window length (seconds, timedelta or '1h'); ``origin``: an instant where a
      window starts (default the Unix epoch), so windows are ``[origin + i·period, ...)``.
    * ``start``, ``end``: the first window is the one containing ``start``, the last the one
      containing the instant just before ``end``. ``clock="input"`` needs both; ``clock="wall"``
      defaults ``start`` to now and, without ``end``, stops at the window open when the input ends.
    * ``clock``: ``"input"`` (all windows close at :meth:`close`) or ``"wall"`` (window i closes at
      ``end_i + allowed_lateness`` on ``now()``, default ``time.time``).
    * ``budget``: charged (ε, δ) once, at construction, for the whole series (:meth:`Budget.disjoint`).

    Feed with :meth:`update` ``(items, times)`` (``(items, times, privacy_id)`` with a person as the
    unit), or drive the whole thing with :meth:`releases` over an iterable of such batches. Each
    release is a :class:`~dpsketch.Release` whose metadata carries its window (``window``: index,
    start, end) and the series' accounting (``composition``).

    :param period: the window length (seconds, a timedelta or text such as ``'1h'``)
    :param epsilon: ε of every window's release, and of the whole series (parallel composition)
    :param delta: δ of every window's release, and of the whole series
    :param k: keep keys of frequency about n/k or more in each window (required by ``'dpss'``;
        with ``'pmg'`` optional: without it every key above PMG's threshold is released)
    :param method: ``'dpss'`` (SpaceSaving released by DPSS), ``'pmg'`` (Misra-Gries released by
        PMG) or ``'auto'`` (``'dpss'`` when ``k`` is given, else ``'pmg'``)
    :param capacity: counters of each window's summary (default 2k; ``'pmg'`` without ``k`` needs it)
    :param unit: ``dpsketch.Row()`` (default: one event) or ``dpsketch.Person(id=..., max_rows=r)``:
        a person keeps their first r rows over the whole series and :meth:`update` takes their ids
    :param key_type: ``'int'`` or ``'str'`` keys (default: the first batch decides)
    :param start: an instant in the first window (required with ``clock='input'``)
    :param end: the instant just after the last window (required with ``clock='input'``)
    :param origin: an instant where a window starts (default the Unix epoch)
    :param clock: ``'input'`` or ``'wall'``
    :param length_epsilon: ε share of each window's noisy length (default: the release's rule)
    :param length_delta: δ share of each window's noisy length (``'dpss'`` only)
    :param seed: window i's release uses the user seed :func:`window_seed` ``(seed, i)``
        (reproducible, not secret)
    :param budget: a :class:`dpsketch.Budget` charged once for the whole series
    :param allowed_lateness: with ``clock='wall'``: how long after its end a window still takes events
        (default 0)
    :param now: the wall clock, a function returning epoch seconds (default ``time.time``; tests pass
        their own)
    :param make: instead of ``method``/``capacity``/``key_type``: a function returning an empty
        :class:`~dpsketch.SpaceSaving` (DPSS) or :class:`~dpsketch.MisraGries` (PMG), called once
        per window that receives events
    :param max_rows_per_unit: the older spelling of ``unit=Person(id=..., max_rows=r)``
    """

    @validate_params(["epsilon", "delta", "k", "capacity", "length_epsilon", "length_delta", "seed",
                      "max_rows_per_unit"])
    def __init__(self, *, period: Any, epsilon: float, delta: float, k: Optional[int] = None,
                 method: str = "auto", capacity: Optional[int] = None, unit: Any = None,
                 key_type: Optional[str] = None, start: Any = None, end: Any = None, origin: Any = 0,
                 clock: str = "input", allowed_lateness: Any = 0, length_epsilon: Optional[float] = None,
                 length_delta: Optional[float] = None, seed: Optional[int] = None,
                 budget: Optional[Budget] = None, now: Optional[Callable[[], float]] = None,
                 make: Optional[Callable[[], Any]] = None, max_rows_per_unit: Optional[int] = None) -> None:
        if clock not in CLOCKS:
            raise ParameterError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
        self.period = parse_duration(period)
        if self.period <= 0:
            raise ParameterError("period must be > 0")
        self.origin = parse_instant(origin)
        self.allowed_lateness = parse_duration(allowed_lateness)
        if self.allowed_lateness < 0:
            raise ParameterError("allowed_lateness must be >= 0")
        if clock == "input" and self.allowed_lateness:
            raise ParameterError("allowed_lateness applies to clock='wall'; with clock='input' no event is late")
        self.clock = clock
        self._now = now if now is not None else _time.time
        self.unit = _series_unit(unit, max_rows_per_unit)
        max_rows_per_unit = getattr(self.unit, "max_rows", None)
        if make is None:
            make = _summary_factory(method, k, capacity, key_type)
        elif method != "auto" or capacity is not None or key_type is not None:
            raise ParameterError("make= replaces method=, capacity= and key_type=: pass one or the other")
        if not callable(make):
            raise ParameterTypeError("make must be a function returning an empty SpaceSaving or MisraGries")
        probe = make()
        if isinstance(probe, SpaceSaving):
            self.mechanism, need = "DPSS", "bounds"
            if k is None:
                raise ParameterError("DPSS needs k (SpaceSaving.release takes k)")
            if k > probe.capacity:
                raise ParameterError(f"DPSS needs capacity >= k, got capacity={probe.capacity} < k={k}")
        elif isinstance(probe, MisraGries):
            self.mechanism, need = "PMG", ("none" if k is None else "estimate")
        else:
            raise ParameterTypeError("make must return an empty dpsketch.SpaceSaving (DPSS) or dpsketch.MisraGries (PMG), "
                            f"got {type(probe).__name__}")
        if len(probe.items()):
            raise ParameterError("make must return an empty summary (one per window)")
        self._make = make
        # With a person as the unit, each window's element-level release runs at the per-row
        # (ε', δ') whose group-privacy chain over r rows is the requested (ε, δ) (the series plan).
        self._limiter: Optional[UnitRowLimiter] = None
        if max_rows_per_unit is not None:
            self._limiter = UnitRowLimiter(max_rows_per_unit)
        self._plan = window_series(epsilon, delta, max_rows_per_unit)
        calibrate(self._plan.epsilon, self._plan.delta, need, public_length=False, length_epsilon=length_epsilon,
                  length_delta=length_delta if need == "bounds" else None)  # parameter errors now
        self._options = self._plan.release_options(k=k, length_epsilon=length_epsilon, length_delta=length_delta)
        self.epsilon, self.delta, self.k = self._plan.epsilon, self._plan.delta, k
        self.seed = _seeds.check_user_seed(seed)
        if start is None:
            if clock == "input":
                raise ParameterError("clock='input' needs start and end: the first and last window must be public, "
                                 "not read off the data")
            start_ns = int(self._now() * NS)
        else:
            start_ns = parse_instant(start)
        self.first = self.index(start_ns)
        self.last: Optional[int] = None
        if end is not None:
            end_ns = parse_instant(end)
            if end_ns <= start_ns:
                raise ParameterError("end must be after start")
            self.last = self.index(end_ns - 1)
        elif clock == "input":
            raise ParameterError("clock='input' needs end: the last window must be public, not read off the data")
        self._next = self.first  # lowest window not yet released
        self._open: dict[int, Any] = {}
        self._closed = False
        self._lock = threading.RLock()
        self._scope: Optional[DisjointScope] = None
        if budget is not None:
            if not isinstance(budget, Budget):
                raise ParameterTypeError(f"budget must be a dpsketch.Budget, got {type(budget).__name__}")
            self._scope = budget.disjoint(self._mechanism_name(), epsilon=self._plan.series_epsilon,
                                          delta=self._plan.series_delta, part_epsilon=self._plan.epsilon,
                                          part_delta=self._plan.delta)

    def _mechanism_name(self) -> str:
        return (f"Windowed[{self.mechanism}]" if self._limiter is None
                else f"Windowed[unit.bounded_memory[{self.mechanism}]]")

    @property
    def max_rows_per_unit(self) -> Optional[int]:
        """r: rows one privacy unit keeps over the whole series (None: one event is the unit)."""
        return None if self._limiter is None else self._limiter.max_rows_per_unit

    # -- windows ----------------------------------------------------------------------------
    def index(self, t_ns: int) -> int:
        """The index of the window containing the instant ``t_ns`` (nanoseconds)."""
        return (int(t_ns) - self.origin) // self.period

    def bounds(self, i: int) -> tuple[int, int]:
        """[start, end) of window ``i`` in nanoseconds."""
        s = self.origin + int(i) * self.period
        return s, s + self.period

    def deadline(self, i: int) -> int:
        """When window ``i`` closes on the wall clock (ns): its end plus the allowed lateness."""
        return self.bounds(i)[1] + self.allowed_lateness

    @property
    def open_windows(self) -> int:
        """How many windows hold a summary now (memory is this many summaries)."""
        return len(self._open)

    @property
    def closed(self) -> bool:
        return self._closed

    # -- feeding ----------------------------------------------------------------------------
    def update(self, items: Any, times: Any, privacy_id: Any = None, *, now: Optional[float] = None) -> list[Release]:
        """Add a batch of events (``items[j]`` at event time ``times[j]``: epoch seconds,
        datetime64 or a pyarrow timestamp array; with ``max_rows_per_unit``, the privacy id of
        each row in ``privacy_id``). With ``clock='wall'`` the batch arrives at ``now`` (default
        ``now()``): windows whose deadline passed are released first (returned), then each event
        is kept iff its window is open at ``now``. Events outside the windows released are
        dropped.

        :param items: the events' keys
        :param times: the events' times (epoch seconds, datetime64 or a pyarrow timestamp array)
        """
        with self._lock:
            if (privacy_id is None) != (self._limiter is None):
                raise ParameterError("privacy_id= goes with max_rows_per_unit= (one privacy id per row), and only with it")
            out, lo, hi = self._arrive(now)
            items = _as_batch(items)
            t, ok = times_ns(times)
            if len(t) != len(items):
                raise ParameterError(f"items and times differ in length ({len(items)} vs {len(t)})")
            if self._limiter is not None:
                ids = privacy_id.to_numpy(zero_copy_only=False) if type(privacy_id).__module__.startswith(
                    "pyarrow") else privacy_id
                if len(ids) != len(items):
                    raise ParameterError("items and privacy_id differ in length (one privacy id per row)")
                # a unit's first r rows in input order, over the whole series: what is kept of a
                # unit depends on that unit's rows alone
                kept = self._limiter.keep(ids)
                ok = kept if ok is None else ok & kept
            if len(t) and (hi is None or lo <= hi):
                self._route(items, assign(t, self.period, self.origin), ok, lo, hi)
            return out

    def update_windows(self, items: Any, windows: Any, *, now: Optional[float] = None) -> list[Release]:
        """:meth:`update` for events whose window index is already known: ``windows[j]`` is
        :func:`assign` of ``items[j]``'s event time (computed where the data lives, e.g. on a
        Spark executor). Arrival, deadlines and dropping are those of :meth:`update`; one event
        is the privacy unit (a ``max_rows_per_unit`` series needs :meth:`update`, which sees the
        privacy ids).

        :param items: the events' keys
        :param windows: each event's window index (:func:`assign` of its time)
        :param now: the arrival time of the batch with ``clock='wall'`` (default ``now()``)
        """
        with self._lock:
            if self._limiter is not None:
                raise ParameterError("update_windows takes no privacy ids: feed a max_rows_per_unit series with update()")
            out, lo, hi = self._arrive(now)
            items = _as_batch(items)
            w = np.asarray(windows, dtype=np.int64)
            if w.ndim != 1 or len(w) != len(items):
                raise ParameterError(f"items and windows differ in length ({len(items)} vs {len(w)})")
            if len(w) and (hi is None or lo <= hi):
                self._route(items, w, None, lo, hi)
            return out

    def _arrive(self, now: Optional[float]) -> tuple[list[Release], int, Optional[int]]:
        """A batch arrives (lock held): with the wall clock, release the windows due at ``now``;
        return those releases and the range [lo, hi] of windows that take events now."""
        if self._closed:
            raise ParameterError("this Windowed was closed; its windows are released")
        out: list[Release] = []
        lo, hi = self._next, self.last
        if self.clock == "wall":
            now_ns = int((self._now() if now is None else now) * NS)
            out = self._advance(now_ns)
            lo = max(self._next, self._first_open(now_ns))
            current = self.index(now_ns)
            hi = current if hi is None else min(hi, current)
        return out, lo, hi

    def accepting_from(self, now: Optional[float] = None) -> int:
        """The lowest window that can still take an event: below it every window is released or,
        with the wall clock, past its deadline at ``now`` (default ``now()``). A front end may drop
        the events of lower windows before feeding (they would be dropped here)."""
        with self._lock:
            if self.clock != "wall":
                return self._next
            return max(self._next, self._first_open(int((self._now() if now is None else now) * NS)))

    def _first_open(self, now_ns: int) -> int:
        """The lowest window whose deadline has not passed at ``now_ns``: deadline(i) > now iff
        origin + (i+1)·P + L > now iff i >= floor((now − origin − L)/P)."""
        return (now_ns - self.origin - self.allowed_lateness) // self.period

    def _route(self, items, w: np.ndarray, ok, lo: int, hi: Optional[int]) -> None:
        keep = w >= lo
        if hi is not None:
            keep &= w <= hi
        if ok is not None:
            keep &= ok
        if keep.all():
            idx = None
            ws = w
        else:
            idx = np.flatnonzero(keep)
            ws = w[idx]
            if not len(ws):
                return
        if len(ws) > 1 and not (ws[1:] >= ws[:-1]).all():
            order = np.argsort(ws, kind="stable")
            idx = order if idx is None else idx[order]
            ws = ws[order]
        cuts = np.flatnonzero(ws[1:] != ws[:-1]) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [len(ws)]))
        for a, b in zip(starts.tolist(), ends.tolist()):
            i = int(ws[a])
            part = _slice(items, a, b) if idx is None else _take(items, idx[a:b])
            summary = self._open.get(i)
            if summary is None:
                summary = self._open[i] = self._make()
            summary.update_many(part)

    # -- releasing --------------------------------------------------------------------------
    def advance(self, now: Optional[float] = None) -> list[Release]:
        """``clock='wall'``: release, in order, every window whose deadline has passed at ``now``
        (default ``now()``)."""
        if self.clock != "wall":
            raise ParameterError("advance() is for clock='wall'; with clock='input' windows close at close()")
        with self._lock:
            return self._advance(int((self._now() if now is None else now) * NS))

    def _advance(self, now_ns: int) -> list[Release]:
        out = []
        while (self.last is None or self._next <= self.last) and self.deadline(self._next) <= now_ns:
            out.append(self._release_window(self._next))
        return out

    def next_deadline(self) -> Optional[float]:
        """Wall-clock seconds at which the next window closes (None when every window is released)."""
        if self._closed or (self.last is not None and self._next > self.last):
            return None
        return self.deadline(self._next) / NS

    def close(self, now: Optional[float] = None) -> list[Release]:
        """End of input: release every window not yet released, in order. ``clock='input'``:
        windows ``first..last``. ``clock='wall'``: through ``end`` when given (later windows are
        empty), else through the window that contains ``now``."""
        with self._lock:
            if self._closed:
                return []
            last: Optional[int] = self.last
            out: list[Release] = []
            if self.clock == "wall":
                now_ns = int((self._now() if now is None else now) * NS)
                out = self._advance(now_ns)
                if last is None:
                    last = self.index(now_ns)
            assert last is not None  # clock='input' requires end
            while self._next <= last:
                out.append(self._release_window(self._next))
            self._closed = True
            self._open.clear()
            return out

    def _release_window(self, i: int) -> Release:
        """Release window ``i`` (its summary, or an empty one) once, with its own seed and its own
        part of the disjoint budget, and move past it."""
        assert i == self._next
        summary = self._open.pop(i, None)
        if summary is None:
            summary = self._make()
        budget = None if self._scope is None else self._scope.part(i)
        self._next = i + 1
        rel = summary.release(seed=window_seed(self.seed, i), budget=budget, **self._options)
        placed = {"window": window_record(i, self.period, self.origin),
                  "composition": self._plan.composition(self.clock, self.period, self.origin, self.allowed_lateness),
                  "unit": self.unit.describe()}
        return self._plan.finish(rel, placed, self.mechanism)

    # -- driving ----------------------------------------------------------------------------
    def releases(self, batches: Iterable[tuple[Any, Any]]) -> Iterator[Release]:
        """Feed ``(items, times)`` batches (``(items, times, privacy_id)`` with ``max_rows_per_unit``) and yield each window's release as the window closes;
        at the end of ``batches`` the remaining windows are released (:meth:`close`). With
        ``clock='wall'`` the batches are read in a background thread, a batch arrives at the wall
        time this generator takes it from that thread, and windows are released at their
        deadlines even while no batch arrives; memory is the open windows' summaries plus at most two batches in flight."""
        if self.clock == "input":
            for batch in batches:
                yield from self.update(*batch)
            yield from self.close()
            return
        yield from self._releases_wall(iter(batches))

    def _releases_wall(self, batches: Iterator[tuple[Any, Any]]) -> Iterator[Release]:
        ahead = Prefetch(batches, name="dpsketch-windows")
        try:
            while True:
                due = self.next_deadline()
                if due is None:  # every window through ``end`` is released: nothing more to read
                    yield from self.close()
                    return
                try:
                    item = ahead.get(timeout=max(0.0, due - self._now()))
                except queue.Empty:
                    yield from self.advance()
                    continue
                # A batch arrives when it is taken here: this thread alone orders arrivals and
                # deadlines, so a window is released only after every batch taken before it.
                if item is Prefetch.DONE:
                    yield from self.close()
                    return
                yield from self.update(*item)
        finally:
            ahead.close(wait=False)


class WallClockReleaser:
    """Runs a ``clock="wall"`` :class:`Windowed` whose batches come from elsewhere, e.g. a
    streaming engine's micro-batches (docs/privacy.md §Windows, "On Spark"). :meth:`feed` adds a
    batch at the moment it is called (its arrival on the series' clock); a daemon thread releases
    every window at its deadline on that clock even while nothing arrives; every release goes to
    ``emit(release)`` exactly once, in window order. :meth:`close` ends the series (windows not yet
    due are released at once, through ``end`` when it was given). ``max_wait`` (seconds) bounds
    how long the thread sleeps before it reads the clock again."""

    def __init__(self, windowed: Windowed, emit: Callable[[Release], Any], *, max_wait: float = 1.0) -> None:
        if not isinstance(windowed, Windowed) or windowed.clock != "wall":
            raise ParameterError("WallClockReleaser runs a Windowed with clock='wall' (releases on a public clock)")
        if not callable(emit):
            raise ParameterTypeError("emit must be a function taking one Release")
        self.windowed, self._emit = windowed, emit
        self._max_wait = float(max_wait)
        self._lock = threading.Lock()  # one emitter at a time: releases leave in window order
        self._stop = threading.Event()
        self.error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="dpsketch-window-clock", daemon=True)
        self._thread.start()

    def _deliver(self, step: Callable[[], list[Release]]) -> None:
        with self._lock:
            if self.error is not None:
                raise self.error
            for rel in step():
                self._emit(rel)

    def feed(self, items: Any, windows: Any) -> None:
        """A batch arrives now: ``items`` with their window indices (:meth:`Windowed.update_windows`)."""
        self._deliver(lambda: self.windowed.update_windows(items, windows))

    def advance(self) -> None:
        """Release every window whose deadline has passed now."""
        self._deliver(self.windowed.advance)

    def halt(self) -> None:
        """Stop the clock thread and release nothing (the series is abandoned)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def close(self) -> None:
        """Stop the clock thread and release every window not yet released."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self._deliver(self.windowed.close)

    def _run(self) -> None:
        while not self._stop.is_set():
            due = self.windowed.next_deadline()
            if due is None:
                return
            if self._stop.wait(min(self._max_wait, max(0.0, due - self.windowed._now()))):
                return
            try:
                self.advance()
            except BaseException as e:  # kept, and raised again by the next feed/advance/close
                with self._lock:
                    self.error = self.error or e
                return


def _as_batch(items):
    if isinstance(items, np.ndarray) or type(items).__module__.startswith("pyarrow"):
        return items
    return np.asarray(list(items) if not hasattr(items, "__len__") else items)


def _slice(items, a: int, b: int):
    if a == 0 and b == len(items):
        return items
    return items[a:b] if isinstance(items, np.ndarray) else items.slice(a, b - a)


def _take(items, idx: np.ndarray):
    if isinstance(items, np.ndarray):
        return items[idx]
    import pyarrow as pa

    return items.take(pa.array(idx))
