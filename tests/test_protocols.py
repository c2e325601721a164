"""Exact messages of the baseline, single-turn and multi-turn protocols (paper §3.2)."""

from __future__ import annotations

import pytest

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.execute.spec import TestKind, TestSpec
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
from pytest_vibecheck.suites import queries
from pytest_vibecheck.suites.problem import InstructionRef, Problem
from pytest_vibecheck.types import PROTOCOLS
from pytest_vibecheck.verify.params import render_prompt

QUERY = "Write a function task_func(n) that returns the sum of 1..n."

# The paper's BigVibeBench system prompt, verbatim from the authors' released pipeline
# (maszhongming/SWE-IF, swe_if/code_generator.py).
EXPECTED_SYSTEM = (
    "**Objective:**\n"
    "You are an expert code generation assistant. Your primary objective is to provide a complete "
    "and runnable code solution for every request.\n\n"
    "**Output Formats:**\n"
    "You must strictly adhere to one of these two formats:\n\n"
    "1.  **Format 1: Markdown-Wrapped Code**\n"
    "    * **Use Case:** Use this format if your response contains ANY text or explanation in addition "
    "to the code.\n"
    "    * **Specification:** Place the entire code solution within the *first* Markdown code block "
    "(e.g., ```python ... ```).\n\n"
    "2.  **Format 2: Raw Code Only**\n"
    "    * **Use Case:** Use this format ONLY if your response consists *exclusively* of the code "
    "solution.\n"
    "    * **Specification:** Provide the raw code directly, with no Markdown or other text.\n\n"
    "**Requirements:**\n"
    "1. When generating or editing code, satisfy ALL user instructions throughout the entire "
    "conversation while keeping the functionality intact.\n"
    "2. Always include **complete, runnable code** in every response, even if no changes are needed "
    "from the previous version."
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
    assert PROMPT_VERSION == "vibecheck-prompts-2"
    assert EXPECTED_SYSTEM.replace(
        "provide a complete and runnable code solution for every request",
        "provide functional Python solutions",
    ).replace("**complete, runnable code**", "**complete Python functions**") == protocols.PAPER_LIVE_SYSTEM_PROMPT


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
            + "\n\nAdditionally, ensure your code meets the following requirements:\n"
            "1. Write code ensuring all lines are no longer than 88 characters.\n"
            "2. Ensure each function has at most 2 branches.",
        },
    )


def test_single_turn_k1_puts_the_instruction_inline() -> None:
    """The released pipeline: one instruction goes on the requirement line itself."""
    assert single_turn_prompt(make_problem(), 1) == (
        QUERY + "\n\nAdditionally, ensure your code meets the following requirement: "
        "Write code ensuring all lines are no longer than 88 characters."
    )


def test_single_turn_k5_uses_every_single_turn_prompt_in_order() -> None:
    text = single_turn_prompt(make_problem(), 5)
    lines = text.split("\n")
    assert lines[0] == QUERY
    assert lines[1] == ""
    assert lines[2] == "Additionally, ensure your code meets the following requirements:"
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
    assert PROTOCOLS == ("baseline", "single", "multi")


def test_paper_table1_prompts() -> None:
    """The five single-turn prompts the paper prints (Table 1), word for word."""
    assert render_prompt("style_3", {"line_length": 79}, "single") == (
        "Write code ensuring all lines are no longer than 79 characters."
    )
    assert render_prompt("logic_3", {"max_branches": 2}, "single") == "Ensure each function has at most 2 branches."
    assert render_prompt("doc_3", {"convention": "google"}, "single") == (
        "Document your code using the google docstring format."
    )
    assert render_prompt("error_3", {}, "single") == "Replace all aliases with the canonical OSError exception."
    assert render_prompt("library_1", {}, "single") == (
        "Replace all os, os.path, glob, and open with their pathlib equivalents."
    )


