"""Instruction parameters: validation as in the paper, and prompt rendering.

Paper §3.1: after selection, parameters are validated: unknown keys are dropped and
values of the wrong type or outside the valid range are reset to the default. Each
change is reported (a :class:`ParameterWarning` and an entry in ``changes``); with
``strict=True`` the first problem raises :class:`ParameterError` instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pytest_vibecheck.errors import ParameterError, ParameterWarning
from pytest_vibecheck.verify.instructions import Instruction, get_instruction

Protocol = Literal["single", "multi"]


@dataclass(frozen=True)
class ValidatedParams:
    """Result of :func:`validate_params`: the full parameter dict and the changes made."""

    params: dict[str, int | str]
    changes: tuple[str, ...]


def _coerce_int(value: object) -> int | None:
    """Accept ints and integral strings/floats ("3", 3.0) as the same int; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def validate_params(
    instruction: Instruction | str,
    params: Mapping[str, object] | None = None,
    *,
    strict: bool = False,
    warn: bool = True,
) -> ValidatedParams:
    """Validate ``params`` for ``instruction`` and fill in defaults.

    Returns every parameter of the instruction. Unknown keys are dropped; values of the
    wrong type or out of range are reset to the default (paper §3.1); integral strings
    such as ``"3"`` are accepted as ints (this is not counted as a change). Each change is
    described in ``changes`` and, if ``warn``, emitted as a :class:`ParameterWarning`.

    Raises :class:`ParameterError` on the first problem when ``strict`` (its message states the
    problem only: nothing is dropped or reset), and
    :class:`~pytest_vibecheck.errors.UnknownIdError` for an unknown instruction id.
    """
    inst = get_instruction(instruction) if isinstance(instruction, str) else instruction
    given = dict(params or {})
    out: dict[str, int | str] = {}
    # (the problem alone, for strict mode, which changes nothing; the problem and what the
    # paper's validation did about it)
    problems: list[tuple[str, str]] = []
    for key in sorted(set(given) - set(inst.params)):
        known = ", ".join(inst.params) or "none"
        what = f"{inst.id}: unknown parameter {key!r}"
        problems.append((f"{what} (parameters: {known})", f"{what} dropped (parameters: {known})"))
    for name, spec in inst.params.items():
        if name not in given:
            out[name] = spec.default
            continue
        raw = given[name]
        value: object = _coerce_int(raw) if spec.type == "int" else raw
        if value is not None and spec.is_valid(value):
            out[name] = value  # type: ignore[assignment]
        else:
            out[name] = spec.default
            what = f"{inst.id}: parameter {name}={raw!r} is not {spec.describe()}"
            problems.append((what, f"{what}; reset to the default {spec.default!r}"))
    if problems and strict:
        raise ParameterError(problems[0][0])
    changes = [change for _, change in problems]
    if warn:
        for change in changes:
            warnings.warn(change, ParameterWarning, stacklevel=2)
    return ValidatedParams(out, tuple(changes))


def render_prompt(
    instruction: Instruction | str,
    params: Mapping[str, object] | None = None,
    protocol: Protocol = "single",
) -> str:
    """The instruction's prompt with parameters filled in.

    ``protocol="single"`` gives the requirement text used in the single-turn numbered
    list; ``"multi"`` gives the edit request of a multi-turn user turn (paper §3.2).
    Parameters are validated first (non-strict, no warnings).
    """
    inst = get_instruction(instruction) if isinstance(instruction, str) else instruction
    values = validate_params(inst, params, warn=False).params
    template = inst.single_turn if protocol == "single" else inst.multi_turn
    return template.format(**values)


def parse_instruction_arg(text: str) -> tuple[str, dict[str, str]]:
    """Parse a CLI instruction argument ``"logic_3:max_branches=3,other=x"``.

    Returns ``(id, params)`` with string values (validated later). Raises
    :class:`ParameterError` for a malformed ``key=value`` part.
    """
    iid, _, rest = text.partition(":")
    params: dict[str, str] = {}
    if rest:
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            if not eq or not key.strip():
                raise ParameterError(
                    f"instruction argument {text!r}: expected ID[:key=value,...], got part {part!r}"
                )
            params[key.strip()] = value.strip()
    return iid.strip(), params
