"""Execution environments: the shipped lock against its deviations, building one with uv
(offline: an empty lock), running candidates in it, errors."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from exec_helpers import bcb_problem, humaneval_problem

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute import environments as envs
from pytest_vibecheck.execute.sandbox import SandboxSettings
from pytest_vibecheck.execute.tests import ExecSettings, preload_group, result_key, run_tests

LOCKS = Path(envs.__file__).parent / "envs"


def _pins(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s#]+)", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def test_lock_keeps_every_input_pin_and_each_deviation_is_in_it() -> None:
    lock = _pins(envs.lock_path("bigvibebench").read_text())
    wanted = _pins((LOCKS / "bigvibebench.in").read_text())
    assert len(wanted) == 70 and len(lock) == 167
    assert {k: lock.get(k) for k in wanted} == wanted  # every input pin, exactly
    devs = envs.deviations("bigvibebench")
    assert len(devs) == 12 and all(d["reason"] for d in devs)  # 10 pins, 2 for NLTK data
    for d in devs:
        if re.fullmatch(r"[\d.]+", d["pinned"]):
            name = d["package"].lower()
            assert lock[name] == d["pinned"] == wanted[name]
            assert d["upstream"] != d["pinned"]
    assert lock["pandas"] == "2.0.3" and lock["numpy"] == "1.23.5" and lock["scipy"] == "1.9.3"


def test_host_environment_and_errors(tmp_path: Path) -> None:
    host = envs.resolve_environment(None)
    assert (host.name, host.id, host.python) == ("host", "", sys.executable)
    with pytest.raises(VibecheckError, match=r"run `vibecheck env create bigvibebench`"):
        envs.resolve_environment("bigvibebench", tmp_path)
    with pytest.raises(VibecheckError, match=r"known environments: bigvibebench"):
        envs.resolve_environment("nope", tmp_path)
    with pytest.raises(VibecheckError, match=r"did you mean 'bigvibebench'"):
        envs.lock_path("bigvibebench2")
    with pytest.raises(VibecheckError, match=r"lock is for CPython 3\.11, and .* is not a Python; pass --python"):
        envs.create_environment("bigvibebench", tmp_path, python=str(tmp_path / "none"))


@pytest.fixture
def empty_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped description with an empty lock (uv then installs nothing: no network)."""
    folder = tmp_path / "locks"
    folder.mkdir()
    shutil.copy(LOCKS / "bigvibebench.toml", folder)
    (folder / "bigvibebench.lock").write_text("# empty lock for tests\n", encoding="utf-8")
    monkeypatch.setattr(envs, "_LOCKS", folder)
    return folder


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the lock targets CPython 3.11")
def test_create_run_in_it_and_cache_key(empty_lock: Path, tmp_path: Path) -> None:
    pytest.importorskip("uv")
    logs: list[str] = []
    env = envs.create_environment("bigvibebench", tmp_path / "envs", log=logs.append)
    sha = envs.lock_sha256("bigvibebench")
    assert env.id == f"bigvibebench@{sha[:12]}" and env.lock_sha256 == sha
    assert Path(env.python).is_file() and env.python != sys.executable
    assert logs[-1].startswith("bigvibebench: 0 packages in ")
    again = envs.create_environment("bigvibebench", tmp_path / "envs", log=logs.append)
    assert again == env and "already built from this lock" in logs[-1]
    assert not any("compile-bytecode" in line for line in logs[-1:])
    # the sandbox never writes bytecode: the libraries are compiled when the environment is
    # built, and an environment built without (before issue 29) is compiled in place
    assert any("pip sync --compile-bytecode" in line for line in logs)
    folder = tmp_path / "envs" / "bigvibebench"
    marker = json.loads((folder / envs.MARKER).read_text(encoding="utf-8"))
    assert marker["bytecode"] is True
    del marker["bytecode"]
    (folder / envs.MARKER).write_text(json.dumps(marker), encoding="utf-8")
    site = next(folder.glob("lib/python3.*/site-packages"))
    (site / "vibe_probe_lib.py").write_text("X = 1\n", encoding="utf-8")
    logs.clear()
    assert envs.create_environment("bigvibebench", tmp_path / "envs", log=logs.append) == env
    assert "-m compileall" in logs[0] and "already built" in logs[-1]
    assert list((site / "__pycache__").glob("vibe_probe_lib.*.pyc"))
    assert json.loads((folder / envs.MARKER).read_text(encoding="utf-8"))["bytecode"] is True
    assert envs.resolve_environment("bigvibebench", tmp_path / "envs") == env

    settings = ExecSettings(sandbox=SandboxSettings(python=env.python), environment=env.id)
    code = "import sys\ndef add(a, b):\n    return a + b\n"
    res = run_tests(code, humaneval_problem(), settings)
    assert res.status == "passed"
    # the environment is part of the cache key
    assert result_key(code, humaneval_problem(), settings) != result_key(
        code, humaneval_problem(), ExecSettings()
    )
    # a library of the host's venv is not importable in the environment: the task is skipped
    probe = humaneval_problem(libs=("pytest",))
    assert run_tests(code, probe, settings).status == "skipped"
    assert run_tests(code, probe, ExecSettings()).status == "passed"


