"""``reference``: answers every request with the task's canonical solution as a fenced reply.

A harness check: with the reference model every task whose canonical solution passes its
tests must pass (pass@1 = 100% on ``bigvibebench-lite``). Multi-turn turns get the same
reply. The solution comes from ``request.reference`` (filled by
:func:`pytest_vibecheck.generate.generator.request_for`). Never cached: it is local and instant.
"""

from __future__ import annotations

from pytest_vibecheck.generate.backends.base import (
    Backend,
    BackendSettings,
    Generation,
    GenerationRequest,
    ReplayMissError,
    fence,
)


class ReferenceBackend(Backend):
    """Replies ```` ```python\\n<canonical solution>\\n``` ````; usage is 0 tokens."""

    provider = "reference"
    model = ""
    cacheable = False

    def generate(self, request: GenerationRequest) -> Generation:
        """The fenced canonical solution; ReplayMissError if the task has none."""
        if request.reference is None:
            raise ReplayMissError(
                f"reference: {request.describe()} has no canonical solution (some suites, such as "
                "livevibebench, have none); use another model for this suite",
                task_id=request.task_id,
                label=request.label,
            )
        return Generation(
            text=fence(request.reference),
            usage={"input_tokens": 0, "output_tokens": 0},
            latency_s=0.0,
            model="reference",
            cached=False,
            finish_reason="stop",
        )


def from_spec(model: str, settings: BackendSettings) -> Backend:
    """Factory of ``reference`` (the model part is ignored)."""
    return ReferenceBackend()
