"""Agreement of our sandboxed verdicts with official ones, on real model outputs.

1. BigCodeBench (``--only bcb``): Qwen2.5-Coder-7B-Instruct, instruct split, greedy
   (``samples/bigcodebench-qwen2.5-coder-7b-instruct/``). We run each sample's ``solution``
   field on the tasks this environment can run (``envcheck``), with time limits calibrated
   on this machine, and compare pass/fail with the official ``status`` in
   ``*_eval_results.json.gz`` (``eval[task_id][0]``: ``pass`` / ``fail`` / ``timeout``;
   ``timeout`` counts as not passing). Each disagreement gets evidence runs here: the
   "calibrated" program the official harness ran (``code_prompt + "\\n    pass\\n" +
   solution``), the reference solution, and the sample ``--repeat`` times more; from these
   :func:`classify` names its cause (:data:`CAUSES`: library version, missing data, timeout
   under load, prompt-definition reliance, nondeterminism, ...; ``unexplained`` asks for a
   bug of ours). Tasks the environment cannot run (missing modules or NLTK data) are not
   graded and are listed with their official verdict.
2. LiveCodeBench (``--only lcb``): o1-mini programs (``code_list[0]``) against the *public*
   tests, compared with the official verdict ``graded_list[0]`` (private + public tests, which
   we do not have: programs that pass the public tests and fail private ones are expected).

Usage: ``python benchmarks/agreement_qwen.py [--only bcb|lcb] [--workers N] [--json OUT]
[--env bigvibebench]`` (``--env``: run the candidates in that execution environment).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_vibecheck.execute.cache import ExecCache
from pytest_vibecheck.execute.calibrate import Calibrator
from pytest_vibecheck.execute.envcheck import check_environment
from pytest_vibecheck.execute.environments import resolve_environment
from pytest_vibecheck.execute.pool import run_many, summarize, timed_run_many
from pytest_vibecheck.execute.sandbox import SandboxSettings
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings
from pytest_vibecheck.suites.durations import expected_for
from pytest_vibecheck.suites.loaders import load_bigcodebench, load_livecodebench

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # ../shared/data
QWEN = DATA / "samples/bigcodebench-qwen2.5-coder-7b-instruct"
QWEN_PREFIX = "Qwen2.5-Coder-7B-Instruct--bigcodebench-instruct--sanitized_calibrated"


def _first_line(res: ExecResult) -> str:
    lines = [x.strip() for x in res.message.splitlines() if x.strip()]
    for line in reversed(lines):
        if "Error" in line or "Exception" in line:
            return line[:150]
    return (lines[-1] if lines else res.status)[:150]


def _official_cause(entry: dict[str, Any]) -> str:
    details = entry.get("details") or {}
    if not details:
        return str(entry["status"])
    name, trace = sorted(details.items())[0]
    last = [x for x in str(trace).strip().splitlines() if x.strip()]
    return f"{name}: {last[-1][:140] if last else ''}"


#: Tasks whose tests differ between BigCodeBench v0.1.0 (our data) and v0.1.4 (upstream now).
CHANGED_AFTER_V010 = {
    f"BigCodeBench/{n}" for n in (16, 37, 178, 211, 215, 241, 267, 760, 1005, 1006)
}
NETWORK_WORDS = (
    "name resolution",
    "Network is unreachable",
    "NameResolutionError",
    "URLError",
    "Max retries",
)


#: Words of NLTK's missing-data error (``LookupError: Resource punkt not found``) and of our
#: verdict for it (``environment: missing NLTK data punkt``).
NLTK_DATA_WORDS = ("missing NLTK data", "Resource \x1b[93m", "nltk.download(")

#: The causes :func:`classify` tells apart, each with what shows it.
CAUSES = {
    "dataset version": "the task's tests changed after BigCodeBench v0.1.0 (our data)",
    "missing data": "the run needs NLTK data that the environment lacks (nltk.download has no network)",
    "network": "the code makes a real request, which the sandbox blocks",
    "library version": "the reference solution fails here too, on the same tests",
    "prompt-definition reliance": (
        "the sample uses names the prompt defines; the official harness ran the calibrated "
        "program (code_prompt + pass + sample), which passes here too"
    ),
    "timeout under load": "ours timed out, and the same sample passes when run again",
    "nondeterminism": "the same sample gets different verdicts when run again here",
    "official timeout": "the official run timed out; the sample passes here",
    "library version (passes here)": (
        "the sample passes here every time while the official run failed: the libraries here "
        "(pinned, moved only where CPython 3.11 forces it) differ from the official ones"
    ),
    "our bug (sandbox)": (
        "the sandbox's integrity layer refused what a library does (a 'vibecheck sandbox:' "
        "refusal or a 'tampered' verdict), for the reference solution too"
    ),
    "unexplained": "none of the above: look for a bug of ours",
}

#: Words of the integrity layer's refusals and tampering verdicts.
SANDBOX_WORDS = ("vibecheck sandbox:", "tampered with its tests")


def classify(diff: dict[str, Any]) -> str:
    """The cause of one disagreement (a key of :data:`CAUSES`), from the evidence in ``diff``
    (a row of ``disagreements``): ``ours`` / ``official`` verdicts, ``ours_message``, and the
    verdicts here of the ``reference`` solution, the ``calibrated_program`` and the sample run
    ``again`` (a list)."""
    again = list(diff.get("again", ()))
    message = str(diff.get("ours_message", ""))
    if diff["task_id"] in CHANGED_AFTER_V010:
        return "dataset version"
    if any(w in message for w in NLTK_DATA_WORDS):
        return "missing data"
    verdicts = {diff["ours"] == "passed", *(a == "passed" for a in again)}
    if diff["ours"] == "passed":
        if len(verdicts) > 1:
            return "nondeterminism"
        if diff["official"] == "timeout":
            return "official timeout"
        return "library version (passes here)"
    if any(w in message for w in NETWORK_WORDS):
        return "network"
    if diff["ours"] == "tampered" or any(w in message for w in SANDBOX_WORDS):
        return "our bug (sandbox)"
    if diff.get("reference") not in (None, "passed"):
        return "library version"
    if diff.get("calibrated_program") == "passed":
        return "prompt-definition reliance"
    if len(verdicts) > 1:
        return "timeout under load" if diff["ours"] == "timeout" else "nondeterminism"
    return "unexplained"


def bigcodebench(args: argparse.Namespace) -> dict[str, Any]:
    problems = {
        p.task_id: p
        for p in load_bigcodebench(DATA / "bigcodebench/BigCodeBench-v0.1.0_hf.jsonl.gz")
    }
    with gzip.open(QWEN / f"{QWEN_PREFIX}.jsonl.gz", "rt", encoding="utf-8") as fh:
        samples = {s["task_id"]: s for s in map(json.loads, fh)}
    with gzip.open(QWEN / f"{QWEN_PREFIX}_eval_results.json.gz", "rt", encoding="utf-8") as fh:
        official = {t: v[0] for t, v in json.load(fh)["eval"].items()}
    environment = resolve_environment(args.env)
    python = None if environment.id == "" else environment.python
    print(f"execution environment: {environment.describe()}")
    env = check_environment(list(problems.values()), suite="bigcodebench", python=python)
    runnable = [t for t in env.runnable if t in samples and t in official]
    not_runnable = [
        {"task_id": t, "reason": env.reasons[t], "official": official[t]["status"]}
        for t in env.skipped
        if t in official
    ]
    shown = [r for r in not_runnable if "NLTK data" in r["reason"] or len(not_runnable) <= 30]
    for row in shown:
        print(f"  not runnable here: {row['task_id']} (official: {row['official']}): {row['reason']}")
    if len(shown) < len(not_runnable):
        print(f"  ... and {len(not_runnable) - len(shown)} more not runnable (missing modules)")
    if args.tasks:  # only these (numbers or ids)
        wanted = {t if "/" in t else f"BigCodeBench/{t}" for t in args.tasks.split(",")}
        runnable = [t for t in runnable if t in wanted]
    if args.every > 1:  # a deterministic sample: every Nth runnable task by id
        runnable = sorted(runnable, key=lambda t: int(t.rsplit("/", 1)[1]))[:: args.every]
    print(
        f"BigCodeBench: {len(runnable)} of {len(problems)} tasks runnable here "
        f"(missing: {dict(sorted(env.missing.items(), key=lambda kv: -kv[1])[:8])} ...)"
    )
    settings = ExecSettings(
        sandbox=SandboxSettings(python=python),
        calibrator=Calibrator(
            args.calibration, floor_s=args.floor, factor=args.factor, environment=environment.id
        ),
        environment=environment.id,
        preload=environment.preload,
    )
    items = [(samples[t]["solution"], problems[t]) for t in runnable]
    cache = ExecCache(args.cache) if args.cache else None
    progress = args.progress.open("a", encoding="utf-8") if args.progress else None

    def on_result(index: int, res: ExecResult) -> None:
        # one line per result, in input order: a run cut short still says what it covered
        if progress is not None:
            t = runnable[index]
            agree = (res.status == "passed") == (official[t]["status"] == "pass")
            line = {"task_id": t, "ours": res.status, "official": official[t]["status"]}
            progress.write(json.dumps({**line, "agree": agree if res.is_verdict else None}) + "\n")
            progress.flush()

    start = time.monotonic()
    results = run_many(items, settings, cache, workers=args.workers, on_result=on_result,
                       shipped=expected_for)
    stats = summarize(results, time.monotonic() - start)
    if progress is not None:
        progress.close()
    print(
        f"  ran {len(items)} samples in {time.monotonic() - start:.0f} s ({stats.tasks_per_s:.2f}/s); ours: {stats.by_status}"
    )
    graded = [(t, r) for t, r in zip(runnable, results, strict=True) if r.is_verdict]
    excluded = Counter(r.status for r in results if not r.is_verdict)
    agree = sum(1 for t, r in graded if (r.status == "passed") == (official[t]["status"] == "pass"))
    ours_pass = sum(1 for _, r in graded if r.status == "passed")
    off_pass = sum(1 for t, _ in graded if official[t]["status"] == "pass")
    print(
        f"  graded {len(graded)} (excluded: {dict(excluded)}); agreement {agree}/{len(graded)} = "
        f"{100.0 * agree / max(1, len(graded)):.1f}%; pass@1 ours {ours_pass / max(1, len(graded)):.4f}, "
        f"official {off_pass / max(1, len(graded)):.4f} on these tasks"
    )
    diffs = []
    fresh = settings.replace(calibrator=None, time_limit_s=args.floor)  # evidence runs: no cache
    disagree = [
        (t, r) for t, r in graded if (r.status == "passed") != (official[t]["status"] == "pass")
    ]
    # the evidence, run together: the calibrated program (what the official harness ran), the
    # reference solution, and the same sample --repeat times more (nondeterminism, timeouts)
    evidence: list[tuple[str, Any]] = []
    for t, _r in disagree:
        ref = problems[t].canonical_solution or ""
        evidence += [(official[t]["solution"], problems[t]), (ref, problems[t])]
        # a comment per repeat: identical runs in flight would share one execution
        evidence += [
            (f"{samples[t]['solution']}\n# repeat {k}\n", problems[t]) for k in range(args.repeat)
        ]
    print(f"  {len(disagree)} disagreements: {len(evidence)} evidence runs ...", flush=True)
    runs = run_many(evidence, fresh, None, workers=args.workers)
    per = 2 + args.repeat
    for n, (t, r) in enumerate(disagree):
        off = official[t]
        calibrated, reference, *again = runs[n * per : (n + 1) * per]
        diffs.append(
            {
                "task_id": t,
                "ours": r.status,
                "official": off["status"],
                "ours_cause": _first_line(r) if r.status != "passed" else "",
                "ours_message": r.message[-2000:],
                "official_cause": _official_cause(off) if off["status"] != "pass" else "",
                "calibrated_program": calibrated.status,
                "reference": reference.status if problems[t].canonical_solution else None,
                "reference_cause": _first_line(reference) if reference.status != "passed" else "",
                "again": [a.status for a in again],
                "time_limit_s": r.limits.get("time_limit_s"),
                "test_time_s": r.test_time_s,
            }
        )
    for d in diffs:
        d["cause"] = classify(d)
    print(f"  disagreements: {len(diffs)}; causes: {dict(Counter(d['cause'] for d in diffs))}")
    for d in diffs:
        print(
            f"  - {d['task_id']}: ours={d['ours']} official={d['official']} -> {d['cause']} "
            f"(reference here: {d['reference']}; calibrated program: {d['calibrated_program']}; "
            f"again: {'/'.join(d['again'])}; limit {d['time_limit_s']} s, took {d['test_time_s']} s)"
            f"\n      ours: {d['ours_cause']} | reference: {d['reference_cause']} | "
            f"official: {d['official_cause']}"
        )
    skipped = [r for r in results if r.status == "error"]
    for r in skipped[:20]:
        print(f"  error (excluded): {r.task_id}: {r.message[:150]}")
    return {
        "runnable": len(runnable),
        "not_runnable": not_runnable,
        "graded": len(graded),
        "agree": agree,
        "excluded": dict(excluded),
        "disagreements": diffs,
        "results": [r.to_dict() for r in results],
    }


def livecodebench(args: argparse.Namespace) -> dict[str, Any]:
    problems = {
        p.task_id: p
        for p in load_livecodebench(
            DATA / "livecodebench/lcb_v5_problems_with_public_tests.jsonl.gz"
        )
    }
    path = next((DATA / "livecodebench").glob("lcb-submissions_O1-Mini*.json.gz"))
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        subs = json.load(fh)
    items, verdicts, ids = [], [], []
    for sub in subs:
        prob = problems.get(sub["question_id"])
        if prob is None or not sub["code_list"]:
            continue
        items.append((sub["code_list"][0], prob))
        verdicts.append(bool(sub["graded_list"][0]))
        ids.append(prob.task_id)
    print(
        f"LiveCodeBench o1-mini: {len(items)} programs with public tests "
        f"({sum(verdicts)} pass officially, pass@1 {sum(verdicts) / len(verdicts):.4f})"
    )
    start = time.monotonic()
    results, stats = timed_run_many(items, ExecSettings(), workers=args.workers,
                                    shipped=expected_for)
    print(
        f"  ran in {time.monotonic() - start:.0f} s ({stats.tasks_per_s:.2f}/s); ours: {stats.by_status}"
    )
    rows = [(i, r, v) for i, r, v in zip(ids, results, verdicts, strict=True) if r.is_verdict]
    agree = sum(1 for _, r, v in rows if (r.status == "passed") == v)
    ours_only = [(i, r) for i, r, v in rows if r.status == "passed" and not v]
    off_only = [(i, r) for i, r, v in rows if r.status != "passed" and v]
    kinds = Counter((problems[i].test.kind, "pass-public/fail-official") for i, _ in ours_only)
    kinds.update((problems[i].test.kind, "fail-public/pass-official") for i, _ in off_only)
    print(
        f"  graded {len(rows)}; agreement {agree}/{len(rows)} = {100.0 * agree / max(1, len(rows)):.1f}%"
    )
    print(f"  pass public, fail official (private tests absent, expected): {len(ours_only)}")
    print(f"  fail public, pass official (should not happen): {len(off_only)}")
    print(f"  by test kind: {dict(kinds)}")
    for i, r in off_only:
        print(
            f"  - {i} ({problems[i].test.kind}, {problems[i].metadata.get('platform')}): ours={r.status} "
            f"{r.failed_tests} | {_first_line(r)}"
        )
    return {
        "programs": len(items),
        "graded": len(rows),
        "agree": agree,
        "pass_public_fail_official": [i for i, _ in ours_only],
        "fail_public_pass_official": [
            {"task_id": i, "status": r.status, "message": r.message[:400]} for i, r in off_only
        ],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", choices=("bcb", "lcb"), default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--floor", type=float, default=5.0)
    ap.add_argument("--factor", type=float, default=4.0)
    ap.add_argument("--calibration", type=Path, default=Path(".vibecheck/calibration.sqlite"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--env", default=None, help="execution environment (vibecheck env create NAME) to run in"
    )
    ap.add_argument(
        "--every", type=int, default=1, help="run every Nth runnable BigCodeBench task (a sample)"
    )
    ap.add_argument(
        "--cache", type=Path, default=None, help="execution cache (a rerun resumes from it)"
    )
    ap.add_argument(
        "--progress", type=Path, default=None, help="append one JSON line per BigCodeBench result"
    )
    ap.add_argument("--tasks", default="", help="only these BigCodeBench tasks (177,940,...)")
    ap.add_argument(
        "--repeat", type=int, default=2, help="runs of each disagreeing sample again (evidence)"
    )
    args = ap.parse_args()
    out: dict[str, Any] = {}
    if args.only in (None, "bcb"):
        out["bigcodebench"] = bigcodebench(args)
    if args.only in (None, "lcb"):
        out["livecodebench"] = livecodebench(args)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        sys.exit(main())
    finally:
        print(run_context())
