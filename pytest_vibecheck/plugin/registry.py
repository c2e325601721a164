"""The pytest side of the registry: one per session, filled through ``config.hook``.

``pytest_vibecheck_register`` is one of pytest's hooks in a run, so the built-ins, the
entry-point plugins and every ``conftest.py`` loaded by then (the rootdir's and those of the
paths on the command line) register into the same :class:`~pytest_vibecheck.registry.Registry`.
It is built on first use (an ordinary test run that never looks anything up pays nothing) or at
once when the run needs it, and a bad file or a clash is a usage error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.registry import Registry, activate, build_registry

__all__ = ["REGISTRY_KEY", "activate_session_registry"]

#: Stash key of the session's activation (closed in ``pytest_unconfigure``).
REGISTRY_KEY = pytest.StashKey[activate]()


def activate_session_registry(config: pytest.Config, instruction_dirs: Sequence[Path]) -> activate:
    """Build the session's registry from ``config.hook.pytest_vibecheck_register`` and the
    team ``instruction_dirs``, and make it the process's active one.

    Raises :class:`pytest.UsageError` (one line) for a malformed instruction file, an unknown
    check or an id clash.
    """

    def fill(registry: Registry) -> None:
        config.hook.pytest_vibecheck_register(registry=registry)

    try:
        registry = build_registry(fill, instruction_dirs)
    except VibecheckError as exc:
        raise pytest.UsageError(f"vibecheck: {exc}") from None
    return activate(registry)
