"""pytest-vibecheck's own hooks, added with ``pytest_addhooks`` (as pytest-xdist's ``newhooks``).

Implement them in a ``conftest.py``, a pytest plugin, or a module named by an entry point of the
group ``pytest_vibecheck`` (which the ``vibecheck`` command line loads too; see
:mod:`pytest_vibecheck.registry` and CONTRIBUTING.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import pytest

    from pytest_vibecheck.registry import Registry

#: pytest's own marker (``pytest.hookspec``), without importing pytest (the command line).
hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_vibecheck_register(registry: Registry) -> None:
    """Register backends, instructions, built-in checks, selectors and suite loaders.

    Called once per process (pytest controller, each xdist worker, the ``vibecheck`` command
    line) before anything is looked up; the built-ins register first, through this same hook::

        def pytest_vibecheck_register(registry):
            registry.add_backend("mycloud", "my_package.vibe:make_backend")
            registry.add_check("acme_no_print", my_check)
            registry.add_instruction_dir(Path(__file__).parent / "instructions")

    An id that is already taken raises :class:`~pytest_vibecheck.errors.DuplicateIdError`.
    """


@hookspec
def pytest_vibecheck_report(config: pytest.Config, report: dict[str, Any]) -> None:
    """Called on the controller with the JSON report dict (docs/report-schema.md) before it is
    written and summarised; implementations may add optional top-level fields (such as
    ``shard``). Changing ``items`` or ``aggregates`` is not supported."""
