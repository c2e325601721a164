"""The reward API: composite values, batching and dedup, infrastructure failures, bad input.

Every test runs the real Ruff engine; tests marked by their sandbox use run the candidate in the
real sandbox. A stand-in executor appears only where a test needs a status the sandbox cannot be
made to produce on demand (``error`` from a crashed executor, an unknown status).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_vibecheck.errors import UnknownIdError, VibecheckError
from pytest_vibecheck.execute.tests import ExecResult
from pytest_vibecheck.reward import (
    RewardConfig,
    RewardScorer,
    completion_text,
    inline_problem,
    score_batch,
)
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.verify.ruff_engine import RuffEngine

#: doc_1 (annotations), doc_5 (no comments or docstrings), logic_1 (Pyflakes), style_5 (double quotes).
ADD = {
    "test": {
        "kind": "humaneval",
        "code": "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
        "entry_point": "add",
    },
    "entry_point": "add",
    "instructions": ["doc_1", "doc_5", "logic_1", {"id": "style_5", "params": {}}],
}

ALL_MET = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```\n"
HALF_MET = "```python\ndef add(a, b):\n    # the sum\n    return a + b\n```\n"  # doc_1, doc_5 fail
WRONG = "```python\ndef add(a: int, b: int) -> int:\n    return a - b\n```\n"
NO_CODE = "I cannot help with that."


class CountingExecutor:
    """Returns a fixed status for every program and records what it was asked to run."""

    def __init__(self, status: str = "passed") -> None:
        self.status = status
        self.calls: list[list[tuple[str, Problem]]] = []

    def __call__(self, pairs: Sequence[tuple[str, Problem]]) -> list[ExecResult]:
        self.calls.append(list(pairs))
        # any status, unknown ones too (test_unknown_status_is_infra_...): not always a TestStatus
        return [ExecResult(status=self.status, message=f"stand-in {self.status}") for _ in pairs]  # type: ignore[arg-type]


def test_composite_in_the_real_sandbox() -> None:
    res = score_batch([ALL_MET, HALF_MET, WRONG, NO_CODE], [ADD] * 4)
    assert [r.status for r in res] == ["ok"] * 4
    assert [r.exec_status for r in res] == ["passed", "passed", "failed", "no_code"]
    assert [r.func for r in res] == [1.0, 1.0, 0.0, 0.0]
    assert [r.instruction_if for r in res] == [1.0, 0.5, 1.0, 0.0]
    assert [r.task_level_if for r in res] == [1.0, 0.0, 1.0, 0.0]
    # the default composite, gated: func * (0.4 * IF + 0.6); wrong code earns nothing
    assert [r.reward for r in res] == pytest.approx([1.0, 0.8, 0.0, 0.0])
    assert [(v.id, v.passed) for v in res[1].verdicts] == [
        ("doc_1", False), ("doc_5", False), ("logic_1", True), ("style_5", True)]
    assert {v.rule for v in res[1].verdicts[1].violations} == {"comment"}
    assert {v.rule for v in res[3].verdicts[0].violations} == {"NO-CODE"}
    assert res[2].details["failed_tests"] == ["check"]
    assert res[0].details["extraction"] == "fenced-first"
    json.dumps([r.to_dict() for r in res])  # JSON-ready


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"alpha": 1.0}, [1.0, 0.5, 0.0]),
        ({"alpha": 0.0}, [1.0, 1.0, 0.0]),
        ({"alpha": 0.5, "if_level": "task"}, [1.0, 0.5, 0.0]),
        ({"alpha": 0.4, "composite": "gated"}, [1.0, 0.8, 0.0]),
        # the paper's composite pays alpha * IF to code that fails its tests
        ({"alpha": 0.4, "composite": "blend"}, [1.0, 0.8, 0.4]),
        ({"alpha": 1.0, "composite": "blend"}, [1.0, 0.5, 1.0]),
        ({"alpha": 0.5, "if_level": "task", "composite": "blend"}, [1.0, 0.5, 0.5]),
        ({"functional": False}, [1.0, 0.5, 1.0]),
        ({"instructions": False}, [1.0, 1.0, 0.0]),
        ({"k": 1}, [1.0, 0.6, 0.0]),  # only doc_1 judged
        ({"k": 1, "composite": "blend"}, [1.0, 0.6, 0.4]),
    ],
)
def test_weights_and_composite_are_configurable(options: dict[str, Any], expected: list[float]) -> None:
    def run(pairs: Sequence[tuple[str, Problem]]) -> list[ExecResult]:
        # passed unless the code subtracts: the same outcomes as the sandbox, without it
        return [ExecResult(status="failed" if "a - b" in code else "passed") for code, _p in pairs]

    res = score_batch([ALL_MET, HALF_MET, WRONG], [ADD] * 3, RewardConfig(**options), executor=run)
    assert [r.reward for r in res] == pytest.approx(expected)


def test_if_only_never_runs_the_tests() -> None:
    execu = CountingExecutor()
    res = score_batch([HALF_MET], [ADD], RewardConfig(functional=False), executor=execu)
    assert execu.calls == []
    assert (res[0].func, res[0].exec_status, res[0].reward) == (None, "not_run", 0.5)


def test_identical_pairs_are_computed_once() -> None:
    execu = CountingExecutor()
    other = dict(ADD, instructions=["logic_1"])
    completions = [ALL_MET, HALF_MET, ALL_MET, ALL_MET, HALF_MET, ALL_MET]
    problems = [ADD, ADD, ADD, ADD, ADD, other]
    res = score_batch(completions, problems, executor=execu)
    assert len(execu.calls) == 1
    # 3 distinct (completion, problem) pairs but only 2 distinct programs for the same tests
    assert len(execu.calls[0]) == 2
    assert [r.reward for r in res] == pytest.approx([1.0, 0.8, 1.0, 1.0, 0.8, 1.0])
    assert [r.details["shared"] for r in res] == [False, False, True, True, True, False]
    assert [v.id for v in res[5].verdicts] == ["logic_1"]


@pytest.mark.parametrize("status", ["error", "skipped"])
def test_sandbox_failure_is_an_infrastructure_failure_not_zero(status: str) -> None:
    res = score_batch([WRONG, ALL_MET], [ADD] * 2, executor=CountingExecutor(status))
    assert [r.reward for r in res] == [None, None]
    assert [r.status for r in res] == ["infra_error"] * 2
    assert all(r.is_infra_error and f"sandbox {status}" in (r.error or "") for r in res)
    assert [r.instruction_if for r in res] == [1.0, 1.0]  # what was measured is kept


def test_infrastructure_failures_are_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Each batch with infrastructure failures logs one warning (logger
    ``pytest_vibecheck.reward``) with its count, the running totals and the first error; the
    scorer keeps the totals (``scored``, ``infra_errors``); a batch without any logs nothing."""
    scorer = RewardScorer(executor=CountingExecutor("error"))
    with caplog.at_level("WARNING", logger="pytest_vibecheck.reward"):
        scorer.score([WRONG, ALL_MET], [ADD] * 2)
        scorer.score([HALF_MET], [ADD])
    assert (scorer.scored, scorer.infra_errors) == (3, 3)
    lines = [r.getMessage() for r in caplog.records if r.name == "pytest_vibecheck.reward"]
    assert len(lines) == 2
    assert lines[0].startswith("vibecheck reward: 2 of 2 completions in this batch were "
                               "infrastructure failures, not model failures (2 of 2 so far); first: ")
    assert "(3 of 3 so far)" in lines[1] and "sandbox error" in lines[1]
    caplog.clear()
    fine = RewardScorer(executor=CountingExecutor())
    with caplog.at_level("WARNING", logger="pytest_vibecheck.reward"):
        fine.score([ALL_MET], [ADD])
    assert (fine.scored, fine.infra_errors, caplog.records) == (1, 0, [])


