"""A small table model shared by the analyses and the report writers.

A :class:`Table` holds raw values (rates as fractions in [0, 1], never percentages); the
writers format them: Markdown and HTML show percentages with their interval, CSV keeps the
fractions and splits an interval into ``<key>_low`` and ``<key>_high`` columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

ColumnKind = Literal["text", "int", "pct", "pct_ci", "float", "float_ci", "p"]

__all__ = ["Column", "ColumnKind", "Table", "format_cell"]


@dataclass(frozen=True)
class Column:
    """``key`` (CSV header), ``label`` (display header) and ``kind``.

    Kinds: ``text``; ``int``; ``pct`` (a fraction shown as a percentage); ``pct_ci`` (a
    ``(value, low, high)`` tuple of fractions, or ``None``); ``float``; ``float_ci`` (a
    ``(value, low, high)`` tuple); ``p`` (a p-value).
    """

    key: str
    label: str
    kind: ColumnKind = "text"


@dataclass
class Table:
    """A titled table: ``rows`` are lists aligned with ``columns``; ``note`` explains it."""

    name: str
    title: str
    columns: list[Column]
    rows: list[list[Any]] = field(default_factory=list)
    note: str = ""

    def csv_header(self) -> list[str]:
        out: list[str] = []
        for c in self.columns:
            out.append(c.key)
            if c.kind in ("pct_ci", "float_ci"):
                out += [f"{c.key}_low", f"{c.key}_high"]
        return out

    def csv_rows(self) -> list[list[Any]]:
        out: list[list[Any]] = []
        for row in self.rows:
            cells: list[Any] = []
            for c, v in zip(self.columns, row, strict=True):
                if c.kind in ("pct_ci", "float_ci"):
                    val, lo, hi = v if v is not None else (None, None, None)
                    cells += [_raw(val), _raw(lo), _raw(hi)]
                else:
                    cells.append(_raw(v))
            out.append(cells)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "note": self.note,
            "columns": self.csv_header(),
            "rows": self.csv_rows(),
        }


def _raw(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _pct(x: float | None, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{100 * x:.{digits}f}%"


def format_cell(col: Column, v: Any) -> str:
    """The display text of one cell (percentages with one decimal, intervals in brackets)."""
    if v is None:
        return "-"
    if col.kind == "pct":
        return _pct(v)
    if col.kind == "pct_ci":
        val, lo, hi = v
        text = _pct(val)
        if lo is not None and hi is not None and val is not None:
            text += f" [{100 * lo:.1f}, {100 * hi:.1f}]"
        return text
    if col.kind == "float":
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return "-" if math.isnan(v) else f"{v:.3f}"
    if col.kind == "float_ci":
        val, lo, hi = v
        if val is None or not math.isfinite(val):
            return "-"
        text = f"{val:.3f}"
        if lo is not None and hi is not None:
            text += f" [{lo:.3f}, {hi:.3f}]"
        return text
    if col.kind == "p":
        return f"{v:.2g}" if v >= 1e-4 else f"{v:.1e}"
    return str(v)
