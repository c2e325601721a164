"""Compare ``extract_code`` with the extraction recorded in real HumanEval replies.

Data: ``shared/data/samples/humaneval-qwen2.5-coder-0.5b-instruct-q4km/humaneval_greedy_max256.jsonl.gz``
(164 replies of Qwen2.5-Coder-0.5B-Instruct, fields ``task_id``, ``response`` (raw reply),
``extracted_code``, ``status``). Their extractor (``run_metadata.json``): "first ```python/py
fenced block, else the whole reply; the HumanEval prompt is prepended when the code lacks
'def <entry_point>'". To compare like with like, the same prompt-prepending rule is applied to
our code before comparing.

Each reply is classified as:
- ``identical``: byte-identical;
- ``identical-after-newline``: equal once both end with exactly one newline (ours always does);
- ``different``: anything else, with a cause.

Usage: ``python benchmarks/extraction_agreement.py [--data PATH] [--humaneval PATH] [-v]``.
"""

from __future__ import annotations

import argparse
import ast
import collections
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from pytest_vibecheck.verify.extract import extract_code

ROOT = Path(__file__).resolve().parents[2]
DATA = (
    ROOT
    / "shared/data/samples/humaneval-qwen2.5-coder-0.5b-instruct-q4km/humaneval_greedy_max256.jsonl.gz"
)
HUMANEVAL = ROOT / "shared/data/humaneval/HumanEval.jsonl.gz"


def _read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _with_prompt(code: str, prompt: str, entry_point: str) -> str:
    """The sample's post-processing: prepend the prompt when the code lacks the def."""
    return code if f"def {entry_point}" in code else prompt + code


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def _one_newline(s: str) -> str:
    s = s.rstrip("\n")
    return s + "\n" if s else ""


def _cause(reply: str, ours: str, theirs: str, method: str) -> str:
    if theirs == reply and method == "unterminated-fence":
        return (
            "unterminated fence (reply hit max_tokens): theirs is the whole reply, opening "
            "```python line included (a syntax error); ours drops the fence line"
        )
    if theirs == reply:
        return f"theirs is the whole reply; ours used {method}"
    if ours.strip() == theirs.strip():
        return "leading/trailing whitespace only"
    return f"other ({method})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--humaneval", type=Path, default=HUMANEVAL)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every difference")
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"data file not found: {args.data}", file=sys.stderr)
        return 2
    problems = {p["task_id"]: p for p in _read_jsonl_gz(args.humaneval)}
    rows = _read_jsonl_gz(args.data)

    verdicts: collections.Counter[str] = collections.Counter()
    methods: collections.Counter[str] = collections.Counter()
    causes: collections.Counter[str] = collections.Counter()
    best_vs_first: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    parse: collections.Counter[str] = collections.Counter()
    for row in rows:
        prob = problems[row["task_id"]]
        ex = extract_code(row["response"])
        methods[ex.method] += 1
        ours = _with_prompt(ex.code, prob["prompt"], prob["entry_point"])
        theirs = row["extracted_code"]
        if ours == theirs:
            verdicts["identical"] += 1
        elif ours == _one_newline(theirs):
            verdicts["identical-after-newline"] += 1
        else:
            verdicts["different"] += 1
            cause = _cause(row["response"], ours, theirs, ex.method)
            causes[cause] += 1
            examples.append(
                f"{row['task_id']}: {cause}\n  ours  : {ours[-120:]!r}\n  theirs: {theirs[-120:]!r}"
            )
        if ex.method == "unterminated-fence":
            parse["ours"] += _parses(ours)
            parse["theirs"] += _parses(theirs)
        best = extract_code(row["response"], mode="best", entry_point=prob["entry_point"])
        best_vs_first["same" if best.code == ex.code else "different"] += 1

    n = len(rows)
    print(f"replies: {n}")
    print(f"methods (mode=first): {dict(methods)}")
    for key in ("identical", "identical-after-newline", "different"):
        print(f"  {key:<25} {verdicts[key]:>4}  ({verdicts[key] / n:.1%})")
    for cause, count in causes.most_common():
        print(f"    cause: {cause}: {count}")
    print(
        f"unterminated-fence replies whose code parses: ours {parse['ours']}, theirs {parse['theirs']}"
    )
    print(f"mode=best (entry_point) vs mode=first: {dict(best_vs_first)}")
    if args.verbose:
        print("\n".join(examples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
