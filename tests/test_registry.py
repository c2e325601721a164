"""The plugin registry: built-ins, an installed third-party package (entry point), a conftest.py
and a repository's instruction_dirs, through pytest and the ``vibecheck`` command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ci_helpers import commit_all, git, init_repo, write
from plugin_helpers import write_tiny_suite
from registry_helpers import (
    ACME_NO_PRINT,
    make_acme_package,
    write_conftest_instruction,
    write_instruction_dir,
)

from pytest_vibecheck import registry as registry_mod
from pytest_vibecheck.cli import main as cli
from pytest_vibecheck.compose.build import build_registry, load_plugins
from pytest_vibecheck.errors import DataFileError, DuplicateIdError, UnknownIdError
from pytest_vibecheck.generate.backends import make_backend
from pytest_vibecheck.registry import Registry, activate
from pytest_vibecheck.verify.api import verify
from pytest_vibecheck.verify.instructions import get_instruction

PRINTS = "def main() -> None:\n    print('hi')\n"
MANY_ARGS = "def f(a: int, b: int, c: int, d: int) -> int:\n    return a + b + c + d\n"


@pytest.fixture
def acme(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The acme_vibe package installed on sys.path and PYTHONPATH (as pip would).

    This session's registry is built on first use and loads the entry points then: build it
    first, so acme never enters it (and the tests after this one do not see acme)."""
    registry_mod.get_registry()
    site = make_acme_package(tmp_path_factory.mktemp("site"))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.delitem(sys.modules, "acme_vibe", raising=False)
    return site


def _built_ins() -> Registry:
    return build_registry(lambda reg: load_plugins().hook.pytest_vibecheck_register(registry=reg))


def test_the_built_ins_register_through_the_hook() -> None:
    reg = _built_ins()
    assert reg.backends.names() == ["anthropic", "openai", "reference", "replay", "scripted"]
    assert reg.checks.names() == [
        "code_then_json_reply", "decoy_uses", "no_comments_or_docstrings", "pandas_df_name",
        "pure_code_reply",
    ]
    assert reg.selectors.names() == ["anthropic", "openai", "rules"]
    assert reg.suite_loaders.names() == ["bigcodebench", "humaneval", "livecodebench", "mbppplus"]
    assert len(reg.instructions()) == 30 and all(reg.is_shipped(i.id) for i in reg.instructions())
    assert reg.backends.entry("openai").origin == "pytest-vibecheck (built-in)"


def test_unknown_ids_suggest_close_matches() -> None:
    reg = _built_ins()
    with pytest.raises(UnknownIdError, match=r"unknown built-in check 'pandas_df'; did you mean 'pandas_df_name'\?"):
        reg.check("pandas_df")
    with pytest.raises(UnknownIdError, match=r"unknown selector 'rule'; did you mean 'rules'\?"):
        reg.selector("rule")
    with pytest.raises(UnknownIdError, match=r"unknown source format 'humaneva'; did you mean 'humaneval'\?"):
        reg.suite_loader("humaneva")
    with pytest.raises(UnknownIdError, match=r"unknown selector 'openai'.*'openai:MODEL'"):
        reg.selector("openai")


def test_a_clash_with_a_shipped_id_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "doc_1.toml").write_text(ACME_NO_PRINT.replace('"acme_no_print"', '"doc_1"'), encoding="utf-8")
    with pytest.raises(DuplicateIdError, match=r"instruction id 'doc_1' in .*team/doc_1.toml clashes with the shipped instruction 'doc_1'"):
        build_registry(lambda reg: load_plugins().hook.pytest_vibecheck_register(registry=reg), [folder])
    reg = _built_ins()
    with pytest.raises(DuplicateIdError, match=r"backend provider 'openai' is already registered \(by pytest-vibecheck \(built-in\)\)"):
        reg.add_backend("openai", "x:y")


def test_an_instruction_naming_an_unregistered_check_fails_when_built(tmp_path: Path) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "acme_no_print.toml").write_text(ACME_NO_PRINT, encoding="utf-8")
    with pytest.raises(DataFileError, match=r"acme_no_print.toml: field 'verifier.checks': unknown built-in check 'acme_no_print_calls'"):
        build_registry(lambda reg: load_plugins().hook.pytest_vibecheck_register(registry=reg), [folder])


