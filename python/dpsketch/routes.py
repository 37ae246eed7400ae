"""Which route answers a request, and which parameters apply to it: the rules every front end
shares (the front doors, :mod:`dpsketch.spark` and the command line only map their own spelling
onto them; docs/routes.md).

A request names the privacy unit (one row or one person), whether it is a series over time, and
the parameters it gives. :func:`heavy_hitters_route` and :func:`quantiles_route` pick the route
from the first two; :func:`refusals` lists the given parameters that do not apply to that route,
each with the reason, so a front end refuses them before any data is read. Parameter names are
the request's (``max_keys_per_unit``, ``top_k``, ...); a reason names other parameters as
``{name}``, which the front end spells its own way (``--max-keys-per-unit`` on the command line).
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional

__all__ = ["HEAVY_HITTER_ROUTES", "QUANTILE_ROUTES", "PARAMETERS", "heavy_hitters_route", "quantiles_route",
           "refusals", "Refusal"]

# route -> what runs (docs/routes.md)
HEAVY_HITTER_ROUTES = {
    "row": "one row: SpaceSaving (DPSS), Misra-Gries (PMG) or a sketch with its envelope, one release",
    "person.exact": "one person: contributions bounded to m keys x c rows, exact counts with noise",
    "person.bounded_memory": "one person: each person's first r rows into a summary, group privacy over r rows",
    "person.weighted": "one person: m keys each, weighted 1/sqrt(keys kept), selected by a Gaussian threshold",
    "windowed": "one release per event-time window (parallel composition)",
    "windowed.cumulative": "releases since the start by a tree of window sketches",
}
QUANTILE_ROUTES = {
    "row.dyadic": "one row: a private dyadic CountSketch, noise drawn before the data",
    "row.in_memory": "one row: the exponential-mechanism methods on the values in memory",
    "person.dyadic": "one person: each person's first r values into a private dyadic CountSketch",
}

_ROW_LEVEL = ("demo", "algorithm", "k", "oversample", "max_stream_length", "length_epsilon", "public_length")
_PERSON_LEVEL = ("max_keys_per_unit", "max_rows_per_key", "max_rows_per_unit", "noise", "selection", "int_ids",
                 "no_counts")
_EXACT_ONLY = ("noise", "top_k", "selection", "no_counts")
_SERIES_ONLY = ("start", "end", "follow", "allowed_lateness", "cumulative", "schedule")

_NEEDS_PERSON = "applies to the user-level release: give {privacy_id} COLUMN"
_NEEDS_SERIES = "applies to windowed releases: give {time_column} NAME and {window} DURATION"

# route -> [(parameters, why)]: a given parameter of the list is refused on that route.
_REFUSED: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "row": [
        (_SERIES_ONLY, _NEEDS_SERIES),
        (_PERSON_LEVEL, _NEEDS_PERSON),
    ],
    "person.exact": [
        (_SERIES_ONLY, _NEEDS_SERIES),
        (("cut", "passes"), "applies to the row-level release (without {privacy_id})"),
        (_ROW_LEVEL, "does not apply with {privacy_id} (the user-level release's threshold follows from "
                     "{epsilon}, {delta}, {max_keys_per_unit} and {max_rows_per_key})"),
        (("no_counts",), "goes with {selection} weighted_gaussian"),
    ],
    "person.weighted": [
        (_SERIES_ONLY, _NEEDS_SERIES),
        (("cut", "passes"), "applies to the row-level release (without {privacy_id})"),
        (_ROW_LEVEL, "does not apply with {privacy_id} (the user-level release's threshold follows from "
                     "{epsilon}, {delta} and {max_keys_per_unit})"),
        (("top_k", "noise"), "does not apply with {selection} weighted_gaussian (discrete Gaussian noise; every "
                             "item whose weighted score passes the threshold is released)"),
    ],
    "person.bounded_memory": [
        (_SERIES_ONLY, _NEEDS_SERIES),
        (("cut", "passes"), "applies to the row-level release (without {privacy_id})"),
        (("demo", "max_stream_length", "length_epsilon", "public_length", *_EXACT_ONLY),
         "does not apply to the bounded-memory user-level route (stdin or {max_rows_per_unit})"),
    ],
    "windowed": [
        (("demo", "max_stream_length", "public_length", "top_k"), "does not apply to windowed releases ({window})"),
        (("schedule",), "applies with {cumulative}"),
    ],
    "windowed.cumulative": [
        (("demo", "max_stream_length", "public_length", "top_k"), "does not apply to windowed releases ({window})"),
        (("privacy_id",), "is not available with {cumulative}: the cumulative tree takes one row as the privacy unit"),
        (_PERSON_LEVEL, _NEEDS_PERSON),
        (("follow", "allowed_lateness", "length_epsilon", "cut", "passes"),
         "does not apply with {cumulative} (every window closes at the end of the input; the noisy length since "
         "start comes from the published nodes)"),
    ],
    "row.dyadic": [(("max_rows_per_unit", "int_ids"), _NEEDS_PERSON)],
    "row.in_memory": [(("max_rows_per_unit", "int_ids"), _NEEDS_PERSON)],
    "person.dyadic": [
        (("noise_allocation",), "does not apply with {privacy_id} (the user-level release calibrates one joint "
                                "noise level for a unit of {max_rows_per_unit} rows)"),
    ],
}
# A person in a windowed series keeps their first r rows over the whole series: the exact route's
# options do not apply there; without a person, the person-level options do not.
_WINDOWED_PERSON = [(_EXACT_ONLY, "does not apply to windowed releases ({window})")]
_WINDOWED_ROW = [(_PERSON_LEVEL, _NEEDS_PERSON)]


def _parameters() -> frozenset:
    names = {p for rules in _REFUSED.values() for params, _ in rules for p in params}
    names.update(p for params, _ in (*_WINDOWED_PERSON, *_WINDOWED_ROW) for p in params)
    return frozenset(names)


PARAMETERS = _parameters()  # every parameter a rule reads


class Refusal:
    """A given parameter that does not apply to the route: ``name`` and ``why`` (with the other
    parameters it names spelled by ``spell``)."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str) -> None:
        self.name, self.why = name, why

    def __repr__(self) -> str:
        return f"Refusal({self.name!r}, {self.why!r})"


