"""Reading JSONL data files (``.jsonl`` or gzip ``.jsonl.gz``): one JSON object per line.

Used by the source loaders (:mod:`pytest_vibecheck.suites.loaders`) and the suite store
(:mod:`pytest_vibecheck.suites.store`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError

__all__ = ["read_jsonl"]


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of a JSONL(.gz) file.

    Line numbers start at 1. Raises :class:`DataFileError` when the file cannot be read,
    is not valid gzip, a line is not JSON, or a line is not a JSON object.
    """
    p = Path(path)
    try:
        if p.name.endswith(".gz"):
            with gzip.open(p, "rt", encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        else:
            lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataFileError(p, "file does not exist") from None
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise DataFileError(p, f"cannot read: {exc}") from None
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFileError(
                p, f"not valid JSON: {exc.msg} (column {exc.colno})", line=number
            ) from None
        if not isinstance(obj, dict):
            raise DataFileError(p, f"expected a JSON object, got {type(obj).__name__}", line=number)
        yield number, obj
