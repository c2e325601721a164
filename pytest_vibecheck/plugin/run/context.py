"""What the stages (:mod:`~pytest_vibecheck.plugin.run.stages`) and the prefetcher
(:mod:`~pytest_vibecheck.plugin.run.prefetch`) use of the process's runtime.

:class:`~pytest_vibecheck.plugin.run.runtime.Runtime` builds the prefetcher and runs the stages;
they take it as a :class:`StageContext`, so neither imports the module that builds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pytest_vibecheck.config.settings import VibeSettings
    from pytest_vibecheck.execute.executor import TestService
    from pytest_vibecheck.generate.backends.base import Generation, GenerationRequest
    from pytest_vibecheck.generate.generator import Generator
    from pytest_vibecheck.plugin.run.guard import RunGuard
    from pytest_vibecheck.plugin.run.spec import ItemSpec

__all__ = ["StageContext", "VerdictKey"]

#: A remembered verdict's key: sha256 of (reply, code, entry point), instruction id, params.
VerdictKey = tuple[str, str, str]


class StageContext(Protocol):
    """The per-process state an item's stages run with (see the module docstring)."""

    #: the run's resolved settings
    settings: VibeSettings
    #: which requests may still be sent (``--vibe-max-errors``, ``--vibe-budget``)
    guard: RunGuard
    #: one generator per model spec
    generators: dict[str, Generator]
    #: verdicts already computed in this process, by :data:`VerdictKey`
    verdicts: dict[VerdictKey, Any]
    #: True on an xdist worker scheduled by the duration plan
    planned: bool

    def generate(self, model: str, request: GenerationRequest) -> Generation:
        """One generation through the model's generator."""
        ...

    def prepare_batches(self, specs: Iterable[ItemSpec]) -> None:
        """Batch mode: the replies of ``specs`` into the generation cache, once per process
        (a no-op in direct mode)."""
        ...

    def tests(self) -> TestService:
        """Where this process's test runs go (started on first use)."""
        ...

    def started_tests(self) -> TestService | None:
        """The test service if it has started."""
        ...
