"""A team instruction (``[tool.vibecheck] instruction_dirs``, its own category) in augmentation
and in a benchmark run: ``vibecheck augment`` with the rules selector and an LLM selector,
``vibecheck problems stats``, and pytest with ``--strict-markers -m vibe_<team category>``."""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from generation_helpers import Response, completion, fake_api
from registry_helpers import ACME_MAX_ARGS, write_instruction_dir

from pytest_vibecheck.cli import main as cli
from pytest_vibecheck.compose.build import registry_for_project
from pytest_vibecheck.generate.backends import BackendSettings
from pytest_vibecheck.registry import activate
from pytest_vibecheck.suites.augment import augment, permutation
from pytest_vibecheck.suites.loaders import load_bigcodebench
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.selectors import make_selector
from pytest_vibecheck.suites.selectors.rules import RulesSelector
from pytest_vibecheck.suites.store import load_suite
from pytest_vibecheck.verify.instructions import default_registry

#: acme_max_args with a default of 1 argument: task_func(a, b) breaks it, task_func(a) not.
ONE_ARG = ACME_MAX_ARGS.replace("default = 3", "default = 1")
PYPROJECT = '[project]\nname = "team"\n\n[tool.vibecheck]\ninstruction_dirs = ["vibe/instructions"]\n'


def bcb_row(n: int, signature: str, body: str, check: str) -> dict[str, str]:
    """One BigCodeBench record (Hugging Face field layout)."""
    return {
        "task_id": f"BigCodeBench/{n}",
        "instruct_prompt": f"Write {signature}.",
        "code_prompt": f"def {signature}:\n",
        "canonical_solution": body,
        "test": "import unittest\nclass TestCases(unittest.TestCase):\n"
        f"    def test_it(self):\n        self.assertEqual({check})\n",
        "entry_point": "task_func",
        "doc_struct": '{"description": ["Compute."], "raises": []}',
        "libs": "[]",
    }


ROWS = [
    bcb_row(900, "task_func(a, b)", "    return a + b\n", "task_func(1, 2), 3"),
    bcb_row(901, "task_func(a)", "    return -a\n", "task_func(1), -1"),
]


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a team instruction folder and a BigCodeBench-format source; cwd."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    folder = write_instruction_dir(tmp_path)
    (folder / "acme_max_args.toml").write_text(ONE_ARG, encoding="utf-8")
    source = "\n".join(json.dumps(r) for r in ROWS) + "\n"
    (tmp_path / "bcb.jsonl.gz").write_bytes(gzip.compress(source.encode()))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def decision(problem: Problem, iid: str) -> dict[str, str]:
    found: dict[str, str] = next(d for d in problem.provenance["decisions"] if d["id"] == iid)
    return found


