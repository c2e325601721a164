"""pytest-xdist: identical aggregates with -n 2 and -n 0; a run killed with SIGKILL resumes from
the generation cache, which stays intact."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import write_many_suite, write_script, write_tiny_suite

from pytest_vibecheck.report.json_report import load_report

pytest.importorskip("xdist")


def _strip(report: Mapping[str, Any]) -> tuple[Any, Any]:
    """What must not depend on -n: the aggregates, and the items without timings."""
    items = []
    for item in report["items"]:
        it = {k: v for k, v in item.items() if k not in ("duration_s", "timing")}
        it["turns"] = [
            {**t, "generation": {k: v for k, v in t["generation"].items() if k != "latency_s"},
             "tests": {k: v for k, v in t["tests"].items() if k not in ("duration_s", "cached")}}
            for t in it["turns"]
        ]
        items.append(it)
    return report["aggregates"], items


@pytest.fixture
def workdir() -> Any:
    """A world-enterable folder outside pytest's 0700 basetemp, for subprocess runs (the sandbox
    hides folders under /tmp that others cannot enter)."""
    with tempfile.TemporaryDirectory(prefix="vibecheck-xdist-") as d:
        Path(d).chmod(0o755)
        (Path(d) / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
        yield Path(d)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH", "PYTEST_ADDOPTS")}
    env.update(extra)
    return env


def _pytest(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def _summary(out: str) -> str:
    return out.split("vibecheck summary", 1)[1].split("=====", 1)[0]


def test_n2_and_n0_give_identical_aggregates(workdir: Path) -> None:
    write_tiny_suite(workdir / "suite")
    script = write_script(
        workdir / "script.json",
        "bot",
        rules=[
            {"task_id": "t/sign", "label": "multi-k2", "reply": "no code today"},
            {"task_id": "t/squares", "label": "single-*",
             "reply": "```python\ndef squares(n):\n    return [i * i for i in range(n)]\n```"},
        ],
        usage={"input_tokens": 3, "output_tokens": 4},
    )
    env = _env(VIBECHECK_SCRIPTED=str(script))
    args = ("--vibe-model", "scripted:bot", "--vibe-model", "reference", "--vibe-suite", "suite",
            "--vibe-k", "1,2", "--vibe-cache-mode", "off", "-q", "--vibe-progress", "always")
    r0 = _pytest(workdir, *args, "-n", "0", "--vibe-report", "n0.json", env=env)
    r2 = _pytest(workdir, *args, "-n", "2", "--vibe-report", "n2.json", env=env)
    assert r0.returncode == r2.returncode == 1, r0.stdout[-3000:] + r2.stdout[-3000:]
    assert r0.stdout.splitlines()[-1].split(" in ")[0] == r2.stdout.splitlines()[-1].split(" in ")[0]
    assert "error" not in r0.stdout.splitlines()[-1]
    rep0, rep2 = load_report(workdir / "n0.json"), load_report(workdir / "n2.json")
    assert rep2["run"]["workers"] == 2
    assert len(rep0["aggregates"]) == 10  # 2 models x (baseline, single 1, single 2, multi 1, multi 2)
    assert _strip(rep0) == _strip(rep2)
    assert _summary(r0.stdout) == _summary(r2.stdout)
    # the progress line counts generations and tokens from the setup report's record (later
    # reports carry a marker over xdist): the same with -n 2 as without
    last0, last2 = (_progress(r.stdout)[-1] for r in (r0, r2))
    assert last0.startswith("vibecheck: 30/30 items (100%); generations 48 requested, 0 from")
    assert last0.split("; elapsed")[0] == last2.split("; elapsed")[0]
    assert "tokens 72 in / 96 out" in last0  # 24 scripted requests of 3 + 4 tokens
    # what the run spent: the two workers' requests meet in the run's shared state; the
    # reference model (offline) spends nothing; 8 requests per task with the cache off
    bot = {"requests": 24, "input_tokens": 72, "output_tokens": 96, "usd": None}
    assert rep0["run"]["spend"] == rep2["run"]["spend"] == {
        **bot, "cache_hits": 0, "prices_as_of": "2025-10", "price": "list", "budget": None, "budget_stopped": False,
        "models": {"scripted:bot": bot},
    }


def _progress(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("vibecheck: ") and " items (" in ln]


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0])


def test_killed_run_resumes_from_the_cache(workdir: Path) -> None:
    n_tasks = 150
    write_many_suite(workdir / "suite", n_tasks)
    log = workdir / "requests.jsonl"
    script = write_script(workdir / "script.json", "bot", log=log)
    env = _env(VIBECHECK_SCRIPTED=str(script))
    db = workdir / "gen.sqlite"
    args = ["--vibe-model", "scripted:bot", "--vibe-suite", "suite", "--vibe-protocol", "baseline,single",
            "--vibe-k", "1", "--vibe-cache", str(db), "-n", "2", "-q"]
    total_keys = 2 * n_tasks  # baseline and single-k1 per task
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=workdir,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(sqlite3.Error):
                if db.exists() and _rows(db) >= 8:
                    break
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    before = _rows(db)
    assert 8 <= before < total_keys
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    requests_before = len(log.read_text(encoding="utf-8").splitlines())

    result = _pytest(workdir, *args, "--vibe-report", "resume.json", env=env)
    assert result.returncode == 1, result.stdout[-3000:]  # items fail on doc_1; none errors
    assert "error" not in result.stdout.splitlines()[-1]
    report = load_report(workdir / "resume.json")
    assert len(report["items"]) == total_keys
    new_requests = len(log.read_text(encoding="utf-8").splitlines()) - requests_before
    # every generation committed before the kill came from the cache: only the rest was generated
    assert new_requests == total_keys - before
    assert report["generation"]["cached"] == before
    assert _rows(db) == total_keys
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_xdist_queue_adapter_reads_the_workers_queue(workdir: Path) -> None:
    """The guarded adapter (plugin/_xdist_queue.py) supports the installed xdist and, on a
    worker, returns the indices queued after the current item."""
    from pytest_vibecheck.plugin import _xdist_queue

    assert _xdist_queue.supported_version()
    (workdir / "test_queue.py").write_text(
        "import json, pytest\n"
        "from pytest_vibecheck.plugin._xdist_queue import queued_indices\n\n"
        "@pytest.mark.parametrize('i', range(20))\n"
        "def test_q(i, request, tmp_path_factory):\n"
        "    with open(request.config.rootpath / f'queue-{i}.json', 'w') as fh:\n"
        "        json.dump(queued_indices(request.config), fh)\n",
        encoding="utf-8",
    )
    r = _pytest(workdir, "-n", "1", "-q", "test_queue.py", env=_env())
    assert r.returncode == 0, r.stdout[-2000:]
    first = json.loads((workdir / "queue-0.json").read_text(encoding="utf-8"))
    assert isinstance(first, list) and first and all(isinstance(i, int) for i in first)
    r0 = _pytest(workdir, "-n", "0", "-q", "test_queue.py", env=_env())
    assert r0.returncode == 0
    assert json.loads((workdir / "queue-0.json").read_text(encoding="utf-8")) is None  # not a worker