def test_missing_library_in_the_real_sandbox_is_infra() -> None:
    prob = dict(ADD, libs=["vibecheck_absent_module_zz"])
    (res,) = score_batch([ALL_MET], [prob])
    assert (res.reward, res.status, res.exec_status) == (None, "infra_error", "skipped")
    assert "vibecheck_absent_module_zz" in (res.error or "")


def test_an_executor_that_crashes_or_miscounts_is_infra() -> None:
    def crash(pairs: Sequence[tuple[str, Problem]]) -> list[ExecResult]:
        raise RuntimeError("cluster gone")

    def short(pairs: Sequence[tuple[str, Problem]]) -> list[ExecResult]:
        return []

    for execu, text in ((crash, "cluster gone"), (short, "returned 0 results for 1")):
        (res,) = score_batch([ALL_MET], [ADD], executor=execu)
        assert res.reward is None and res.status == "infra_error" and text in (res.error or "")
    (res,) = score_batch([NO_CODE], [ADD], executor=crash)  # no code: nothing to run, a model failure
    assert (res.reward, res.status) == (0.0, "ok")


def test_unknown_status_is_infra_and_tampered_is_a_model_failure() -> None:
    (odd,) = score_batch([ALL_MET], [ADD], executor=CountingExecutor("weird"))
    assert odd.reward is None and "unknown execution status 'weird'" in (odd.error or "")
    (tam,) = score_batch([ALL_MET], [ADD], executor=CountingExecutor("tampered"))
    assert (tam.status, tam.func, tam.exec_status) == ("ok", 0.0, "tampered")
    assert tam.reward == 0.0  # the default composite (gated) pays no IF to tampering code
    (blend,) = score_batch([ALL_MET], [ADD], RewardConfig(composite="blend"),
                           executor=CountingExecutor("tampered"))
    assert blend.reward == pytest.approx(0.4)  # the paper's: 0.4 * 1.0 + 0.6 * 0


