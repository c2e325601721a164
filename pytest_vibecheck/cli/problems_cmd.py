"""``vibecheck problems list`` and ``vibecheck problems stats SUITE [--json]``.

``stats`` reports what augmentation produced (paper §3.1): task counts, the category
shares of the selected instructions next to the paper's, per-instruction frequency and
positions, parameter histograms, and the relevance reasons recorded in the provenance.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from pytest_vibecheck.suites.augment import PAPER_SHARES, category_shares
from pytest_vibecheck.suites.store import Suite, find_suite, list_suites, load_suite, read_manifest
from pytest_vibecheck.verify.instructions import all_instructions, category_names, default_registry


def register(sub: Any) -> None:
    """Add the ``problems`` sub-command (``list``, ``stats``) to ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "problems", help="list suites and show their statistics"
    )
    inner = p.add_subparsers(dest="problems_command", metavar="{list,stats}")
    inner.required = True
    lp = inner.add_parser("list", help="list the shipped suites")
    lp.add_argument("--json", action="store_true", help="print machine-readable JSON")
    lp.set_defaults(func=run_list)
    sp = inner.add_parser(
        "stats", help="task counts, category shares, instruction frequency, reasons"
    )
    sp.add_argument("suite", metavar="SUITE", help="shipped suite name or suite folder")
    sp.add_argument("--json", action="store_true", help="print machine-readable JSON")
    sp.set_defaults(func=run_stats)


def run_list(args: argparse.Namespace) -> int:
    """Print the shipped suites (name, tasks, selector, k, seed, licence, description)."""
    rows = []
    for name in list_suites():
        m = read_manifest(find_suite(name))
        rows.append(
            {
                "name": name,
                "tasks": m["counts"]["tasks"],
                "selector": m["selector"],
                "k": m["k"],
                "seed": m["seed"],
                "licence": m["licence"],
                "description": m["description"],
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no shipped suites found")
        return 0
    for r in rows:
        print(
            f"{r['name']:<20} {r['tasks']:>5} tasks  k={r['k']} {r['selector']:<8} seed={r['seed']}  {r['licence']:<14} {r['description']}"
        )
    return 0


def paper_key(manifest: Mapping[str, Any]) -> str | None:
    """Which of the paper's share tables applies to a suite (by its source format)."""
    source = manifest.get("source")
    fmt = source.get("format") if isinstance(source, dict) else None
    return {"bigcodebench": "bigvibebench", "livecodebench": "livevibebench"}.get(str(fmt))


def compute_stats(suite: Suite) -> dict[str, Any]:
    """Statistics of a suite; shares are fractions in [0, 1], counts are integers.

    Keys: ``suite``, ``tasks``, ``by_test_kind``, ``instructions``,
    ``tasks_by_instruction_count``, ``category_shares``, ``paper_shares`` (or ``None``),
    ``instruction_frequency`` (id -> count of tasks), ``positions`` (id -> counts at
    positions 1..k), ``param_histograms`` (id -> param -> value -> count),
    ``relevance_reasons`` (id -> decision -> rule -> count), ``fewer_than_k``,
    ``contradictory_pairs`` (the (task, instruction) pairs whose prompt contradicts the
    instruction under some profile: :func:`~pytest_vibecheck.generate.setup.contradictory_pairs`;
    a shipped suite has none).
    """
    from pytest_vibecheck.generate.setup import contradictory_pairs

    reg = default_registry()
    problems = suite.problems
    freq: Counter[str] = Counter()
    positions: dict[str, Counter[int]] = defaultdict(Counter)
    params: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    reasons: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for prob in problems:
        for pos, ref in enumerate(prob.instructions, start=1):
            freq[ref.id] += 1
            positions[ref.id][pos] += 1
            for name, value in ref.params.items():
                params[ref.id][name][json.dumps(value)] += 1
        for dec in prob.provenance.get("decisions", []):
            if isinstance(dec, dict):
                reasons[str(dec.get("id"))][str(dec.get("decision"))][str(dec.get("rule"))] += 1
    key = paper_key(suite.manifest)
    order = [i.id for i in all_instructions()]
    return {
        "suite": suite.name,
        "tasks": len(problems),
        "by_test_kind": dict(Counter(p.test.kind for p in problems)),
        "instructions": sum(freq.values()),
        "tasks_by_instruction_count": {
            str(n): c for n, c in sorted(Counter(len(p.instructions) for p in problems).items())
        },
        "category_shares": category_shares(problems, reg),
        "paper_shares": dict(PAPER_SHARES[key]) if key else None,
        "instruction_frequency": {i: freq[i] for i in order if freq[i]},
        "positions": {
            i: {str(k): v for k, v in sorted(positions[i].items())} for i in order if i in positions
        },
        "param_histograms": {
            i: {n: dict(sorted(c.items())) for n, c in params[i].items()}
            for i in order
            if i in params
        },
        "relevance_reasons": {
            i: {d: dict(c.most_common()) for d, c in sorted(reasons[i].items())}
            for i in order
            if i in reasons
        },
        "fewer_than_k": sum("fewer_than_k" in p.provenance for p in problems),
        "contradictory_pairs": contradictory_pairs(suite),
    }


def run_stats(args: argparse.Namespace) -> int:
    """Print the statistics of one suite (text or ``--json``)."""
    stats = compute_stats(load_suite(args.suite))
    if args.json:
        print(json.dumps(stats, indent=2, sort_keys=True))
        return 0
    print(f"suite {stats['suite']}: {stats['tasks']} tasks, {stats['instructions']} instructions")
    print(
        "  test kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(stats["by_test_kind"].items()))
    )
    print(
        "  instructions per task: "
        + ", ".join(f"{k}: {v}" for k, v in stats["tasks_by_instruction_count"].items())
    )
    pairs = stats["contradictory_pairs"]
    print(f"  contradictory (prompt, instruction) pairs: {len(pairs)}")
    for line in pairs[:10]:
        print(f"    {line}")
    paper = stats["paper_shares"]
    print("category shares (this suite vs the paper, §3.1):")
    names = category_names()
    for cat, share in sorted(stats["category_shares"].items(), key=lambda kv: -kv[1]):
        ref = (
            f"  paper {100 * paper[cat]:5.1f}%  diff {100 * (share - paper[cat]):+5.1f}"
            if paper and cat in paper
            else ""
        )
        print(f"  {names.get(cat, cat):<17} {100 * share:5.1f}%{ref}")
    print("per-instruction frequency (tasks; positions 1..k):")
    for iid, count in stats["instruction_frequency"].items():
        pos = " ".join(f"{k}:{v}" for k, v in stats["positions"][iid].items())
        hist = stats["param_histograms"].get(iid)
        extra = (
            "  "
            + "; ".join(
                f"{n}=" + ",".join(f"{v}x{c}" for v, c in h.items()) for n, h in hist.items()
            )
            if hist
            else ""
        )
        print(
            f"  {iid:<10} {count:>5} ({100 * count / max(stats['tasks'], 1):5.1f}% of tasks)  [{pos}]{extra}"
        )
    print("relevance reasons (decision: rule x count):")
    for iid, by_dec in stats["relevance_reasons"].items():
        parts = [
            f"{d}: " + ", ".join(f"{r} x{c}" for r, c in list(rules.items())[:4])
            for d, rules in by_dec.items()
        ]
        print(f"  {iid:<10} " + " | ".join(parts))
    if stats["fewer_than_k"]:
        print(f"{stats['fewer_than_k']} task(s) have fewer than k instructions")
    return 0
