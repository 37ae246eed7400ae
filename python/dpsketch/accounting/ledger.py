"""A :class:`~dpsketch.Budget` kept in a JSON ledger file, so that several processes -- runs of
``dpsketch top`` / ``quantiles`` on the same data, Spark drivers, scripts -- draw from one cap
(docs/privacy.md §Budget files).

:meth:`FileBudget.open` (also ``Budget.open``) creates the file with the given caps or loads it.
Every charge takes an exclusive ``fcntl.flock`` on the sidecar ``FILE.lock``, re-reads the ledger
(so every other process's spends count), applies the same exact arithmetic as an in-memory
Budget, writes the new ledger to a temporary file in the same folder, fsyncs it and renames it
over the old one (``os.replace``), then releases the lock. A refused charge writes nothing.

The file stores every value exactly, as a ``"numerator/denominator"`` string of the
:class:`~fractions.Fraction` the accountant uses -- since format version 2 with each entry's
privacy profile, the route of each part and the ρ it was charged (docs/accounting.md §The budget
file; version 1 files are read and upgraded on the next charge) -- together with a format version and the SHA-256
of its canonical content (the JSON of every other field, keys sorted, no spaces). A file that is
not valid JSON, of another version, with a wrong digest, a negative value or running totals that
do not match its entries raises :class:`~dpsketch.errors.BudgetFileError`; it is never reset or
repaired. The digest detects damage and hand edits; it is not a signature (whoever can write the
file can recompute it), so protect the file with the file system's permissions.

The path is resolved once (symbolic links followed), so every name of the file charges one
ledger under one lock; a file with other hard links is refused, since the rename would give each
name its own ledger.

``fcntl`` exists on Linux and macOS; on other platforms every budget-file operation raises
:class:`~dpsketch.errors.BudgetFileError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import threading
from fractions import Fraction
from typing import Any, Iterator, Optional, Tuple, Union

from .budget import Budget, PrivacyTotals, Spend
from .profile import as_profile, part_epsilon, part_rho, profile_from_json, profile_to_json, profile_totals
from ..errors import BudgetFileError, ParameterTypeError, StateError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileBudget", "BudgetFileError", "FORMAT", "VERSION"]

FORMAT = "dpsketch-budget"
VERSION = 2  # 2: every entry carries its privacy profile and routes; version 1 files are read too
READABLE = (1, 2)
_FRACTION = re.compile(r"(0|[1-9][0-9]*)/([1-9][0-9]*)")
_KEYS = {"format", "version", "cap", "spent", "ledger", "sha256"}
_CAP_KEYS = {"epsilon", "delta", "zcdp_delta", "rho"}
_SUM_KEYS = {"epsilon", "delta", "rho"}
_ENTRY_KEYS_V1 = {"mechanism", "epsilon", "delta", "rho"}
_ENTRY_KEYS = _ENTRY_KEYS_V1 | {"profile"}

PathLike = Union[str, "os.PathLike[str]"]
Entry = Tuple[str, Fraction, Fraction, Fraction]  # one charge: mechanism, ε, δ, ρ
# one charge as stored: mechanism, ε, δ, ρ, the profile parts, one (route, ρ charged) per part
Record = Tuple[str, Fraction, Fraction, Fraction, tuple, tuple]


def _fraction_text(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _canonical(content: dict) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _digest(content: dict) -> str:
    return hashlib.sha256(_canonical(content)).hexdigest()


class FileBudget(Budget):
    """A :class:`~dpsketch.Budget` whose ledger lives in a file shared by processes (module
    docstring). Get one with :meth:`open` (create or load) or :meth:`create` (only create); it
    takes ``budget=`` everywhere a Budget does. ``spent()``, ``remaining()`` and ``ledger`` read
    the file's current state; ``path`` is its absolute path.

    Pickling reopens the same path (the file, not the object, is the accountant, so a copy in
    another process charges the same ledger). One thread charges at a time; a charge made inside
    another charge of the same FileBudget raises ``RuntimeError`` instead of deadlocking.
    """

    _path: str
    _held: bool  # this thread is inside a charge (holds the file lock, state just read)
    _entries: list[Record]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ParameterTypeError("a FileBudget comes from FileBudget.open(path, ...) or Budget.open(path, ...), "
                        "which read or create its file")

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: PathLike,
        *,
        epsilon: Optional[float] = None,
        delta: Optional[float] = None,
        rho: Optional[float] = None,
        zcdp_delta: Optional[float] = None,
    ) -> "FileBudget":
        """The budget in ``path``: created with the caps ``epsilon``/``delta``/``zcdp_delta`` (an
        (ε, δ) budget) or ``rho`` (a zCDP budget) when the file does not exist; loaded when it
        does, and then every cap given must equal the stored one (:class:`BudgetFileError`
        otherwise)."""
        return cls._open(path, epsilon, delta, rho, zcdp_delta, create_only=False)

    @classmethod
    def create(cls, path: PathLike, *, epsilon: Optional[float] = None, delta: Optional[float] = None,
               rho: Optional[float] = None, zcdp_delta: Optional[float] = None) -> "FileBudget":
        """A new budget file with these caps; :class:`BudgetFileError` if ``path`` exists.

        :param epsilon: the ε cap of the new file
        :param delta: the δ cap of the new file
        :param rho: the ρ cap of a new zCDP file
        :param zcdp_delta: the δ share reserved to convert ρ-zCDP charges to (ε, δ)-DP (default δ/2)
        """
        return cls._open(path, epsilon, delta, rho, zcdp_delta, create_only=True)

    @classmethod
    def _open(cls, path, epsilon, delta, rho, zcdp_delta, *, create_only: bool) -> "FileBudget":
        if fcntl is None:
            raise BudgetFileError(
                "budget files need fcntl.flock to lock out concurrent writers, which this platform "
                "lacks (Linux and macOS have it); use an in-memory dpsketch.Budget in one process instead"
            )
        obj = cls.__new__(cls)
        # One ledger has one name: every path reaching it (symbolic links, relative paths) is
        # resolved here, so the lock and the atomic replace act on the file itself. Replacing a
        # link would fork the ledger (docs/privacy.md §Budget files).
        obj._path = os.path.realpath(os.fspath(path))
        obj._held = False
        obj._lock = threading.RLock()
        given = {"epsilon": epsilon, "delta": delta, "rho": rho, "zcdp_delta": zcdp_delta}
        with obj._flock():
            if not os.path.exists(obj._path):
                if epsilon is None and rho is None:
                    raise BudgetFileError(
                        f"no budget file at {obj._path!r}; create it by giving its caps "
                        "(Budget.open(path, epsilon=..., delta=...) or rho=...; on the command line "
                        "'dpsketch budget new FILE --epsilon E --delta D')"
                    )
                Budget.__init__(obj, epsilon, 0.0 if delta is None else delta, rho=rho, zcdp_delta=zcdp_delta)
                obj._entries = []
                obj._write()
                return obj
            if create_only:
                raise BudgetFileError(
                    f"{obj._path!r} exists already; it keeps the spends of earlier runs, so it is not "
                    "overwritten (inspect it with 'dpsketch budget show', or choose another path)"
                )
            obj._load()
        obj._match_caps(given)
        return obj

    def _match_caps(self, given: dict) -> None:
        stored = {"epsilon": self.epsilon, "delta": self.delta, "rho": self.rho, "zcdp_delta": self.zcdp_delta}
        for name, value in given.items():
            if value is None:
                continue
            if stored[name] is None or Fraction(float(value)) != Fraction(stored[name]):
                raise BudgetFileError(
                    f"{self._path!r} has the caps {self._describe_caps()}, not {name}={value!r}; open it without "
                    "caps to use it as it is, or give a new path for a budget with other caps"
                )

    # -- locking and the file -----------------------------------------------------------------
    @contextlib.contextmanager
    def _flock(self) -> Iterator[None]:
        """Exclusive lock on the sidecar FILE.lock (never deleted: removing it would let two
        writers lock two different files). Each lock opens its own descriptor, so forked children
        and other threads wait for it like other processes."""
        try:
            fd = os.open(self._path + ".lock", os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise BudgetFileError(f"cannot lock the budget file {self._path!r}: {exc.strerror}; "
                                  "its folder must exist and be writable") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    @contextlib.contextmanager
    def _charge_scope(self) -> Iterator[None]:
        with self._lock:
            if self._held:
                raise StateError(f"a charge of the budget file {self._path!r} is already in progress in "
                                   "this thread; charge one release at a time")
            with self._flock():
                self._held = True
                try:
                    self._load()  # spends by other processes since the last read count
                    yield
                finally:
                    self._held = False

    def _commit(self, mechanism, new, eps, dlt, r, parts=(), routes=(), charged=None) -> None:
        entries = self._entries + [(mechanism, eps, dlt, r, tuple(parts), tuple(routes))]
        self._write(entries, new)  # the file first: a failed write records nothing
        self._entries = entries
        super()._commit(mechanism, new, eps, dlt, r, parts, routes, charged)

    def _content(self, entries, sums) -> dict:
        def cap(v):
            return None if v is None else _fraction_text(Fraction(v))

        return {
            "format": FORMAT,
            "version": VERSION,
            "cap": {"epsilon": cap(self._epsilon_cap), "delta": cap(self._delta_cap),
                    "zcdp_delta": cap(self._zcdp_delta), "rho": cap(self._rho_cap)},
            "spent": {name: _fraction_text(v) for name, v in zip(("epsilon", "delta", "rho"), sums)},
            "ledger": [{"mechanism": m, "epsilon": _fraction_text(e), "delta": _fraction_text(d),
                        "rho": _fraction_text(r), "profile": profile_to_json(parts, routes, _fraction_text)}
                       for m, e, d, r, parts, routes in entries],
        }

    def _write(self, entries=None, sums=None) -> None:
        """Replace the file atomically: temporary file in the same folder, fsync, rename, fsync
        of the folder (so the rename itself survives a crash)."""
        if entries is None:
            entries, sums = self._entries, (self._eps_sum, self._delta_sum, self._rho_sum)
        content = self._content(entries, sums)
        content["sha256"] = _digest(content)
        text = json.dumps(content, indent=1, ensure_ascii=True).encode("ascii") + b"\n"
        folder, name = os.path.split(self._path)
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(8)}.tmp")
        try:
            mode = stat.S_IMODE(os.stat(self._path).st_mode)
        except FileNotFoundError:
            mode = None
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            try:
                if mode is not None:
                    os.fchmod(fd, mode)  # keep the permissions the file was given
                view = memoryview(text)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self._path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    # -- reading and checking -----------------------------------------------------------------
    def _bad(self, what: str) -> BudgetFileError:
        return BudgetFileError(
            f"the budget file {self._path!r} {what}. dpsketch neither repairs nor resets a budget file "
            "(a new one would forget the spends recorded here): restore it from a backup, or create a "
            "new file whose cap leaves out everything this one had spent"
        )

    def _load(self) -> None:
        """Read, verify and adopt the file's state (caps, running sums, entries)."""
        try:
            with open(self._path, "rb") as fh:
                links = os.fstat(fh.fileno()).st_nlink
                raw = fh.read()
        except FileNotFoundError:
            raise BudgetFileError(f"the budget file {self._path!r} is gone; restore it from a backup "
                                  "(its spends are lost otherwise)") from None
        if links != 1:
            # A charge replaces the file by a new one, which would leave every other hard link
            # holding a private copy of the ledger with the full cap (docs/privacy.md §Budget files).
            raise BudgetFileError(
                f"the budget file {self._path!r} has {links - 1} other hard link(s); a charge would "
                "give each name its own ledger. Remove the other names (or use a symbolic link, "
                "which dpsketch resolves) and open the file by one name"
            )
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self._bad("is not valid JSON (truncated or damaged)") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise self._bad(f"is not a dpsketch budget file (no \"format\": \"{FORMAT}\")")
        if type(doc.get("version")) is not int or doc["version"] not in READABLE:
            raise self._bad(f"has format version {doc.get('version')!r}; this dpsketch reads version {VERSION} "
                            "(a newer dpsketch may have written it: use that one)")
        if set(doc) != _KEYS:
            raise self._bad(f"has the fields {sorted(doc)}, not {sorted(_KEYS)}")
        stored = doc.pop("sha256")
        if not isinstance(stored, str) or stored != _digest(doc):
            raise self._bad("fails its integrity check (the SHA-256 of its content does not match): "
                            "it was edited or damaged")
        cap, spent, ledger = doc["cap"], doc["spent"], doc["ledger"]
        if not (isinstance(cap, dict) and set(cap) == _CAP_KEYS and isinstance(spent, dict)
                and set(spent) == _SUM_KEYS and isinstance(ledger, list)):
            raise self._bad("has a malformed cap, spent or ledger field")
        caps = {name: None if cap[name] is None else self._exact(cap[name], f"cap {name}") for name in _CAP_KEYS}
        for name, v in caps.items():
            if v is not None and Fraction(float(v)) != v:
                raise self._bad(f"has a cap {name} that is not a double")
        try:
            fresh = Budget(None if caps["epsilon"] is None else float(caps["epsilon"]),
                           0.0 if caps["delta"] is None else float(caps["delta"]),
                           rho=None if caps["rho"] is None else float(caps["rho"]),
                           zcdp_delta=None if caps["zcdp_delta"] is None else float(caps["zcdp_delta"]))
        except (TypeError, ValueError) as exc:
            raise self._bad(f"has caps no budget can have ({exc})") from None
        if fresh.zcdp_delta != (None if caps["zcdp_delta"] is None else float(caps["zcdp_delta"])):
            raise self._bad("has a zcdp_delta cap that does not go with its delta cap")
        entries: list[Record] = []
        keys = _ENTRY_KEYS if doc["version"] >= 2 else _ENTRY_KEYS_V1
        for i, entry in enumerate(ledger):
            if not (isinstance(entry, dict) and set(entry) == keys and isinstance(entry["mechanism"], str)):
                raise self._bad(f"has a malformed ledger entry (number {i + 1})")
            e, d, r = (self._exact(entry[n], f"ledger entry {i + 1} {n}") for n in ("epsilon", "delta", "rho"))
            if "profile" in entry:
                try:
                    parts, routes = profile_from_json(entry["profile"], lambda t: self._exact(t, f"ledger entry {i + 1} profile"))
                except (ValueError, TypeError) as exc:
                    if isinstance(exc, BudgetFileError):
                        raise
                    raise self._bad(f"has a malformed profile in ledger entry {i + 1}") from None
                if profile_totals(parts) != (e, d, r):
                    raise self._bad(f"has a ledger entry (number {i + 1}) whose profile does not match its amounts")
            else:  # version 1: the generic profile of (ε, δ, ρ), routed as version 1 composed it
                parts = as_profile(e, d, r, None)
                routes = tuple(("zcdp", part_rho(p)) if fresh.rho is not None or p.law == "zcdp" else ("basic", Fraction(0))
                               for p in parts)
            entries.append((entry["mechanism"], e, d, r, parts, routes))
        # Replay the entries: the stored totals must be the sums of what each part was charged.
        sums = (Fraction(0), Fraction(0), Fraction(0))
        charges = []
        for i, (_, e, d, r, parts, routes) in enumerate(entries):
            E, D, R = sums
            for p, (route, charged) in zip(parts, routes):
                gaussian = p.law in ("discrete_gaussian", "zcdp")
                if fresh.rho is not None:
                    if p.delta > 0:
                        raise self._bad(f"records a delta > 0 spend (entry {i + 1}) in a zCDP budget")
                    if route != "zcdp":
                        raise self._bad(f"records a part composed outside the zCDP total (entry {i + 1}) in a zCDP budget")
                elif gaussian and p.rho > 0 and fresh.zcdp_delta is None:
                    raise self._bad(f"records a rho spend (entry {i + 1}) in a budget without a zCDP delta share")
                if route == "basic":
                    if gaussian:
                        raise self._bad(f"records a zCDP part composed by basic composition (entry {i + 1})")
                    E, D = E + part_epsilon(p), D + p.delta
                    continue
                least = part_rho(p)
                if least is None or charged < least * (1 - Fraction(1, 10**9)) or (gaussian and charged != p.rho):
                    raise self._bad(f"records a part charged less than its zCDP (entry {i + 1})")
                if gaussian:
                    D += p.delta
                elif fresh.rho is not None:
                    E += part_epsilon(p)
                R += charged
            charges.append((float(E - sums[0]), float(D - sums[1]), float(R - sums[2])))
            sums = (E, D, R)
        stored_sums = tuple(self._exact(spent[n], f"spent {n}") for n in ("epsilon", "delta", "rho"))
        if stored_sums != sums:
            raise self._bad("has totals that are not the sums of its ledger entries")
        # exact comparisons only (the zCDP conversion uses floating point and is left to the next charge)
        over = (sums[2] > Fraction(fresh.rho) if fresh.rho is not None
                else sums[0] > Fraction(fresh.epsilon) or sums[1] > Fraction(fresh.delta))
        if over:
            raise self._bad("records spends beyond its cap")
        with self._lock:
            self._epsilon_cap, self._delta_cap = fresh.epsilon, fresh.delta
            self._rho_cap, self._zcdp_delta = fresh.rho, fresh.zcdp_delta
            self._eps_sum, self._delta_sum, self._rho_sum = sums
            self._entries = entries
            self._ledger = [Spend(m, float(e), float(d), float(r), parts, ch)
                            for (m, e, d, r, parts, _), ch in zip(entries, charges)]

    def _exact(self, text: Any, what: str) -> Fraction:
        if isinstance(text, str) and text.startswith("-"):
            raise self._bad(f"has a negative {what}")
        m = _FRACTION.fullmatch(text) if isinstance(text, str) else None
        if m is None:
            raise self._bad(f"has a {what} that is not a \"numerator/denominator\" string")
        x = Fraction(int(m.group(1)), int(m.group(2)))
        if _fraction_text(x) != text:
            raise self._bad(f"has a {what} that is not in lowest terms")
        return x

    def _refresh(self) -> None:
        if not self._held:  # inside a charge the state was just read under the lock
            self._load()

    # -- reading the state (always the file's current one) ------------------------------------
    path = property(lambda self: self._path, doc="The budget file's absolute path.")

    @property
    def ledger(self) -> list[Spend]:
        """Every spend recorded in the file, in order (values as floats; the file holds them exactly)."""
        with self._lock:
            self._refresh()
            return list(self._ledger)

    def spent(self) -> PrivacyTotals:
        with self._lock:
            self._refresh()
            return super().spent()

    def remaining(self) -> PrivacyTotals:
        with self._lock:
            self._refresh()
            return super().remaining()

    def exact_ledger(self) -> list[Entry]:
        """Every spend recorded in the file as (mechanism, ε, δ, ρ), the amounts exact."""
        with self._lock:
            self._refresh()
            return [entry[:4] for entry in self._entries]

    def to_dict(self) -> dict:
        """The file's state as plain floats: ``path``, ``cap`` (epsilon, delta, zcdp_delta, rho),
        ``spent`` and ``remaining`` (as :meth:`spent` and :meth:`remaining`), ``composition`` (the
        profile view: the ε composed by basic composition, the additive δ, the zCDP total and the
        conversion) and ``ledger`` (one dict per charge: mechanism, epsilon, delta, rho, its
        ``profile`` and what it was ``charged`` in each total). The file itself holds the exact values."""
        with self._lock:
            self._refresh()  # one read for all of it: the totals and the entries agree
            spent, left = super().spent(), super().remaining()
            ledger = [{"mechanism": s.mechanism, "epsilon": s.epsilon, "delta": s.delta, "rho": s.rho,
                       "profile": [p.to_dict() for p in s.profile],
                       "charged": None if s.charged is None else dict(zip(("epsilon", "delta", "rho"), s.charged))}
                      for s in self._ledger]
            composed = {"basic_epsilon": float(self._eps_sum) if self._rho_cap is None else 0.0,
                        "additive_delta": float(self._delta_sum), "rho": float(self._rho_sum),
                        "conversion": "CKS20 (Canonne, Kamath, Steinke 2020)"}
        return {"path": self._path,
                "cap": {"epsilon": self.epsilon, "delta": self.delta, "zcdp_delta": self.zcdp_delta, "rho": self.rho},
                "spent": {"epsilon": spent.epsilon, "delta": spent.delta, "rho": spent.rho},
                "remaining": {"epsilon": left.epsilon, "delta": left.delta, "rho": left.rho},
                "composition": composed, "ledger": ledger}

    def _name(self) -> str:
        return f"the budget file {self._path!r}"

    def _describe_caps(self) -> str:
        if self._rho_cap is not None:
            return f"rho={self._rho_cap:g}"
        zd = "" if self._zcdp_delta is None else f", zcdp_delta={self._zcdp_delta:g}"
        return f"epsilon={self._epsilon_cap:g}, delta={self._delta_cap:g}{zd}"

    # -- copies -------------------------------------------------------------------------------
    def __reduce_ex__(self, protocol):
        return (_reopen, (self._path,))

    def __reduce__(self):
        return (_reopen, (self._path,))

    def __repr__(self) -> str:
        return f"FileBudget({self._path!r}; {Budget.__repr__(self)})"


def _reopen(path: str) -> FileBudget:
    return FileBudget.open(path)
