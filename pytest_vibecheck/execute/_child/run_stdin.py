"""The ``stdin`` test kind: LiveCodeBench standard-input programs (inside the sandbox; loaded by
``harness.py``).

Each case runs in a forked process with its own stdin and stdout (a real file:
``sys.stdin.buffer`` works) as ``__main__``; this process never runs the candidate. The guard
is installed before the first fork, so every case inherits it; a case's refused attempts come
back on its stderr, marked with ``audit.TAMPER_MARK``.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import select
import signal
import sys
import tempfile
import time
import types
from typing import Any

_parts: dict[str, Any] = globals()["_VIBECHECK_PARTS"]  # loaded before this file (harness.py)
guard, compare, audit = _parts["guard"], _parts["compare"], _parts["audit"]
steps, candidate = _parts["steps"], _parts["candidate"]
TAMPER_MARK, _CHILD_HIDDEN = audit.TAMPER_MARK, audit.CHILD_HIDDEN


def _run_stdin_case(
    code: types.CodeType, data: str, limit: float, max_out: int, st: Any
) -> tuple[str, str]:
    """Run one case in a forked child; returns ``(outcome, stdout)``.

    ``outcome`` is ``ok``, ``timeout``, ``output too long`` or ``runtime error: ...``.
    """
    with (
        tempfile.TemporaryFile() as fin,
        tempfile.TemporaryFile() as fout,
        tempfile.TemporaryFile() as ferr,
    ):
        fin.write(data.encode("utf-8"))
        fin.seek(0)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child: the program runs as __main__ with the case as its stdin
            _case_child(code, fin.fileno(), fout.fileno(), ferr.fileno())
        waited = _wait_child(pid, limit)
        if waited is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", ""
        fout.seek(0)
        raw = fout.read(max_out + 1)
        ferr.seek(0)
        raw_err = ferr.read(1 << 20)
        for line in raw_err.split(b"\n"):
            if line.startswith(TAMPER_MARK):
                st.flag(line[len(TAMPER_MARK) :].decode("utf-8", "replace"))
        err = raw_err[-4000:].decode("utf-8", "replace")
    status = os.waitstatus_to_exitcode(waited)
    if status == 2 or status < 0:
        why = err.strip().splitlines()[-1] if err.strip() else f"exit status {status}"
        return f"runtime error: {why}\n{err[-1500:]}", ""
    if len(raw) > max_out:
        return "output too long", ""
    return "ok", raw.decode("utf-8", "replace")


def _case_child(code: types.CodeType, fin: int, fout: int, ferr: int) -> None:
    """In the forked child: run ``code`` as ``__main__`` on the case's stdin; never returns."""
    status = 0
    try:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        os.dup2(fin, 0)
        os.dup2(fout, 1)
        os.dup2(ferr, 2)
        os.closerange(3, 1 << 16)  # the result channel and every harness pipe
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        try:
            exec(code, namespace)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                status = 3
        except BaseException as exc:
            status = 2
            with contextlib.suppress(BaseException):
                text = guard.describe(type(exc), exc, exc.__traceback__, _CHILD_HIDDEN)
                os.write(2, (text + "\n").encode("utf-8", "replace"))
        import threading

        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            status = status or 2
    finally:
        os._exit(status)


def _wait_child(pid: int, limit: float) -> int | None:
    """Wait up to ``limit`` seconds for ``pid``; its wait status, or None on timeout."""
    deadline = time.monotonic() + limit
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if pidfd >= 0:
                ready, _, _ = select.select([pidfd], [], [], remaining)
                if ready:
                    return os.waitpid(pid, 0)[1]
            else:  # pragma: no cover - kernels before 5.3
                got, wstatus = os.waitpid(pid, os.WNOHANG)
                if got:
                    return wstatus
                time.sleep(min(0.005, remaining))
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def run(payload: dict[str, Any], st: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"kind": "stdin", "cases": []}
    rule = candidate.grading(payload)
    try:
        code = candidate.compile_code(candidate.prelude(rule) + payload["code"], "candidate.py")
    except SyntaxError as exc:
        record["import"] = candidate.compile_error(exc)
        return record
    record["import"] = ["pass", "", ""]
    limit = float(payload["time_limit_s"])
    # inherited by every forked case (this process never runs the code)
    audit.install_guard(st, bool(payload.get("allow_ctypes", True)))
    steps.started(st)
    for n, (inp, expected) in enumerate(payload["cases"]):
        name = f"case {n}"
        max_out = max(1 << 20, 4 * len(expected))
        outcome, got = _run_stdin_case(code, inp, limit, max_out, st)
        if outcome == "timeout":
            record["cases"].append(["timeout", f"{name}: time limit of {limit:g} s exceeded", ""])
            break
        if outcome != "ok":
            m = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", outcome)
            missing = m.group(1) if m else ""
            record["cases"].append(["fail", f"{name}: {outcome}", missing])
            break
        why = compare.stdout_mismatch(rule, got, expected)
        if why is not None:
            record["cases"].append(["fail", f"{name}: {why} ({rule} rule)", ""])
            break
        record["cases"].append(["pass", "", ""])
    return record
