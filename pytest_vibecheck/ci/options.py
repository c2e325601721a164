"""The CI options of a session (gate, thresholds, sharding), resolved once into :class:`CISettings`.

The options themselves are :data:`pytest_vibecheck.config.settings.CI_OPTIONS` (command line,
environment, ``[tool.vibecheck]``, ini, as every setting).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_vibecheck.config.settings import CI_OPTIONS, resolve_options

if TYPE_CHECKING:  # the gate's plugin imports this module in every session: keep it light
    from pytest_vibecheck.config import thresholds as thmod

__all__ = ["CI_SETTINGS_KEY", "SHARD_TOTAL_KEY", "CISettings", "resolve_ci_settings"]


@dataclass
class CISettings:
    """The resolved CI options of a session."""

    gate: bool = False
    base: str | None = None
    all_lines: bool = False
    gate_config: Path | None = None
    thresholds: list[thmod.Threshold] = field(default_factory=list)
    no_fail_items: bool = False
    shard: tuple[int, int] | None = None
    #: ``--vibe-sarif``: where to write the SARIF log (absolute), or None
    sarif: Path | None = None
    #: where each option's value came from (``--vibe-shard``, ``environment variable ...``)
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def used(self) -> bool:
        """True if any CI option was given; else the plugin registers nothing (invisible)."""
        return bool(self.gate or self.thresholds or self.no_fail_items or self.shard or self.sarif)




CI_SETTINGS_KEY = pytest.StashKey[CISettings]()
#: How many items the run collected before sharding (0 when not sharded).
SHARD_TOTAL_KEY = pytest.StashKey[int]()


def resolve_ci_settings(config: pytest.Config) -> CISettings:
    """Resolve the CI options once (:data:`~pytest_vibecheck.config.settings.CI_OPTIONS`);
    :class:`pytest.UsageError` for a bad value or a gate option without ``--vibe-gate``."""
    values, sources = resolve_options(config, CI_OPTIONS)
    s = CISettings(
        gate=bool(values.get("gate", False)),
        base=values.get("base"),
        all_lines=bool(values.get("all_lines", False)),
        no_fail_items=bool(values.get("no_fail_items", False)),
        thresholds=[*values.get("fail_under", ())],
        shard=values.get("shard"),
    )
    if "max_fr" in values:
        s.thresholds.append(values["max_fr"])
    gate_config = values.get("gate_config")
    if isinstance(gate_config, Path):
        s.gate_config = gate_config if gate_config.is_absolute() else config.invocation_params.dir / gate_config
    sarif = values.get("sarif")
    if isinstance(sarif, Path):
        s.sarif = sarif if sarif.is_absolute() else config.invocation_params.dir / sarif
    gate_only = (s.base, s.all_lines, s.gate_config)
    if not s.gate and any(v for v in gate_only):
        raise pytest.UsageError(
            "vibecheck: --vibe-base, --vibe-gate-all-lines and --vibe-gate-config only apply "
            "with --vibe-gate"
        )
    s.sources = sources
    return s


