"""``vibecheck show``: one item of a JSON report as text, turn by turn.

:func:`select_items` finds the items a user names (a node id, or ``SUITE::TASK`` with optional
model, protocol and k); :func:`render_item` prints, for each turn, the messages sent, the reply,
the extracted code with every violated line marked (rule, message, instruction), the failing
tests with their message, and each instruction's verdict with its parameters.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_vibecheck.errors import VibecheckError

__all__ = ["render_item", "select_items"]


def select_items(
    items: Sequence[Mapping[str, Any]],
    target: str,
    *,
    model: str | None = None,
    protocol: str | None = None,
    k: int | None = None,
    source: str = "the report",
) -> list[Mapping[str, Any]]:
    """The items named by ``target``: the item whose node id is ``target``, or every item of
    ``SUITE::TASK`` (``TASK`` alone when only one suite has it) narrowed by ``model``,
    ``protocol`` and ``k``; in node id order.

    Raises :class:`VibecheckError` naming close matches when nothing matches.
    """
    exact = [i for i in items if i.get("nodeid") == target]
    if exact:
        return exact
    suite, sep, task = target.partition("::")
    if not sep:
        suite, task = "", target

    def keep(i: Mapping[str, Any]) -> bool:
        return (
            (not suite or i.get("suite") == suite)
            and i.get("task_id") == task
            and (model is None or i.get("model") == model)
            and (protocol is None or i.get("protocol") == protocol)
            and (k is None or i.get("k") == k)
        )

    found = sorted((i for i in items if keep(i)), key=lambda i: str(i.get("nodeid")))
    if found:
        return found
    names = sorted({str(i.get("nodeid")) for i in items} | {f"{i.get('suite')}::{i.get('task_id')}" for i in items})
    close = difflib.get_close_matches(target, names, n=3, cutoff=0.5)
    narrowed = ", ".join(
        f"{n} {v}" for n, v in (("model", model), ("protocol", protocol), ("k", k)) if v is not None
    )
    hint = f"; close matches: {', '.join(close)}" if close else ""
    raise VibecheckError(
        f"{source}: no item {target}{' with ' + narrowed if narrowed else ''}{hint} "
        "(give a node id or SUITE::TASK)"
    )


def _params(p: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (p or {}).items())


def _indent(text: str, prefix: str = "    ") -> list[str]:
    return [prefix + line for line in text.rstrip("\n").split("\n")] if text else [prefix + "(empty)"]


def _code_lines(code: str, turn: Mapping[str, Any]) -> list[str]:
    marks: dict[int, list[str]] = {}
    for v in turn.get("verdicts") or []:
        for x in v.get("violations") or []:
            marks.setdefault(int(x.get("line", 0)), []).append(
                f"{x.get('rule')} {x.get('message')} [{v.get('id')}, column {x.get('column')}]"
            )
    lines = code.rstrip("\n").split("\n") if code else []
    out = []
    for n, text in enumerate(lines, start=1):
        out.append(f"  {'>' if n in marks else ' '}{n:4d} | {text}")
        out += [f"         ^ {m}" for m in marks.get(n, [])]
    for n in sorted(set(marks) - set(range(1, len(lines) + 1))):
        out += [f"         ^ line {n}: {m}" for m in marks[n]]
    return out


def render_item(item: Mapping[str, Any]) -> list[str]:
    """The text of one item (lines, no trailing newline): header, instructions, then each
    turn. A turn without ``reply``/``code`` (a report written with ``--vibe-report-replies no``
    and no cache entry) says so."""
    cats = {i["id"]: i for i in item.get("instructions") or []}
    turns = list(item.get("turns") or [])
    final = turns[-1] if turns else {}
    status = ((final.get("tests") or {}).get("status")) or item.get("outcome")
    out = [
        str(item.get("nodeid")),
        f"  suite {item.get('suite')}, task {item.get('task_id')}, model {item.get('model')}, "
        f"protocol {item.get('protocol')}, k {item.get('k')}, sample {item.get('sample')}: "
        f"{item.get('outcome')} (tests {status})",
    ]
    if item.get("error"):
        err = item["error"]
        out.append(f"  infrastructure error ({err.get('kind')}), not a model failure: {err.get('message')}")
    if item.get("skip_reason"):
        out.append(f"  skipped: {item['skip_reason']}")
    if cats:
        out.append("  instructions given: " + "; ".join(
            f"{i['position']} {i['id']} ({i.get('category')}{', ' + _params(i.get('params')) if i.get('params') else ''})"
            for i in cats.values()
        ))  # fmt: skip
    prev: Mapping[str, Any] | None = None
    for t in turns:
        verdicts = t.get("verdicts") or []
        ok = sum(v.get("passed") is True for v in verdicts)
        tests = t.get("tests") or {}
        label = f"turn {t.get('turn')}" if item.get("protocol") == "multi" else "reply"
        out += ["", f"--- {label} (k = {t.get('k')}): tests {tests.get('status')}, instructions {ok}/{len(verdicts)} followed"]
        msgs = t.get("messages")
        if msgs:
            out.append("  prompt:" if prev is None else "  messages added:")
            for m in msgs:
                out.append(f"    [{m.get('role')}]")
                out += _indent(str(m.get("content", "")), "      ")
        if "reply" in t:
            out.append("  reply:")
            out += _indent(str(t["reply"]))
        else:
            out.append("  reply: not in the report (written with --vibe-report-replies no; pass --cache)")
        ex = t.get("extraction") or {}
        block = ex.get("block")
        how = f"{ex.get('method')}, {ex.get('blocks')} fenced block(s)"
        if block is not None:
            how += f", block {int(block) + 1}"
        if ex.get("no_code"):
            how += ", no code"
        code = t.get("code")
        if prev is not None and code is not None and code == prev.get("code"):
            out.append(f"  code ({how}): unchanged from turn {prev.get('turn')}")
        else:
            out.append(f"  code ({how}):")
        if code is not None:
            out += _code_lines(str(code), t)
        else:
            out.append("    not in the report")
        if tests.get("status") not in (None, "passed"):
            failed = tests.get("failed_tests") or []
            out.append(f"  tests {tests.get('status')}" + (f": {', '.join(failed)}" if failed else ""))
            if tests.get("message"):
                out += _indent(str(tests["message"]))
        out.append("  verdicts:")
        for v in verdicts:
            inst = cats.get(v.get("id"), {})
            mark = {True: "PASS", False: "FAIL"}.get(v.get("passed"), "ERROR")
            params = _params(inst.get("params"))
            line = f"    {mark} {v.get('position')} {v.get('id')}" + (f" ({params})" if params else "")
            if v.get("error"):
                line += f": {v['error']}"
            out.append(line)
            out += [
                f"         line {x.get('line')}:{x.get('column')} {x.get('rule')} {x.get('message')}"
                for x in v.get("violations") or []
            ]
        prev = t
    if not turns and item.get("failure"):
        out += ["", *_indent(str(item["failure"]), "  ")]
    return out