def heavy_hitters_route(*, person: bool, series: bool, cumulative: bool = False, bounded_rows: bool = False,
                        one_pass_input: bool = False, selection: Optional[str] = None) -> str:
    """The route of a heavy-hitter request: a series over time (``series``; ``cumulative`` for
    releases since the start) whatever the unit; a person with a row bound (``bounded_rows``) or on
    an input that can be read once (``one_pass_input``: stdin) in bounded memory; a person with
    ``selection='weighted_gaussian'`` by the weighted selection; a person otherwise by the exact
    route; one row by the row-level release."""
    if series:
        return "windowed.cumulative" if cumulative else "windowed"
    if person:
        if bounded_rows or one_pass_input:
            return "person.bounded_memory"
        return "person.weighted" if selection == "weighted_gaussian" else "person.exact"
    return "row"


def quantiles_route(*, person: bool, method: str) -> str:
    """The route of a quantile request: a person by the dyadic sketch; one row by the dyadic sketch
    (``method='dyadic'``) or by the in-memory methods."""
    if person:
        return "person.dyadic"
    return "row.dyadic" if method == "dyadic" else "row.in_memory"


def refusals(route: str, given: Iterable[str], *, person: bool = False,
             spell: Callable[[str], str] = str) -> list[Refusal]:
    """The parameters of ``given`` that do not apply to ``route`` (in the order of the rules),
    each with its reason, the parameters a reason names spelled by ``spell``. ``person``: whether
    a windowed series protects a person."""
    if route not in _REFUSED:
        from .errors import ParameterError

        raise ParameterError(f"route must be one of {sorted(_REFUSED)}, got {route!r}")
    rules = list(_REFUSED[route])
    if route == "windowed":
        rules += _WINDOWED_PERSON if person else _WINDOWED_ROW
    names = set(given)
    out = []
    for params, why in rules:
        for p in params:
            if p in names:
                out.append(Refusal(p, why.format_map(_Spelled(spell))))
    return out


class _Spelled(dict):
    def __init__(self, spell: Callable[[str], str]) -> None:
        super().__init__()
        self._spell = spell

    def __missing__(self, key: str) -> str:
        return self._spell(key)
