#!/usr/bin/env python3
"""Grade the real o1-mini / o1-preview LiveCodeBench programs under each grading rule.

Runs every program of the LiveCodeBench submissions files (``code_list``, already extracted)
against the problem's **public** tests in the sandbox, once per grading rule (``paper``,
``lcb``: ``pytest_vibecheck/execute/_child/compare.py``) with that profile's time limit, and
compares each verdict with the official private-test verdict (``graded_list``).

LiveCodeBench grades on public + private tests, so an official pass should also pass the
public tests here; the reverse (public pass, official fail) is expected wherever the private
tests catch a wrong program. The script prints pass counts, the agreement table, and every
task where the rule fails a program that the official grading passes, with the reason.

    python scripts/lcb_grading_agreement.py [--data ../shared/data/livecodebench] [--json OUT]

Takes about 10 minutes on 2 cores (two models x two rules x 879 programs).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.tests import ExecSettings
from pytest_vibecheck.suites.loaders import load_livecodebench
from pytest_vibecheck.suites.profiles import get_profile

MODELS = {
    "o1-mini": "lcb-submissions_O1-Mini-2024-09-12_N1_Scenario.codegeneration_1_0.2_eval_all.json.gz",
    "o1-preview": "lcb-submissions_O1-Preview-2024-09-12_N1_Scenario.codegeneration_1_0.2_eval_all.json.gz",
}
PROBLEMS = "lcb_v5_problems_with_public_tests.jsonl.gz"


def _truncate(value: Any, length: int = 300) -> str:
    """lcb_runner's ``truncatefn``: how its metadata records the failing input."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= length else text[: length // 2] + "...(truncated) ..." + text[-length // 2 :]


def _failed_public_input(problem: Any, metadata: Any) -> bool:
    """Whether the official grading failed on one of the public tests' inputs (its metadata
    records the failing input, truncated); otherwise it failed on a private test."""
    if isinstance(metadata, str):
        metadata = ast.literal_eval(metadata)
    try:
        failing = json.loads(metadata[0]).get("inputs")
    except (ValueError, IndexError, TypeError, AttributeError):
        return False
    if failing is None:
        return False
    if problem.test.kind == "stdin":
        public = [_truncate(c.input) for c in problem.test.cases]
    else:
        public = [_truncate([json.loads(line) for line in c.input.split("\n")]) for c in problem.test.cases]
    return bool(failing in public)


def _metadata(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return {row["question_id"]: row.get("metadata") for row in json.load(fh)}


def _submissions(path: Path) -> dict[str, tuple[str, bool]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = json.load(fh)
    out: dict[str, tuple[str, bool]] = {}
    for row in rows:
        codes = row["code_list"]
        graded = row["graded_list"]
        if isinstance(codes, str):  # some releases store the lists as Python literals
            codes = ast.literal_eval(codes)
        if isinstance(graded, str):
            graded = ast.literal_eval(graded)
        out[row["question_id"]] = (codes[0], bool(graded[0]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "livecodebench")
    ap.add_argument("--json", type=Path, default=None, help="write every verdict to this file")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--gradings", default="paper,lcb")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args(argv)
    problems = {p.task_id: p for p in load_livecodebench(args.data / PROBLEMS)}
    report: dict[str, Any] = {"problems": len(problems), "runs": {}}
    for model in args.models.split(","):
        subs = _submissions(args.data / MODELS[model])
        meta = _metadata(args.data / MODELS[model])
        ids = sorted(t for t in subs if t in problems)
        for grading in args.gradings.split(","):
            profile = get_profile(grading)
            settings = ExecSettings(
                grading=profile.grading, time_limit_s=profile.case_time_limit_s
            )
            t0 = time.monotonic()
            results = run_many(((subs[t][0], problems[t]) for t in ids), settings, workers=args.workers)
            wall = time.monotonic() - t0
            rows: list[dict[str, Any]] = []
            table: Counter[str] = Counter()
            for tid, res in zip(ids, results, strict=True):
                kind = problems[tid].test.kind
                ours = res.status == "passed"
                official = subs[tid][1]
                table[f"{kind}:{'pass' if ours else 'fail'}/{'pass' if official else 'fail'}"] += 1
                if res.status == "error":
                    table["error"] += 1
                rows.append({"task_id": tid, "kind": kind, "status": res.status, "official": official,
                             "message": res.message[:400]})
            report["runs"][f"{model}/{grading}"] = {"wall_s": round(wall, 1), "table": dict(table), "rows": rows}
            print(f"\n== {model}, grading {grading} ({wall:.0f} s)")
            for kind in ("stdin", "functional"):
                n = sum(v for k, v in table.items() if k.startswith(kind + ":"))
                passed = table[f"{kind}:pass/pass"] + table[f"{kind}:pass/fail"]
                official_passed = table[f"{kind}:pass/pass"] + table[f"{kind}:fail/pass"]
                agree = table[f"{kind}:pass/pass"] + table[f"{kind}:fail/fail"]
                print(f"  {kind:10s} {n} tasks: pass {passed} (official {official_passed}); "
                      f"agree {agree}; pass here/fail official {table[f'{kind}:pass/fail']}; "
                      f"fail here/pass official {table[f'{kind}:fail/pass']}")
            if table["error"]:
                print(f"  errors: {table['error']}")
            public = [r for r in rows if r["status"] == "passed" and not r["official"]
                      and _failed_public_input(problems[r["task_id"]], meta[r["task_id"]])]
            print(f"  pass here, fail official: {len(public)} failed officially on a public input "
                  f"(the rest on a private one): {', '.join(r['task_id'] for r in public)}")
            missed = [r for r in rows if r["status"] != "passed" and r["official"]]
            if len(missed) > 20:  # summarise by the kind of failure
                why: Counter[str] = Counter()
                for r in missed:
                    msg = r["message"]
                    key = ("no such function (entry-point rule)" if "does not define" in msg
                           else "NameError at import (no prelude)" if "NameError" in msg
                           else f"{r['status']}: {msg[:60]}")
                    why[f"{r['kind']}: {key}"] += 1
                for key, n in why.most_common():
                    print(f"  - {n} x {key}")
            else:
                for r in missed:
                    print(f"  - {r['task_id']} ({r['kind']}) {r['status']}: {r['message'][:160]!r}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
