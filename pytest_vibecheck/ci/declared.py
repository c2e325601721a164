"""A repository's declared instructions: the one source the gate's checks and the agent's prompt
are both made from.

``[tool.vibecheck.gate]`` (:func:`pytest_vibecheck.ci.gate.load_gate_config`), with every
parameter the table leaves at its default taken from the repository's own Ruff configuration
(:mod:`pytest_vibecheck.ci.ruff_config`). ``pytest --vibe-gate`` (:class:`~pytest_vibecheck.ci.items.GateRun`),
the pre-commit check (:mod:`pytest_vibecheck.ci.staged`), the SARIF rules
(:mod:`pytest_vibecheck.ci.sarif`) and ``vibecheck gate-prompt``
(:mod:`pytest_vibecheck.ci.prompt`) all read the instructions through :func:`load_declared`, so
what an agent is told and what the gate checks are the same ids with the same parameters.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_vibecheck.ci.gate import GateConfig, load_gate_config
from pytest_vibecheck.ci.ruff_config import apply_repo_ruff, load_repo_ruff

__all__ = ["default_config_path", "load_declared", "relative_source"]


def default_config_path(root: Path, rootdir: Path | None = None) -> Path:
    """The gate config when none is given: ``rootdir/pyproject.toml`` (pytest's rootdir, when
    there is one and it has the file), else ``pyproject.toml`` at the top of the git work tree
    ``root`` (returned even when missing: :func:`load_declared` then names it)."""
    candidates = ([rootdir / "pyproject.toml"] if rootdir is not None else []) + [root / "pyproject.toml"]
    return next((c for c in candidates if c.is_file()), candidates[-1])


def load_declared(config_path: Path, root: Path) -> GateConfig:
    """The declared instructions of the repository at ``root``: ``[tool.vibecheck.gate]`` of
    ``config_path`` with parameter defaults from the repository's Ruff configuration.

    Raises :class:`~pytest_vibecheck.ci.gate.GateConfigError` for a missing or malformed table
    and :class:`~pytest_vibecheck.errors.UnknownIdError` for an unknown instruction id.
    """
    config = load_gate_config(config_path)
    return replace(config, instructions=apply_repo_ruff(config.instructions, load_repo_ruff(root)))


def relative_source(config_path: Path, root: Path) -> str:
    """``config_path`` as the text names it: relative to the repository ``root`` (POSIX), or
    as given when it lies outside; the same on every machine, so a written prompt stays
    current."""
    try:
        return config_path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return config_path.as_posix()
