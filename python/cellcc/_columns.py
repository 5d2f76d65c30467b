"""Result tables as the core returns them (columns of plain Python values), written to
CSV, JSON and Parquet without pandas or pyarrow.

:class:`cellcc.api.Result` keeps each table as a :class:`Table` and builds its pandas
DataFrame only when asked for it, so ``cellcc run`` never imports pandas or pyarrow
(their imports cost more CPU time than simulating a short trace). The files written
from a :class:`Table` read back as the DataFrame pandas would have written: the same
CSV bytes, the same JSON, and a Parquet file (encoded by the core,
crates/cellcc-py/src/parquet.rs) that ``pandas.read_parquet`` returns as the same
DataFrame; read with pyarrow, its strings are Arrow ``string`` where pyarrow gives a
pandas 3 frame's strings as ``large_string`` (tests/python/test_result_tables.py).

That holds because a column is written without pandas only when its dtype in pandas is
certain: all ints (int64), numbers with at least one float or missing value (float64),
all bools (bool), strings with or without missing values (str in pandas 3, object in
pandas 2), or nothing but missing values (object). A table with any other column or
with no rows, or any table when the core is not built, is written through pandas and
pyarrow as before.
"""

from __future__ import annotations

import csv
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

__all__ = ["LEADING_COLUMNS", "LazyFrame", "Table", "format_cell", "pandas", "records"]

#: Columns moved to the front of the summary and time series (the rest keep the core's
#: order).
LEADING_COLUMNS = ("flow", "scheme", "t_s")

_INT64 = (-(2**63), 2**63 - 1)


def column_kind(values: Sequence[Any]) -> str | None:
    """The pandas dtype a column of these Python values gets (see the module docstring),
    or None when it is not one of the kinds written here."""
    types = set(map(type, values))
    if not types - {type(None)}:
        return "null"
    if types == {int}:
        return "int64" if _INT64[0] <= min(values) and max(values) <= _INT64[1] else None
    if types <= {int, float, type(None)}:
        ints = [v for v in values if type(v) is int]
        if ints and not (_INT64[0] <= min(ints) and max(ints) <= _INT64[1]):
            return None
        return "float64"
    if types == {bool}:
        return "bool"
    if types <= {str, type(None)}:
        return "str"
    return None


def _leading(names: list[str]) -> list[str]:
    first = [c for c in LEADING_COLUMNS if c in names]
    return first + [c for c in names if c not in first]


