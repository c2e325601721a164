"""Augmentation: select k VeriCode instructions for every problem (paper §3.1).

For each task:

1. a seeded permutation of the taxonomy's instructions; the per-task seed is derived
   from ``(seed, task_id)`` with sha256 (:func:`task_seed`), never Python's ``hash()``,
   and the permutation uses a sha256 counter stream (:class:`SeedStream`), so the result
   is the same on every platform and Python version;
2. one scan in that order: an instruction is kept when the selector judges it relevant
   and it conflicts with none kept so far; the scan stops at ``k``;
3. parameters: the default (the selector may propose a value instead, e.g. an LLM using
   the recommended range), with the docstring convention (``doc_3``) drawn from the seed;
4. validation (:func:`~pytest_vibecheck.verify.params.validate_params`): unknown keys dropped,
   invalid values reset to the default, each change recorded.

Every decision is recorded with its reason in ``Problem.provenance["decisions"]``.
Selectors: :class:`~pytest_vibecheck.suites.selectors.rules.RulesSelector` (``rules``) and
:class:`~pytest_vibecheck.suites.selectors.llm.LLMSelector` (``anthropic:MODEL``, ``openai:MODEL``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.suites.problem import InstructionRef, Problem
from pytest_vibecheck.suites.queries import contradictions, query
from pytest_vibecheck.suites.selectors import Selector, SelectorError, TaskJudgements
from pytest_vibecheck.verify.instructions import (
    TAXONOMY_VERSION,
    Instruction,
    InstructionRegistry,
    default_registry,
)
from pytest_vibecheck.verify.params import validate_params


class SeedStream:
    """Deterministic random numbers from sha256(seed label, counter).

    Unlike :mod:`random`, whose algorithms may change between Python versions, this stream
    is fixed by its definition: block ``i`` is ``sha256(f"{label}:{i}")``.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        self._counter = 0
        self._buffer = b""

    def _bytes(self, n: int) -> bytes:
        while len(self._buffer) < n:
            block = hashlib.sha256(f"{self._label}:{self._counter}".encode()).digest()
            self._counter += 1
            self._buffer += block
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` (rejection sampling on 64-bit draws)."""
        if n <= 0:
            raise ValueError("n must be positive")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            value = int.from_bytes(self._bytes(8), "big")
            if value < limit:
                return value % n

    def shuffle(self, items: list[Any]) -> None:
        """Fisher-Yates shuffle in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.randbelow(i + 1)
            items[i], items[j] = items[j], items[i]

    def choice(self, items: Sequence[Any]) -> Any:
        """One element of a non-empty sequence."""
        return items[self.randbelow(len(items))]


def task_seed(seed: int, task_id: str) -> str:
    """The per-task seed: hex sha256 of ``"{seed}:{task_id}"`` (first 16 hex digits)."""
    return hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()[:16]


def permutation(ids: Sequence[str], seed: int, task_id: str) -> list[str]:
    """The task's seeded order of instruction ids (a permutation of ``sorted(ids)``)."""
    order = sorted(ids)
    SeedStream(f"perm:{task_seed(seed, task_id)}").shuffle(order)
    return order


def draw_params(inst: Instruction, seed: int, task_id: str) -> dict[str, int | str]:
    """Parameters of the paper's rule: defaults, with ``str`` choices (the docstring
    convention of ``doc_3``) drawn uniformly from the seed."""
    out: dict[str, int | str] = {}
    for name, spec in inst.params.items():
        if spec.type == "str" and spec.choices:
            stream = SeedStream(f"param:{task_seed(seed, task_id)}:{inst.id}:{name}")
            out[name] = stream.choice(sorted(spec.choices))
        else:
            out[name] = spec.default
    return out


@dataclass(frozen=True)
class Decision:
    """One step of the scan: ``decision`` is ``kept``, ``irrelevant``, ``conflict`` or ``dropped``."""

    id: str
    decision: str
    rule: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def augment_problem(
    problem: Problem,
    *,
    k: int,
    seed: int,
    selector: Selector,
    registry: InstructionRegistry | None = None,
) -> Problem:
    """Return ``problem`` with ``k`` (or fewer) instructions and their provenance.

    Raises :class:`SelectorError` when the selector cannot judge the task (e.g. an
    unparseable LLM reply, an API error).
    """
    reg = registry if registry is not None else default_registry()
    task_query = query(problem, "paper")
    order_ids = permutation(reg.ids(), seed, problem.task_id)
    order = [reg.get(i) for i in order_ids]
    judged: TaskJudgements = selector.judge_task(problem, order, k)
    decisions: list[Decision] = [
        Decision(i, "dropped", "reply:unknown-id", r) for i, r in judged.dropped
    ]
    kept: list[InstructionRef] = []
    changes: list[str] = []
    for inst in order:
        if len(kept) == k:
            break
        j = judged.judgements.get(inst.id)
        if j is None or not j.relevant:
            rule = j.rule if j is not None else "not-judged"
            reason = j.reason if j is not None else "the selector gave no judgement"
            decisions.append(Decision(inst.id, "irrelevant", rule, reason))
            continue
        against = contradictions([task_query], [inst.id])
        if against:
            decisions.append(
                Decision(
                    inst.id, "conflict", "prompt",
                    f"the task's prompt says {against[0][1]!r}, which contradicts it",
                )
            )
            continue
        clash = next((r.id for r in kept if reg.conflict(inst.id, r.id)), None)
        if clash is not None:
            decisions.append(
                Decision(inst.id, "conflict", "conflict", f"conflicts with {clash}, kept earlier")
            )
            continue
        params: dict[str, object] = dict(draw_params(inst, seed, problem.task_id))
        proposed = judged.params.get(inst.id, {})
        for name, value in proposed.items():
            spec = inst.params.get(name)
            if spec is not None and spec.type == "str" and spec.choices:
                continue  # the docstring convention is drawn from the seed
            params[name] = value
        validated = validate_params(inst, params, warn=False)
        changes.extend(validated.changes)
        kept.append(InstructionRef(inst.id, dict(validated.params)))
        decisions.append(Decision(inst.id, "kept", j.rule, j.reason))
    provenance: dict[str, Any] = {
        "selector": selector.name,
        "selector_version": selector.version,
        "seed": seed,
        "task_seed": task_seed(seed, problem.task_id),
        "taxonomy_version": TAXONOMY_VERSION,
        "k": k,
        "decisions": [d.to_dict() for d in decisions],
    }
    if changes:
        provenance["param_changes"] = changes
    if len(kept) < k:
        provenance["fewer_than_k"] = (
            f"kept {len(kept)} of {k}: no more relevant, non-conflicting instructions"
        )
    provenance.update(judged.extra)
    return dataclasses.replace(problem, instructions=tuple(kept), provenance=provenance)


def augment(
    problems: Sequence[Problem],
    *,
    k: int = 5,
    seed: int = 0,
    selector: Selector,
    registry: InstructionRegistry | None = None,
    suite: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
) -> list[Problem]:
    """Augment every problem (see :func:`augment_problem`); ``suite`` renames them.

    Results are in input order and do not depend on ``workers`` (threads; useful for LLM
    selectors, whose requests wait on the network). Tasks whose selection fails
    (:class:`SelectorError`) do not stop the others; at the end one :class:`SelectorError`
    lists them all (the selector's cache keeps every good reply, so a re-run only repeats
    the failed tasks). ``progress(done, total)`` is called after each task. Raises
    :class:`VibecheckError` for ``k`` outside ``1..30`` or ``workers < 1``.
    """
    reg = registry if registry is not None else default_registry()
    if not 1 <= k <= len(reg):
        raise VibecheckError(f"k must be between 1 and {len(reg)}, got {k}")
    if workers < 1:
        raise VibecheckError(f"workers must be >= 1, got {workers}")
    todo = [dataclasses.replace(p, suite=suite) if suite is not None else p for p in problems]

    def one(prob: Problem) -> Problem | str:
        try:
            return augment_problem(prob, k=k, seed=seed, selector=selector, registry=reg)
        except SelectorError as exc:
            return f"{prob.task_id}: {exc}"

    results: list[Problem | str] = []
    if workers == 1:
        for prob in todo:
            results.append(one(prob))
            if progress is not None:
                progress(len(results), len(todo))
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for res in pool.map(one, todo):
                results.append(res)
                if progress is not None:
                    progress(len(results), len(todo))
    failures = [r for r in results if isinstance(r, str)]
    if failures:
        shown = "; ".join(failures[:5]) + (
            f"; ... ({len(failures)} in all)" if len(failures) > 5 else ""
        )
        raise SelectorError(
            f"instruction selection failed for {len(failures)} of {len(todo)} tasks: {shown}. "
            "Re-run the same command: replies already received are cached."
        )
    return [r for r in results if isinstance(r, Problem)]


def category_shares(
    problems: Sequence[Problem], registry: InstructionRegistry | None = None
) -> dict[str, float]:
    """Fraction (in [0, 1]) of all selected instructions in each category (paper §3.1 reports
    these as percentages). Empty input gives 0.0 for every category."""
    reg = registry if registry is not None else default_registry()
    counts = dict.fromkeys(("logic", "style", "doc", "error", "library"), 0)
    total = 0
    for prob in problems:
        for ref in prob.instructions:
            cat = reg.get(ref.id).category if ref.id in reg else None
            if cat is not None:
                counts[cat] = counts.get(cat, 0) + 1
                total += 1
    return {cat: (n / total if total else 0.0) for cat, n in counts.items()}


#: Category shares of selected instructions reported by the paper (§3.1), as fractions.
PAPER_SHARES: Mapping[str, Mapping[str, float]] = {
    "bigvibebench": {
        "logic": 0.359,
        "style": 0.306,
        "doc": 0.250,
        "error": 0.063,
        "library": 0.022,
    },
    "livevibebench": {
        "logic": 0.423,
        "style": 0.305,
        "doc": 0.263,
        "error": 0.009,
        "library": 0.001,
    },
}
