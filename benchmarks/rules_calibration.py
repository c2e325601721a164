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

from pytest_vibecheck.suites.loaders import load_bigcodebench, load_livecodebench
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.selectors.rules import RulesSelector, evidence
from pytest_vibecheck.verify.instructions import all_instructions

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
    nodes: list[ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = [
        tree,
        *(
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ),
    ]
    return any(ast.get_docstring(n) is not None for n in nodes)


def violations(problems: list[Problem], samples: dict[str, str]) -> dict[str, set[str]]:
    """instruction id -> task ids whose model program breaks it (Ruff, default parameters)."""
    out: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stem_of = {}
        for n, prob in enumerate(problems):
            stem_of[f"t{n:04d}"] = prob.task_id
            (folder / f"t{n:04d}.py").write_text(
                samples[prob.task_id].rstrip("\n") + "\n", encoding="utf-8"
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
                    t
                    for t in stem_of.values()
                    if re.search(r"^\s*df\s*=", samples[t], re.MULTILINE)
                }
            out[inst.id] = bad
    out["doc_5"] = {t for t, code in samples.items() if _has_comment_or_docstring(code)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    ap.add_argument("--source", choices=("big", "live", "both"), default="both")
    ap.add_argument(
        "--emit", type=Path, help="write the table as pytest_vibecheck/suites/selectors/calibration.py"
    )
    ap.add_argument(
        "--min-n", type=int, default=10, help="buckets with fewer tasks are left out (default 10)"
    )
    args = ap.parse_args()
    pooled: dict[tuple[str, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    for source in ("big", "live") if args.source == "both" else (args.source,):
        if source == "big":
            problems = load_bigcodebench(
                args.data / "bigcodebench" / "BigCodeBench-v0.1.0_hf.jsonl.gz"
            )
            with gzip.open(args.data / SAMPLES, "rt", encoding="utf-8") as fh:
                samples = {row["task_id"]: row["solution"] for row in map(json.loads, fh)}
        else:
            problems = load_livecodebench(
                args.data / "livecodebench" / "lcb_v5_problems_with_public_tests.jsonl.gz"
            )
            with gzip.open(args.data / LIVE_SAMPLES, "rt", encoding="utf-8") as fh:
                samples = {
                    row["question_id"]: _first_code(row["code_list"]) for row in json.load(fh)
                }
        samples = {p.task_id: samples[p.task_id] for p in problems}
        t0 = time.perf_counter()
        selector = RulesSelector()
        buckets = {
            p.task_id: {i.id: evidence(p, selector.features(p), i.id) for i in all_instructions()}
            for p in problems
        }
        t_rules = time.perf_counter() - t0
        bad = violations(problems, samples)
        print(
            f"\n== {source}: {len(problems)} tasks; model code: {'Qwen2.5-Coder-7B-Instruct' if source == 'big' else 'o1-mini'}"
        )
        print(
            f"{'instruction':<10} {'viol.':>5}  bucket (kind, n tasks, share whose model code breaks the instruction)"
        )
        for inst in all_instructions():
            if inst.id not in bad:
                print(f"{inst.id:<10}     -  not measurable from code (reply format)")
                continue
            counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
            for prob in problems:
                ev = buckets[prob.task_id][inst.id]
                assert ev is not None
                c = counts[ev.rule]
                c[0] += 1
                c[1] += prob.task_id in bad[inst.id]
                c[2] = int(ev.violation)
            total = len(bad[inst.id]) / len(problems)
            parts = []
            for rule, (n, v, is_violation) in sorted(counts.items(), key=lambda kv: -kv[1][0]):
                parts.append(f"{rule} ({'V' if is_violation else 'c'}, {n}, {v / n:.2f})")
                pooled[inst.id, rule][0] += n
                pooled[inst.id, rule][1] += v
            print(f"{inst.id:<10} {total:>5.2f}  " + ", ".join(parts))
        print(f"evidence for {len(problems)} tasks x 30 instructions in {t_rules:.1f} s")
    table: dict[str, dict[str, float]] = collections.defaultdict(dict)
    sizes: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for (iid, rule), (n, v) in pooled.items():  # buckets seen in both sources are pooled
        if n >= args.min_n:
            table[iid][rule] = round(v / n, 3)
            sizes[iid][rule] = n
    if args.emit:
        lines = [
            '"""Measured plausibility of each evidence bucket of the ``rules`` selector.',
            "",
            "``PLAUSIBILITY[instruction][bucket]`` is the share (a fraction in [0, 1]) of tasks in that",
            "bucket whose real, unconstrained model solution breaks the instruction: Ruff with the",
            "instruction's rules and default parameters (``df`` regex for library_2's built-in check;",
            "for doc_5, having any comment or docstring) over Qwen2.5-Coder-7B-Instruct's BigCodeBench",
            "instruct solutions (``ref:``/``doc:``/``lib:`` buckets) and o1-mini's LiveCodeBench programs",
            "(``text:``/``starter:`` buckets), from ``../shared/data``. Buckets with fewer than",
            f"{args.min_n} tasks are left out. Generated by ``benchmarks/rules_calibration.py --emit``",
            "(Ruff 0.17); do not edit by hand.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "from collections.abc import Mapping",
            "",
            "# instruction: {bucket: share}  (bucket sizes in the comments)",
            "PLAUSIBILITY: Mapping[str, Mapping[str, float]] = {",
        ]
        for iid in [i.id for i in all_instructions()]:
            if iid not in table:
                continue
            lines.append(f"    {iid!r}: {{")
            lines.extend(
                f"        {rule!r}: {table[iid][rule]},  # n={sizes[iid][rule]}"
                for rule in sorted(table[iid])
            )
            lines.append("    },")
        lines.append("}")
        args.emit.write_text("\n".join(lines) + "\n", encoding="utf-8")
        subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", str(args.emit)], check=True)
        print(f"wrote {args.emit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
