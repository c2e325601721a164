"""Calibrate the ``rules`` selector against real, unconstrained model code.

The rules selector calls an instruction relevant when it "would plausibly change the
implementation". This script checks that claim: for every BigCodeBench task it takes the
real Qwen2.5-Coder-7B-Instruct solution (instruct split, no instructions given; from
``../shared/data/samples``) -- or, with ``--source live``, o1-mini's LiveCodeBench program
(``../shared/data/livecodebench``) -- runs Ruff with each instruction's rules and default
parameters over all of them (one Ruff process per instruction), and reports, per
instruction and per rule code of the selector,

    P(the model's own code violates the instruction | the rule said relevant / irrelevant).

A good rule separates the two: high when relevant, low when not. Caveats: the samples were
reformatted by the upstream sanitizer (blank lines and final newline removed), so
``style_1`` (E302/W292) and ``style_2`` (blank line between import sections) are violated
almost always; doc_4 / doc_6 judge replies and are not measured; doc_5 is estimated by
"has a comment or docstring", library_2's built-in ``df`` check by a regex.

Run: ``.venv/bin/python benchmarks/rules_calibration.py [--source big|live] [--data ../shared/data]``
"""

from __future__ import annotations

import argparse
import ast
import collections
import gzip
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_vibecheck.instructions import all_instructions
from pytest_vibecheck.loaders import load_bigcodebench, load_livecodebench
from pytest_vibecheck.selectors.rules import RulesSelector

LIVE_SAMPLES = "livecodebench/lcb-submissions_O1-Mini-2024-09-12_N1_Scenario.codegeneration_1_0.2_eval_all.json.gz"
SAMPLES = "samples/bigcodebench-qwen2.5-coder-7b-instruct/Qwen2.5-Coder-7B-Instruct--bigcodebench-instruct--sanitized_calibrated.jsonl.gz"


def ruff_violations(
    folder: Path, rules: tuple[str, ...], settings: dict[str, object], preview: bool
) -> set[str]:
    """File stems with at least one violation of ``rules``."""
    cmd = [
        sys.executable,
        "-m",
        "ruff",
        "check",
        "--isolated",
        "--no-cache",
        "--output-format",
        "json",
        "--exit-zero",
    ]
    cmd += ["--select", ",".join(rules)]
    if preview:
        cmd.append("--preview")
    for key, value in settings.items():
        cmd += ["--config", f"{key} = {json.dumps(value)}"]
    out = subprocess.run([*cmd, str(folder)], capture_output=True, text=True, check=True)
    return {Path(item["filename"]).stem for item in json.loads(out.stdout or "[]")}


def _first_code(value: object) -> str:
    """The first program of a submission's ``code_list`` (a list or its Python repr)."""
    items = value if isinstance(value, list) else ast.literal_eval(str(value))
    return str(items[0]) if items else ""


def _has_comment_or_docstring(code: str) -> bool:
    import io
    import tokenize

    try:
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
        tree = ast.parse(code)
    except (SyntaxError, tokenize.TokenError):
        return False
    if any(t.type == tokenize.COMMENT for t in toks):
        return True
    nodes = [
        tree,
        *(
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ),
    ]
    return any(ast.get_docstring(n) is not None for n in nodes)  # type: ignore[arg-type]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    ap.add_argument("--source", choices=("big", "live"), default="big")
    args = ap.parse_args()
    if args.source == "big":
        problems = load_bigcodebench(args.data / "bigcodebench" / "BigCodeBench-v0.1.0_hf.jsonl.gz")
        with gzip.open(args.data / SAMPLES, "rt", encoding="utf-8") as fh:
            samples = {row["task_id"]: row["solution"] for row in map(json.loads, fh)}
    else:
        problems = load_livecodebench(
            args.data / "livecodebench" / "lcb_v5_problems_with_public_tests.jsonl.gz"
        )
        with gzip.open(args.data / LIVE_SAMPLES, "rt", encoding="utf-8") as fh:
            rows = json.load(fh)
        samples = {row["question_id"]: _first_code(row["code_list"]) for row in rows}
    selector = RulesSelector()
    t0 = time.perf_counter()
    judged = {p.task_id: {i.id: selector.judge(p, i) for i in all_instructions()} for p in problems}
    t_rules = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stem_of = {}
        for n, prob in enumerate(problems):
            stem = f"t{n:04d}"
            stem_of[stem] = prob.task_id
            (folder / f"{stem}.py").write_text(
                samples[prob.task_id].rstrip("\n") + "\n", encoding="utf-8"
            )
        comments = {s for s, tid in stem_of.items() if _has_comment_or_docstring(samples[tid])}
        rel5 = sum(1 for s, tid in stem_of.items() if judged[tid]["doc_5"].relevant)
        print(
            f"doc_5 proxy: {len(comments) / len(stem_of):.2f} of model programs have a comment or docstring; rules call doc_5 relevant for {rel5 / len(stem_of):.2f}"
        )
        print(
            f"{'instruction':<10} {'relevant':>8} {'P(viol|rel)':>11} {'P(viol|irr)':>11}   by rule code (n, P(viol))"
        )
        for inst in all_instructions():
            spec = inst.verifier
            if not spec.rules:
                continue
            settings: dict[str, object] = dict(spec.fixed)
            for pname, key in spec.settings.items():
                settings[key] = inst.params[pname].default
            if inst.id == "doc_3":
                settings["lint.pydocstyle.convention"] = "google"
            bad = {stem_of[s] for s in ruff_violations(folder, spec.rules, settings, spec.preview)}
            if inst.id == "library_2":  # + the built-in check: a DataFrame variable named df
                bad |= {
                    tid
                    for tid in stem_of.values()
                    if re.search(r"^\s*df\s*=", samples[tid], re.MULTILINE)
                }
            by_rule: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
            rel = [0, 0]
            irr = [0, 0]
            for prob in problems:
                j = judged[prob.task_id][inst.id]
                v = prob.task_id in bad
                by_rule[j.rule][0] += 1
                by_rule[j.rule][1] += v
                bucket = rel if j.relevant else irr
                bucket[0] += 1
                bucket[1] += v
            pr = f"{rel[1] / rel[0]:.2f}" if rel[0] else "-"
            pi = f"{irr[1] / irr[0]:.2f}" if irr[0] else "-"
            detail = ", ".join(
                f"{r} ({n}, {v / n:.2f})"
                for r, (n, v) in sorted(by_rule.items(), key=lambda kv: -kv[1][0])
            )
            print(f"{inst.id:<10} {rel[0] / len(problems):>8.2f} {pr:>11} {pi:>11}   {detail}")
    print(f"\nrules selector: {len(problems)} tasks x 30 instructions judged in {t_rules:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
