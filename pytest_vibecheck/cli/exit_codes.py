"""The exit status of every ``vibecheck`` command, in one table: ``vibecheck --help`` prints it
and README.md ("Exit status of the commands") lists it (tests/test_plain_install.py keeps the
two the same).

Every command exits 2 for bad input (a missing or malformed file, a bad option, a missing extra),
printed as one line on stderr, and 130 when interrupted; :data:`EXIT_STATUS` says what else
each one returns.
"""

from __future__ import annotations

__all__ = ["COMMON", "EXIT_STATUS"]

#: What every command shares.
COMMON = "2: bad input (one line on stderr: the file, the field or the option, and what to do); 130: interrupted"

#: Command -> its exit statuses besides :data:`COMMON`.
EXIT_STATUS: dict[str, str] = {
    "instructions": "0",
    "augment": "0",
    "problems": "0",
    "verify": "0: every instruction passes (batch: every line verified and judged); 1: one fails; "
              "2 also when a verifier could not judge or a batch line was skipped",
    "correlate": "0",
    "report": "0",
    "view": "0",
    "show": "0",
    "summary": "0",
    "cache": "0; 1: stats found the file damaged (integrity not ok), export/import rejected rows",
    "merge": "0; 1: a threshold failed",
    "batches": "0; 1: cancel could not cancel a batch (the line says why)",
    "exec": "0: passed; 1: failed, timeout or tampered; 3: error or skipped (not the code's fault)",
    "env-check": "0 (also when tasks cannot run: the report says which)",
    "env": "0",
    "results": "0",
    "export-dataset": "0",
    "plugins": "0",
    "gate-prompt": "0; 1: --check found the block missing or out of date",
    "gate-staged": "0: every check passes (also with nothing staged); 1: a counted violation or a "
                   "file that does not parse; 3: a verifier error",
}


def epilog() -> str:
    """The ``vibecheck --help`` text of :data:`EXIT_STATUS`."""
    rows = [f"  {name}: {text}" for name, text in EXIT_STATUS.items()]
    return "exit status (every command: " + COMMON + "):\n" + "\n".join(rows)
