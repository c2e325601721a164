"""False positives of the whole execution layer (sandbox, judged kinds, harness, screen) on
real honest solutions: the table of the verdict-integrity issue, one row per source.

Every solution here is honest code, so a ``tampered`` verdict, a sandbox refusal or a failure
that plain Python does not reproduce is a false positive of ours. Sources:

- ``bcb-reference``: the 1,140 BigCodeBench reference solutions (``canonical_solution``), in the
  execution environment ``--env`` (default ``bigvibebench`` when it has been created, else this
  interpreter), with the default time limit (60 s a task; the reference is the candidate, so
  there is nothing to calibrate). A reference that does not pass is run again in plain Python
  (the same interpreter, outside the sandbox, in a temporary folder: ``unittest`` on the
  reference plus the tests); one that fails there too is not ours (library version, network,
  data), one that passes there is a false positive.
- ``lcb-o1-mini``, ``lcb-o1-preview``: the LiveCodeBench programs the official grading passes
  (private and public tests), run against the public tests, which they must pass.
- ``humaneval-canonical``: HumanEval's 164 canonical solutions.
- ``humaneval-qwen0.5b``: Qwen2.5-Coder-0.5B's HumanEval replies that the recorded plain-Python
  run passed (``status == "pass"``).

Qwen2.5-Coder-7B's BigCodeBench replies are measured against the official verdicts by
``benchmarks/agreement_qwen.py``.

Usage: ``python benchmarks/integrity_false_positives.py [SOURCE ...] [--env NAME]
[--workers N] [--json OUT] [--tasks 566,509]`` (default: every source). Prints, per source, the counts by verdict,
the false positives with their messages, and the wall time, with the load average and commit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_vibecheck.execute.envcheck import check_environment
from pytest_vibecheck.execute.environments import resolve_environment
from pytest_vibecheck.execute.pool import run_many, summarize
from pytest_vibecheck.execute.sandbox import SandboxSettings
from pytest_vibecheck.execute.spec import Task
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings
from pytest_vibecheck.suites.durations import expected_for
from pytest_vibecheck.suites.loaders import load_bigcodebench, load_humaneval, load_livecodebench
from pytest_vibecheck.suites.problem import Problem

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("VIBECHECK_DATA", ROOT.parent / "shared" / "data"))
LCB = "livecodebench/lcb-submissions_{}-2024-09-12_N1_Scenario.codegeneration_1_0.2_eval_all.json.gz"
HE_QWEN = "samples/humaneval-qwen2.5-coder-0.5b-instruct-q4km/humaneval_greedy_max256.jsonl.gz"

#: (item id, code, problem) of one source
Items = list[tuple[str, str, Problem]]
#: a source's items, its settings, its tasks not runnable here, and its plain-Python re-run
Source = tuple[Items, ExecSettings, list[str], Callable[[str, Problem], str] | None]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _plain_python(code: str, problem: Problem, python: str, timeout_s: float = 120.0) -> str:
    """``passed`` / ``failed`` / ``timeout`` of the reference plus its unittest tests in plain
    Python (no sandbox), in a fresh temporary folder."""
    program = (
        code + "\n\n" + problem.test.code + "\n\nif __name__ == '__main__':\n"
        "    import unittest\n    unittest.main(argv=['x'], verbosity=0)\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "prog.py").write_text(program, encoding="utf-8")
        try:
            proc = subprocess.run([python, "prog.py"], cwd=tmp, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return "timeout"
    return "passed" if proc.returncode == 0 else "failed"


def bcb_reference(env_name: str) -> Source:
    problems = load_bigcodebench(DATA / "bigcodebench/BigCodeBench-v0.1.0_hf.jsonl.gz")
    environment = resolve_environment(env_name)
    python = sys.executable if environment.id == "" else environment.python
    env = check_environment(problems, suite="bigcodebench", python=None if environment.id == "" else python)
    print(f"  environment: {environment.describe()}; runnable {len(env.runnable)} of {len(problems)}")
    runnable = set(env.runnable)
    items = [(p.task_id, p.canonical_solution or "", p) for p in problems if p.task_id in runnable]
    settings = ExecSettings(sandbox=SandboxSettings(python=None if environment.id == "" else python),
                            environment=environment.id, preload=environment.preload)
    return items, settings, sorted(env.skipped), lambda code, p: _plain_python(code, p, python)


def lcb(model: str) -> Source:
    problems = {p.task_id: p for p in load_livecodebench(DATA / "livecodebench/lcb_v5_problems_with_public_tests.jsonl.gz")}
    with gzip.open(DATA / LCB.format(model), "rt", encoding="utf-8") as fh:
        subs = json.load(fh)
    items = [(problems[s["question_id"]].task_id, s["code_list"][0], problems[s["question_id"]])
             for s in subs
             if s["question_id"] in problems and s["code_list"] and s["graded_list"][0]]
    return items, ExecSettings(grading="lcb"), [], None


def humaneval_canonical() -> Source:
    problems = load_humaneval(DATA / "humaneval/HumanEval.jsonl.gz")
    return [(p.task_id, p.canonical_solution or "", p) for p in problems], ExecSettings(), [], None


def humaneval_qwen() -> Source:
    problems = {p.task_id: p for p in load_humaneval(DATA / "humaneval/HumanEval.jsonl.gz")}
    rows = [r for r in _jsonl(DATA / HE_QWEN) if r["status"] == "pass"]
    return [(r["task_id"], r["extracted_code"], problems[r["task_id"]]) for r in rows], ExecSettings(), [], None


def _message(res: ExecResult) -> str:
    lines = [x.strip() for x in res.message.splitlines() if x.strip()]
    return (lines[-1] if lines else res.status)[:200]


def run_source(name: str, args: argparse.Namespace) -> dict[str, Any]:
    source: Source
    if name == "bcb-reference":
        source = bcb_reference(args.env)
    elif name.startswith("lcb-"):
        source = lcb({"lcb-o1-mini": "O1-Mini", "lcb-o1-preview": "O1-Preview"}[name])
    elif name == "humaneval-canonical":
        source = humaneval_canonical()
    else:
        source = humaneval_qwen()
    items, settings, skipped, plain = source
    if args.tasks:
        wanted = {f"BigCodeBench/{t}" if t.isdigit() else t for t in args.tasks.split(",") if t}
        items = [item for item in items if item[2].task_id in wanted]
    pairs: list[tuple[str, Task]] = [(code, p) for _, code, p in items]
    done = [0]

    def progress(_index: int, _res: ExecResult) -> None:
        done[0] += 1
        if done[0] % 100 == 0:
            print(f"  ... {done[0]} of {len(pairs)}", flush=True)

    start = time.monotonic()
    results = run_many(pairs, settings, workers=args.workers, on_result=progress,
                       shipped=expected_for)
    stats = summarize(results, time.monotonic() - start)
    by = Counter(r.status for r in results)
    false_pos: list[dict[str, Any]] = []
    not_ours: list[dict[str, Any]] = []
    for (item_id, code, problem), res in zip(items, results, strict=True):
        if res.status == "passed":
            continue
        refused = res.status == "tampered" or "vibecheck sandbox:" in res.message
        again = plain(code, problem) if plain is not None and not refused else None
        row = {"id": item_id, "status": res.status, "plain_python": again, "message": _message(res)}
        (not_ours if again not in (None, "passed") else false_pos).append(row)
    print(f"{name}: {len(items)} honest solutions run in {stats.wall_s:.0f} s "
          f"({stats.tasks_per_s:.2f}/s); verdicts {dict(by)}; not runnable here {len(skipped)}")
    print(f"  not passing, and failing in plain Python too (not ours): {len(not_ours)}")
    for row in not_ours:
        print(f"    - {row['id']}: {row['status']}, plain Python {row['plain_python']}: {row['message']}")
    print(f"  FALSE POSITIVES: {len(false_pos)}")
    for row in false_pos:
        print(f"    - {row['id']}: {row['status']} (plain Python: {row['plain_python']}): {row['message']}")
    return {"source": name, "solutions": len(items), "verdicts": dict(by), "wall_s": stats.wall_s,
            "not_runnable": len(skipped), "not_ours": not_ours, "false_positives": false_pos}


SOURCES = ("bcb-reference", "lcb-o1-mini", "lcb-o1-preview", "humaneval-canonical", "humaneval-qwen0.5b")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="*", metavar="SOURCE", help=f"any of {', '.join(SOURCES)}")
    default_env = "bigvibebench" if (ROOT / ".vibecheck" / "envs" / "bigvibebench").exists() else ""
    ap.add_argument("--env", default=default_env, help="execution environment for bcb-reference")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--tasks", default="", help="only these task ids, comma-separated "
                    "(a bare number is a BigCodeBench task: 566,509)")
    args = ap.parse_args(argv)
    unknown = [s for s in args.sources if s not in SOURCES]
    if unknown:
        ap.error(f"unknown source {', '.join(unknown)}: choose from {', '.join(SOURCES)}")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    print(f"commit {commit}; load average {os.getloadavg()[0]:.1f} at start")
    out = []
    for name in args.sources or SOURCES:
        start = time.monotonic()
        out.append(run_source(name, args))
        print(f"  ({time.monotonic() - start:.0f} s; load average {os.getloadavg()[0]:.1f})")
    total = sum(len(r["false_positives"]) for r in out)
    print(f"false positives in all: {total} of {sum(r['solutions'] for r in out)} honest solutions")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