def test_a_team_category_must_be_declared(tmp_path: Path) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "acme_no_print.toml").write_text(ACME_NO_PRINT.replace('category_name = "Acme conventions"\n', ""), encoding="utf-8")
    with pytest.raises(DataFileError, match=r"unknown category 'acme'.*give its category_name"):
        build_registry(lambda reg: None, [folder])


# ---------------------------------------------------------------- an installed package


def test_entry_point_package_registers_a_backend_and_a_check(acme: Path, tmp_path: Path) -> None:
    reg = build_registry(lambda r: load_plugins().hook.pytest_vibecheck_register(registry=r), [])
    assert reg.backends.entry("acme").origin == "acme_vibe"
    with activate(reg):
        backend = make_backend("acme:v1")
        assert type(backend).__name__ == "AcmeBackend" and backend.model == "v1"
        found = reg.check("acme_no_print_calls")(PRINTS)
        assert [(v.rule, v.line, v.column) for v in found] == [("ACME001", 2, 5)]
    with pytest.raises(UnknownIdError, match="unknown backend provider 'acme'"):
        make_backend("acme:v1")  # outside the activation: the default registry


def test_entry_point_backend_runs_a_benchmark_in_pytest(acme: Path, pytester: pytest.Pytester) -> None:
    write_tiny_suite(pytester.path / "suite")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    result = pytester.runpytest_subprocess(
        "--vibe-model", "acme:ref", "--vibe-suite", "suite", "--vibe-protocol", "baseline,single",
        "--vibe-k", "1", "-p", "no:randomly", "-p", "no:cacheprovider",
    )
    # the acme backend answers with the reference solution: the reference model's outcomes
    result.assert_outcomes(passed=1, failed=5)
    result.stdout.fnmatch_lines(["t/add with acme:ref (single, k=1): failed"])


