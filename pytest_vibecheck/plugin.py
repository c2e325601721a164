"""pytest entry point (``pytest11: vibecheck``).

The plugin only acts when ``--vibe-model`` (or ``--vibe-gate``) is given; otherwise
ordinary test suites are unaffected. Hooks delegate to the modules of this package.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``vibecheck`` option group."""
    parser.getgroup("vibecheck", "VeriCode / Vibe Checker evaluation")
