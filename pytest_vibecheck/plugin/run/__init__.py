"""Running items (this subpackage): messages -> generate (cached) -> extract -> tests -> verify -> result.

:func:`run_item_for` runs one :class:`~pytest_vibecheck.plugin.items.VibeItem` and returns an
:class:`ItemOutcome` whose ``record`` (builtins only, docs/report-schema.md ``items[]``) is in the
item's ``user_properties`` under ``"vibecheck"``; the controller aggregates it.

- baseline / single-turn: one generation (paper §3.2), its code tested and verified against the
  judged instructions (baseline: all of the problem's instructions, never asked for; single-turn:
  the first k).
- multi-turn, k = K: one conversation of K + 1 replies (turn 0 = the plain query, shared with the
  baseline through the generation cache; then one edit turn per instruction). Every turn's code
  is tested and verified against the instructions given so far (turn 0: all of the problem's,
  as the baseline). The item is judged at turn K.

The item passes iff its tests pass and every instruction passes. An infrastructure failure (API
error after retries, rate limit, a cache miss in mode ``only``, a replay miss, a sandbox or
verifier error) raises :class:`VibeInfraError` during setup: a pytest *error*, left out of the
metrics. A reply with no code is a model failure: the tests run (and fail) and every instruction
counts as not followed (violation ``NO-CODE``).

Batching: the work of an item is done in stages over a *window* of the items this process will
run next (:class:`Prefetcher`): their generations run concurrently (up to ``--vibe-concurrency``
per process), then all their turns are verified in one Ruff batch, then their distinct programs
are tested. The item itself then only assembles its record. Results do not depend on the window.

Modules, one job each: :mod:`.spec` (what an item evaluates), :mod:`.record` (an item's
prepared work and its report record), :mod:`.failure` (infrastructure errors and the failure
text), :mod:`.stages` (generate, verify, test), :mod:`.prefetch` (which items to prepare together),
:mod:`.runtime` (the per-process state and :func:`run_item_for`).
"""

from __future__ import annotations

from pytest_vibecheck.plugin.run.failure import VibeFailure, VibeInfraError
from pytest_vibecheck.plugin.run.prefetch import Prefetcher
from pytest_vibecheck.plugin.run.record import ItemOutcome, has_no_code
from pytest_vibecheck.plugin.run.runtime import RUNTIME_KEY, Runtime, run_item_for
from pytest_vibecheck.plugin.run.spec import ItemSpec, default_setup

__all__ = [
    "RUNTIME_KEY",
    "ItemOutcome",
    "ItemSpec",
    "Prefetcher",
    "Runtime",
    "VibeFailure",
    "VibeInfraError",
    "default_setup",
    "has_no_code",
    "run_item_for",
]
