"""The vibecheck reward as a TRL ``GRPOTrainer`` reward function.

TRL calls each custom reward function with keyword arguments only
(``trl/trainer/grpo_trainer.py``, ``_calculate_rewards``)::

    reward_func(prompts=prompts, completions=completions, completion_ids=completion_ids,
                **reward_kwargs)

where ``reward_kwargs`` holds every dataset column except ``prompt`` (one value per
completion: each prompt's row repeated ``num_generations`` times), ``trainer_state``,
``log_extra``, ``log_metric`` and, with environments, ``environments``. ``completions`` are
strings for a standard dataset and lists of message dicts (``[{"role": "assistant",
"content": ...}]``) for a conversational one. The function returns one float per completion,
or ``None`` where the reward does not apply (TRL turns it into NaN and leaves it out of that
sample's sum): here ``None`` means an infrastructure failure (counted, logged as the metric
``vibecheck/infra_errors`` and by the logger ``pytest_vibecheck.reward``).

A conversational completion with several assistant messages (a draft and then the answer,
tool calls in between) is judged on its final assistant message with text, by default;
``VibecheckReward(messages="all")`` joins them all
(:func:`~pytest_vibecheck.reward.core.completion_text`).

Wiring (the dataset from ``vibecheck export-dataset SUITE --format trl``, whose ``problem``
column each completion is scored against)::

    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer
    from pytest_vibecheck.reward.trl import VibecheckReward

    train = load_dataset("json", data_files="out/train.jsonl", split="train")
    trainer = GRPOTrainer(model=..., reward_funcs=[VibecheckReward(alpha=0.4)],
                          args=GRPOConfig(...), train_dataset=train)

The reward object is picklable and holds no process state: the scorer (Ruff engine, sandbox
pool, suites) is made on first use in whichever process calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pytest_vibecheck.errors import VibecheckError

from .core import RewardConfig, RewardResult, scorer_for

__all__ = ["VibecheckReward", "vibecheck_reward"]


class VibecheckReward:
    """A TRL reward function: ``(prompts, completions, **kwargs) -> list[float | None]``.

    Each completion is scored against its row's ``problem_column`` (default ``"problem"``: an
    inline problem's JSON, as ``vibecheck export-dataset`` writes it), or else its
    ``task_column`` (default ``"task_id"``: ``"SUITE::TASK_ID"``). ``config`` or ``options``
    (:class:`~pytest_vibecheck.reward.core.RewardConfig` fields, e.g. ``alpha=0.4``) set how.

    Rewards are fractions in [0, 1]; ``None`` for an infrastructure failure (never 0), and for
    a row with neither column set (another task's row in a multi-task dataset: TRL leaves that
    reward out of the sample's sum). Rates are over the scored rows. With
    ``log=True`` (default) and TRL's ``log_metric`` / ``log_extra`` present, it logs
    ``vibecheck/pass_rate``, ``vibecheck/instruction_if``, ``vibecheck/tampered_rate``,
    ``vibecheck/infra_error_rate`` and ``vibecheck/infra_errors`` (a count) per batch, and the columns ``vibecheck_status`` and
    ``vibecheck_instruction_if`` in the completions table.

    Raises :class:`~pytest_vibecheck.errors.VibecheckError` when neither column is in the
    batch, or for an unknown problem or instruction.
    """

    def __init__(
        self,
        config: RewardConfig | None = None,
        *,
        problem_column: str = "problem",
        task_column: str = "task_id",
        log: bool = True,
        **options: Any,
    ) -> None:
        if config is not None and options:
            raise VibecheckError("VibecheckReward: give either config or options, not both")
        self.config = config if config is not None else RewardConfig.from_options(options)
        self.problem_column = problem_column
        self.task_column = task_column
        self.log = log
        self.__name__ = "vibecheck"  # TRL names the reward's metrics after it

    def _problems(self, n: int, kwargs: dict[str, Any]) -> list[Any]:
        """Per completion its problem reference, or None for a row with neither column set."""
        columns = []
        for column in (self.problem_column, self.task_column):
            values = kwargs.get(column)
            if values is not None:
                if len(values) != n:
                    raise VibecheckError(
                        f"vibecheck reward: column {column!r} has {len(values)} values for "
                        f"{n} completions"
                    )
                columns.append(list(values))
        if not columns:
            present = sorted(k for k in kwargs if k not in ("trainer_state", "log_extra", "log_metric"))
            raise VibecheckError(
                f"vibecheck reward: the batch has no {self.problem_column!r} or "
                f"{self.task_column!r} column (columns: {present}); train on a dataset from "
                "`vibecheck export-dataset SUITE --format trl`, or name the column with "
                "VibecheckReward(problem_column=...)"
            )
        return [next((col[i] for col in columns if col[i] not in (None, "")), None) for i in range(n)]

    def results(self, completions: Sequence[Any], **kwargs: Any) -> list[RewardResult | None]:
        """The full :class:`~pytest_vibecheck.reward.core.RewardResult` of each completion; None
        for a row without a problem (another task's row in a multi-task dataset)."""
        problems = self._problems(len(completions), kwargs)
        rows = [i for i, p in enumerate(problems) if p is not None]
        out: list[RewardResult | None] = [None] * len(problems)
        if rows:
            scored = scorer_for(self.config).score([completions[i] for i in rows],
                                                   [problems[i] for i in rows])
            for i, res in zip(rows, scored, strict=True):
                out[i] = res
        return out

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        completion_ids: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        if completions is None:
            raise VibecheckError("vibecheck reward: called without completions")
        results = self.results(completions, **kwargs)
        if self.log:
            _log(results, kwargs.get("log_metric"), kwargs.get("log_extra"))
        return [None if r is None else r.reward for r in results]

    def __repr__(self) -> str:
        return f"VibecheckReward({self.config!r})"


def _log(all_results: Sequence[RewardResult | None], log_metric: Any, log_extra: Any) -> None:
    results = [r for r in all_results if r is not None]
    n = max(1, len(results))
    judged = [r.instruction_if for r in results if r.instruction_if is not None]
    if callable(log_metric):
        metric: Callable[[str, float], None] = log_metric
        metric("vibecheck/pass_rate", sum(r.func == 1.0 for r in results) / n)
        metric("vibecheck/instruction_if", sum(judged) / len(judged) if judged else 0.0)
        metric("vibecheck/tampered_rate", sum(r.exec_status == "tampered" for r in results) / n)
        metric("vibecheck/infra_error_rate", sum(r.is_infra_error for r in results) / n)
        metric("vibecheck/infra_errors", float(sum(r.is_infra_error for r in results)))
    if callable(log_extra):
        log_extra("vibecheck_status", [
            None if r is None else r.exec_status if r.status == "ok" else "infra_error"
            for r in all_results])
        log_extra("vibecheck_instruction_if",
                  [None if r is None else r.instruction_if for r in all_results])


def vibecheck_reward(
    prompts: Sequence[Any] | None = None,
    completions: Sequence[Any] | None = None,
    completion_ids: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """The default reward (``alpha`` 0.4, instruction-level IF, tests and instructions) as a
    plain function: ``GRPOTrainer(reward_funcs=[vibecheck_reward], ...)``. See
    :class:`VibecheckReward` for the columns it reads and what it returns."""
    return _DEFAULT(prompts, completions, completion_ids, **kwargs)


_DEFAULT = VibecheckReward()
