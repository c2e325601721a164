"""The ``functional`` test kind: LiveCodeBench call-based tests (inside the sandbox; loaded by
``harness.py``).

The entry point (found by the grading rule, ``compare.entry_point``) is called with the JSON
arguments of each case on the candidate's thread; what it returned comes back as JSON text
(``values.py``) and is compared with the expected value on the main thread by the grading rule
(``compare.value_mismatch``): the expected value never reaches the candidate's thread.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from typing import Any

_parts: dict[str, Any] = globals()["_VIBECHECK_PARTS"]  # loaded before this file (harness.py)
guard, compare, values = _parts["guard"], _parts["compare"], _parts["values"]
audit, steps, snapshot, candidate = (_parts[n] for n in ("audit", "steps", "snapshot", "candidate"))

MAX_MESSAGE = 2000

# Pristine references, taken when this file is loaded (before any candidate code runs).
_monotonic = time.monotonic
_partial = functools.partial
_modules = sys.modules
_exec_code = guard.exec_code


def _make_target(
    ns: dict[str, Any], use_class: bool, entry: str, rule: str, state: dict[str, Any]
) -> None:
    """On the candidate's thread: the callable under test, found by the grading rule
    (``compare.entry_point``): ``Solution().entry`` or the module-level ``entry``."""
    method = getattr(ns["Solution"](), entry, None) if use_class else ns.get(entry) if entry else None
    if not callable(method):
        raise AttributeError(f"the candidate does not define {entry!r} ({rule} entry-point rule)")
    state["method"] = method



def _call_case(state: dict[str, Any], args: list[Any], out: dict[str, Any]) -> None:
    """On the candidate's thread: call the method and keep what it returned, as JSON text
    (the expected value never reaches this thread)."""
    got = state["method"](*args)
    guard.scan(got)
    text = values.encode_value(values.mark_tuples(got))
    out["json"] = text if len(text) <= (1 << 22) else None
    out["repr"] = repr(got)[:300]


def run(payload: dict[str, Any], st: Any) -> dict[str, Any]:
    limit = st.limit = float(payload["time_limit_s"])
    rule = candidate.grading(payload)
    record: dict[str, Any] = {"kind": "functional", "cases": []}
    cases = []
    for n, (inp, expected_text) in enumerate(payload["cases"]):
        try:
            args = [json.loads(line) for line in inp.split("\n") if line.strip()]
            expected = json.loads(expected_text)
        except ValueError as exc:
            record["harness_error"] = f"case {n}: bad test data: {exc}"
            return record
        cases.append((args, expected, expected_text))
    try:
        code = candidate.compile_code(candidate.prelude(rule) + payload["code"], "candidate.py")
    except SyntaxError as exc:
        record["import"] = candidate.compile_error(exc)
        return record
    module = candidate.new_module("__candidate__", "candidate.py")
    ns = module.__dict__
    audit.install_guard(st, bool(payload.get("allow_ctypes", True)), "__candidate__")
    st.snapshot = snapshot.take([])
    st.in_sys = {name for name, mod, _, _ in st.snapshot if _modules.get(name) is mod}
    steps.started(st)
    outcome, message, missing = steps.step(st, [_partial(_exec_code, code, ns)], _monotonic() + limit)
    if outcome != "pass":
        if outcome == "fail":
            message = "candidate failed to import:\n" + message
        record["import"] = [outcome, message, missing]
        return record
    state: dict[str, Any] = {}
    use_class, entry = compare.entry_point(rule, payload["code"], str(payload.get("entry_point") or ""))
    outcome, message, missing = steps.step(
        st, [_partial(_make_target, ns, use_class, entry, rule, state)], _monotonic() + limit
    )
    if outcome != "pass":
        record["import"] = [outcome, message, missing]
        return record
    record["import"] = ["pass", "", ""]
    snapshot.verify(st, "while the candidate was imported")
    for n, (args, expected, expected_text) in enumerate(cases):
        out: dict[str, Any] = {}
        outcome, message, missing = steps.step(
            st, [_partial(_call_case, state, args, out)], _monotonic() + limit
        )
        if outcome == "pass":
            text = out.get("json")
            got: Any = None
            ok = type(text) is str
            if ok:
                try:
                    got = values.decode_value(str(text))
                except (ValueError, RecursionError):
                    ok = False
            why = compare.value_mismatch(rule, got, expected) if ok else "its value is not JSON"
            if why is not None:
                shown = str(out.get("repr", "?"))
                outcome = "fail"
                message = (
                    f"case {n}: got {_short(shown, 300)}, expected {_short(expected_text, 300)} "
                    f"({rule} rule)"
                )
        elif outcome == "fail":
            message = f"case {n}:\n{message}"
        else:
            message = f"case {n}: time limit of {limit:g} s exceeded"
        record["cases"].append([outcome, message, missing])
        if outcome == "timeout":
            break  # still running: nothing to compare yet (see the unittest loop)
        snapshot.verify(st, f"during case {n}")
        if outcome != "pass":
            break
    return record


def _short(text: str, limit: int = MAX_MESSAGE) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 4] + "\n[...]\n" + text[-(3 * limit) // 4 :]
