"""How often the reviewer's rules of issue 23 fire on every real solution the project has.

Every real solution here is an honest reply (reference solutions and real model replies, the
sources of ``benchmarks/screen_false_positives.py``: 6,902), so each rule that would change a
published figure shows up as a count here. Per source, the solutions with:

- a suppression comment that Ruff honours (``ci/suppressions.find_suppressions``), which the
  verdicts no longer honour;
- hidden code (``verify/substance.hidden_code``: every code-level instruction fails);
- nothing to run (``verify/substance.nothing_to_run``: no code);
- a decoy use of an import (``verify/checks.decoy_uses``, logic_1);
- ``__all__`` (doc_3 then lints with it renamed);
- for the replays, whose whole replies ship: a prose string (doc_4) and an empty or keyless
  JSON block (doc_6) in a reply that the paper's checks pass.

Then every hit is listed. Usage: ``python benchmarks/substance_real.py [--data DIR]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

from screen_false_positives import DEFAULT_DATA, ROOT, sources

from pytest_vibecheck.ci.suppressions import find_suppressions
from pytest_vibecheck.verify.checks import code_then_json_reply, decoy_uses, pure_code_reply
from pytest_vibecheck.verify.substance import hidden_code, nothing_to_run

RULES = ("suppression", "hidden-code", "nothing-to-run", "decoy-use", "__all__")


def _replies() -> list[tuple[str, str, str]]:
    """(replay, id, whole reply) of every shipped replay."""
    out = []
    for replay in sorted((ROOT / "replays").glob("*/replies.jsonl.gz")):
        with gzip.open(replay, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    r = json.loads(line)
                    out.append((replay.parent.name, f"{r['task_id']}/{r.get('label')}/{r.get('sample')}",
                                str(r.get("reply") or "")))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args(argv)
    skipped: list[str] = []
    counts: dict[str, Counter[str]] = {}
    totals: Counter[str] = Counter()
    hits: list[str] = []
    for src, iid, code, _libs in sources(args.data, skipped):
        totals[src] += 1
        c = counts.setdefault(src, Counter())
        found = {
            "suppression": bool(find_suppressions(code)),
            "hidden-code": bool(hidden_code(code)),
            "nothing-to-run": nothing_to_run(code),
            "decoy-use": bool(decoy_uses(code)),
            "__all__": "__all__" in code,
        }
        for rule, hit in found.items():
            if hit:
                c[rule] += 1
                hits.append(f"  {src} {iid}: {rule}")
    print(f"{sum(totals.values()):,} real solutions" + (f"; skipped: {', '.join(skipped)}" if skipped else ""))
    print(f"{'source':32} {'n':>6} " + " ".join(f"{r:>15}" for r in RULES))
    for src, n in totals.items():
        print(f"{src:32} {n:>6} " + " ".join(f"{counts[src][r]:>15}" for r in RULES))
    replies = _replies()
    prose = [(name, iid) for name, iid, reply in replies
             if any(v.rule == "prose-string" for v in pure_code_reply(reply))]
    empty_json = [(name, iid) for name, iid, reply in replies
                  if any(v.rule == "empty-json" for v in code_then_json_reply(reply))]
    print(f"\n{len(replies):,} replay replies: {len(prose)} with a prose string (doc_4), "
          f"{len(empty_json)} with an empty or keyless JSON block (doc_6)")
    hits += [f"  replay:{n} {i}: prose-string" for n, i in prose]
    hits += [f"  replay:{n} {i}: empty-json" for n, i in empty_json]
    if hits:
        print("\nhits:")
        print("\n".join(hits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
