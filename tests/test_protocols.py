"""Exact messages of the baseline, single-turn and multi-turn protocols (paper §3.2)."""

from __future__ import annotations

import pytest

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.generate import protocols
from pytest_vibecheck.generate.backends import GenerationRequest
from pytest_vibecheck.generate.cache import cache_key
from pytest_vibecheck.generate.protocols import (
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    baseline_messages,
    edit_prompt,
    label,
    multi_turn_messages,
    protocol_messages,
    single_turn_messages,
    single_turn_prompt,
)
from pytest_vibecheck.suites.problem import InstructionRef, Problem, TestSpec
from pytest_vibecheck.verify.params import render_prompt

QUERY = "Write a function task_func(n) that returns the sum of 1..n."

EXPECTED_SYSTEM = (
    "You are an expert code-generation assistant. Your goal is to give a complete, runnable "
    "code solution for every request.\n"
    "\n"
    "Reply in one of two formats:\n"
    "1. If your reply contains any text besides the code, put the entire code solution in the "
    "first ```python code block.\n"
    "2. If your reply is only the code, give the raw code with no Markdown and no other text.\n"
    "\n"
    "When you write or edit code, satisfy all of the user's instructions from the whole "
    "conversation while keeping the functionality intact, and always give the complete code, "
    "even if nothing needs to change."
)

REFS = (
    InstructionRef("style_3", {"line_length": 88}),
    InstructionRef("logic_3", {}),
    InstructionRef("doc_3", {"convention": "google"}),
    InstructionRef("error_1", {}),
    InstructionRef("library_1", {}),
)


def make_problem(refs: tuple[InstructionRef, ...] = REFS) -> Problem:
    return Problem(
        suite="unit",
        task_id="Unit/1",
        prompt=QUERY,
        test=TestSpec(kind="humaneval", code="def check(c):\n    assert c(3) == 6\n", entry_point="task_func"),
        entry_point="task_func",
        canonical_solution="def task_func(n):\n    return n * (n + 1) // 2\n",
        instructions=refs,
    )


def test_system_prompt_and_version() -> None:
    assert SYSTEM_PROMPT == EXPECTED_SYSTEM
    assert PROMPT_VERSION == "vibecheck-prompts-1"


def test_baseline_messages_exact() -> None:
    assert baseline_messages(make_problem()) == (
        {"role": "system", "content": EXPECTED_SYSTEM},
        {"role": "user", "content": QUERY},
    )


def test_single_turn_k2_exact() -> None:
    msgs = single_turn_messages(make_problem(), 2)
    assert msgs == (
        {"role": "system", "content": EXPECTED_SYSTEM},
        {
            "role": "user",
            "content": QUERY
            + "\n\nAlso, generate the code to meet the following requirements:\n"
            "1. Ensure all lines are no longer than 88 characters.\n"
            "2. Each function has at most 2 branches.",
        },
    )


def test_single_turn_k1_is_a_numbered_list_of_one() -> None:
    assert single_turn_prompt(make_problem(), 1) == (
        QUERY + "\n\nAlso, generate the code to meet the following requirements:\n"
        "1. Ensure all lines are no longer than 88 characters."
    )


def test_single_turn_k5_uses_every_single_turn_prompt_in_order() -> None:
    text = single_turn_prompt(make_problem(), 5)
    lines = text.split("\n")
    assert lines[0] == QUERY
    assert lines[1] == ""
    assert lines[2] == "Also, generate the code to meet the following requirements:"
    assert lines[3:] == [f"{i}. {render_prompt(r.id, r.params, 'single')}" for i, r in enumerate(REFS, 1)]
    assert lines[5] == "3. Document your code using the google docstring format."


def test_single_turn_k0_is_the_baseline() -> None:
    p = make_problem()
    assert single_turn_messages(p, 0) == baseline_messages(p)


def test_multi_turn_turn0_is_exactly_the_baseline_request() -> None:
    p = make_problem()
    assert multi_turn_messages(p, [], 0) == baseline_messages(p)
    identity = {"provider": "openai", "model": "m", "base_url": None}
    base = GenerationRequest(baseline_messages(p), task_id=p.task_id, label="baseline")
    multi0 = GenerationRequest(multi_turn_messages(p, [], 0), task_id=p.task_id, label=label("multi", 0))
    assert cache_key(identity, base) == cache_key(identity, multi0)


def test_multi_turn_turn2_exact() -> None:
    msgs = multi_turn_messages(make_problem(), ["REPLY-0", "REPLY-1", "IGNORED"], 2)
    assert msgs == (
        {"role": "system", "content": EXPECTED_SYSTEM},
        {"role": "user", "content": QUERY},
        {"role": "assistant", "content": "REPLY-0"},
        {"role": "user", "content": "Reformat the code so that all lines are no longer than 88 characters."},
        {"role": "assistant", "content": "REPLY-1"},
        {"role": "user", "content": "Refactor the code so that each function has at most 2 branches."},
    )


def test_multi_turn_turn5_carries_each_edit_prompt_alone() -> None:
    history = [f"R{i}" for i in range(5)]
    msgs = multi_turn_messages(make_problem(), history, 5)
    assert len(msgs) == 12
    assert [m["role"] for m in msgs] == ["system", "user"] + ["assistant", "user"] * 5
    assert [m["content"] for m in msgs[3::2]] == [render_prompt(r.id, r.params, "multi") for r in REFS]
    assert [m["content"] for m in msgs[2::2]] == history
    assert msgs[9]["content"] == "Chain every exception raised inside an except clause with 'raise ... from err' (or 'from None')."


def test_edit_prompt_positions() -> None:
    p = make_problem()
    assert edit_prompt(p, 5) == "Replace all os, os.path, glob, and open with their pathlib equivalents."
    with pytest.raises(ParameterError, match="positions start at 1"):
        edit_prompt(p, 0)


def test_labels() -> None:
    assert label("baseline") == "baseline"
    assert label("baseline", 3) == "baseline"
    assert label("single", 0) == "baseline"
    assert label("multi", 0) == "baseline"
    assert label("single", 3) == "single-k3"
    assert label("multi", 5) == "multi-k5"
    with pytest.raises(ParameterError, match="unknown protocol 'dual'"):
        label("dual", 1)
    with pytest.raises(ParameterError, match="k must be an int >= 0"):
        label("single", -1)


def test_protocol_messages_dispatch() -> None:
    p = make_problem()
    assert protocol_messages(p, "baseline", 0) == baseline_messages(p)
    assert protocol_messages(p, "single", 3) == single_turn_messages(p, 3)
    assert protocol_messages(p, "multi", 1, ["X"]) == multi_turn_messages(p, ["X"], 1)
    with pytest.raises(ParameterError, match="unknown protocol"):
        protocol_messages(p, "both", 1)


def test_too_few_instructions_is_a_clear_error() -> None:
    p = make_problem(REFS[:2])
    with pytest.raises(ParameterError, match=r"Unit/1: k = 3 but the task has only 2 instructions"):
        single_turn_messages(p, 3)
    with pytest.raises(ParameterError, match="needs the 2 earlier replies, got 1"):
        multi_turn_messages(p, ["only one"], 2)


def test_messages_are_valid_requests() -> None:
    p = make_problem()
    for msgs in (
        baseline_messages(p),
        single_turn_messages(p, 5),
        multi_turn_messages(p, ["a", "b", "c"], 3),
    ):
        req = GenerationRequest(msgs)
        assert req.system == EXPECTED_SYSTEM
        assert req.chat[-1]["role"] == "user"


def test_module_lists_protocols() -> None:
    assert protocols.PROTOCOLS == ("baseline", "single", "multi")
