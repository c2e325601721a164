"""Values that cross from the candidate's thread to the harness as JSON text (inside the
sandbox; loaded by ``harness.py``): :class:`Encoder` (what the candidate returned), tuples
marked so the grading rule still sees them (:func:`mark_tuples`, :data:`decode_value`).
"""

from __future__ import annotations

import json
import operator
from typing import Any


class Encoder(json.JSONEncoder):
    """Turns what the candidate returned into JSON (tuples become lists, as before)."""

    def default(self, o: Any) -> Any:
        if hasattr(o, "__index__"):
            return operator.index(o)
        if hasattr(o, "__float__") and not isinstance(o, (str, bytes)):
            return float(o)
        if isinstance(o, (set, frozenset)):
            raise TypeError("a set is not a JSON value")
        return super().default(o)


encode_value = Encoder(allow_nan=True).encode



_TUPLE = "\0vibecheck-tuple"


def mark_tuples(value: Any) -> Any:
    """``value`` with every tuple turned into ``{_TUPLE: [...]}``, so the grading rule sees
    the tuples the candidate returned (JSON itself has none). Lists and dicts are copied."""
    if isinstance(value, tuple):
        return {_TUPLE: [mark_tuples(v) for v in value]}
    if isinstance(value, list):
        return [mark_tuples(v) for v in value]
    if isinstance(value, dict):
        return {k: mark_tuples(v) for k, v in value.items()}
    return value


def _tuple_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _TUPLE in obj and isinstance(obj[_TUPLE], list):
        return tuple(obj[_TUPLE])
    return obj


decode_value = json.JSONDecoder(object_hook=_tuple_hook).decode

