"""The repository's own Ruff configuration, as defaults for the gate's instruction parameters.

A gate instruction parameter that ``[tool.vibecheck.gate]`` does not set takes the value of the
Ruff setting its verifier maps it to (the instruction file's ``[verifier.settings]``, e.g.
style_3 ``line_length`` -> ``lint.pycodestyle.max-line-length``, falling back to Ruff's
top-level ``line-length`` as Ruff itself does; doc_1 ``convention`` ->
``lint.pydocstyle.convention``; logic_3 ``max_branches`` -> ``lint.pylint.max-branches``), when
the repository sets it, and otherwise the instruction's default.

Ruff's own discovery order in the repository root: ``.ruff.toml``, ``ruff.toml``, then
``[tool.ruff]`` of ``pyproject.toml``. Settings under ``lint.`` are also read at their
deprecated top-level place (``pylint.max-branches``). A value the instruction does not accept
(out of its range) is not used: the default stays, and the source says why.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.verify.instructions import get_instruction

if TYPE_CHECKING:
    from pytest_vibecheck.ci.gate import GateInstruction

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

__all__ = ["RuffConfig", "apply_repo_ruff", "load_repo_ruff"]

#: Ruff settings that default to another one when unset (Ruff's documented behaviour).
FALLBACKS: Mapping[str, tuple[str, ...]] = {
    "lint.pycodestyle.max-line-length": ("line-length",),
}


@dataclass(frozen=True)
class RuffConfig:
    """A parsed Ruff configuration: its table and where it came from (for messages)."""

    table: Mapping[str, Any]
    source: str

    def lookup(self, key: str) -> tuple[object, str] | None:
        """``(value, "ruff.toml lint.pylint.max-branches")`` for a dotted Ruff key, trying its
        deprecated top-level place and its fallbacks; None when the repository does not set it."""
        candidates = [key]
        if key.startswith("lint."):
            candidates.append(key.removeprefix("lint."))
        candidates += FALLBACKS.get(key, ())
        for candidate in candidates:
            node: Any = self.table
            for part in candidate.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is not None and not isinstance(node, dict):
                return node, f"{self.source} {candidate}"
        return None


def load_repo_ruff(root: Path) -> RuffConfig | None:
    """The Ruff configuration of the repository at ``root``, or None. A file that is not valid
    TOML is ignored (Ruff reports it; the gate keeps the instructions' defaults)."""
    for name in (".ruff.toml", "ruff.toml"):
        path = root / name
        if path.is_file():
            table = _read(path)
            return None if table is None else RuffConfig(table, name)
    path = root / "pyproject.toml"
    if path.is_file():
        doc = _read(path)
        ruff = (doc or {}).get("tool", {}).get("ruff")
        if isinstance(ruff, dict):
            return RuffConfig(ruff, "pyproject.toml [tool.ruff]")
    return None


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return doc


def apply_repo_ruff(
    instructions: tuple[GateInstruction, ...], ruff: RuffConfig | None
) -> tuple[GateInstruction, ...]:
    """``instructions`` (:class:`~pytest_vibecheck.ci.gate.GateInstruction`) with every parameter
    the gate table left at its default taken from ``ruff`` where it maps to a Ruff setting;
    each one's ``sources`` says where every value came from."""
    if ruff is None:
        return instructions
    out = []
    for gi in instructions:
        inst = get_instruction(gi.id)
        params = dict(gi.params)
        sources = dict(gi.sources)
        for name, key in inst.verifier.settings.items():
            if sources.get(name) != "default":
                continue
            found = ruff.lookup(key)
            if found is None:
                continue
            value, where = found
            spec = inst.params[name]
            if isinstance(value, (int, str)) and spec.is_valid(value):
                params[name] = value
                sources[name] = where
            else:
                sources[name] = f"default ({where} = {value!r} is not {spec.describe()})"
        out.append(replace(gi, params=params, sources=sources))
    return tuple(out)