class Table:
    """One result table: the core's rows (list of dicts) or columns (dict of lists).

    :meth:`frame` builds the DataFrame the API returns, exactly as
    ``pd.DataFrame.from_records`` or ``pd.DataFrame`` (then the leading columns moved to
    the front, if asked) does. :meth:`to_csv`, :meth:`parquet_table` and
    :meth:`records` write it without pandas when every column has a known kind
    (:attr:`lean`); otherwise they go through :meth:`frame`.
    """

    __slots__ = ("_columns", "_how", "_kinds", "_leading", "_raw")

    def __init__(self, raw: Any, *, how: str, leading: bool = False) -> None:
        self._raw = raw
        self._how = how  # "records" or "columns"
        self._leading = leading
        self._columns: dict[str, list[Any]] | None = None
        self._kinds: list[str | None] | None = None

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], *, leading: bool = False) -> Table:
        return cls(list(records), how="records", leading=leading)

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any], *, leading: bool = False) -> Table:
        return cls(dict(columns), how="columns", leading=leading)

    def __getstate__(self) -> tuple[Any, str, bool]:
        return self._raw, self._how, self._leading

    def __setstate__(self, state: tuple[Any, str, bool]) -> None:
        self.__init__(state[0], how=state[1], leading=state[2])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"Table({len(self)} rows, {len(self.columns)} columns)"

    # -- the DataFrame --------------------------------------------------------------

    def frame(self) -> Any:
        """The pandas DataFrame of this table (as the API has always built it)."""
        import pandas as pd

        if self._how == "records":
            frame = pd.DataFrame.from_records(self._raw)
        else:
            frame = pd.DataFrame(self._raw)
        if self._leading:
            frame = frame[_leading(list(frame.columns))]
        return frame

    # -- the columns ----------------------------------------------------------------

    @property
    def columns(self) -> dict[str, list[Any]]:
        """Column name -> values, in the DataFrame's column order. Rows missing a key
        have None there."""
        if self._columns is None:
            if self._how == "records":
                names: dict[str, None] = {}
                for row in self._raw:
                    names.update(dict.fromkeys(row))
                columns = {n: [row.get(n) for row in self._raw] for n in names}
            else:
                columns = {n: list(v) for n, v in self._raw.items()}
            if self._leading:
                columns = {n: columns[n] for n in _leading(list(columns))}
            self._columns = columns
        return self._columns

    def __len__(self) -> int:
        if self._how == "records":
            return len(self._raw)
        return max((len(v) for v in self._raw.values()), default=0)

    @property
    def empty(self) -> bool:
        """As ``DataFrame.empty``: no rows or no columns."""
        return len(self) == 0 or not self.columns

    @property
    def kinds(self) -> list[str | None]:
        if self._kinds is None:
            self._kinds = [column_kind(v) for v in self.columns.values()]
        return self._kinds

    @property
    def lean(self) -> bool:
        """Whether this table is written without pandas (see the module docstring)."""
        columns = self.columns
        lengths = {len(v) for v in columns.values()}
        return (
            bool(columns)
            and lengths != {0}
            and len(lengths) == 1
            and all(isinstance(n, str) for n in columns)
            and None not in self.kinds
        )

    def records(self) -> list[dict[str, Any]]:
        """Rows as ``DataFrame.to_dict(orient="records")`` gives them: a float64 column's
        ints are floats and its missing values NaN; a missing string is None (pandas 3
        has NaN there; JSON and the terminal tables show both alike)."""
        if not self.lean:
            return self.frame().to_dict(orient="records")
        nan = float("nan")
        converted = []
        for (name, values), kind in zip(self.columns.items(), self.kinds, strict=True):
            if kind == "float64":
                values = [nan if v is None else float(v) for v in values]
            converted.append((name, values))
        names = [name for name, _ in converted]
        rows = zip(*(values for _, values in converted), strict=True)
        return [dict(zip(names, row, strict=True)) for row in rows]

    # -- writing --------------------------------------------------------------------

    def to_csv(self, handle: Any, *, index: bool = False) -> None:
        """``DataFrame.to_csv(handle, index=False)``, which :mod:`cellcc.results` calls."""
        if index:
            raise ValueError("a Table has no index")
        if not self.lean:
            self.frame().to_csv(handle, index=False)
            return
        cells = [
            _csv_cells(values, kind)
            for values, kind in zip(self.columns.values(), self.kinds, strict=True)
        ]
        # pandas' writer: the csv module, minimal quoting, the platform's line ending.
        writer = csv.writer(handle, lineterminator=os.linesep, quoting=csv.QUOTE_MINIMAL)
        writer.writerow(self.columns)
        writer.writerows(zip(*cells, strict=True))

    def encode_parquet(self, metadata: Mapping[str, str]) -> bytes | None:
        """This table as the bytes of a Parquet file with key-value ``metadata``, encoded
        by the core without pandas or pyarrow; None when the table is not :attr:`lean`
        or the core is not built (then the caller writes :meth:`frame` with pyarrow)."""
        if not self.lean:
            return None
        from cellcc import _native

        columns = [
            (name, kind, values)
            for (name, values), kind in zip(self.columns.items(), self.kinds, strict=True)
        ]
        return _native.encode_parquet(columns, metadata)  # type: ignore[arg-type]


def _csv_cells(values: list[Any], kind: str | None) -> list[Any]:
    """A column's CSV fields as pandas writes them (``na_rep=""``, floats by repr)."""
    if kind == "float64":
        return ["" if v is None or v != v else repr(float(v)) for v in values]
    if kind in ("str", "null"):
        return ["" if v is None else v for v in values]
    return [str(v) for v in values]  # int64, bool


class LazyFrame:
    """A table attribute (of :class:`cellcc.api.Result`) that holds a :class:`Table` or
    a DataFrame and reads as a DataFrame, built from the table on first read."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self._slot]
        if isinstance(value, Table):
            value = instance.__dict__[self._slot] = value.frame()
        return value

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self._slot] = value

    @staticmethod
    def held(instance: Any, name: str) -> Any:
        """What attribute ``name`` of ``instance`` holds: a Table, a DataFrame or None."""
        return instance.__dict__[f"_{name}"]


def records(table: Any) -> list[dict[str, Any]]:
    """The rows of a :class:`Table` or a DataFrame as a list of dicts."""
    if isinstance(table, Table):
        return table.records()
    return table.to_dict(orient="records")


def format_cell(value: Any) -> str:
    """A table cell (terminal or report): 3 significant digits, "—" for a missing value
    (None, NaN or pandas' NA, checked without importing pandas)."""
    loaded = sys.modules.get("pandas")
    if value is None or (loaded is not None and value is loaded.NA):
        return "—"
    if isinstance(value, float):
        if value != value:  # NaN
            return "—"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


class _LazyModule:
    """A module imported on first attribute access."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        import importlib

        return getattr(importlib.import_module(self._name), attribute)


if TYPE_CHECKING:
    import pandas
else:
    #: pandas for modules that use it only in some functions (``pandas.DataFrame``
    #: imports it on first use).
    pandas = _LazyModule("pandas")
