"""What one benchmark item evaluates: :class:`ItemSpec` (suite, problem, model, protocol, k,
sample) and the judged instructions it implies."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_vibecheck.generate.setup import generation_setup
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.profiles import DEFAULT_PROFILE, GenerationSetup, get_profile
from pytest_vibecheck.types import ParamValue, ProtocolName

__all__ = ["ItemSpec", "Judged", "default_setup"]

#: The instructions judged on one turn: ``(position, instruction id, params)``.
Judged = tuple[tuple[int, str, dict[str, ParamValue]], ...]


@dataclass(frozen=True)
class ItemSpec:
    """What one item evaluates. ``label`` is the model's short name in node ids; ``setup``
    the suite's generation settings under the run's profile (system prompt, temperature,
    LiveCodeBench query style)."""

    suite: str
    suite_hash: str | None
    problem: Problem
    model: str
    label: str
    protocol: ProtocolName
    k: int
    sample: int
    #: third-party modules the problem's tests need that this environment lacks (found at
    #: collection); the item is then skipped without a request
    missing_modules: tuple[str, ...] = ()
    setup: GenerationSetup = field(default_factory=lambda: default_setup())

    @property
    def instructions(self) -> Judged:
        """The instructions judged, ``(position, id, params)``: for baseline all of the
        problem's (never asked for), else the first k."""
        refs = self.problem.instructions
        chosen = refs if self.protocol == "baseline" else refs[: self.k]
        return tuple((i, ref.id, dict(ref.params)) for i, ref in enumerate(chosen, start=1))


def default_setup() -> GenerationSetup:
    """The default profile's generation settings for a suite without manifest settings."""
    return generation_setup(get_profile(DEFAULT_PROFILE), None)
