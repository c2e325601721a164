"""Error types shared by every part of pytest-vibecheck.

Every error a user can trigger with bad input derives from :class:`VibecheckError`,
so the CLI and the plugin can print one clear line (never a traceback) for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_vibecheck.types import ErrorKind


def _restore(cls: type[BaseException], args: tuple[object, ...]) -> BaseException:
    """Rebuild an exception without calling its ``__init__`` (pickle; see :class:`Picklable`)."""
    exc = cls.__new__(cls)
    exc.args = args
    return exc


class Picklable(BaseException):
    """Mixin: the exception pickles whatever its ``__init__`` signature.

    Python's default pickles an exception as ``cls(*self.args)``, which fails (or builds the
    wrong message) for an ``__init__`` that takes other arguments than the message, such as
    :class:`UnknownIdError` or :class:`DataFileError`. pytest-xdist pickles exceptions between
    processes, so every exception of this package derives from this: it is rebuilt from its
    ``args`` and its attributes.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args), self.__dict__ or None)


class VibecheckError(Picklable, Exception):
    """Base class of all user-facing errors; the message says what to do."""


class UnknownIdError(VibecheckError, KeyError):
    """An id (instruction, suite, backend, ...) is not in its registry.

    The message lists close matches (``difflib``) and the valid ids (the first 40); when there
    are none it says so, followed by ``none_hint`` (how to make one available) when given,
    never an empty list.
    """

    def __init__(
        self, kind: str, name: str, available: Iterable[str], *, none_hint: str | None = None
    ) -> None:
        self.kind = kind
        self.name = name
        self.available = sorted(available)
        import difflib  # here: errors is imported by every pytest session, difflib is not

        self.suggestions = difflib.get_close_matches(name, self.available, n=3, cutoff=0.6)
        msg = f"unknown {kind} {name!r}"
        if not self.available:
            msg += f"; none is available{f': {none_hint}' if none_hint else ''}"
            super().__init__(msg)
            return
        if self.suggestions:
            msg += f"; did you mean {', '.join(repr(s) for s in self.suggestions)}?"
        shown = ", ".join(self.available[:40])
        if len(self.available) > 40:
            shown += f", ... ({len(self.available)} in all)"
        msg += f"{'' if self.suggestions else '.'} Available: {shown}"
        super().__init__(msg)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class DuplicateIdError(VibecheckError):
    """Two definitions use the same id."""


class DataFileError(VibecheckError):
    """A data file (instruction TOML, suite JSONL, manifest) is malformed.

    The message names the file, the line where known, and the field.
    """

    def __init__(
        self,
        path: str | Path,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.path = str(path)
        self.field = field
        self.line = line
        where = self.path
        if line is not None:
            where += f":{line}"
        if field is not None:
            where += f": field {field!r}"
        super().__init__(f"{where}: {message}")


class ParameterError(VibecheckError, ValueError):
    """An instruction parameter is invalid (raised in strict mode only)."""


class ParameterWarning(UserWarning):
    """An instruction parameter was dropped or reset to its default (non-strict mode)."""


class VibeInfraError(Picklable, Exception):
    """An infrastructure failure: reported as a pytest error, excluded from the metrics.

    ``kind`` is one of :data:`pytest_vibecheck.types.ERROR_KINDS` (``api_error``,
    ``rate_limit``, ``cache_miss``, ``replay_miss``, ``backend_error``, ``sandbox_error``,
    ``verifier_error``, ``internal_error``). It pickles (pytest-xdist sends exceptions between
    processes).
    """

    def __init__(self, kind: ErrorKind, message: str, *, fatal: bool = False) -> None:
        self.kind: ErrorKind = kind
        self.message = message
        #: the error stopped its model (a fatal API error): not counted for --vibe-max-errors
        self.fatal = fatal
        super().__init__(
            f"vibecheck infrastructure error ({kind}): {message}\n"
            "(not a model failure: this item is left out of the metrics)"
        )


class VibeFailure(Picklable, AssertionError):
    """A vibecheck item failed (tests or instructions); the message is the failure text."""
