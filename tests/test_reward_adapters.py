"""The TRL and verl adapters, called with the argument shapes the frameworks pass.

TRL (``trl/trainer/grpo_trainer.py``, ``_calculate_rewards``): keyword arguments only,
``prompts``, ``completions``, ``completion_ids``, every dataset column but ``prompt`` (one value
per completion), ``trainer_state``, ``log_extra``, ``log_metric``; plain or conversational.
verl (``verl/workers/reward_manager/naive.py`` and ``batch.py``): ``compute_score(data_source=,
solution_str=, ground_truth=, extra_info=)`` per sample, with ``num_turns`` and
``rollout_reward_scores`` added to ``extra_info``; the batch manager passes numpy object arrays
for the non-tensor columns and ``custom_reward_function.reward_kwargs`` as keywords.
"""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.reward.dataset import REWARD_SHIM
from pytest_vibecheck.reward.trl import VibecheckReward, vibecheck_reward
from pytest_vibecheck.reward.verl import compute_score, compute_score_batch

PROBLEM = json.dumps({
    "suite": "toy",
    "task_id": "add",
    "test": {"kind": "humaneval", "entry_point": "add",
             "code": "def check(candidate):\n    assert candidate(2, 3) == 5\n"},
    "entry_point": "add",
    "instructions": [{"id": "doc_1", "params": {}}, {"id": "logic_1", "params": {}}],
})
GOOD = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
UNTYPED = "```python\ndef add(a, b):\n    return a + b\n```"  # doc_1 fails
WRONG = "```python\ndef add(a: int, b: int) -> int:\n    return a * b\n```"
MISSING_LIB = json.dumps({**json.loads(PROBLEM), "libs": ["vibecheck_absent_module_zz"]})


class Logs:
    def __init__(self) -> None:
        self.metrics: dict[str, list[float]] = {}
        self.extra: dict[str, list[Any]] = {}

    def log_metric(self, name: str, value: float) -> None:
        self.metrics.setdefault(name, []).append(value)

    def log_extra(self, column: str, values: list[Any]) -> None:
        self.extra.setdefault(column, []).extend(values)


def test_trl_standard_format_with_dataset_columns() -> None:
    logs = Logs()
    num_generations = 2
    prompts = ["Write add(a, b).", "Write add(a, b)."]  # one prompt, repeated per generation
    completions = [GOOD, UNTYPED]
    rewards = vibecheck_reward(
        prompts=prompts,
        completions=completions,
        completion_ids=[[1, 2, 3], [4, 5]],
        problem=[PROBLEM] * num_generations,
        task_id=["toy::add"] * num_generations,
        trainer_state=None,
        log_extra=logs.log_extra,
        log_metric=logs.log_metric,
    )
    assert rewards == pytest.approx([1.0, 0.8])  # 0.4 * 0.5 + 0.6 * 1.0
    assert all(isinstance(r, float) for r in rewards)
    assert logs.metrics == {"vibecheck/pass_rate": [1.0], "vibecheck/instruction_if": [0.75],
                            "vibecheck/tampered_rate": [0.0], "vibecheck/infra_error_rate": [0.0],
                            "vibecheck/infra_errors": [0.0]}
    assert logs.extra == {"vibecheck_status": ["passed", "passed"],
                          "vibecheck_instruction_if": [1.0, 0.5]}


def test_trl_conversational_format_and_options() -> None:
    prompts = [[{"role": "system", "content": "You write code."},
                {"role": "user", "content": "Write add(a, b)."}]] * 3
    completions = [[{"role": "assistant", "content": c}] for c in (GOOD, UNTYPED, WRONG)]
    reward = VibecheckReward(alpha=1.0)
    assert reward(prompts=prompts, completions=completions, completion_ids=[[1]] * 3,
                  problem=[PROBLEM] * 3) == pytest.approx([1.0, 0.5, 0.0])  # gated: IF only on passing code
    assert reward.__name__ == "vibecheck"  # TRL names the reward's logged metrics after it


