"""The run state of a killed controller is removed at the next start, never a live run's
(real processes, a real SIGKILL, real flock locks and SQLite files)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from plugin_helpers import write_tiny_suite

from pytest_vibecheck.plugin.run.state import UNLOCKED_STALE_S, RunState, remove_stale_states

#: A controller that opens its run state, writes to it, then dies as ``kill -9`` kills.
KILLED = """
import os, signal, sys
from pathlib import Path
from pytest_vibecheck.plugin.run.state import RunState
state = RunState(Path(sys.argv[1]), owner=True)
state.add({"requests": 3})
os.kill(os.getpid(), signal.SIGKILL)
"""

#: A controller that keeps running until its stdin closes, then ends as a session does.
LIVE = """
import sys
from pathlib import Path
from pytest_vibecheck.plugin.run.state import RunState
state = RunState(Path(sys.argv[1]), owner=True)
state.add({"requests": 1})
print("ready", flush=True)
sys.stdin.read()
state.close(delete=True)
"""


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _killed_run(folder: Path) -> str:
    run_id = uuid.uuid4().hex
    proc = subprocess.run([sys.executable, "-c", KILLED, str(folder / f"run-{run_id}.sqlite")], check=False)
    assert proc.returncode == -9
    return run_id


def test_a_killed_controllers_state_is_removed_at_the_next_start(tmp_path: Path) -> None:
    dead = _killed_run(tmp_path)
    assert f"run-{dead}.sqlite" in _files(tmp_path) and f"run-{dead}.lock" in _files(tmp_path)
    (tmp_path / "cache.sqlite").write_bytes(b"")  # not a run state: never touched
    (tmp_path / "run-notes.sqlite").write_bytes(b"")  # not a run id
    mine = uuid.uuid4().hex
    state = RunState(tmp_path / f"run-{mine}.sqlite", owner=True)
    assert state.removed_stale == [dead]
    assert state.add({"requests": 2}) == {"requests": 2.0}  # the new run starts from nothing
    assert _files(tmp_path) == ["cache.sqlite", f"run-{mine}.lock", f"run-{mine}.sqlite",
                                f"run-{mine}.sqlite-shm", f"run-{mine}.sqlite-wal", "run-notes.sqlite"]
    state.close(delete=True)
    assert _files(tmp_path) == ["cache.sqlite", "run-notes.sqlite"]


def test_a_live_runs_state_is_never_removed(tmp_path: Path) -> None:
    live_id = uuid.uuid4().hex
    live = tmp_path / f"run-{live_id}.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", LIVE, str(live)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        mine = RunState(tmp_path / f"run-{uuid.uuid4().hex}.sqlite", owner=True)
        assert mine.removed_stale == []
        assert remove_stale_states(tmp_path) == []  # a worker's view of the folder: the same
        assert RunState(live).counters() == {"requests": 1.0}  # still the live run's
        mine.close(delete=True)
    finally:
        proc.communicate("", timeout=60)
    assert proc.returncode == 0
    assert _files(tmp_path) == []  # the live run removed its own state when it ended


def test_a_state_without_a_lock_is_removed_once_a_day_old(tmp_path: Path) -> None:
    old, fresh = uuid.uuid4().hex, uuid.uuid4().hex
    for run_id in (old, fresh):
        (tmp_path / f"run-{run_id}.sqlite").write_bytes(b"")
    then = time.time() - UNLOCKED_STALE_S - 60
    os.utime(tmp_path / f"run-{old}.sqlite", (then, then))
    assert remove_stale_states(tmp_path, keep=uuid.uuid4().hex) == [old]
    assert _files(tmp_path) == [f"run-{fresh}.sqlite"]


def test_a_benchmark_run_removes_the_state_a_killed_run_left(pytester: pytest.Pytester) -> None:
    write_tiny_suite(pytester.path / "suite")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    folder = pytester.path / ".vibecheck"
    folder.mkdir()
    dead = _killed_run(folder)
    assert f"run-{dead}.sqlite" in _files(folder)
    result = pytester.runpytest("--vibe-model", "reference", "--vibe-suite", "suite", "--vibe-protocol",
                                "baseline", "-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)  # the reference solutions do not follow every instruction
    assert [name for name in _files(folder) if name.startswith("run-")] == []
