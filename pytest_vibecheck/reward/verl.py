"""The vibecheck reward as a verl custom reward function.

verl calls a custom reward function in one of three shapes (read from verl 0.9.1 and 0.7.0):

- **the reward loop** (verl >= 0.7: ``reward_model.use_reward_loop=True``, the default from
  0.7.0; the only path from 0.7.1): each ``RewardLoopWorker`` (a Ray actor,
  ``verl/experimental/reward_loop/reward_loop.py``) starts one task per sample and its
  manager (``naive``, ``dapo``, ``limited``, ``remote``, ``gdpo``:
  ``verl/experimental/reward_loop/reward_manager/``) calls, per sample::

      await compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)

  when the function is a coroutine function, else the same call in the event loop's thread
  pool. :func:`compute_score_async` is for this path: the worker's concurrent calls are
  gathered by :class:`~pytest_vibecheck.reward.batcher.MicroBatcher` and scored as one batch;
  :func:`compute_score` (sync) is micro-batched the same way across the pool's threads;
- **the legacy per-sample managers** (verl <= 0.7.0 with ``use_reward_loop=False``;
  ``verl/workers/reward_manager/naive.py``, ``dapo.py``): the same keywords, sync, one sample
  after another: :func:`compute_score`;
- **the legacy batch manager** (``reward_model.reward_manager=batch``,
  ``verl/workers/reward_manager/batch.py``; not known to the reward loop, which raises
  ``ValueError: Unknown reward manager: batch``), once per batch::

      compute_score(data_sources=[...], solution_strs=[...], ground_truths=[...],
                    extra_infos=[...], **reward_kwargs)

  :func:`compute_score_batch`.

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

**Infrastructure failures** (sandbox or verifier error): verl's reward tensor has no "no
reward" value, and an exception is no answer either (verl 0.7.0's legacy ``compute_reward``
catches it and calls the manager again, scoring the whole batch twice before the run
crashes). So such a sample gets ``infra_score`` (default 0.0, a number every manager takes
as it is) with ``infra_error`` 1.0 and ``exec_status`` saying what failed, and is counted and
logged (logger ``pytest_vibecheck.reward``). Failures of the grader come per task (a library
missing from the sandbox), so all of a GRPO group's samples get the same 0.0 and the group's
advantages are 0: no gradient, rather than a penalty. ``reward_kwargs.infra_score=raise``
raises :class:`~pytest_vibecheck.errors.VibecheckError` instead (stops the run).

Nothing is set up at import: each Ray worker process builds its scorer on first use; in a
process connected to Ray (a reward-loop worker is a Ray actor), the sandbox runs go to the
project's Ray executor (:class:`~pytest_vibecheck.reward.core.RewardConfig` ``executor``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any, TypedDict

from pytest_vibecheck.errors import VibecheckError

from .batcher import batcher_for
from .core import RewardConfig, RewardResult, scorer_for

__all__ = ["INFRA_SCORE", "VERL_KEYWORDS", "VerlScore", "compute_score", "compute_score_async",
           "compute_score_batch"]

#: What an infrastructure failure scores by default (``reward_kwargs.infra_score``).
INFRA_SCORE = 0.0

#: Keywords verl's own managers may add (the reward loop's reward-model router, the options of
#: its default scorer): not reward options, ignored.
VERL_KEYWORDS = frozenset({"reward_router_address", "reward_model_tokenizer",
                           "sandbox_fusion_url", "concurrent_semaphore", "memory_limit_mb"})


def _split_options(options: Mapping[str, Any]) -> tuple[RewardConfig, float | None]:
    """The reward config and the infrastructure score (None: raise) of ``reward_kwargs``
    (remembered per distinct options: a per-sample call need not build its config again)."""
    try:
        key = tuple(sorted(options.items()))
        hash(key)
    except TypeError:  # an unhashable option value: no memo
        return _parse_options(options)
    found = _options_memo.get(key)
    if found is None:
        found = _parse_options(options)
        if len(_options_memo) < 256:
            _options_memo[key] = found
    return found


_options_memo: dict[tuple[tuple[str, Any], ...], tuple[RewardConfig, float | None]] = {}


def _parse_options(options: Mapping[str, Any]) -> tuple[RewardConfig, float | None]:
    opts = {k: v for k, v in options.items() if k not in VERL_KEYWORDS}
    infra = opts.pop("infra_score", INFRA_SCORE)
    if infra == "raise":
        return RewardConfig.from_options(opts), None
    if isinstance(infra, bool) or not isinstance(infra, int | float) or not math.isfinite(infra):
        raise VibecheckError(
            f"vibecheck reward: infra_score must be a finite number or 'raise', got {infra!r}"
        )
    return RewardConfig.from_options(opts), float(infra)


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
                f"({res.error}); fix the sandbox, or leave "
                "custom_reward_function.reward_kwargs.infra_score unset to score such samples 0.0"
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

    Calls made at the same time from several threads (the reward loop's thread pool) are
    scored as one batch (:class:`~pytest_vibecheck.reward.batcher.MicroBatcher`); a lone call
    is scored at once. ``reward_kwargs``: :class:`~pytest_vibecheck.reward.core.RewardConfig`
    options (``alpha``, ``if_level``, ``functional``, ``time_limit_s``, ...) and
    ``infra_score``. Raises :class:`~pytest_vibecheck.errors.VibecheckError` for a bad problem
    or option, and for an infrastructure failure only with ``infra_score="raise"``.
    """
    config, infra = _split_options(reward_kwargs)
    problem = _problem_of(ground_truth, extra_info, f"data source {data_source!r}")
    res = batcher_for(config).score_one(solution_str, problem)
    return _score(res, infra, str(res.details.get("problem", data_source)))


async def compute_score_async(
    data_source: Any = None,
    solution_str: str = "",
    ground_truth: Any = None,
    extra_info: Any = None,
    **reward_kwargs: Any,
) -> VerlScore:
    """:func:`compute_score` as a coroutine function, for verl's reward loop
    (``custom_reward_function.name=compute_score_async``): its managers await it on the
    worker's event loop, so every sample of the worker's chunk is in flight at once and they
    are scored together (one Ruff process, one sandbox wave), off the loop's thread."""
    config, infra = _split_options(reward_kwargs)
    problem = _problem_of(ground_truth, extra_info, f"data source {data_source!r}")
    res = await batcher_for(config).score_one_async(solution_str, problem)
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
