"""The run limits ``--vibe-max-errors`` and ``--vibe-budget`` as values: parsed once, where the
options are resolved (:mod:`pytest_vibecheck.config.settings`), and enforced by the run's guard
(:class:`pytest_vibecheck.plugin.run.guard.RunGuard`). Also the input bounds of verification
outside a run (``vibecheck verify``, the gate, the pre-commit check): :data:`MAX_INPUT_BYTES`
per file and :data:`SHOWN_VIOLATIONS` printed per file."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pytest_vibecheck.errors import ParameterError

__all__ = [
    "DEFAULT_MAX_ERRORS", "MAX_INPUT_BYTES", "SHOWN_VIOLATIONS", "Budget", "ErrorBound",
    "parse_budget", "parse_max_errors", "too_large",
]  # fmt: skip

#: The largest file (bytes) ``vibecheck verify`` and the gate verify unless told otherwise: 2 MB,
#: far above hand-written code (the largest module of this package is under 50 kB) and about a
#: second of Ruff; a 60 MB file took 29 s and 4.7 GB of memory.
MAX_INPUT_BYTES = 2_000_000
#: Violations printed per file (the rest counted in one line; JSON outputs keep them all).
SHOWN_VIOLATIONS = 50


def too_large(name: str, size: int, limit: int, raise_with: str) -> str | None:
    """The one-line refusal of input ``name`` of ``size`` bytes over ``limit``, naming the cap
    and ``raise_with`` (how to raise it); None when it fits."""
    if size <= limit:
        return None
    return f"{name} is {size:,} bytes, over the limit of {limit:,} bytes; {raise_with}"

#: Default ``--vibe-max-errors``: more than 10% of the run's items, and at least 10 errors.
DEFAULT_MAX_ERRORS = "10%"
_DEFAULT_FLOOR = 10


@dataclass(frozen=True)
class ErrorBound:
    """``--vibe-max-errors``: ``count`` (items) or ``fraction`` (of the run's items, in (0, 1])."""

    text: str
    count: int | None = None
    fraction: float | None = None
    floor: int = 0

    def limit(self, items: int) -> int:
        """The most infrastructure errors allowed in a run of ``items`` items."""
        if self.count is not None:
            return self.count
        return max(self.floor, math.ceil((self.fraction or 0.0) * items))


def parse_max_errors(text: str | None) -> ErrorBound:
    """``"N"`` (an int >= 0) or ``"P%"`` (0 < P <= 100) as an :class:`ErrorBound`; None gives the
    default (10% of the items, at least 10). Raises ParameterError for anything else."""
    if text is None:
        return ErrorBound(DEFAULT_MAX_ERRORS, fraction=0.10, floor=_DEFAULT_FLOOR)
    raw = str(text).strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", raw)
    if m and 0 < float(m.group(1)) <= 100:
        return ErrorBound(raw, fraction=float(m.group(1)) / 100)
    if raw.isdigit():
        return ErrorBound(raw, count=int(raw))
    raise ParameterError(
        f"{raw!r} is not valid; expected a number of items (e.g. 20) or a percentage of the "
        "run's items (e.g. 5%)"
    )


@dataclass(frozen=True)
class Budget:
    """``--vibe-budget``: ``tokens`` (input + output tokens sent and received) and/or ``usd``
    (US dollars at list prices). None: no limit of that kind."""

    text: str
    tokens: int | None = None
    usd: float | None = None


_SUFFIX = {"": 1, "k": 1_000, "m": 1_000_000}


def parse_budget(text: str) -> Budget:
    """``"200000"``, ``"200k"``, ``"2M"`` (tokens), ``"$5"`` or ``"5usd"`` (dollars), or both
    comma-separated (``"2M,$5"``). Raises ParameterError for anything else."""
    tokens: int | None = None
    usd: float | None = None
    for part in (p.strip().lower() for p in str(text).split(",")):
        dollars = re.fullmatch(r"\$\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*(?:usd|\$)", part)
        count = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([km]?)(?:\s*tokens?)?", part)
        if dollars:
            usd = float(dollars.group(1) or dollars.group(2))
        elif count:
            tokens = int(float(count.group(1)) * _SUFFIX[count.group(2)])
        else:
            raise ParameterError(
                f"{text!r} is not valid; expected tokens (200000, 200k, 2M), dollars ($5, 5usd), "
                "or both comma-separated (2M,$5)"
            )
    if (tokens is not None and tokens <= 0) or (usd is not None and usd <= 0):
        raise ParameterError(f"{text!r} is not valid; a budget must be above 0")
    return Budget(str(text).strip(), tokens=tokens, usd=usd)


