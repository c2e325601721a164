"""VeriCode and the sandbox as a reward for RL on code (TRL, verl, or any loop).

``score_batch(completions, problems)`` scores each completion against its problem (a suite task
id ``"bigvibebench::BigCodeBench/13"`` or an inline problem): the unit tests in the sandbox,
the VeriCode instructions through the batch Ruff engine, and the paper's composite
(Vibe Checker, arXiv 2510.07315, §4.5) gated by the tests by default,
``func * (alpha * IF + 1 - alpha)`` (``composite="blend"``: the paper's
``alpha * IF + (1 - alpha) * func``). Infrastructure
failures come back as ``reward=None`` with ``status="infra_error"``, never as 0.

Framework adapters: :class:`pytest_vibecheck.reward.trl.VibecheckReward` (TRL ``GRPOTrainer``
``reward_funcs``) and :func:`pytest_vibecheck.reward.verl.compute_score` /
:func:`~pytest_vibecheck.reward.verl.compute_score_batch` (verl ``custom_reward_function``).
Datasets for them: ``vibecheck export-dataset SUITE --format trl|verl --out DIR``
(:mod:`pytest_vibecheck.reward.dataset`). Guide: ``docs/reward.md``.
"""

from __future__ import annotations

from .core import (
    FUNC_STATUSES,
    Executor,
    InstructionOutcome,
    RewardConfig,
    RewardResult,
    RewardScorer,
    completion_text,
    score_batch,
    scorer_for,
)
from .problems import ProblemRef, inline_problem, resolve_problem, suite_problem

__all__ = [
    "FUNC_STATUSES",
    "Executor",
    "InstructionOutcome",
    "ProblemRef",
    "RewardConfig",
    "RewardResult",
    "RewardScorer",
    "completion_text",
    "inline_problem",
    "resolve_problem",
    "score_batch",
    "scorer_for",
    "suite_problem",
]
