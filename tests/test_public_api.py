"""``pytest_vibecheck`` exports its supported API in ``__all__``, lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest_vibecheck


def test_every_name_in_all_resolves() -> None:
    assert set(pytest_vibecheck.__all__) == {*pytest_vibecheck._API, "__version__"}
    for name in pytest_vibecheck.__all__:
        assert getattr(pytest_vibecheck, name) is not None, name
    assert pytest_vibecheck.verify_batch.__module__ == "pytest_vibecheck.verify.api"
    assert pytest_vibecheck.VibeInfraError.__module__ == "pytest_vibecheck.errors"


def test_the_api_verifies() -> None:
    item = pytest_vibecheck.VerifyItem(instructions=[("style_5", {})], code="x = 'a'\n")
    (verdict,) = pytest_vibecheck.verify_batch([item])[0]
    assert verdict.passed is False
    assert [v.rule for v in verdict.violations] == ["Q000"]


def test_importing_the_package_imports_no_layer() -> None:
    code = ("import sys, pytest_vibecheck; "
            "print(sorted(m for m in sys.modules if m.startswith('pytest_vibecheck')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the bottom modules only: the registry container, whose default the package names
    assert out.stdout.strip() == "['pytest_vibecheck', 'pytest_vibecheck.errors', 'pytest_vibecheck.registry']"


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        pytest_vibecheck.nothing_here  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'nothing_here'" in str(exc)
    else:
        raise AssertionError("no AttributeError")
