"""The profile registry, generation-setting precedence and the contradictory-pair check (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vibecheck.errors import UnknownIdError
from pytest_vibecheck.execute.spec import TestSpec
from pytest_vibecheck.generate import protocols
from pytest_vibecheck.generate.setup import contradictory_pairs, generation_setup
from pytest_vibecheck.suites.problem import InstructionRef, Problem
from pytest_vibecheck.suites.profiles import PROFILES, get_profile
from pytest_vibecheck.suites.store import load_suite, write_suite


def test_registry() -> None:
    assert list(PROFILES) == ["paper", "lcb"]
    paper, lcb = get_profile("paper"), get_profile("lcb")
    assert (paper.grading, paper.case_time_limit_s, paper.protocols) == ("paper", 12.0, ("baseline", "single", "multi"))
    assert (lcb.grading, lcb.case_time_limit_s, lcb.protocols, lcb.temperature) == ("lcb", 6.0, ("baseline",), 0.2)
    assert paper.applies_to("bigcodebench-unittest") and not lcb.applies_to("bigcodebench-unittest")
    with pytest.raises(UnknownIdError, match="unknown profile 'lbc'; did you mean 'lcb'"):
        get_profile("lbc")


def test_generation_setup_precedence() -> None:
    paper, lcb = get_profile("paper"), get_profile("lcb")
    live = {"generation": {"temperature": 0.2, "system_prompt": "LIVE"}}
    s = generation_setup(paper, None)
    assert (s.system_prompt, s.temperature, dict(s.sources)) == (
        protocols.PAPER_SYSTEM_PROMPT, 0.0, {"system_prompt": "default", "temperature": "default"}
    )
    s = generation_setup(paper, live)
    assert (s.system_prompt, s.temperature) == ("LIVE", 0.2)
    assert dict(s.sources) == {"system_prompt": "suite manifest", "temperature": "suite manifest"}
    s = generation_setup(lcb, live)
    assert (s.system_prompt, s.temperature, s.live_prompt) == (protocols.LCB_SYSTEM_PROMPT, 0.2, "lcb")
    assert dict(s.sources) == {"system_prompt": "profile", "temperature": "profile"}
    s = generation_setup(lcb, live, temperature=0.0, system_prompt="MINE")
    assert (s.system_prompt, s.temperature) == ("MINE", 0.0)
    assert s.to_dict()["profile"] == "lcb" and len(s.to_dict()["system_prompt_sha256"]) == 12
    with pytest.raises(ValueError, match=r"'generation.temperature': expected a number >= 0"):
        generation_setup(paper, {"generation": {"temperature": "hot"}})


def test_contradictory_pairs_are_found(tmp_path: Path) -> None:
    bad = Problem(
        suite="bad", task_id="b/1",
        prompt="Write f. Please answer in a Markdown code block.",
        test=TestSpec(kind="humaneval", code="def check(c):\n    pass\n", entry_point="f"),
        entry_point="f",
        instructions=(InstructionRef("style_1", {}), InstructionRef("doc_4", {})),
    )
    write_suite(tmp_path / "bad", [bad], name="bad", description="d", source="s", licence="MIT",
                attribution="a", selector="manual", seed=None, k=2, compress=False)
    assert contradictory_pairs(load_suite(tmp_path / "bad")) == [
        "bad/b/1: doc_4 vs 'in a markdown code block' (paper)"
    ]


@pytest.mark.parametrize("name", ["livevibebench", "humaneval", "bigvibebench-lite"])
def test_shipped_suites_have_no_contradictory_pairs(name: str) -> None:
    assert contradictory_pairs(load_suite(name)) == []


def test_selection_never_draws_an_instruction_the_prompt_contradicts() -> None:
    from pytest_vibecheck.suites.augment import augment_problem
    from pytest_vibecheck.suites.selectors.rules import RulesSelector

    he = load_suite("humaneval").problems[0]  # EvalPlus wrapper: "... in a markdown code block"
    out = augment_problem(he, k=30, seed=2510, selector=RulesSelector())
    assert "doc_4" not in [ref.id for ref in out.instructions]
    (decision,) = [d for d in out.provenance["decisions"] if d["id"] == "doc_4"]
    assert (decision["decision"], decision["rule"]) == ("conflict", "prompt")
    assert decision["reason"] == "the task's prompt says 'in a markdown code block', which contradicts it"
