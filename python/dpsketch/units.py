"""The privacy unit as a value: what one neighbouring data set adds or removes (docs/privacy.md
§Model and §Privacy unit). Every front door takes it as ``unit=`` and every release reports it
(``metadata["unit"]``).

* :class:`Row` -- one row (one stream element). The stream length is private unless
  ``public_length=True`` (the papers' model: the exact n is a public parameter and neighbours
  replace one element).
* :class:`Person` -- all rows of one privacy id, with the contribution bounds that make one
  person's influence finite: ``max_keys`` (at most m distinct keys per person, ``max_rows_per_key``
  rows each; the exact route, in memory) or ``max_rows`` (the person's first r rows; the
  bounded-memory route, and the only bound quantiles take).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from ._validation import check
from .errors import ParameterError, ParameterTypeError

__all__ = ["Row", "Person", "Unit", "as_unit"]


@dataclass(frozen=True)
class Row:
    """The privacy unit is one row. ``public_length=True`` treats the exact number of rows as
    public (neighbours then replace a row instead of adding or removing one).

    :ivar public_length: treat the exact number of rows as public (neighbours replace a row)
    """

    public_length: bool = False

    def __post_init__(self) -> None:
        check("public_length", self.public_length)

    def describe(self) -> dict:
        """The unit as the release metadata states it."""
        return {"kind": "row", "public_length": self.public_length,
                "neighbours": "replace one row" if self.public_length else "add or remove one row"}

    def __str__(self) -> str:
        return "one row" + (" (the number of rows is public)" if self.public_length else "")


@dataclass(frozen=True, eq=False)
class Person:
    """The privacy unit is one person: every row that shares a privacy id.

    ``id``: the column name of the privacy ids (for a DataFrame, an Arrow table or a CSV/Parquet
    file) or an array aligned with the data. Give the contribution bound the route needs:
    ``max_keys`` (m: at most m distinct keys per person are kept, at most ``max_rows_per_key`` rows
    of each -- heavy hitters, exact route) or ``max_rows`` (r: a person's first r rows -- heavy
    hitters in bounded memory, and quantiles). Which rows are kept is decided per person and never
    by other persons' rows (docs/privacy.md §Privacy unit)."""

    id: Any
    max_keys: Optional[int] = None
    max_rows_per_key: int = 1
    max_rows: Optional[int] = None

    def __post_init__(self) -> None:
        if self.id is None or isinstance(self.id, (bool, int, float, bytes)):
            raise ParameterTypeError("Person(id=...) takes the column name of the privacy ids or an array of them, "
                                     f"got {type(self.id).__name__}")
        if isinstance(self.id, str) and not self.id:
            raise ParameterError("Person(id=...) needs a non-empty column name")
        if self.max_keys is not None:
            check("max_keys", self.max_keys)
        check("max_rows_per_key", self.max_rows_per_key)
        if self.max_rows is not None:
            check("max_rows", self.max_rows)
        if self.max_keys is not None and self.max_rows is not None:
            raise ParameterError("give Person one contribution bound: max_keys (the exact route) or max_rows "
                                 "(the bounded-memory route), not both")
        if self.max_keys is None and self.max_rows is None:
            raise ParameterError("Person needs a contribution bound: max_keys=m (at most m distinct keys per "
                                 "person) or max_rows=r (a person's first r rows); without one a person's "
                                 "influence is unbounded")

    @property
    def id_column(self) -> Optional[str]:
        return self.id if isinstance(self.id, str) else None

    def describe(self) -> dict:
        """The unit as the release metadata states it (an id array is not part of it)."""
        out: dict = {"kind": "person", "id": self.id_column if self.id_column is not None else "<array>",
                     "neighbours": "add or remove every row of one privacy id"}
        if self.max_keys is not None:
            out.update(max_keys=self.max_keys, max_rows_per_key=self.max_rows_per_key)
        else:
            out.update(max_rows=self.max_rows)
        return out

    def __str__(self) -> str:
        who = f"one person (all rows with the same {self.id_column!r})" if self.id_column else "one person"
        if self.max_keys is not None:
            return f"{who}, at most {self.max_keys} keys x {self.max_rows_per_key} rows each"
        return f"{who}, at most their first {self.max_rows} rows"

    def __repr__(self) -> str:
        ident = repr(self.id_column) if self.id_column is not None else "<array>"
        bound = (f"max_keys={self.max_keys}, max_rows_per_key={self.max_rows_per_key}" if self.max_keys is not None
                 else f"max_rows={self.max_rows}")
        return f"Person(id={ident}, {bound})"


Unit = Union[Row, Person]


def as_unit(unit: Any, public_length: Optional[bool] = None) -> Unit:
    """``unit=`` of a front door, with the older ``public_length=`` keyword folded in."""
    if unit is None:
        unit = Row(public_length=bool(public_length)) if public_length is not None else Row()
    elif not isinstance(unit, (Row, Person)):
        raise ParameterTypeError("unit must be dpsketch.Row(...) or dpsketch.Person(...), "
                                 f"got {type(unit).__name__}")
    elif public_length is not None:
        if isinstance(unit, Person) or bool(public_length) != unit.public_length:
            raise ParameterError("public_length is part of the unit: pass unit=dpsketch.Row(public_length=True) "
                                 "alone")
    return unit
