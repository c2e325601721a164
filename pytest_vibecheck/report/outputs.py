"""Report output paths: checked before a run spends anything, written without losing the summary.

:func:`check_output_path` is called at configure time for every report file of a run (the JSON
report, the JUnit XML, any other file a plugin part writes), so a path that cannot be written
(``/proc/x.json``, a folder such as ``/tmp``, a parent folder that cannot be made because a
file is in the way or the place is read-only) is a one-line usage error before the first
generation request, not a traceback after the whole run. It has no side effects: it creates no
folder and leaves no file.

:func:`write_error_line` turns a failure while writing at the end of the run (the disk filled
up, the folder was removed) into one line for the terminal summary.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from pytest_vibecheck.errors import VibecheckError

__all__ = ["OutputPathError", "check_output_path", "write_error_line"]


class OutputPathError(VibecheckError):
    """A report path that cannot be written; the message says why and what to do."""


_TODO = "give a file path in a folder you can write to"


def _reason(exc: OSError) -> str:
    return exc.strerror or errno.errorcode.get(exc.errno or 0, "") or str(exc)


def check_output_path(path: Path, *, example: str = "vibe.json") -> None:
    """Check that a file can be written at ``path`` (absolute) by the run's final writer, which
    writes a temporary file beside it and renames it into place.

    Walks up to the nearest existing ancestor: it must be a folder (not a file) in which a file
    can be created (probed with a temporary file that is removed at once). The missing folders
    below it would be created by the writer. ``example`` is the file name suggested when
    ``path`` is a folder.

    Raises :class:`OutputPathError` with a message that starts with the reason (no path: the
    caller names the option and the path).
    """
    if path.is_dir():
        raise OutputPathError(f"is a folder; give a file path such as {path / example}")
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputPathError(
            f"its folder cannot be made: {ancestor} is a file, not a folder; {_TODO}"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".vibecheck-probe-", dir=ancestor)
    except OSError as exc:
        raise OutputPathError(f"cannot write in {ancestor} ({_reason(exc)}); {_TODO}") from None
    os.close(fd)
    Path(probe).unlink(missing_ok=True)


def write_error_line(what: str, path: Path, exc: BaseException) -> str:
    """One line for a report that could not be written at the end of a run, e.g.
    ``vibecheck: cannot write the JSON report /x/r.json (Not a directory); the summary above is
    complete``."""
    reason = _reason(exc) if isinstance(exc, OSError) else str(exc).splitlines()[0]
    return (
        f"vibecheck: cannot write the {what} {path} ({reason}); the summary above is complete"
    )
