"""pytest-xdist: identical aggregates with -n 2 and -n 0; a run killed with SIGKILL resumes from
the generation cache, which stays intact."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from plugin_helpers import SLOW_CONFTEST, write_many_suite, write_script, write_tiny_suite
from pytest_vibecheck.reporting.json_report import load_report

pytest.importorskip("xdist")


def _strip(report: dict[str, Any]) -> tuple[Any, Any]:
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


def test_n2_and_n0_give_identical_aggregates(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tiny_suite(pytester.path / "suite")
    script = write_script(
        pytester.path / "script.json",
        "bot",
        rules=[
            {"task_id": "t/sign", "label": "multi-k2", "reply": "no code today"},
            {"task_id": "t/squares", "label": "single-*",
             "reply": "```python\ndef squares(n):\n    return [i * i for i in range(n)]\n```"},
        ],
        usage={"input_tokens": 3, "output_tokens": 4},
    )
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    args = ("--vibe-model", "scripted:bot", "--vibe-model", "reference", "--vibe-suite", "suite",
            "--vibe-k", "1,2", "--vibe-cache-mode", "off", "-p", "no:cacheprovider")
    r0 = pytester.runpytest_subprocess(*args, "-n", "0", "--vibe-report", "n0.json")
    r2 = pytester.runpytest_subprocess(*args, "-n", "2", "--vibe-report", "n2.json")
    assert r0.parseoutcomes() == r2.parseoutcomes()
    assert r0.parseoutcomes()["failed"] > 0
    rep0, rep2 = load_report(pytester.path / "n0.json"), load_report(pytester.path / "n2.json")
    assert rep2["run"]["workers"] == 2
    assert _strip(rep0) == _strip(rep2)
    assert len(rep0["aggregates"]) == 8  # 2 models x (baseline, single 1, single 2, multi 1, multi 2) - 0
    summary0 = r0.stdout.str().split("vibecheck summary", 1)[1].split("=====", 1)[0]
    summary2 = r2.stdout.str().split("vibecheck summary", 1)[1].split("=====", 1)[0]
    assert summary0 == summary2


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0])


def test_killed_run_resumes_from_the_cache(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    n_tasks = 24
    write_many_suite(pytester.path / "suite", n_tasks)
    log = pytester.path / "requests.jsonl"
    pytester.makeconftest(SLOW_CONFTEST.format(delay=0.25, log=str(log)))
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    db = pytester.path / "gen.sqlite"
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--vibe-model", "scripted:slow",
            "--vibe-suite", "suite", "--vibe-protocol", "baseline,single", "--vibe-k", "1",
            "--vibe-cache", str(db), "-n", "2", "-q"]
    total_keys = 2 * n_tasks  # baseline and single-k1 per task
    proc = subprocess.Popen(args, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if db.exists():
                try:
                    if _rows(db) >= 8:
                        break
                except sqlite3.Error:
                    pass
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed; slow the model down"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    before = _rows(db)
    assert 8 <= before < total_keys
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    requests_before = len(log.read_text(encoding="utf-8").splitlines())

    result = pytester.runpytest_subprocess(*args[3:], "--vibe-report", "resume.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # items fail on doc_1; none errors
    assert "error" not in result.parseoutcomes()
    report = load_report(pytester.path / "resume.json")
    assert len(report["items"]) == total_keys
    new_requests = len(log.read_text(encoding="utf-8").splitlines()) - requests_before
    # every generation committed before the kill came from the cache: only the rest was generated
    assert new_requests == total_keys - before
    assert report["generation"]["cached"] == before
    assert _rows(db) == total_keys
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    json.dumps(report)  # serialisable