def test_verifier_failure_is_infra() -> None:
    scorer = RewardScorer(RewardConfig(), engine=RuffEngine("/nonexistent/ruff"),
                          executor=CountingExecutor())
    (res,) = scorer.score([ALL_MET], [ADD])
    assert res.reward is None and res.status == "infra_error"
    assert "could not be judged" in (res.error or "") and res.func == 1.0


def test_suite_task_ids_in_the_real_sandbox() -> None:
    from pytest_vibecheck.suites.store import load_suite

    prob = load_suite("bigvibebench").get("BigCodeBench/3")
    assert prob.canonical_solution is not None
    res = score_batch([prob.canonical_solution, "def task_func():\n    return None\n"],
                      ["bigvibebench::BigCodeBench/3"] * 2)
    assert [r.exec_status for r in res] == ["passed", "failed"]
    assert [len(r.verdicts) for r in res] == [5, 5]
    assert [v.id for v in res[0].verdicts] == [i.id for i in prob.instructions]
    assert res[0].details["problem"] == "bigvibebench::BigCodeBench/3"


def test_conversational_completions() -> None:
    assert completion_text([{"role": "assistant", "content": "x = 1"}]) == "x = 1"
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "y"}]}]) == "y"
    assert completion_text({"role": "assistant", "content": "z"}) == "z"
    with pytest.raises(VibecheckError, match="expected a string or a list"):
        completion_text(3)
    res = score_batch([[{"role": "assistant", "content": ALL_MET}]], [ADD],
                      executor=CountingExecutor())
    assert res[0].reward == 1.0


def test_bad_input_is_one_clear_error() -> None:
    with pytest.raises(VibecheckError, match="2 completions but 1 problems"):
        score_batch([ALL_MET, ALL_MET], [ADD])
    with pytest.raises(UnknownIdError, match="did you mean 'bigvibebench'"):
        score_batch([ALL_MET], ["bigvibebnch::BigCodeBench/3"])
    with pytest.raises(UnknownIdError, match="task of suite 'bigvibebench'"):
        score_batch([ALL_MET], ["bigvibebench::BigCodeBench/99999"])
    with pytest.raises(VibecheckError, match="SUITE::TASK_ID"):
        score_batch([ALL_MET], ["BigCodeBench/3"])
    with pytest.raises(UnknownIdError, match="did you mean 'style_1'"):
        inline_problem(dict(ADD, instructions=["styl_1"]))
    with pytest.raises(VibecheckError, match="line_length"):
        inline_problem(dict(ADD, instructions=[{"id": "style_3", "params": {"line_length": 3}}]))
    with pytest.raises(VibecheckError, match="field 'test' is missing") as missing:
        inline_problem({"entry_point": "f"})
    assert 'give {"kind", "code", "cases", "entry_point"} (see' in str(missing.value)
    with pytest.raises(VibecheckError, match="unknown test kind"):
        inline_problem({"test": {"kind": "pytest"}})
    with pytest.raises(VibecheckError, match=r"unknown field\(s\) \['tets'\]"):
        inline_problem(dict(ADD, tets=1))
    with pytest.raises(VibecheckError, match="alpha must be a number in"):
        RewardConfig(alpha=1.5)
    with pytest.raises(VibecheckError, match=r"unknown reward option\(s\) \['alfa'\]"):
        RewardConfig.from_options({"alfa": 0.3})


