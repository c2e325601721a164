"""``action.yml`` and ``.github/workflows/*.yml``: linted with actionlint (with ShellCheck on the
``run:`` scripts), validated against SchemaStore's schemas (as vendored by check-jsonschema),
and the action's gate step run for real on a temporary git repository."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ci_helpers import commit_all, git, init_repo, write

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTION = ROOT / "action.yml"
BIN = Path(sys.executable).parent


def _tool(name: str) -> str | None:
    return shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def _yaml(path: Path) -> Any:
    yaml = pytest.importorskip("ruamel.yaml")
    return yaml.YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def test_the_expected_files_exist() -> None:
    assert [p.name for p in WORKFLOWS] == ["ci.yml", "vibe-benchmark-example.yml", "vibe-gate-example.yml"]
    assert ACTION.is_file()


@pytest.mark.skipif(_tool("actionlint") is None, reason="actionlint is not installed (dev extra, Linux x86-64)")
def test_actionlint_passes_with_shellcheck() -> None:
    actionlint = _tool("actionlint")
    assert actionlint is not None
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if _tool("shellcheck") is None:
        pytest.skip("shellcheck is not installed (dev extra, Linux x86-64)")
    proc = subprocess.run([actionlint, "-verbose", *(str(p.relative_to(ROOT)) for p in WORKFLOWS)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert f"Found 0 errors in {len(WORKFLOWS)} files" in proc.stderr
    assert 'Rule "shellcheck" was disabled' not in proc.stderr


@pytest.mark.skipif(_tool("actionlint") is None, reason="actionlint is not installed")
def test_actionlint_catches_a_wrong_action_input(tmp_path: Path) -> None:
    """A control: the same check reports an input that action.yml does not define."""
    git(tmp_path, "init", "-q")
    shutil.copy(ACTION, tmp_path / "action.yml")
    wf = tmp_path / ".github" / "workflows"
    wf.mkdir(parents=True)
    text = (ROOT / ".github/workflows/vibe-gate-example.yml").read_text(encoding="utf-8")
    (wf / "gate.yml").write_text(text.replace("config:", "configg:"), encoding="utf-8")
    proc = subprocess.run([str(_tool("actionlint")), ".github/workflows/gate.yml"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert 'input "configg" is not defined in action "pytest-vibecheck gate"' in proc.stdout


@pytest.mark.parametrize(
    ("schema", "files"),
    [("vendor.github-actions", [ACTION]), ("vendor.github-workflows", WORKFLOWS)],
    ids=["action", "workflows"],
)
def test_schemastore_schemas(schema: str, files: list[Path]) -> None:
    pytest.importorskip("check_jsonschema")
    proc = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok -- validation done" in proc.stdout


def _action_steps() -> dict[str, dict[str, Any]]:
    action = _yaml(ACTION)
    return {step["name"]: step for step in action["runs"]["steps"]}


@pytest.mark.skipif(_tool("shellcheck") is None, reason="shellcheck is not installed")
def test_action_scripts_pass_shellcheck(tmp_path: Path) -> None:
    scripts = [s["run"] for s in _action_steps().values() if "run" in s]
    assert len(scripts) == 3
    for n, script in enumerate(scripts):
        assert "${{" not in script  # inputs reach scripts through env only (no injection)
        path = tmp_path / f"step{n}.sh"
        path.write_text("#!/usr/bin/env bash\n" + script, encoding="utf-8")
        proc = subprocess.run([str(_tool("shellcheck")), "--severity=style", str(path)],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout


def test_action_structure() -> None:
    action = _yaml(ACTION)
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert {"config", "base", "pytest-args"} <= set(inputs)
    assert inputs["config"]["default"] == "pyproject.toml"
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert step["shell"] == "bash"
    run = _action_steps()["Run the gate"]
    assert run["env"] == {"CONFIG": "${{ inputs.config }}", "BASE": "${{ inputs.base }}",
                          "PYTEST_ARGS": "${{ inputs.pytest-args }}",
                          "SARIF_FILE": "${{ inputs.sarif-file }}"}
    assert run["id"] == "gate"
    assert action["outputs"]["sarif-file"]["value"] == "${{ steps.gate.outputs.sarif-file }}"
    assert "--vibe-gate --vibe-gate-config=\"$CONFIG\"" in run["run"]


def test_action_references_name_this_repository() -> None:
    # every `uses:` of this action in the docs names the repository of pyproject.toml, not a
    # placeholder such as OWNER/pytest-vibecheck@REF
    import re

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    repo_url = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]["Repository"]
    slug = repo_url.removeprefix("https://github.com/")
    files = [ROOT / "README.md", ROOT / "docs" / "ci.md", *WORKFLOWS]
    uses = [
        (f.name, m.group(1))
        for f in files
        for m in re.finditer(r"uses: *([\w.-]+/pytest-vibecheck@[\w./-]+)", f.read_text(encoding="utf-8"))
    ]
    assert {u for _, u in uses} == {f"{slug}@main"}, uses
    assert {name for name, _ in uses} >= {"README.md", "ci.md", "vibe-gate-example.yml"}
    for f in files:
        assert "OWNER" not in f.read_text(encoding="utf-8"), f


def test_readme_quick_start_ends_on_the_table_and_says_how_to_use_it_in_a_project() -> None:
    # the quick start's output as shown ends on the summary table (pytest's FAILED lines above
    # it), and a section installs the plugin into another project and runs a real model
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    fenced = re.findall(r"^```(\w*)\n(.*?)^```$", quick, re.DOTALL | re.MULTILINE)
    outputs = [body for lang, body in fenced if not lang]  # the untagged block is the output
    assert len(outputs) == 1, fenced
    out = outputs[0].strip().splitlines()
    start = next((i for i, line in enumerate(out) if "vibecheck summary" in line), None)
    assert start is not None, out  # before: the table's two lines only, "It ends with:"
    assert out[start + 1].startswith("suite ") and not any(ln.startswith("FAILED") for ln in out[start:])
    assert re.fullmatch(r"\d+ failed in [\d.]+s", out[-1]), out[-1]
    assert "ends on the summary table" in quick
    own = readme.split("## Use it in your own project", 1)[1].split("\n## ", 1)[0]
    assert "pip install 'pytest-vibecheck[openai]'" in own
    assert re.search(r"^pytest --vibe-model=gpt-5\b", own, re.MULTILINE)


def test_workflow_structure() -> None:
    ci = _yaml(ROOT / ".github/workflows/ci.yml")
    steps = ci["jobs"]["ci"]["steps"]
    assert steps[-1]["run"] == "bash .ci/run"
    gate = _yaml(ROOT / ".github/workflows/vibe-gate-example.yml")
    gsteps = gate["jobs"]["gate"]["steps"]
    assert gsteps[0]["with"] == {"fetch-depth": 0}
    assert gsteps[1]["uses"] == "./"
    assert (ROOT / gsteps[1]["with"]["config"]).is_file()
    # the SARIF upload: after a failed gate too, with the action's output, and the permission
    upload = gsteps[2]
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4"
    assert upload["if"].startswith("${{ !cancelled() && ")
    assert upload["with"] == {"sarif_file": "${{ steps.vibecheck.outputs.sarif-file }}",
                              "category": "vibecheck-gate"}
    assert gsteps[1]["id"] == "vibecheck" and gsteps[1]["with"]["sarif-file"] == "vibecheck.sarif"
    assert gate["jobs"]["gate"]["permissions"] == {"contents": "read", "security-events": "write"}
    bench = _yaml(ROOT / ".github/workflows/vibe-benchmark-example.yml")
    shard_job = bench["jobs"]["shard"]
    assert shard_job["strategy"]["matrix"]["shard"] == [1, 2, 3]
    assert str(bench["env"]["SHARDS"]) == "3"
    run_text = "\n".join(str(s.get("run", "")) for s in shard_job["steps"])
    for needle in ("--vibe-shard \"$SHARD/$SHARDS\"", "--vibe-no-fail-items", "--vibe-report",
                   "--vibe-junitxml"):
        assert needle in run_text
    merge_text = "\n".join(str(s.get("run", "")) for s in bench["jobs"]["merge"]["steps"])
    assert "vibecheck merge reports/shard-*.json" in merge_text and "--fail-under" in merge_text
    uploads = [s for job in bench["jobs"].values() for s in job["steps"]
               if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert [u["with"]["path"] for u in uploads] == ["reports/", "merged/"]


def test_gate_config_of_this_repository() -> None:
    from pytest_vibecheck.ci.gate import load_gate_config

    conf = load_gate_config(ROOT / ".github" / "vibecheck-gate.toml")
    assert [g.id for g in conf.instructions] == ["style_7", "logic_1", "logic_6", "error_1"]


def test_the_action_gate_step_runs(tmp_path: Path) -> None:
    """Run the action's "Run the gate" script with bash, as the runner would: it ignores the
    repository's own pytest configuration and conftest.py and fails on a new violation."""
    pytest.importorskip("pytest_vibecheck.verify.api")
    repo = tmp_path / "repo"
    repo.mkdir()
    init_repo(repo, {
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--cov"\n\n'
                          '[tool.vibecheck.gate]\ninstructions = ["logic_1"]\n',
        "conftest.py": "raise ImportError('the repository conftest must not be loaded')\n",
        "a.py": "import os\n",
    })
    git(repo, "checkout", "-q", "-b", "pr")
    write(repo, {"b.py": "import sys\n"})
    commit_all(repo)
    runner_temp = tmp_path / "runner"
    venv_bin = runner_temp / "vibecheck-gate-venv" / "bin"
    venv_bin.mkdir(parents=True)
    shim = venv_bin / "python"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    (runner_temp / "vibecheck-gate-pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    script = _action_steps()["Run the gate"]["run"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(RUNNER_TEMP=str(runner_temp), CONFIG="pyproject.toml", BASE="main",
               PYTEST_ARGS="-q -rA")
    proc = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "b.py: instruction logic_1 not followed on changed lines:\n  b.py:1:8: F401 `sys` imported but unused\n" in proc.stdout
    assert "1 failed in" in proc.stdout
    env["GITHUB_ACTIONS"] = "true"
    env["PYTEST_ARGS"] = "--vibe-no-fail-items"
    env["SARIF_FILE"] = "reports/gate.sarif"
    env["GITHUB_OUTPUT"] = str(tmp_path / "github_output")
    proc = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("::warning file=b.py,line=1,col=8,title=vibecheck F401 (logic_1)::"
            "`sys` imported but unused") in proc.stdout.splitlines()
    # sarif-file: the file is written and its absolute path is the step's output
    assert (tmp_path / "github_output").read_text(encoding="utf-8") == (
        f"sarif-file={repo}/reports/gate.sarif\n")
    import json

    log = json.loads((repo / "reports" / "gate.sarif").read_text(encoding="utf-8"))
    assert [(r["ruleId"], r["level"]) for r in log["runs"][0]["results"]] == [("logic_1", "warning")]