def live_problem(kind: TestKind, refs: tuple[InstructionRef, ...] = ()) -> Problem:
    starter = "class Solution:\n    def f(self, x: int) -> int:\n        " if kind == "functional" else None
    return Problem(
        suite="live",
        task_id="L/1",
        prompt="Print x.",
        test=TestSpec(kind=kind, entry_point="f" if starter else None),
        entry_point="f" if starter else None,
        starter_code=starter,
        instructions=refs,
    )


def test_paper_live_queries() -> None:
    stdin = queries.query(live_problem("stdin"), "paper")
    assert stdin.startswith("**Problem Type: Standard Input/Output**\n\n**Your Task:**\n")
    assert stdin.endswith("comparing its standard output with the expected solution.\n\n---\n**Problem:**\nPrint x.")
    func = queries.query(live_problem("functional"), "paper")
    assert func.startswith("**Problem Type: Functional Implementation**\n\n")
    assert "**must be named `solve()`**" in func
    assert func.endswith("---\n**Problem:**\nPrint x.")
    assert "class Solution" not in func  # the paper's query has no starter code


def test_lcb_live_queries() -> None:
    assert queries.query(live_problem("stdin"), "lcb") == (
        "### Question:\nPrint x.\n\n### Format: Read the inputs from stdin solve the problem and "
        "write the answer to stdout (do not directly test on the sample inputs). Enclose your code "
        "within delimiters as follows.\n```python\n# YOUR CODE HERE\n```\n\n"
        "### Answer: (use the provided format with backticks)\n\n"
    )
    func = queries.query(live_problem("functional"), "lcb")
    assert func == (
        "### Question:\nPrint x.\n\n### Format: You will use the following starter code to write "
        "the solution to the problem and enclose your code within delimiters.\n```python\n"
        "class Solution:\n    def f(self, x: int) -> int:\n        \n```\n\n"
        "### Answer: (use the provided format with backticks)\n\n"
    )


def test_old_live_records_are_refused() -> None:
    old = Problem(suite="s", task_id="t", prompt="### Question:\nX", test=TestSpec(kind="stdin"))
    with pytest.raises(ParameterError, match="s/t: the prompt is a LiveCodeBench query"):
        queries.query(old)


def test_setup_selects_system_prompt_and_query() -> None:
    from pytest_vibecheck.generate.setup import generation_setup
    from pytest_vibecheck.suites.profiles import get_profile

    manifest = {"generation": {"temperature": 0.2, "system_prompt": protocols.PAPER_LIVE_SYSTEM_PROMPT}}
    paper = generation_setup(get_profile("paper"), manifest)
    lcb = generation_setup(get_profile("lcb"), manifest)
    p = live_problem("stdin")
    assert baseline_messages(p, paper)[0]["content"] == protocols.PAPER_LIVE_SYSTEM_PROMPT
    assert baseline_messages(p, lcb) == (
        {"role": "system", "content": protocols.LCB_SYSTEM_PROMPT},
        {"role": "user", "content": queries.lcb_query(p)},
    )


def test_contradictions() -> None:
    doc4 = (InstructionRef("doc_4", {}),)
    doc6 = (InstructionRef("doc_6", {}),)
    # the paper's prompts never demand a reply format
    assert protocols.request_contradictions(live_problem("stdin", doc4)) == []
    assert protocols.request_contradictions(live_problem("functional", doc6)) == []
    from pytest_vibecheck.generate.setup import generation_setup
    from pytest_vibecheck.suites.profiles import get_profile

    lcb = generation_setup(get_profile("lcb"), None)
    assert protocols.request_contradictions(live_problem("stdin", doc4), lcb) == [
        ("doc_4", "enclose your code within delimiters"),
        ("doc_4", "use the provided format with backticks"),
    ]
    assert protocols.request_contradictions(live_problem("stdin", doc6), lcb) == [
        ("doc_6", "you will not return anything except for the program"),
    ]
    assert queries.contradictions(["Answer in a Markdown code block:"], ["doc_4", "style_1"]) == [
        ("doc_4", "in a markdown code block")
    ]