def test_inline_problem_json_and_defaults() -> None:
    prob = inline_problem(json.dumps(dict(ADD, instructions=["style_3"])))
    assert prob.instructions[0].id == "style_3"
    assert prob.instructions[0].params == {"line_length": 79}  # the default, written out
    assert prob.test.entry_point == "add"


def test_executor_spec_goes_through_the_execution_layer() -> None:
    import importlib.util

    cfg = RewardConfig(executor="local")
    if importlib.util.find_spec("pytest_vibecheck.execute.executor") is None:
        with pytest.raises(VibecheckError, match="has no executor layer"):
            score_batch([ALL_MET], [ADD], cfg)
        return
    res = score_batch([ALL_MET, WRONG], [ADD] * 2, cfg)
    assert [r.exec_status for r in res] == ["passed", "failed"]
    from pytest_vibecheck.execute.executor import LocalExecutor  # an executor object

    execu = LocalExecutor(2)
    try:
        res = score_batch([ALL_MET, WRONG], [ADD] * 2, executor=execu)
    finally:
        execu.close()
    assert [r.reward for r in res] == pytest.approx([1.0, 0.0])  # gated: the failing reply earns nothing
    with pytest.raises(VibecheckError, match="unknown executor 'nope'"):
        score_batch([ALL_MET], [ADD], RewardConfig(executor="nope"))


def test_if_only_needs_instructions() -> None:
    with pytest.raises(VibecheckError, match="no instruction to judge and functional=False"):
        score_batch([ALL_MET], [dict(ADD, instructions=[])], RewardConfig(functional=False))
    with pytest.raises(VibecheckError, match="no instruction to judge"):
        score_batch([ALL_MET], [ADD], RewardConfig(functional=False, k=0))


def test_code_too_deep_for_the_parser_is_no_code_not_a_crash() -> None:
    deep = "x = " + "-" * 200_000 + "1\ndef add(a, b):\n    return a + b\n"
    res = score_batch([deep, f"```python\n{deep}```", ALL_MET], [ADD] * 3)
    assert [(r.status, r.exec_status, r.reward) for r in res[:2]] == [("ok", "no_code", 0.0)] * 2
    assert [r.details["extraction"] for r in res[:2]] == ["whole-reply+unparseable",
                                                           "fenced-first+unparseable"]
    assert res[2].reward == 1.0  # the rest of the batch is scored


def test_multi_message_completion_judges_the_final_answer() -> None:
    """A draft, a tool call and the final answer: by default the final assistant message is
    the reply (the old join judged the first draft's code with extraction ``first``)."""
    chat = [
        {"role": "assistant", "content": HALF_MET},
        {"role": "assistant", "content": None, "tool_calls": [{"type": "function"}]},
        {"role": "tool", "content": "ran: ok"},
        {"role": "assistant", "content": ALL_MET},
        {"role": "assistant", "content": None, "tool_calls": [{"type": "function"}]},
    ]
    assert completion_text(chat) == ALL_MET
    assert completion_text(chat, "all") == HALF_MET + "\n" + ALL_MET
    with pytest.raises(VibecheckError, match="messages must be 'last' or 'all'"):
        completion_text(chat, "first")  # type: ignore[arg-type]
    last, = score_batch([chat], [ADD], executor=CountingExecutor())
    joined, = score_batch([chat], [ADD], executor=CountingExecutor(), messages="all")
    assert (last.reward, last.instruction_if) == (1.0, 1.0)
    assert joined.instruction_if == 0.5  # the draft's
    assert joined.reward == pytest.approx(0.8)
    with pytest.raises(VibecheckError, match="reward messages must be 'last' or 'all'"):
        RewardConfig(messages="every")  # type: ignore[arg-type]