def test_the_cli_loads_the_entry_point_plugins(acme: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["plugins", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["backends"]["acme"] == "acme_vibe"
    assert data["checks"]["acme_no_print_calls"] == "acme_vibe"
    assert data["instructions"]["doc_1"] == "shipped"


# ---------------------------------------------------------------- conftest.py


def test_a_conftest_registers_an_instruction_in_pytest(acme: Path, pytester: pytest.Pytester) -> None:
    write_conftest_instruction(pytester.path)
    pytester.makepyfile(test_x="from pytest_vibecheck.verify.instructions import get_instruction\n"
                        "def test_x():\n"
                        "    inst = get_instruction('acme_no_print')\n"
                        "    assert inst.category_name == 'Acme conventions'\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    with pytest.raises(UnknownIdError, match="acme_no_print"):
        get_instruction("acme_no_print")  # the session's registry is gone with the session


def test_a_conftest_instruction_in_vibecheck_verify(acme: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    write_conftest_instruction(tmp_path)
    (tmp_path / "app.py").write_text(PRINTS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["verify", "app.py", "-i", "acme_no_print"]) == 1
    assert capsys.readouterr().out == "FAIL acme_no_print\n  app.py:2:5 ACME001 print() call; use logging\n"


# ---------------------------------------------------------------- instruction_dirs and the gate


GATE_PYPROJECT = """
[tool.vibecheck]
instruction_dirs = ["vibe/instructions"]

[tool.vibecheck.gate]
instructions = ["acme_max_args", "acme_no_print"]
"""


@pytest.fixture
def team_repo(acme: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_BASE_REF"):
        monkeypatch.delenv(var, raising=False)
    root = pytester.path
    init_repo(root, {"pyproject.toml": GATE_PYPROJECT, ".gitignore": "__pycache__/\n", "ok.py": "X = 1\n"})
    write_instruction_dir(root)
    write_conftest_instruction(root)
    commit_all(root, "team instructions")
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"calc.py": MANY_ARGS, "ok.py": "X = 1\nY = 2\n"})
    commit_all(root)
    return root


def test_the_gate_checks_a_pull_request_against_team_instructions(team_repo: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "calc.py: instruction acme_max_args not followed on changed lines:",
        "  calc.py:1:5: PLR0913 Too many arguments in function definition (4 > 3)",
    ])


def test_instruction_dirs_in_vibecheck_verify(team_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(team_repo)
    assert cli.main(["verify", "calc.py", "-i", "acme_max_args:max_args=4", "-i", "acme_no_print"]) == 0
    assert capsys.readouterr().out == "PASS acme_max_args (max_args=4)\nPASS acme_no_print\n"
    assert cli.main(["verify", "calc.py", "-i", "acme_max_args"]) == 1
    assert "PLR0913 Too many arguments in function definition (4 > 3)" in capsys.readouterr().out


def test_the_python_api_takes_a_team_instruction(acme: Path, tmp_path: Path) -> None:
    folder = write_instruction_dir(tmp_path)
    reg = build_registry(lambda r: load_plugins().hook.pytest_vibecheck_register(registry=r), [folder])
    with activate(reg):
        verdict = verify(MANY_ARGS, "acme_max_args", {"max_args": 3})
    assert verdict.passed is False
    assert [v.rule for v in verdict.violations] == ["PLR0913"]


def test_entry_point_group_name() -> None:
    assert registry_mod.ENTRY_POINT_GROUP == "pytest_vibecheck"


# ---------------------------------------------------------------- the gate reads the repository


RUFF_REPO_PYPROJECT = """
[tool.ruff]
line-length = 100

[tool.ruff.lint.pydocstyle]
convention = "numpy"

[tool.ruff.lint.pylint]
max-branches = 99

[tool.vibecheck.gate]
instructions = ["style_3", "doc_3", "logic_3", {id = "logic_5", params = {max_locals = 5}}]
"""

LONG_90 = "X = '" + "x" * 84 + "'\n"  # 90 characters: fine at 100, a violation at 79


def test_the_gate_takes_parameters_from_the_repositorys_ruff_config(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = pytester.path
    init_repo(root, {"pyproject.toml": RUFF_REPO_PYPROJECT, ".gitignore": "__pycache__/\n"})
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"long.py": LONG_90})
    commit_all(root)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider", "-k", "style_3")
    result.assert_outcomes(passed=1, deselected=3)
    text = summary.read_text(encoding="utf-8")
    assert "| style_3 | line_length | `100` | pyproject.toml [tool.ruff] line-length |" in text
    assert "| doc_3 | convention | `numpy` | pyproject.toml [tool.ruff] lint.pydocstyle.convention |" in text
    assert ("| logic_3 | max_branches | `2` | default (pyproject.toml [tool.ruff] "
            "lint.pylint.max-branches = 99 is not int in [2, 4]) |") in text
    assert "| logic_5 | max_locals | `5` | [tool.vibecheck.gate] |" in text


GATE_CONFIG_FILE = """
[tool.vibecheck]
instruction_dirs = ["vibe/instructions"]

[tool.vibecheck.gate]
instructions = ["acme_max_args"]
"""


def test_the_gate_config_files_instruction_dirs_are_loaded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The team instructions of the file named by --vibe-gate-config (the action's config:),
    relative to that file, not only those of pyproject.toml."""
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_BASE_REF"):
        monkeypatch.delenv(var, raising=False)
    root = pytester.path
    init_repo(root, {"pyproject.toml": "[project]\nname = 'team'\n", ".gitignore": "__pycache__/\n",
                     "ci/vibecheck.toml": GATE_CONFIG_FILE, "ok.py": "X = 1\n"})  # fmt: skip
    write_instruction_dir(root / "ci")
    commit_all(root, "gate config")
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"calc.py": MANY_ARGS})
    commit_all(root)
    result = pytester.runpytest(
        "--vibe-gate", "--vibe-base", "main", "--vibe-gate-config", "ci/vibecheck.toml",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "calc.py: instruction acme_max_args not followed on changed lines:",
        "  calc.py:1:5: PLR0913 Too many arguments in function definition (4 > 3)",
    ])


def test_gate_prompt_reads_the_config_files_instruction_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    init_repo(tmp_path, {"pyproject.toml": "[project]\nname = 'team'\n", "ci/vibecheck.toml": GATE_CONFIG_FILE})
    write_instruction_dir(tmp_path / "ci")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["gate-prompt", "--config", "ci/vibecheck.toml"]) == 0
    assert "Give every function at most 3 arguments." in capsys.readouterr().out
