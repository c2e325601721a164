"""False positives and cost of the static screen (``screen.py``) on real solutions.

Every real solution the project has is honest code (reference solutions and real model
replies), so every finding on it is a false positive: the target is zero. Sources:

- ``bigcodebench-reference``: the 1,140 BigCodeBench reference solutions
  (``problems/bigvibebench/problems.jsonl.gz``, ``canonical_solution``);
- ``qwen7b-bcb-instruct``, ``qwen7b-bcb-complete``: Qwen2.5-Coder-7B-Instruct's 1,140 replies
  to each split (``samples/bigcodebench-qwen2.5-coder-7b-instruct/*--sanitized_calibrated``,
  ``solution``), screened as the harness runs them (the task's code prompt first);
- ``qwen0.5b-humaneval``: Qwen2.5-Coder-0.5B-Instruct's 164 HumanEval replies
  (``samples/humaneval-*``, ``extracted_code``);
- ``o1-mini-lcb``, ``o1-preview-lcb``: the LiveCodeBench programs (``code_list``, 880 each);
- ``replay:<name>``: the shipped replays in ``replays/`` (the code extracted from each reply
  as the plugin extracts it).

BigCodeBench sources are screened with the task's ``libs`` as ``task_modules``. The table
counts solutions flagged and findings per rule, for the active rules (``DEFAULT_RULES``) and,
apart, for the judgement rules the screen measures but does not report (``MEASURED_RULES``);
then every finding of an active rule is listed. Cost: the screen's time per solution (median
and p99, ms), interleaved with the floor, ``ast.parse`` of the same source (the least work any
static screen of Python source must do), with the load average beside the ratio.

Usage: ``python benchmarks/screen_false_positives.py [--data DIR] [--list-measured]``
(``--data``: the benchmark data folder, default ``../shared/data`` beside the checkout or
``$VIBECHECK_DATA``; sources whose files are absent are reported as skipped).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pytest_vibecheck.screen import DEFAULT_RULES, MEASURED_RULES, RULES, Finding, screen
from pytest_vibecheck.verify.extract import extract_code

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("VIBECHECK_DATA", ROOT.parent / "shared" / "data"))
QWEN = "samples/bigcodebench-qwen2.5-coder-7b-instruct/Qwen2.5-Coder-7B-Instruct--bigcodebench-{}--sanitized_calibrated.jsonl.gz"
LCB = "livecodebench/lcb-submissions_{}-2024-09-12_N1_Scenario.codegeneration_1_0.2_eval_all.json.gz"

#: (source, item id, code, task modules)
Item = tuple[str, str, str, tuple[str, ...]]


def _jsonl(path: Path) -> list[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _bcb_tasks() -> dict[str, dict[str, object]]:
    return {str(r["task_id"]): r for r in _jsonl(ROOT / "problems/bigvibebench/problems.jsonl.gz")}


def _libs(task: dict[str, object] | None) -> tuple[str, ...]:
    if task is None:
        return ()
    raw = task.get("libs") or "[]"
    value = ast.literal_eval(raw) if isinstance(raw, str) else raw
    return tuple(str(x) for x in value) if isinstance(value, list) else ()


def sources(data: Path, skipped: list[str]) -> Iterator[Item]:
    """Every real solution, as (source, id, code, task modules)."""
    tasks = _bcb_tasks()
    for tid, ref in tasks.items():
        yield "bigcodebench-reference", tid, str(ref["canonical_solution"]), _libs(ref)
    for split in ("instruct", "complete"):
        path = data / QWEN.format(split)
        if not path.exists():
            skipped.append(f"qwen7b-bcb-{split} ({path} absent)")
            continue
        for r in _jsonl(path):
            tid = str(r["task_id"])
            t = tasks.get(tid)
            prompt = str(t["starter_code"]) if t else ""
            code = prompt + "\n    pass\n" + str(r["solution"])  # as the official harness ran it
            yield f"qwen7b-bcb-{split}", tid, code, _libs(t)
    he = sorted((data / "samples").glob("humaneval-*/*.jsonl.gz")) if (data / "samples").exists() else []
    if not he:
        skipped.append(f"qwen0.5b-humaneval ({data / 'samples'}/humaneval-* absent)")
    for path in he:
        for r in _jsonl(path):
            yield "qwen0.5b-humaneval", str(r["task_id"]), str(r["extracted_code"]), ()
    for model in ("O1-Mini", "O1-Preview"):
        path = data / LCB.format(model)
        if not path.exists():
            skipped.append(f"{model.lower()}-lcb ({path} absent)")
            continue
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            rows = json.load(fh)
        for r in rows:
            codes = r["code_list"]
            codes = ast.literal_eval(codes) if isinstance(codes, str) else codes
            for i, code in enumerate(codes):
                yield f"{model.lower()}-lcb", f"{r['question_id']}#{i}", str(code), ()
    for replay in sorted((ROOT / "replays").glob("*/replies.jsonl.gz")):
        name = replay.parent.name
        for r in _jsonl(replay):
            tid = str(r["task_id"])
            t = tasks.get(tid)
            code = extract_code(str(r["reply"] or ""), entry_point=str(t["entry_point"]) if t else None).code
            yield f"replay:{name}", f"{tid}/{r.get('label')}/{r.get('sample')}", code, _libs(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the benchmark data folder")
    ap.add_argument("--list-measured", action="store_true", help="also list the judgement rules' findings")
    ap.add_argument("--repeat", type=int, default=3, help="timing runs per solution (the best counts)")
    args = ap.parse_args(argv)
    every = frozenset(RULES)
    skipped: list[str] = []
    solutions: Counter[str] = Counter()
    flagged: Counter[str] = Counter()
    flagged_measured: Counter[str] = Counter()
    unparsed: Counter[str] = Counter()
    per_rule: dict[str, Counter[str]] = {}
    listed: list[tuple[str, str, Finding]] = []
    listed_measured: list[tuple[str, str, Finding]] = []
    t_screen: list[float] = []
    t_parse: list[float] = []
    order: list[str] = []
    for source, item, code, libs in sources(args.data, skipped):
        if source not in solutions:
            order.append(source)
        solutions[source] += 1
        # interleaved: the floor (ast.parse) and the screen on the same source, one after the
        # other, best of --repeat (the least a busy machine's scheduling adds)
        best_parse = best_screen = float("inf")
        parsed = True
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            try:
                ast.parse(code)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                parsed = False
            t1 = time.perf_counter()
            screen(code, task_modules=libs)
            t2 = time.perf_counter()
            best_parse, best_screen = min(best_parse, t1 - t0), min(best_screen, t2 - t1)
        t_parse.append(best_parse)
        t_screen.append(best_screen)
        if not parsed:
            unparsed[source] += 1
        found = screen(code, task_modules=libs, rules=every)
        active = [f for f in found if f.rule in DEFAULT_RULES]
        measured = [f for f in found if f.rule in MEASURED_RULES]
        if active:
            flagged[source] += 1
        if measured:
            flagged_measured[source] += 1
        for f in found:
            per_rule.setdefault(f.rule, Counter())[source] += 1
        listed.extend((source, item, f) for f in active)
        listed_measured.extend((source, item, f) for f in measured)
    _table(order, solutions, unparsed, flagged, flagged_measured, per_rule)
    print("\nactive-rule findings (each a false positive unless explained):")
    for source, item, f in listed:
        print(f"  {source} {item}: {f}")
    if not listed:
        print("  none")
    if args.list_measured:
        print("\njudgement-rule findings:")
        for source, item, f in listed_measured:
            print(f"  {source} {item}: {f}")
    _cost(t_screen, t_parse)
    for s in skipped:
        print(f"skipped: {s}")
    return 0


def _table(
    order: list[str], solutions: Counter[str], unparsed: Counter[str], flagged: Counter[str],
    flagged_measured: Counter[str], per_rule: dict[str, Counter[str]],
) -> None:
    """Per source: solutions, those that do not parse (not screened: the run reports the
    syntax error), those flagged by an active rule, those flagged by a judgement rule."""
    width = max(len(s) for s in [*order, "source"]) + 2
    print(f"{'source':<{width}}{'solutions':>10}{'no parse':>10}{'flagged':>9}{'judgement':>11}")
    rows = [(s, solutions[s], unparsed[s], flagged[s], flagged_measured[s]) for s in order]
    rows.append(("all", sum(solutions.values()), sum(unparsed.values()), sum(flagged.values()),
                 sum(flagged_measured.values())))
    for name, n, bad, hit, judged in rows:
        print(f"{name:<{width}}{n:>10}{bad:>10}{hit:>9}{judged:>11}")
    print("\nfindings per rule and source (active rules first; * = judgement rule, not reported):")
    for rid in [*sorted(DEFAULT_RULES), *sorted(MEASURED_RULES)]:
        counts = per_rule.get(rid, Counter())
        mark = "*" if rid in MEASURED_RULES else " "
        detail = ", ".join(f"{s} {counts[s]}" for s in order if counts[s]) or "0"
        print(f"  {mark}{rid:<20} {detail}")


def _cost(t_screen: list[float], t_parse: list[float]) -> None:
    def p99(xs: list[float]) -> float:
        return sorted(xs)[max(0, int(len(xs) * 0.99) - 1)]

    ms = 1000.0
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    ms_s, ms_p = statistics.median(t_screen) * ms, statistics.median(t_parse) * ms
    print(
        f"\ncost per solution ({len(t_screen)} solutions): screen median {ms_s:.3f} ms, "
        f"p99 {p99(t_screen) * ms:.3f} ms, max {max(t_screen) * ms:.3f} ms; "
        f"floor ast.parse median {ms_p:.3f} ms, p99 {p99(t_parse) * ms:.3f} ms; "
        f"screen / floor (medians) {ms_s / ms_p:.2f}x; "
        f"total {sum(t_screen):.2f} s vs {sum(t_parse):.2f} s (best of each solution's runs); "
        f"load average {load:.2f}"
    )


if __name__ == "__main__":
    sys.exit(main())
