"""The shared vocabulary (pytest_vibecheck.types) is defined once and used everywhere."""

from __future__ import annotations

from typing import get_args

from pytest_vibecheck import types
from pytest_vibecheck.config import settings
from pytest_vibecheck.execute.tests import ExecStatus
from pytest_vibecheck.generate import cache, protocols
from pytest_vibecheck.verify import api, extract


def test_each_tuple_lists_its_literal_in_order() -> None:
    assert types.PROTOCOLS == ("baseline", "single", "multi") == get_args(types.ProtocolName)
    assert types.CACHE_MODES == ("use", "refresh", "only", "off") == get_args(types.CacheMode)
    assert types.EXTRACT_MODES == ("first", "best") == get_args(types.ExtractMode)
    assert get_args(types.TestStatus) == types.TEST_STATUSES
    assert types.OUTCOMES == ("passed", "failed", "error", "skipped") == get_args(types.Outcome)
    assert get_args(types.ErrorKind) == types.ERROR_KINDS
    assert len(types.ERROR_KINDS) == 8


def test_the_layers_use_the_same_objects() -> None:
    assert settings.PROTOCOLS is getattr(protocols, "PROTOCOLS") is types.PROTOCOLS  # noqa: B009
    assert getattr(settings, "CACHE_MODES") is cache.CACHE_MODES is types.CACHE_MODES  # noqa: B009
    assert getattr(settings, "EXTRACT_MODES") is types.EXTRACT_MODES  # noqa: B009
    assert api.ExtractMode is extract.ExtractMode is types.ExtractMode
    assert ExecStatus is types.TestStatus