def test_env_show_lists_deviations(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["env", "show", "bigvibebench", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "upstream: bigcode-project/bigcodebench @ 158327f1" in out
    assert "not built here: vibecheck env create bigvibebench" in out
    assert "numpy: 1.21.2 -> 1.23.5: no CPython 3.11 wheels before 1.23.2" in out
    assert "12 deviations from upstream's pins" in out


def test_preload_groups_and_the_group_each_task_starts_with(monkeypatch: pytest.MonkeyPatch) -> None:
    groups = envs.preload_groups("bigvibebench")
    assert groups[0] == ("numpy", "pandas", "matplotlib.pyplot")
    assert set(groups[0]) < set(groups[1]) and "sklearn.model_selection" in groups[1]

    assert preload_group(bcb_problem(libs=("os", "re")), (), groups) == ()
    assert preload_group(bcb_problem(libs=("pandas", "os")), (), groups) == groups[0]
    assert preload_group(bcb_problem(libs=("matplotlib",)), (), groups) == groups[0]
    # what the tests import counts as the task's own libraries do
    assert preload_group(bcb_problem(libs=("pandas",)), ("sklearn.cluster",), groups) == groups[1]
    assert preload_group(bcb_problem(libs=("seaborn", "numpy")), (), groups) == groups[1]
    # a library of no group changes nothing; when no group holds them all, the last one
    assert preload_group(bcb_problem(libs=("numpy", "tensorflow")), (), groups) == groups[0]
    assert preload_group(bcb_problem(libs=("numpy", "xml")), (), (("numpy",), ("xml",))) == ("xml",)
    assert preload_group(bcb_problem(libs=("pandas",)), (), ()) == ()
    monkeypatch.setattr(envs, "spec", lambda name: {"environment": {"preload": ["numpy"]}})
    with pytest.raises(VibecheckError, match=r"bigvibebench\.toml: \[environment\] preload must be "
                       r"a list of lists of module names, got \['numpy'\]"):
        envs.preload_groups("bigvibebench")


def test_a_runs_exec_settings_carry_the_environments_preload_groups(tmp_path: Path) -> None:
    """The plugin's sandbox settings for a run in an environment take its preload groups (and
    its interpreter); the host interpreter has none."""
    from pytest_vibecheck.config.settings import VibeSettings
    from pytest_vibecheck.plugin.run.runtime import exec_settings_for

    groups = envs.preload_groups("bigvibebench")
    env = envs.Environment("bigvibebench", sys.executable, tmp_path, "0" * 64, groups)
    settings = exec_settings_for(VibeSettings(), env)
    assert settings.preload == groups and settings.sandbox.python == sys.executable
    assert settings.environment == "bigvibebench@" + "0" * 12
    assert exec_settings_for(VibeSettings(), envs.host_environment()).preload == ()