def test_trl_infra_failure_is_none_and_missing_columns_are_named() -> None:
    rewards = vibecheck_reward(prompts=["p", "p"], completions=[GOOD, GOOD],
                               completion_ids=[[1], [1]], problem=[PROBLEM, MISSING_LIB])
    assert rewards[0] == pytest.approx(1.0)
    assert rewards[1] is None  # TRL turns None into NaN and leaves it out of the sum
    with pytest.raises(VibecheckError, match=r"no 'problem' or 'task_id' column \(columns: \['answer'\]\)"):
        vibecheck_reward(prompts=["p"], completions=[GOOD], completion_ids=[[1]], answer=["5"],
                         trainer_state=None)
    with pytest.raises(VibecheckError, match="column 'problem' has 1 values for 2 completions"):
        vibecheck_reward(prompts=["p", "p"], completions=[GOOD, GOOD], problem=[PROBLEM])


def test_verl_naive_manager_call() -> None:
    extra_info = {"index": 0, "split": "train", "task_id": "toy::add"}
    extra_info["num_turns"] = None  # what NaiveRewardManager adds before calling
    extra_info["rollout_reward_scores"] = {}
    score = compute_score(data_source="vibecheck/toy", solution_str=UNTYPED,
                          ground_truth=PROBLEM, extra_info=extra_info)
    assert score["score"] == pytest.approx(0.8)
    assert (score["func"], score["instruction_if"], score["task_level_if"]) == (1.0, 0.5, 0.0)
    assert (score["infra_error"], score["exec_status"]) == (0.0, "passed")
    assert sorted(score) == ["exec_status", "func", "infra_error", "instruction_if", "score",
                             "task_level_if"]


def test_verl_batch_manager_call_with_reward_kwargs() -> None:
    n = 4
    extra_infos = np.array([{"index": i, "rollout_reward_scores": {}} for i in range(n)], dtype=object)
    scores = compute_score_batch(
        data_sources=np.array(["vibecheck/toy"] * n, dtype=object),
        solution_strs=[GOOD, UNTYPED, WRONG, GOOD],
        ground_truths=[PROBLEM] * n,
        extra_infos=extra_infos,
        alpha=0.5, if_level="task",  # custom_reward_function.reward_kwargs
    )
    assert [s["score"] for s in scores] == pytest.approx([1.0, 0.5, 0.0, 1.0])  # gated
    assert [s["exec_status"] for s in scores] == ["passed", "passed", "failed", "passed"]
    assert len({tuple(sorted(s)) for s in scores}) == 1  # every row has the same keys


def test_verl_infrastructure_failure_scores_infra_score_or_raises() -> None:
    # default: 0.0, a value every verl manager takes as it is (no exception, so verl 0.7.0's
    # legacy compute_reward does not score the batch a second time), marked infra_error
    score = compute_score("vibecheck/toy", GOOD, MISSING_LIB, {})
    assert (score["score"], score["infra_error"], score["exec_status"]) == (0.0, 1.0, "skipped")
    with pytest.raises(VibecheckError, match="infrastructure failure, not a model failure"):
        compute_score("vibecheck/toy", GOOD, MISSING_LIB, {}, infra_score="raise")
    with pytest.raises(VibecheckError, match="infra_score must be a finite number or 'raise'"):
        compute_score("vibecheck/toy", GOOD, MISSING_LIB, {}, infra_score=float("nan"))
    score = compute_score("vibecheck/toy", GOOD, MISSING_LIB, {}, infra_score=-1.0)
    assert (score["score"], score["infra_error"], score["exec_status"]) == (-1.0, 1.0, "skipped")
    assert math.isnan(score["func"])
    with pytest.raises(VibecheckError, match="ground_truth must be the problem"):
        compute_score("vibecheck/toy", GOOD, None, {})
    with pytest.raises(VibecheckError, match=r"unknown reward option\(s\) \['alhpa'\]"):
        compute_score("vibecheck/toy", GOOD, PROBLEM, {}, alhpa=0.2)
    # a suite task id in extra_info works when ground_truth is empty
    score = compute_score("vibecheck/bigvibebench", "def task_func():\n    pass\n", "",
                          {"task_id": "bigvibebench::BigCodeBench/3"}, functional=False)
    assert score["exec_status"] == "not_run" and 0.0 <= score["score"] <= 1.0