def test_vibecheck_augment_and_stats_with_a_team_instruction(
    team: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["augment", "bcb.jsonl.gz", "--out", "problems/team", "--k", "31", "--seed", "3"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    # 31 instructions (30 shipped + the team one); the shares of a BigCodeBench source are
    # printed against the paper's, and the team category has none
    assert out.startswith("wrote problems/team (2 tasks, k=31, selector rules, seed 3)\n")
    with activate(registry_for_project(team)):  # the project's registry, as the CLI's
        add, neg = load_suite(team / "problems" / "team").problems
    total = len(add.instructions) + len(neg.instructions)
    assert f", acme {100 / total:.1f}%\n" in out
    assert "library 0.0% (paper 2.2%)" in out
    kept = {r.id: r.params for r in add.instructions}
    assert kept["acme_max_args"] == {"max_args": 1}
    assert decision(add, "acme_max_args") == {
        "id": "acme_max_args", "decision": "kept", "rule": "ref:verifier",
        "reason": "the reference breaks it (1 violation(s); line 1: PLR0913 Too many arguments in "
                  "function definition (2 > 1))",
    }  # fmt: skip
    assert "acme_max_args" not in {r.id for r in neg.instructions}
    assert decision(neg, "acme_max_args")["rule"] == "ref:verifier-ok"
    assert cli.main(["problems", "stats", "problems/team"]) == 0
    stats = capsys.readouterr().out
    assert f"  Acme conventions  {100 / total:5.1f}%\n" in stats  # no paper share to compare
    assert "  Library & API       0.0%  paper   2.2%  diff  -2.2\n" in stats


def test_an_llm_selector_judges_a_team_instruction_like_a_shipped_one(
    team: Path, tmp_path: Path
) -> None:
    reg = registry_for_project(team)
    reply = {"selected": [{"id": "acme_max_args", "params": {"max_args": 4}, "reason": "two args"},
                          {"id": "style_1", "params": {}, "reason": "pep8"}]}  # fmt: skip
    with activate(reg), fake_api() as api:
        api.push(Response(200, completion(json.dumps(reply))))
        settings = BackendSettings(base_url=api.url + "/v1", env={}, timeout_s=10.0)
        sel = make_selector("openai:m", cache_path=tmp_path / "c.sqlite", settings=settings)
        problems = load_bigcodebench(team / "bcb.jsonl.gz")[:1]
        (out,) = augment(problems, k=2, seed=3, selector=sel)
        order = permutation(default_registry().ids(), 3, problems[0].task_id)
    prompt = api.requests[0].body["messages"][1]["content"]
    n = order.index("acme_max_args") + 1
    assert f"{n}. id: acme_max_args | category: Acme conventions\n" in prompt
    assert "   parameter max_args: int, default 1, valid int in [1, 10]\n" in prompt
    assert [(r.id, r.params) for r in out.instructions] == sorted(
        [("acme_max_args", {"max_args": 4}), ("style_1", {})], key=lambda r: order.index(r[0])
    )
    assert decision(out, "acme_max_args") == {
        "id": "acme_max_args", "decision": "kept", "rule": "llm:selected", "reason": "two args"
    }


def test_rules_selector_without_reference_code_does_not_judge_a_team_instruction(team: Path) -> None:
    reg = registry_for_project(team)
    with activate(reg):
        (prob,) = load_bigcodebench(team / "bcb.jsonl.gz")[:1]
        bare = dataclasses.replace(prob, canonical_solution=None)
        judged = RulesSelector().judge(bare, reg.instructions().get("acme_max_args"))
    assert (judged.relevant, judged.rule) == (False, "no-rule")
    assert judged.reason == "the rules selector has no rule for acme_max_args and no reference code to verify"


@pytest.fixture
def team_suite(team: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Path]:
    assert cli.main(["augment", "bcb.jsonl.gz", "--out", "problems/team", "--k", "31", "--seed", "3"]) == 0
    capsys.readouterr()
    yield team / "problems" / "team"


def test_team_category_and_id_are_registered_markers(
    team_suite: Path, pytester: pytest.Pytester
) -> None:
    with activate(registry_for_project(team_suite.parents[1])):
        add = load_suite(team_suite).problems[0]
    k = len(add.instructions)  # every instruction of the first task, acme_max_args among them
    pytester.chdir()
    args = ["--vibe-model", "reference", "--vibe-suite", str(team_suite), "--vibe-protocol", "single",
            "--vibe-k", str(k), "--strict-markers", "-p", "no:cacheprovider", "-p", "no:randomly"]  # fmt: skip
    (pytester.path / "pyproject.toml").write_text(
        PYPROJECT.replace("vibe/instructions", str(team_suite.parents[1] / "vibe/instructions")),
        encoding="utf-8",
    )
    result = pytester.runpytest_subprocess(*args, "-m", "vibe_acme")
    # the reference solution of BigCodeBench/900 has 2 arguments: acme_max_args fails
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(["*FAIL acme_max_args (position *)", "*PLR0913 Too many arguments*(2 > 1)"])
    again = pytester.runpytest(*args, "-m", "vibe_acme_max_args", "--collect-only", "-q")
    again.stdout.fnmatch_lines([f"*BigCodeBench/900*reference-single-k{k}*"])
    markers = pytester.runpytest("--vibe-model", "reference", "--markers")
    markers.stdout.fnmatch_lines([
        "@pytest.mark.vibe_acme: vibecheck item judging a Acme conventions instruction",
        "@pytest.mark.vibe_acme_max_args: vibecheck item judging instruction acme_max_args",
    ])
