"""What went wrong with an item: :class:`VibeFailure` (the model failed: tests or
instructions), :class:`VibeInfraError` (infrastructure: a pytest *error*, left out of the
metrics), the error kinds, and the failure text shown for a failed item."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.errors import VibeFailure, VibeInfraError

if TYPE_CHECKING:
    from pytest_vibecheck.plugin.run.record import Turn
    from pytest_vibecheck.plugin.run.spec import ItemSpec
    from pytest_vibecheck.report.records import TestsRecord
    from pytest_vibecheck.types import ErrorKind

__all__ = ["VibeFailure", "VibeInfraError", "describe_exception", "error_kind", "failure_text"]

#: Violations listed per instruction in the failure text.
MAX_VIOLATIONS_SHOWN = 8


def error_kind(exc: BaseException) -> ErrorKind:
    from pytest_vibecheck.generate.backends.base import (
        BackendError,
        RateLimitError,
        ReplayMissError,
    )
    from pytest_vibecheck.generate.cache import CacheMissError

    if isinstance(exc, RateLimitError):
        return "rate_limit"
    if isinstance(exc, CacheMissError):
        return "cache_miss"
    if isinstance(exc, ReplayMissError):
        return "replay_miss"
    if isinstance(exc, BackendError):
        return "api_error"
    return "backend_error"


def describe_exception(exc: BaseException) -> str:
    """``Type: message (at file.py:LINE in function)`` for an unexpected exception."""
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        code = tb.tb_frame.f_code
        where = f" (at {Path(code.co_filename).name}:{tb.tb_lineno} in {code.co_name})"
    return f"{type(exc).__name__}: {exc}{where}"



def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _instruction_lines(t: Turn) -> list[str]:
    params = {iid: p for _pos, iid, p in t.judged}
    ok = sum(bool(v["passed"]) for v in t.verdicts)
    lines = [f"  instructions: {ok} of {len(t.verdicts)} followed"]
    for v in t.verdicts:
        if v["passed"]:
            continue
        p = _params_text(params.get(v["id"], {}))
        lines.append(f"    FAIL {v['id']} (position {v['position']}{', ' + p if p else ''})")
        viol = v["violations"]
        lines.extend(
            f"         {x['line']}:{x['column']} {x['rule']} {x['message']}"
            for x in viol[:MAX_VIOLATIONS_SHOWN]
        )
        if len(viol) > MAX_VIOLATIONS_SHOWN:
            lines.append(f"         ... {len(viol) - MAX_VIOLATIONS_SHOWN} more")
    return lines


def _tests_lines(tests: TestsRecord | None) -> list[str]:
    if tests is None:
        return ["  tests: not run"]
    status = tests["status"]
    if status == "passed":
        return ["  tests: passed"]
    failed = tests["failed_tests"]
    head = f"  tests: {status}"
    if failed:
        more = ", ..." if len(failed) > 10 else ""
        head += f" ({len(failed)} failing: {', '.join(failed[:10])}{more})"
    lines = [head]
    msg = tests["message"].strip()
    if msg:
        lines.extend("      " + ln for ln in msg.splitlines()[-12:])
    return lines


def failure_text(spec: ItemSpec, turns: Sequence[Turn]) -> str:
    """The failure text: failing tests and each failed instruction with its violations; for
    multi-turn also one line per turn."""
    final = turns[-1]
    head = f"{spec.problem.task_id} with {spec.model} ({spec.protocol}"
    head += ")" if spec.protocol == "baseline" else f", k={spec.k})"
    lines = [head + ": failed"]
    if final.no_code:
        lines.append(
            f"  the reply has no code (extraction: {final.extraction.method}): the tests fail "
            "and every instruction counts as not followed"
        )
    lines += _tests_lines(final.tests)
    lines += _instruction_lines(final)
    lines.append(
        f"  extraction: {final.extraction.method}, {len(final.extraction.blocks)} fenced block(s)"
    )
    if len(turns) > 1:
        lines.append("  turns (tests; instructions followed of those judged):")
        for t in turns:
            ok = sum(bool(v["passed"]) for v in t.verdicts)
            what = "all of the problem's, unprompted" if t.turn == 0 else f"1..{t.turn}"
            lines.append(
                f"    turn {t.turn}: tests {t.tests['status'] if t.tests else None}; {ok}/{len(t.verdicts)} "
                f"({what}){' no code' if t.no_code else ''}"
            )
    return "\n".join(lines)

