"""From what the sandbox returned to a verdict, decided by the evaluator alone.

The harness inside the sandbox reports per-test outcomes; it never decides ``error`` or
``skipped``, and nothing the candidate prints or writes is taken as a status. Here:

- ``tampered`` when there is any sign that the candidate went for its grader: bytes on the
  result channel that the harness did not seal, a refused introspection or patch recorded by
  the harness's audit hook, a test framework or module found changed, a result that names
  other tests than the test source defines (parsed here, :mod:`~.expected`), a value that
  compares equal to anything, the harness failing after the candidate ran;
- ``error`` only for what the evaluator observes itself: the sandbox did not start, or a
  module the task may need is reported missing *and* this process confirms that the
  sandbox's interpreter does not have it (a candidate raising ``ModuleNotFoundError`` for an
  installed module gets ``failed``); the same for NLTK data (NLTK's ``LookupError`` raised in
  ``nltk/data.py``, confirmed absent with ``nltk.data.find``): the sandbox has no network for
  ``nltk.download``, and an environment without the data is no fault of the model; and the
  test source still loading when the time limit ran out, before the candidate ran
  (:data:`LOAD_TIMEOUT`, which lazy calibration takes for a timeout of its floor run);
- otherwise ``passed`` only when every expected test (or case) is reported passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_vibecheck.execute import envcheck
from pytest_vibecheck.execute.expected import ExpectedTests
from pytest_vibecheck.execute.sandbox import SandboxResult

OUTCOMES = frozenset({"pass", "fail", "timeout", "notrun"})

#: The message of the ``error`` of a run whose test source was still loading (its own imports:
#: TensorFlow, Keras) when the time limit ran out. The candidate had not run, so it is never the
#: model's failure; but the limit may be the floor of lazy calibration, under which
#: :func:`pytest_vibecheck.execute.tests.execute` times the reference and runs again.
LOAD_TIMEOUT = "the test source did not load within the time limit, before the candidate ran"


@dataclass(frozen=True)
class Verdict:
    """``status`` (``passed``, ``failed``, ``timeout``, ``tampered``, ``error``), the failing
    tests, a message, the missing module of an environment error, the harness's own time and
    the tampering found (reasons, one line each)."""

    status: str
    failed_tests: tuple[str, ...] = ()
    message: str = ""
    missing_module: str | None = None
    test_time_s: float | None = None
    tamper: tuple[str, ...] = ()


def _entry(row: Any, width: int) -> list[str] | None:
    """A row of the result as ``width`` strings (outcome first after the name), or None."""
    if not isinstance(row, list) or len(row) != width or not all(isinstance(x, str) for x in row):
        return None
    return row


def env_missing(module: str, known: frozenset[str], python: str | None) -> str | None:
    """The top-level name of ``module`` when the task itself needs it (``known``:
    :func:`~pytest_vibecheck.execute.envcheck.task_modules`) and the sandbox's interpreter
    really lacks it (checked here, by a process that never ran candidate code); ``module``
    itself for NLTK data (``nltk_data:ID=PATH``) of a task that needs ``nltk`` that
    ``nltk.data.find`` does not find there; else None: a module or data only the candidate
    asks for is its own failure, never an infrastructure error that would take the task out
    of the metrics."""
    if envcheck.is_nltk_data(module):
        return module if "nltk" in known and envcheck.data_missing(module, python) else None
    top = module.split(".")[0]
    if not top.isidentifier():
        return None
    if top not in known:
        return None
    return top if top not in envcheck.available([top], python) else None


class _Reader:
    def __init__(self, known: frozenset[str], python: str | None) -> None:
        self.known = known
        self.python = python
        self.tamper: list[str] = []

    def failure(self, tests: Sequence[str], message: str, missing: str) -> Verdict:
        env = env_missing(missing, self.known, self.python) if missing else None
        if env is not None and envcheck.is_nltk_data(env):
            ident = envcheck.data_id(env)
            return Verdict(
                "error",
                tuple(tests),
                f"environment: missing NLTK data {ident} ({envcheck.data_hint([ident])})",
                envcheck.NLTK_DATA_PREFIX + ident,
            )
        if env is not None:
            return Verdict("error", tuple(tests), f"environment: missing module {env}", env)
        return Verdict("failed", tuple(tests), message)

    def step(self, row: Any, name: str) -> Verdict | None:
        """The verdict of a failed import/load step, None when it passed."""
        got = _entry(row, 3)
        if got is None:
            self.tamper.append(f"the result's {name} step is malformed")
            return None
        outcome, message, missing = got
        if outcome == "pass":
            return None
        test = "<import>" if name == "import" else "<tests>"
        if outcome == "timeout":
            return Verdict("timeout", (test,), message or "time limit exceeded")
        return self.failure((test,), message, missing)

    def tests(self, rows: Any, names: Sequence[str]) -> Verdict:
        got = [_entry(r, 4) for r in rows] if isinstance(rows, list) else [None]
        if any(g is None for g in got) or [g[0] for g in got if g] != list(names):
            self.tamper.append("the result does not report exactly the tests of the test source")
            return Verdict("failed")
        rows_ok = [g for g in got if g is not None]
        if any(g[1] not in OUTCOMES for g in rows_ok):
            self.tamper.append("the result has an unknown test outcome")
            return Verdict("failed")
        timed = [g for g in rows_ok if g[1] == "timeout"]
        if timed:
            return Verdict("timeout", (timed[0][0],), timed[0][2] or "time limit exceeded")
        failed = [g for g in rows_ok if g[1] != "pass"]
        if not failed:
            return Verdict("passed")
        first = failed[0]
        for g in failed:
            if g[3] and env_missing(g[3], self.known, self.python):
                return self.failure([f[0] for f in failed], g[2], g[3])
        if any(g[1] == "notrun" for g in failed):
            self.tamper.append("tests were left unrun")
        return Verdict("failed", tuple(g[0] for g in failed), f"{first[0]}:\n{first[2]}")

    def cases(self, rows: Any, n: int) -> Verdict:
        got = [_entry(r, 3) for r in rows] if isinstance(rows, list) else [None]
        if any(g is None for g in got) or len(got) > n:
            self.tamper.append("the result does not report the test cases")
            return Verdict("failed")
        for k, g in enumerate(got):
            assert g is not None
            outcome, message, missing = g
            if outcome == "pass":
                continue
            if outcome == "timeout":
                return Verdict("timeout", (f"case {k}",), message)
            return self.failure((f"case {k}",), message, missing)
        if len(got) < n:
            return Verdict("failed", (f"case {len(got)}",), "the cases did not all run")
        return Verdict("passed")


def decide(
    sres: SandboxResult,
    kind: str,
    expected: ExpectedTests,
    n_cases: int,
    known: frozenset[str],
    python: str | None,
) -> Verdict:
    """The verdict of one sandboxed run (see the module docstring). Never raises."""
    if sres.status == "error":
        return Verdict("error", message=f"sandbox: {sres.error}")
    reader = _Reader(known, python)
    reader.tamper.extend(sres.channel_problems)
    job = sres.result if isinstance(sres.result, Mapping) else None
    verdict = _from_job(reader, job, kind, expected, n_cases) if job is not None else None
    if job is not None:
        raw = job.get("tamper")
        if isinstance(raw, list):
            reader.tamper.extend(str(t)[:300] for t in raw[:20])
        error = job.get("harness_error")
        if isinstance(error, str):
            if job.get("candidate_ran") is False and not reader.tamper:
                load = _entry(job.get("load"), 3)
                if load is not None and load[0] == "timeout":
                    return Verdict("error", message=LOAD_TIMEOUT)
                return Verdict("error", message=error)
            reader.tamper.append(f"the harness failed after the candidate ran ({error[:200]})")
    tt = job.get("test_time_s") if job is not None else None
    test_time = float(tt) if isinstance(tt, (int, float)) and not isinstance(tt, bool) else None
    if reader.tamper:
        tamper = tuple(dict.fromkeys(reader.tamper))
        failed = verdict.failed_tests if verdict is not None else ()
        message = "tampered with its tests: " + "; ".join(tamper)
        return Verdict("tampered", failed, message[:2000], None, test_time, tamper)
    if verdict is None:
        if not sres.started and sres.status != "timeout" and sres.result is None:
            tail = sres.stderr.strip()[-800:]
            return Verdict("error", message="harness: the sandboxed process ended before the "
                           f"candidate ran (exit status {sres.returncode})" + (f":\n{tail}" if tail else ""))
        if sres.status == "timeout":
            return Verdict(
                "timeout",
                message=f"wall-clock limit of {sres.limits.get('timeout_s')} s exceeded; the "
                "process group was killed",
            )
        # The process ended without a result: the candidate's code ended it (os._exit, a
        # crash in a C extension, a signal). The harness itself always writes a result.
        tail = sres.stderr.strip()[-800:]
        return Verdict(
            "failed",
            ("<process>",),
            f"the test process ended without a result (exit status {sres.returncode})"
            + (f":\n{tail}" if tail else ""),
        )
    return Verdict(
        verdict.status, verdict.failed_tests, verdict.message, verdict.missing_module, test_time
    )


def _from_job(
    reader: _Reader,
    job: Mapping[str, Any],
    kind: str,
    expected: ExpectedTests,
    n_cases: int,
) -> Verdict | None:
    if "harness_error" in job and "import" not in job:
        return None
    imp = reader.step(job.get("import"), "import")
    if imp is not None:
        return imp
    if kind in ("bigcodebench-unittest", "humaneval"):
        if "load" in job:
            load = reader.step(job.get("load"), "load")
            if load is not None:
                return load
        return reader.tests(job.get("tests"), expected.names)
    return reader.cases(job.get("cases"), n_cases)
