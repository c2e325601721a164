"""Build the shipped suites in ``problems/`` from the benchmark data (paper §3.1).

    .venv/bin/python scripts/build_suites.py [--data ../shared/data] [--out problems]
                                             [--only NAME ...] [--reselect-lite] [--check]

Suites (k = 5, ``rules`` selector, seed :data:`SEED`):

- ``bigvibebench``: all 1,140 BigCodeBench v0.1.0 tasks (instruct prompts);
- ``bigvibebench-hard``: the 148 BigCodeBench-Hard tasks (same per-task seeds, so each
  task has the same instructions as in ``bigvibebench``);
- ``livevibebench``: LiveCodeBench release_v5 problems with public tests (private tests
  are absent);
- ``bigvibebench-lite``: about 50 BigCodeBench tasks that need only the standard library
  and no network, whose reference solutions pass quickly in the sandbox; for quick runs
  and CI;
- ``humaneval``: HumanEval (164), a small fallback suite.

Everything is deterministic: the same data and seed give byte-identical files. The lite
selection runs the reference solutions in the sandbox once (``--reselect-lite``); its task
ids and measurements are recorded in the lite manifest, and later builds reuse them, so
timing noise never changes the suite. ``--check`` rebuilds into a temporary folder and
compares every data file and manifest with the shipped ones byte for byte, and fails on any
contradictory (prompt, instruction) pair in any shipped suite (:func:`contradictory_pairs`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import re
import sys
from pathlib import Path
from typing import Any

from pytest_vibecheck.execute.envcheck import derive_required_modules
from pytest_vibecheck.generate.protocols import PAPER_LIVE_SYSTEM_PROMPT
from pytest_vibecheck.generate.setup import contradictory_pairs
from pytest_vibecheck.suites.augment import augment, category_shares
from pytest_vibecheck.suites.loaders import (
    SkippedRecord,
    load_bigcodebench,
    load_humaneval,
    load_livecodebench,
)
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.selectors.rules import RULES_VERSION, RulesSelector
from pytest_vibecheck.suites.store import load_suite, read_manifest, write_suite

SEED = 2510  # arXiv 2510.07315
K = 5
LITE_SIZE = 50
LITE_MAX_TEST_S = 1.0

BCB = "bigcodebench/BigCodeBench-v0.1.0_hf.jsonl.gz"
BCB_HARD = "bigcodebench/BigCodeBench-Hard-derived-from-v0.1.0_hf.jsonl.gz"
BCB_NF = "bigcodebench/network-free-set.txt"
BCB_STDLIB = "bigcodebench/bigcodebench_v0.1.0_stdlib_only_task_ids.json"
BCB_LICENCES = ("bigcodebench/LICENSE.bigcodebench", "bigcodebench/LICENSE.bigcodebench-annotation")
LCB = "livecodebench/lcb_v5_problems_with_public_tests.jsonl.gz"
LCB_LICENCES = ("livecodebench/LICENSE.livecodebench-submissions", "livecodebench/LICENSE.rllm")
HE = "humaneval/HumanEval.jsonl.gz"
HE_LICENCES = ("humaneval/LICENSE.openai-human-eval",)

BCB_ATTRIBUTION = (
    "Problems: BigCodeBench v0.1.0 (Zhuo et al., 'BigCodeBench: Benchmarking Code Generation with "
    "Diverse Function Calls and Complex Instructions', ICLR 2025), Hugging Face layout from "
    "bigcode-project/bigcodebench-annotation @ a3b89850 (Apache-2.0). Instructions: the VeriCode "
    "taxonomy of Vibe Checker (Zhong et al., arXiv 2510.07315), selected by pytest-vibecheck's "
    "rules selector."
)
LCB_ATTRIBUTION = (
    "Problems: LiveCodeBench release_v5 (Jain et al., 'LiveCodeBench: Holistic and Contamination Free "
    "Evaluation of Large Language Models for Code', 2024; MIT), problem statements from "
    "LiveCodeBench/submissions @ 4d04b02a (MIT) joined with the public tests of "
    "winnieyangwannan/rllm @ 1d4cee26 (Apache-2.0). Instructions: the VeriCode taxonomy of Vibe "
    "Checker (Zhong et al., arXiv 2510.07315), selected by pytest-vibecheck's rules selector."
)
HE_ATTRIBUTION = (
    "Problems: HumanEval (Chen et al., 'Evaluating Large Language Models Trained on Code', 2021), "
    "openai/human-eval @ 6d43fb98 (MIT). Instructions: the VeriCode taxonomy of Vibe Checker "
    "(Zhong et al., arXiv 2510.07315), selected by pytest-vibecheck's rules selector."
)

#: Code that makes a task slow, flaky or dependent on the machine: not for the lite suite.
_RISKY = re.compile(
    r"\b(subprocess|socket|urllib|requests|http\.client|smtplib|ftplib|multiprocessing|threading|"
    r"time\.sleep|os\.system|getpass|signal|ctypes|psutil|webbrowser|expanduser)\b|['\"]/(etc|tmp|home|usr|var)/"
)


def _write(
    out: Path,
    name: str,
    problems: list[Problem],
    data: Path,
    *,
    description: str,
    source: dict[str, Any],
    licence: str,
    attribution: str,
    licences: tuple[str, ...],
    extra: dict[str, Any] | None = None,
) -> None:
    augmented = [
        # the modules each task needs, stored so a run never parses test code for them
        dataclasses.replace(p, requires=derive_required_modules(p))
        for p in augment(problems, k=K, seed=SEED, selector=RulesSelector(), suite=name)
    ]
    extra = dict(extra or {})
    extra["selector_version"] = RULES_VERSION
    write_suite(
        out / name,
        augmented,
        name=name,
        description=description,
        source=source,
        licence=licence,
        attribution=attribution,
        licence_files=[data / lic for lic in licences],
        selector="rules",
        seed=SEED,
        k=K,
        extra=extra,
    )
    shares = category_shares(augmented)
    path = out / name / "problems.jsonl.gz"
    print(
        f"{name}: {len(augmented)} tasks, {path.stat().st_size / 1e6:.2f} MB, shares "
        + ", ".join(f"{c} {100 * v:.1f}%" for c, v in shares.items())
    )


def _bcb_source(data: Path, path: str) -> dict[str, Any]:
    return {
        "format": "bigcodebench",
        "file": Path(path).name,
        "sha256": hashlib.sha256((data / path).read_bytes()).hexdigest(),
        "origin": "bigcode-project/bigcodebench-annotation @ a3b89850 : hf_data/BigCodeBench.jsonl.gz",
        "network_free": Path(BCB_NF).name,
        "stdlib_only": Path(BCB_STDLIB).name + " (stdlib_only_by_all_imports)",
    }


def select_lite(candidates: list[Problem]) -> tuple[list[str], dict[str, Any]]:
    """Run the reference solutions of standard-library, network-free tasks in the sandbox and
    choose :data:`LITE_SIZE` of those that pass quickly (deterministic order: sha256 of the id)."""
    from pytest_vibecheck.execute.pool import run_many
    from pytest_vibecheck.execute.tests import ExecSettings

    static = [
        p for p in candidates if not _RISKY.search((p.canonical_solution or "") + p.test.code)
    ]
    results = run_many(
        [(p.canonical_solution or "", p) for p in static], ExecSettings(time_limit_s=60.0)
    )
    measured: dict[str, Any] = {}
    ok: list[str] = []
    for prob, res in zip(static, results, strict=True):
        measured[prob.task_id] = {
            "status": res.status,
            "test_time_s": None if res.test_time_s is None else round(res.test_time_s, 3),
        }
        if (
            res.status == "passed"
            and not res.writes_outside
            and res.test_time_s is not None
            and res.test_time_s < LITE_MAX_TEST_S
        ):
            ok.append(prob.task_id)
    chosen = sorted(
        ok, key=lambda t: hashlib.sha256(f"bigvibebench-lite:{t}".encode()).hexdigest()
    )[:LITE_SIZE]
    chosen.sort(key=lambda t: int(t.rsplit("/", 1)[1]))
    info = {
        "criteria": (
            "stdlib_only (by all imports) and in network-free-set.txt; no subprocess, sockets, threads, "
            "sleeps, signals, ctypes or absolute paths in the solution or tests; reference solution passes "
            f"in the sandbox (network blocked, no writes outside its folder) with test time < {LITE_MAX_TEST_S} s; "
            f"then the first {LITE_SIZE} by sha256('bigvibebench-lite:' + task_id)"
        ),
        "candidates": len(candidates),
        "after_static_filter": len(static),
        "passed_quickly": len(ok),
        "measurements": dict(sorted(measured.items(), key=lambda kv: int(kv[0].rsplit("/", 1)[1]))),
        "task_ids": chosen,
    }
    return chosen, info


def _check(args: argparse.Namespace) -> int:
    import shutil
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        lite = args.out / "bigvibebench-lite"
        if lite.is_dir():  # reuse the recorded lite selection
            shutil.copytree(lite, out / "bigvibebench-lite")
        cmd = [sys.executable, __file__, "--data", str(args.data), "--out", str(out)]
        if args.only:
            cmd += ["--only", *args.only]
        subprocess.run(cmd, check=True)
        bad = 0
        for folder in sorted(p for p in out.iterdir() if p.is_dir()):
            for name in ("problems.jsonl.gz", "manifest.json"):
                same = (folder / name).read_bytes() == (args.out / folder.name / name).read_bytes()
                bad += not same
                print(f"{folder.name}/{name}: {'identical' if same else 'DIFFERENT'}")
            pairs = contradictory_pairs(load_suite(args.out / folder.name))
            for line in pairs[:20]:
                print(f"contradictory pair: {line}")
            print(f"{folder.name}: {len(pairs)} contradictory (prompt, instruction) pairs")
            bad += bool(pairs)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "problems")
    ap.add_argument("--only", nargs="*", default=None, help="build only these suites")
    ap.add_argument(
        "--reselect-lite", action="store_true", help="re-run the lite selection in the sandbox"
    )
    ap.add_argument("--check", action="store_true", help="rebuild in a temporary folder and compare")
    args = ap.parse_args()
    if args.check:
        return _check(args)
    data: Path = args.data
    want = (
        set(args.only)
        if args.only
        else {
            "bigvibebench",
            "bigvibebench-hard",
            "livevibebench",
            "bigvibebench-lite",
            "humaneval",
        }
    )

    meta = {"network_free": data / BCB_NF, "stdlib_only": data / BCB_STDLIB}
    if want & {"bigvibebench", "bigvibebench-lite"}:
        big = load_bigcodebench(data / BCB, suite="bigvibebench", **meta)
    if "bigvibebench" in want:
        _write(
            args.out,
            "bigvibebench",
            big,
            data,
            description="BigVibeBench: all 1,140 BigCodeBench v0.1.0 tasks (instruct prompts), 5 VeriCode instructions each",
            source=_bcb_source(data, BCB),
            licence="Apache-2.0",
            attribution=BCB_ATTRIBUTION,
            licences=BCB_LICENCES,
        )
    if "bigvibebench-hard" in want:
        hard = load_bigcodebench(data / BCB_HARD, suite="bigvibebench-hard", **meta)
        src = _bcb_source(data, BCB_HARD)
        src["origin"] = (
            "BigCodeBench-Hard task ids (bigcodebench_hard_task_ids.json) applied to BigCodeBench v0.1.0"
        )
        _write(
            args.out,
            "bigvibebench-hard",
            hard,
            data,
            description="BigVibeBench-Hard: the 148 BigCodeBench-Hard tasks, 5 VeriCode instructions each",
            source=src,
            licence="Apache-2.0",
            attribution=BCB_ATTRIBUTION,
            licences=BCB_LICENCES,
        )
    if "livevibebench" in want:
        skipped: list[SkippedRecord] = []
        live = load_livecodebench(data / LCB, suite="livevibebench", skipped=skipped)
        _write(
            args.out,
            "livevibebench",
            live,
            data,
            description=(
                f"LiveVibeBench: {len(live)} LiveCodeBench release_v5 problems with public tests, "
                "5 VeriCode instructions each (public tests only; private tests absent)"
            ),
            source={
                "format": "livecodebench",
                "file": Path(LCB).name,
                "sha256": hashlib.sha256((data / LCB).read_bytes()).hexdigest(),
                "origin": "LiveCodeBench/submissions @ 4d04b02a joined with winnieyangwannan/rllm @ 1d4cee26 public tests",
            },
            licence="MIT AND Apache-2.0",
            attribution=LCB_ATTRIBUTION,
            licences=LCB_LICENCES,
            extra={
                # the paper's decoding on LiveVibeBench (§4.1) and its Live system prompt
                "generation": {"temperature": 0.2, "system_prompt": PAPER_LIVE_SYSTEM_PROMPT},
                "private_tests": "absent: only the public test cases are included, so pass rates run higher "
                "than LiveCodeBench's official grading and some AtCoder problems accept several outputs",
                "excluded": [
                    {"task_id": s.task_id, "line": s.line, "reason": s.reason} for s in skipped
                ],
            },
        )
    if "bigvibebench-lite" in want:
        candidates = [
            p for p in big if p.metadata.get("stdlib_only") and p.metadata.get("network_free")
        ]
        manifest_path = args.out / "bigvibebench-lite" / "manifest.json"
        if args.reselect_lite or not manifest_path.is_file():
            ids, info = select_lite(candidates)
        else:
            info = read_manifest(args.out / "bigvibebench-lite")["lite_selection"]
            ids = list(info["task_ids"])
        wanted = set(ids)
        lite = [p for p in big if p.task_id in wanted]
        _write(
            args.out,
            "bigvibebench-lite",
            lite,
            data,
            description=(
                f"BigVibeBench-Lite: {len(lite)} quick BigCodeBench tasks that need only the standard "
                "library and no network, 5 VeriCode instructions each (same as in bigvibebench)"
            ),
            source=_bcb_source(data, BCB),
            licence="Apache-2.0",
            attribution=BCB_ATTRIBUTION,
            licences=BCB_LICENCES,
            extra={"lite_selection": info},
        )
    if "humaneval" in want:
        he = load_humaneval(data / HE, suite="humaneval")
        _write(
            args.out,
            "humaneval",
            he,
            data,
            description="HumanEval (164 problems) with 5 VeriCode instructions each: a small fallback suite",
            source={
                "format": "humaneval",
                "file": Path(HE).name,
                "sha256": hashlib.sha256((data / HE).read_bytes()).hexdigest(),
                "origin": "openai/human-eval @ 6d43fb98 : data/HumanEval.jsonl.gz",
            },
            licence="MIT",
            attribution=HE_ATTRIBUTION,
            licences=HE_LICENCES,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
