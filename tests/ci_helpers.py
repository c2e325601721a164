"""Shared helpers of the CI tests (gate, thresholds, shards, merge): git repositories in a
temporary folder and report items in the shape of docs/report-schema.md."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, cast

from pytest_vibecheck.report.records import ReportItem

GIT_ENV = {
    "GIT_AUTHOR_NAME": "vibecheck tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "vibecheck tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity and no user/system config; returns stdout."""
    env = {**os.environ, **GIT_ENV, "HOME": str(repo), "XDG_CONFIG_HOME": str(repo / ".xdg")}
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def write(repo: Path, files: dict[str, str]) -> None:
    """Write ``{relative path: text}`` into ``repo``, creating folders."""
    for rel, text in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def init_repo(repo: Path, files: dict[str, str]) -> None:
    """``git init`` on branch ``main`` with ``files`` as the first commit."""
    git(repo, "init", "-q", "-b", "main")
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")


def commit_all(repo: Path, message: str = "change") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


# ---------------------------------------------------------------- report items


def _turn(t: int, k: int, tests_passed: bool, verdicts: list[bool], ids: list[str]) -> dict[str, Any]:
    passed = tests_passed and all(verdicts)
    return {
        "turn": t,
        "k": k,
        "generation": {"key": f"{t:064d}", "cached": True, "input_tokens": 10,
                       "output_tokens": 20, "latency_s": 0.5, "finish_reason": "stop"},
        "extraction": {"method": "fenced-first", "blocks": 1, "no_code": False,
                       "code_sha256": "0" * 64},
        "tests": {"status": "passed" if tests_passed else "failed", "failed_tests": [],
                  "message": "", "duration_s": 0.1, "cached": False},
        "verdicts": [
            {"position": n + 1, "id": ids[n], "passed": ok, "error": None,
             "violations": [] if ok else [{"rule": "X1", "line": 1, "column": 1, "message": "m"}]}
            for n, ok in enumerate(verdicts)
        ],
        "passed": passed,
    }


IDS = ["logic_3", "doc_1", "style_3", "error_1", "style_2"]


def report_item(
    task: str,
    *,
    model: str = "scripted",
    protocol: str = "baseline",
    k: int = 0,
    tests_passed: bool = True,
    verdicts: list[bool] | None = None,
    turns: list[tuple[bool, list[bool]]] | None = None,
    suite: str = "toy",
    sample: int = 0,
    outcome: str | None = None,
) -> ReportItem:
    """One report item (docs/report-schema.md ``items[]``; the fields the readers use).

    Single turn: ``tests_passed`` and ``verdicts`` (outcomes of the instructions at positions
    1.., ids ``logic_3``, ``doc_1``, ``style_3``, ...). Multi-turn: ``turns`` gives
    ``(tests_passed, verdicts)`` for turns 0..k (turn t judges instructions 1..t). The item
    passes iff its last turn's tests and verdicts pass. ``outcome="error"`` makes an
    infrastructure error (no turns).
    """
    if turns is None:
        turns = [(tests_passed, list(verdicts or []))]
        turn_list = [_turn(0, k, tests_passed, list(verdicts or []), IDS)]
    else:
        turn_list = [_turn(t, t, tp, vs, IDS) for t, (tp, vs) in enumerate(turns)]
    n_inst = max((len(vs) for _, vs in turns), default=0)
    last_tp, last_vs = turns[-1]
    passed = last_tp and all(last_vs)
    label = {"baseline": "baseline", "single": f"single-k{k}", "multi": f"multi-k{k}"}[protocol]
    error = outcome == "error"
    return cast(ReportItem, {
        "nodeid": f"{suite}::{task}[{model}-{label}" + (f"-s{sample}" if sample else "") + "]",
        "suite": suite,
        "task_id": task,
        "model": model,
        "protocol": protocol,
        "k": k,
        "sample": sample,
        "outcome": outcome or ("passed" if passed else "failed"),
        "passed": None if error else passed,
        "error": {"kind": "rate_limit", "message": "429"} if error else None,
        "skip_reason": None,
        "instructions": [
            {"position": n + 1, "id": IDS[n], "category": IDS[n].split("_")[0], "params": {}}
            for n in range(n_inst)
        ],
        "turns": [] if error else turn_list,
        "no_code": False,
        "duration_s": 0.2,
        "timing": {"generate": 0.0, "tests": 0.1, "verify": 0.05, "total": 0.2},
        "ruff_version": "0.17.6",
    })
