"""``vibecheck gate-prompt``: the declared instructions as the text to hand an agent, from the
same object the gate checks; written into AGENTS.md/CLAUDE.md and checked for drift."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ci_helpers import commit_all, git, init_repo, write

from pytest_vibecheck.ci.declared import load_declared
from pytest_vibecheck.ci.prompt import BEGIN, END, agent_prompt, block_of, with_block
from pytest_vibecheck.ci.sarif import rule_descriptor
from pytest_vibecheck.cli.main import main

pytest.importorskip("pytest_vibecheck.verify.api")

PYPROJECT = """
[tool.ruff]
line-length = 100

[tool.vibecheck.gate]
instructions = [
    "style_3",
    "doc_1",
    { id = "logic_3", params = { max_branches = 3 } },
    "doc_3:convention=google",
    "error_1",
]
include = ["src/*.py"]
exclude = ["src/_generated/*"]
"""

PROMPT = """\
## Code instructions (checked by the vibecheck gate)

Every change you make to Python files matching `src/*.py` (except `src/_generated/*`) must meet \
the following requirements. The pull-request gate checks the lines you add or change against \
exactly these instructions (`[tool.vibecheck.gate]` in `pyproject.toml`); a violation fails it.

1. Write code ensuring all lines are no longer than 100 characters. (`style_3:line_length=100`)
2. Add type annotations to all function arguments and return values, and do not use typing.Any. \
(`doc_1`)
3. Ensure each function has at most 3 branches. (`logic_3:max_branches=3`)
4. Document your code using the google docstring format. (`doc_3:convention=google`)
5. When raising an exception inside an except clause, chain it with 'raise ... from err' (or \
'from None'). (`error_1`)
"""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root, {"pyproject.toml": PYPROJECT, "src/a.py": "X = 1\n"})
    monkeypatch.chdir(root)
    return root


def test_the_prompt_of_a_declared_set(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # style_3's line_length comes from [tool.ruff] line-length, as the gate takes it
    assert main(["gate-prompt"]) == 0
    assert capsys.readouterr().out == PROMPT


def test_prompt_sarif_help_and_gate_share_one_source(repo: Path) -> None:
    config = load_declared(repo / "pyproject.toml", repo)
    lines = [ln for ln in agent_prompt(config, "pyproject.toml").splitlines() if ln[:1].isdigit()]
    for line, gi in zip(lines, config.instructions, strict=True):
        help_text = rule_descriptor(gi.id, gi.params)["help"]["text"]
        assert line == f"{lines.index(line) + 1}. {help_text} (`{gi.label()}`)"


def test_the_gate_checks_the_labels_the_agent_was_given(pytester: pytest.Pytester) -> None:
    init_repo(pytester.path, {"pyproject.toml": PYPROJECT, "src/a.py": "X = 1\n",
                              ".gitignore": "*.sarif\n"})
    git(pytester.path, "checkout", "-q", "-b", "feature")
    write(pytester.path, {"src/a.py": "X = 1\nY = 2\n"})
    commit_all(pytester.path)
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider",
                                "--vibe-sarif", "g.sarif", "-rA")
    result.assert_outcomes(passed=5)
    config = load_declared(pytester.path / "pyproject.toml", pytester.path)
    told = [gi.label() for gi in config.instructions]
    rules = json.loads((pytester.path / "g.sarif").read_text(encoding="utf-8"))["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == told
    result.stdout.fnmatch_lines([f"PASSED src/a.py::gate[[]{gi.id}[]]" for gi in config.instructions])


def test_write_keeps_the_file_and_replaces_the_block_in_place(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "AGENTS.md").write_text("# Team notes\n\nUse tabs? No.\n", encoding="utf-8")
    assert main(["gate-prompt", "--write"]) == 0
    text = (repo / "AGENTS.md").read_text(encoding="utf-8")
    assert text == f"# Team notes\n\nUse tabs? No.\n\n{BEGIN}\n{PROMPT}{END}\n"
    (repo / "AGENTS.md").write_text(text + "\n## After\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text(PYPROJECT.replace('    "error_1",\n', ""), encoding="utf-8")
    assert main(["gate-prompt", "--check"]) == 1
    assert "AGENTS.md holds other instructions than pyproject.toml declares" in capsys.readouterr().err
    assert main(["gate-prompt", "--write"]) == 0
    text = (repo / "AGENTS.md").read_text(encoding="utf-8")
    assert text.startswith("# Team notes\n\nUse tabs? No.\n\n" + BEGIN) and text.endswith(f"{END}\n\n## After\n")
    assert "error_1" not in text and text.count(BEGIN) == 1
    assert main(["gate-prompt", "--check"]) == 0
    assert main(["gate-prompt", "--check", "CLAUDE.md"]) == 1  # no such file


def test_write_chooses_claude_md_when_it_is_the_one_there(repo: Path) -> None:
    (repo / "CLAUDE.md").write_text("notes\n", encoding="utf-8")
    assert main(["gate-prompt", "--write"]) == 0
    assert not (repo / "AGENTS.md").exists()
    assert block_of((repo / "CLAUDE.md").read_text(encoding="utf-8")) == PROMPT
    assert main(["gate-prompt", "--check"]) == 0


def test_block_helpers() -> None:
    assert block_of("no block") is None
    assert with_block(None, "P\n") == f"{BEGIN}\nP\n{END}\n"
    assert with_block("a\n", "P\n") == f"a\n\n{BEGIN}\nP\n{END}\n"
    assert with_block(f"a\n{BEGIN}\nold\n{END}\nb\n", "P\n") == f"a\n{BEGIN}\nP\n{END}\nb\n"


def test_the_gate_says_when_agents_md_is_stale(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_BASE_REF"):
        monkeypatch.delenv(var, raising=False)
    root = pytester.path
    init_repo(root, {"pyproject.toml": PYPROJECT, "src/a.py": "X = 1\n"})
    monkeypatch.chdir(root)
    assert main(["gate-prompt", "--write"]) == 0
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"src/a.py": "X = 1\nY = 2\n"})
    commit_all(root)
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider")
    assert "no longer matches" not in result.stdout.str()
    write(root, {"pyproject.toml": PYPROJECT.replace("max_branches = 3", "max_branches = 4")})
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "note: AGENTS.md no longer matches the declared instructions (the agent was told something "
        "else); run `vibecheck gate-prompt --write` and commit it",
    ])
    assert ("**AGENTS.md no longer matches the declared instructions**: the agent was told "
            "something other than what the gate checks") in summary.read_text(encoding="utf-8")
