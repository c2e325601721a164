"""Batch mode's generations (``--vibe-batch``): every item's requests as batch waves, before
the items run (``pytest_runtestloop``, outside any item's deadline).

:func:`batch_waves` walks the conversations of the items (:func:`stages.conversation`) in
lockstep: wave 1 is the first request of every item (the baseline, each single-turn k, turn 0
of each multi-turn conversation), wave ``t + 1`` the next turn of every multi-turn
conversation whose turn ``t`` was answered. Each wave goes to each model's
:class:`~pytest_vibecheck.generate.batcher.Batcher` (identical requests once: the baseline and
multi-turn turn 0 share one entry), which returns when its replies are in the generation cache.
Then the items run as they always do and read their replies from the cache, so the report is
the one a run through direct requests gives; an item whose request got no reply gets its
recorded failure as an infrastructure error (:meth:`Batcher.miss_error`).

Under pytest-xdist each worker walks the same items (every worker collects them all): the
batches' ledger in the cache file lets the first one submit each request and the others wait
for the same batches.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING

from pytest_vibecheck.plugin.run import stages

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends.base import Generation, GenerationRequest
    from pytest_vibecheck.generate.batcher import Batcher
    from pytest_vibecheck.plugin.run.context import StageContext
    from pytest_vibecheck.plugin.run.spec import ItemSpec

__all__ = ["batch_waves"]


def batch_waves(runtime: StageContext, specs: Iterable[ItemSpec], batchers: dict[str, Batcher]) -> int:
    """Generate the requests of ``specs`` through ``batchers`` (model spec -> batcher), one
    wave per turn; returns the number of waves. Items that cannot run here
    (:func:`stages.not_runnable`) send nothing. Raises a fatal BackendError of a submission."""
    live: list[tuple[ItemSpec, Generator[stages.Step, Generation, None], GenerationRequest]] = []
    for spec in specs:
        if spec.model not in batchers or stages.not_runnable(spec) is not None:
            continue
        steps = stages.conversation(spec, runtime.settings)
        live.append((spec, steps, next(steps)[0]))
    waves = 0
    while live:
        waves += 1
        by_model: dict[str, list[GenerationRequest]] = {}
        for spec, _steps, request in live:
            by_model.setdefault(spec.model, []).append(request)
        for model, requests in by_model.items():
            batchers[model].resolve(requests)
        following = []
        for spec, steps, request in live:
            generator = runtime.generators[spec.model]
            reply = generator.cached(generator.key(request))
            if reply is None:
                continue  # no reply: the item gets its failure when it runs
            with contextlib.suppress(StopIteration):
                following.append((spec, steps, steps.send(reply)[0]))
        live = following
    return waves
