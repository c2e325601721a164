"""The pytest side of the registry: one per session, filled through ``config.hook``.

``pytest_vibecheck_register`` is one of pytest's hooks in a run, so the built-ins and the
entry-point plugins (group ``pytest_vibecheck``), both registered with pytest's plugin manager
when the registry is built, and every ``conftest.py`` loaded by then register into the same
:class:`~pytest_vibecheck.registry.Registry`. It is built on first use, so an ordinary test run
that never looks anything up pays nothing (``benchmarks/bench_plugin_unused.py``); a run that
needs it builds it at once (:func:`session_registry` in ``pytest_configure``), so a bad file or
a clash is a usage error before anything runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_vibecheck.registry import Registry, activate

__all__ = ["REGISTRY_KEY", "activate_session_registry", "session_registry"]

#: Stash key of the session's activation (closed in ``pytest_unconfigure``).
REGISTRY_KEY: pytest.StashKey[activate] = pytest.StashKey()


def activate_session_registry(config: pytest.Config, instruction_dirs: Sequence[Path]) -> activate:
    """Make the session's registry the process's active one, built on first use from the
    entry-point plugins, ``config.hook.pytest_vibecheck_register`` and the team
    ``instruction_dirs``. Imports nothing of the registry's contents until then.

    The build raises :class:`~pytest_vibecheck.errors.VibecheckError` for a malformed
    instruction file, an unknown check or an id clash (:func:`session_registry` turns it into a
    usage error).
    """
    from pytest_vibecheck.registry import ENTRY_POINT_GROUP, activate

    dirs = tuple(instruction_dirs)

    def fill(registry: Registry) -> None:
        config.hook.pytest_vibecheck_register(registry=registry)

    def build() -> Registry:
        from pytest_vibecheck.compose import builtins as builtin_plugin
        from pytest_vibecheck.compose.build import build_registry

        pm = config.pluginmanager
        if not pm.is_registered(builtin_plugin):
            pm.register(builtin_plugin, "vibecheck-builtins")
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        return build_registry(fill, dirs)

    return activate(build)


def session_registry(config: pytest.Config) -> Registry:
    """The session's registry, built now if not yet (:func:`activate_session_registry`), else
    the process's (:func:`~pytest_vibecheck.registry.get_registry`, when the benchmark plugin is
    disabled with ``-p no:vibecheck``).

    Raises :class:`pytest.UsageError` (one line) for a malformed instruction file, an unknown
    check or an id clash.
    """
    from pytest_vibecheck.errors import VibecheckError
    from pytest_vibecheck.registry import get_registry

    activation = config.stash.get(REGISTRY_KEY, None)
    try:
        return activation.registry if activation is not None else get_registry()
    except VibecheckError as exc:
        raise pytest.UsageError(f"vibecheck: {exc}") from None
