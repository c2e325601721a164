"""pytest-vibecheck's own hooks, added with ``pytest_addhooks`` (as pytest-xdist's ``newhooks``).

Implement them in a ``conftest.py`` or a plugin.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_vibecheck_report(config: pytest.Config, report: dict[str, Any]) -> None:
    """Called on the controller with the JSON report dict (docs/report-schema.md) before it is
    written and summarised; implementations may add optional top-level fields (such as
    ``shard``). Changing ``items`` or ``aggregates`` is not supported."""