def test_trl_reward_pickles() -> None:
    reward = pickle.loads(pickle.dumps(VibecheckReward(alpha=0.25, if_level="task")))
    assert reward.config.alpha == 0.25
    assert reward(prompts=["p"], completions=[UNTYPED], problem=[PROBLEM]) == pytest.approx([0.75])


FRESH = r"""
import importlib.util, json, multiprocessing as mp, sys

PROBLEM, GOOD, SHIM = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]

def main():
    ctx = mp.get_context("spawn")  # a fresh interpreter: nothing inherited from this one
    from pytest_vibecheck.reward.trl import VibecheckReward
    from pytest_vibecheck.reward.verl import compute_score, compute_score_batch
    with ctx.Pool(1) as pool:
        trl = pool.apply(VibecheckReward(alpha=0.4), kwds=dict(
            prompts=["p"], completions=[[{"role": "assistant", "content": GOOD}]],
            completion_ids=[[1]], problem=[PROBLEM], trainer_state=None))
        verl = pool.apply(compute_score, kwds=dict(
            data_source="vibecheck/toy", solution_str=GOOD, ground_truth=PROBLEM, extra_info={}))
        batch = pool.apply(compute_score_batch, kwds=dict(
            data_sources=["vibecheck/toy"], solution_strs=[GOOD], ground_truths=[PROBLEM],
            extra_infos=[{}]))
    # verl's load_module for a file path: spec_from_file_location under a generated name
    spec = importlib.util.spec_from_file_location("custom_module_1", SHIM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shim = module.compute_score(data_source="vibecheck/toy", solution_str=GOOD,
                                ground_truth=PROBLEM, extra_info={})
    print(json.dumps([trl, verl["score"], batch[0]["score"], shim["score"]]))

if __name__ == "__main__":
    main()
"""


def test_adapters_work_in_a_fresh_worker_process(tmp_path: Path) -> None:
    shim = tmp_path / "vibecheck_reward.py"
    shim.write_text(REWARD_SHIM, encoding="utf-8")
    script = tmp_path / "fresh.py"
    script.write_text(textwrap.dedent(FRESH), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), json.dumps(PROBLEM), json.dumps(GOOD), str(shim)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    trl, verl, batch, by_file = json.loads(done.stdout.strip().splitlines()[-1])
    assert trl == [1.0] and verl == batch == by_file == 1.0


def test_trl_multi_task_rows_without_a_problem_get_none() -> None:
    logs = Logs()
    rewards = vibecheck_reward(prompts=["p", "What is 2+2?", "p"], completions=[GOOD, "4", WRONG],
                               completion_ids=[[1], [2], [3]], problem=[PROBLEM, None, PROBLEM],
                               task=["code", "math", "code"], log_metric=logs.log_metric,
                               log_extra=logs.log_extra)
    assert rewards == [pytest.approx(1.0), None, 0.0]  # gated: wrong code earns nothing
    assert logs.metrics["vibecheck/pass_rate"] == [0.5]  # over the two scored rows
    assert logs.extra["vibecheck_status"] == ["passed", None, "failed"]


def test_verl_reward_loop_call_from_threads() -> None:
    """verl's reward loop runs a sync compute_score in a thread pool, adding its router's
    keywords when a reward model serves too."""
    from concurrent.futures import ThreadPoolExecutor

    def call(solution: str) -> float:
        extra: dict[str, object] = {"num_turns": None, "rollout_reward_scores": {}}
        score = compute_score(data_source="vibecheck/toy", solution_str=solution,
                              ground_truth=PROBLEM, extra_info=extra,
                              reward_router_address="127.0.0.1:1", reward_model_tokenizer=None)["score"]
        assert isinstance(score, float)
        return score

    with ThreadPoolExecutor(4) as pool:
        scores = list(pool.map(call, [GOOD, UNTYPED, WRONG, GOOD]))
    assert scores == pytest.approx([1.0, 0.8, 0.0, 1.0])  # gated: wrong code earns nothing
