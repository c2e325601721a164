"""The vibecheck reward as a verl custom reward function.

verl's reward managers call a custom ``compute_score`` with keyword arguments
(``verl/workers/reward_manager/naive.py``; the signature of
``verl.utils.reward_score.default_compute_score``)::

    compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)

and, with ``reward_model.reward_manager=batch`` (``verl/workers/reward_manager/batch.py``),
once per batch::

    compute_score(data_sources=[...], solution_strs=[...], ground_truths=[...],
                  extra_infos=[...], **reward_kwargs)

``ground_truth`` is the row's ``reward_model.ground_truth`` and ``extra_info`` its
``extra_info`` (the manager adds ``num_turns`` and ``rollout_reward_scores``); the options in
``custom_reward_function.reward_kwargs`` arrive as extra keyword arguments. A score is a float
or a dict with ``"score"`` (the other keys are logged as ``reward_extra_info``; every row must
have the same keys).

Here ``ground_truth`` is the problem: an inline problem's JSON (what
``vibecheck export-dataset SUITE --format verl`` writes) or a suite task id
``"SUITE::TASK_ID"``. Each score is a dict: ``score`` (the composite in [0, 1]), ``func``,
``instruction_if``, ``task_level_if`` (NaN when not measured), ``infra_error`` (0.0 or 1.0) and
``exec_status``.

verl's reward tensor has no "no reward" value, so an **infrastructure failure** (sandbox or
verifier error) raises :class:`~pytest_vibecheck.errors.VibecheckError` by default rather than
scoring the sample 0; set ``custom_reward_function.reward_kwargs.infra_score`` to a number to
use that score instead (the dict then has ``infra_error`` 1.0).

Wiring (``data.train_files`` from ``vibecheck export-dataset``; it also writes
``vibecheck_reward.py``, a two-line file that imports these functions)::

    custom_reward_function.path=out/vibecheck_reward.py
    custom_reward_function.name=compute_score            # naive or dapo reward manager
    # or, one call per batch (faster: one Ruff run and parallel sandboxes per batch):
    reward_model.reward_manager=batch custom_reward_function.name=compute_score_batch
    +custom_reward_function.reward_kwargs.alpha=0.4

(verl's ``prime`` manager turns any exception into a score of 0.0 and needs a number: use
``naive``, ``dapo`` or ``batch``.) Nothing is set up at import: each Ray worker process builds its
scorer on first use.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any, TypedDict

from pytest_vibecheck.errors import VibecheckError

from .core import RewardConfig, RewardResult, scorer_for

__all__ = ["VERL_KEYWORDS", "VerlScore", "compute_score", "compute_score_batch"]

#: Keywords verl's own managers may add (the reward loop's reward-model router, the options of
#: its default scorer): not reward options, ignored.
VERL_KEYWORDS = frozenset({"reward_router_address", "reward_model_tokenizer",
                           "sandbox_fusion_url", "concurrent_semaphore", "memory_limit_mb"})


def _split_options(options: Mapping[str, Any]) -> tuple[RewardConfig, float | None]:
    opts = {k: v for k, v in options.items() if k not in VERL_KEYWORDS}
    infra = opts.pop("infra_score", None)
    if infra is not None and (isinstance(infra, bool) or not isinstance(infra, int | float)):
        raise VibecheckError(f"vibecheck reward: infra_score must be a number, got {infra!r}")
    return RewardConfig.from_options(opts), (None if infra is None else float(infra))


def _problem_of(ground_truth: Any, extra_info: Any, where: str) -> Any:
    if isinstance(ground_truth, str | Mapping) and ground_truth:
        return ground_truth
    if isinstance(extra_info, Mapping) and isinstance(extra_info.get("task_id"), str):
        return extra_info["task_id"]
    raise VibecheckError(
        f"vibecheck reward: {where}: ground_truth must be the problem (inline problem JSON or "
        f"'SUITE::TASK_ID'), got {type(ground_truth).__name__}; make the data with "
        "`vibecheck export-dataset SUITE --format verl`"
    )


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


class VerlScore(TypedDict):
    """One sample's score as verl takes it: ``score`` and the parts it logs (NaN where a part
    was not measured; ``infra_error`` 1.0 for an infrastructure failure scored ``infra_score``)."""

    score: float
    func: float
    instruction_if: float
    task_level_if: float
    infra_error: float
    exec_status: str


def _score(res: RewardResult, infra_score: float | None, where: str) -> VerlScore:
    if res.reward is None:
        if infra_score is None:
            raise VibecheckError(
                f"vibecheck reward: {where}: infrastructure failure, not a model failure "
                f"({res.error}); fix the sandbox or set "
                "custom_reward_function.reward_kwargs.infra_score to score such samples"
            )
        score = infra_score
    else:
        score = res.reward
    return {
        "score": float(score),
        "func": _nan(res.func),
        "instruction_if": _nan(res.instruction_if),
        "task_level_if": _nan(res.task_level_if),
        "infra_error": 1.0 if res.is_infra_error else 0.0,
        "exec_status": res.exec_status,
    }


def compute_score(
    data_source: Any = None,
    solution_str: str = "",
    ground_truth: Any = None,
    extra_info: Any = None,
    **reward_kwargs: Any,
) -> VerlScore:
    """verl's per-sample reward: the score dict of ``solution_str`` against ``ground_truth``.

    ``reward_kwargs``: :class:`~pytest_vibecheck.reward.core.RewardConfig` options (``alpha``,
    ``if_level``, ``functional``, ``time_limit_s``, ...) and ``infra_score``. Raises
    :class:`~pytest_vibecheck.errors.VibecheckError` for a bad problem or option, and for an
    infrastructure failure unless ``infra_score`` is set.
    """
    config, infra = _split_options(reward_kwargs)
    problem = _problem_of(ground_truth, extra_info, f"data source {data_source!r}")
    res = scorer_for(config).score([solution_str], [problem])[0]
    return _score(res, infra, str(res.details.get("problem", data_source)))


def compute_score_batch(
    data_sources: Collection[Any] = (),
    solution_strs: Collection[str] = (),
    ground_truths: Collection[Any] = (),
    extra_infos: Collection[Any] | None = None,
    **reward_kwargs: Any,
) -> list[VerlScore]:
    """verl's batched reward (``reward_manager=batch``): one score dict per solution, all
    verified in one Ruff run and executed in parallel sandboxes, identical pairs once.

    Each argument is a list or, as verl's batch manager passes its non-tensor columns, a numpy
    object array (anything with a length that iterates in row order). Same options and errors
    as :func:`compute_score`; the lists must have equal lengths.
    """
    config, infra = _split_options(reward_kwargs)
    n = len(solution_strs)
    infos: Collection[Any] = extra_infos if extra_infos is not None else [None] * n
    if len(ground_truths) != n or len(infos) != n:
        raise VibecheckError(
            f"vibecheck reward: {n} solutions, {len(ground_truths)} ground truths and "
            f"{len(infos)} extra infos; they must be the same length"
        )
    problems = [
        _problem_of(gt, info, f"row {i}")
        for i, (gt, info) in enumerate(zip(ground_truths, infos, strict=True))
    ]
    results = scorer_for(config).score(list(solution_strs), problems)
    return [
        _score(res, infra, str(res.details.get("problem", f"row {i}")))
        for i, res in enumerate(results)
    ]
