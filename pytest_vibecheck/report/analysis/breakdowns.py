"""Breakdowns of report results with confidence intervals (issue 7, item 2).

Input: ``aggregate.Result`` records (``load.report_results``), so every point estimate equals
the report's ``aggregates`` (paper §3.2 / §4.4 / §4.5 definitions in :mod:`pytest_vibecheck.report.metrics`).
Only evaluated results count; infrastructure errors and skips are counted apart.

Intervals (all fractions in [0, 1]):

- pass@1 and task-level IF: Wilson when every problem has one sample, else a percentile
  bootstrap over problems (samples of a problem stay together);
- instruction-level IF and FR_k: percentile bootstrap over problems (FR_k pairs S0 and S_k on
  the problems both have);
- IF by position, category and instruction: Wilson over (result, instruction) pairs (a
  micro-average, as in the report; pairs from one reply are treated as independent).

The *headline* group of a (suite, model, protocol) is its largest k (e.g. k = 5); position,
category, instruction and co-failure tables use it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_vibecheck.report import metrics
from pytest_vibecheck.report.aggregate import PROTOCOL_ORDER, Result
from pytest_vibecheck.report.analysis.load import results_by
from pytest_vibecheck.report.analysis.stats import (
    cofailure_matrix,
    percentile_interval,
    proportion,
    require_scipy,
    resample_indices,
    retention,
)
from pytest_vibecheck.report.analysis.tables import Column, Table

__all__ = ["AnalysisSettings", "build_tables"]

CI = tuple[float | None, float | None, float | None]


@dataclass(frozen=True)
class AnalysisSettings:
    """``confidence`` level, bootstrap ``n_resamples`` and ``seed``, co-failure ``top_pairs``."""

    confidence: float = 0.95
    n_resamples: int = 1000
    seed: int | None = 0
    top_pairs: int = 5


def _evaluated(rs: Sequence[Result]) -> list[Result]:
    return [r for r in rs if r.status == "evaluated"]


def _by_task(rs: Sequence[Result]) -> dict[str, list[Result]]:
    out: dict[str, list[Result]] = defaultdict(list)
    for r in rs:
        out[r.task_id].append(r)
    return dict(sorted(out.items()))


def _ratio_boot(
    num: Sequence[float], den: Sequence[float], st: AnalysisSettings,
    transform: Callable[[Any], Any] | None = None,
) -> tuple[float, float] | None:  # fmt: skip
    """Percentile interval of sum(num)/sum(den) over problems resampled with replacement."""
    if st.n_resamples <= 0 or len(num) < 2:
        return None
    require_scipy()  # the extra's one-line error, not a ModuleNotFoundError
    import numpy as np

    idx = resample_indices(len(num), st.n_resamples, st.seed)
    n = np.asarray(num, dtype=float)[idx].sum(axis=1)
    d = np.asarray(den, dtype=float)[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = np.where(d > 0, n / np.where(d > 0, d, 1), np.nan)
    if transform is not None:
        vals = transform(vals)
    return percentile_interval(vals, st.confidence)


def _ci3(value: float | None, ci: tuple[float, float] | None) -> CI | None:
    if value is None:
        return None
    return (value, ci[0], ci[1]) if ci else (value, None, None)


def _pass_at_1(ev: Sequence[Result], st: AnalysisSettings) -> CI | None:
    tasks = _by_task(ev)
    value = metrics.pass_at_1({t: [r.tests_passed for r in rs] for t, rs in tasks.items()})
    if value is None:
        return None
    if all(len(rs) == 1 for rs in tasks.values()):
        ci = proportion(sum(r.tests_passed for r in ev), len(ev), st.confidence).ci
    else:
        rates = [sum(r.tests_passed for r in rs) / len(rs) for rs in tasks.values()]
        ci = _ratio_boot(rates, [1.0] * len(rates), st)
    return _ci3(value, ci)


def _instruction_if(ev: Sequence[Result], st: AnalysisSettings) -> CI | None:
    vlists = [[ok for _, _, ok in r.verdicts] for r in ev]
    value = metrics.instruction_level_if(vlists)
    if value is None:
        return None
    num, den = [], []
    for rs in _by_task(ev).values():
        fr = [sum(ok for _, _, ok in r.verdicts) / len(r.verdicts) for r in rs if r.verdicts]
        num.append(sum(fr))
        den.append(len(fr))
    return _ci3(value, _ratio_boot(num, den, st))


def _task_if(ev: Sequence[Result], st: AnalysisSettings) -> CI | None:
    vlists = [[ok for _, _, ok in r.verdicts] for r in ev]
    value = metrics.task_level_if(vlists)
    if value is None:
        return None
    tasks = _by_task(ev)
    if all(len(rs) == 1 for rs in tasks.values()):
        judged = [v for v in vlists if v]
        return _ci3(value, proportion(sum(all(v) for v in judged), len(judged), st.confidence).ci)
    num = [sum(all(ok for *_, ok in r.verdicts) for r in rs if r.verdicts) for rs in tasks.values()]
    den = [sum(1 for r in rs if r.verdicts) for rs in tasks.values()]
    return _ci3(value, _ratio_boot(num, den, st))


def _fr(base: Sequence[Result], ev: Sequence[Result], st: AnalysisSettings) -> CI | None:
    def rates(rs: Sequence[Result]) -> dict[str, float]:
        return {t: sum(r.tests_passed for r in v) / len(v) for t, v in _by_task(rs).items()}

    b, g = rates(base), rates(ev)
    s0 = metrics.mean(b.values())
    sk = metrics.mean(g.values())
    value = metrics.functional_regression(s0, sk)
    if value is None:
        return None
    common = sorted(set(b) & set(g))
    ci = _ratio_boot([g[t] for t in common], [b[t] for t in common], st, transform=lambda x: 1 - x)
    return _ci3(value, ci)


def _headline(rs: Sequence[Result]) -> dict[tuple[str, str, str], int]:
    """(suite, model, protocol) -> largest k with evaluated results."""
    out: dict[tuple[str, str, str], int] = {}
    for r in rs:
        if r.status == "evaluated":
            key = (r.suite, r.model, r.protocol)
            out[key] = max(out.get(key, 0), r.k)
    return dict(
        sorted(out.items(), key=lambda kv: (kv[0][0], kv[0][1], PROTOCOL_ORDER.get(kv[0][2], 9)))
    )


def overview_table(res: Sequence[Result], st: AnalysisSettings) -> Table:
    """One row per (suite, model, protocol, k): counts, pass@1, FR_k, instruction/task IF."""
    t = Table(
        "overview",
        "Overview by group",
        [
            Column("suite", "suite"),
            Column("model", "model"),
            Column("protocol", "protocol"),
            Column("k", "k", "int"),
            Column("evaluated", "evaluated", "int"),
            Column("errors", "errors", "int"),
            Column("skipped", "skipped", "int"),
            Column("no_code", "no code", "int"),
            Column("tampered", "tampered", "int"),
            Column("pass_at_1", "pass@1", "pct_ci"),
            Column("fr", "FR_k", "pct_ci"),
            Column("instruction_if", "instruction IF", "pct_ci"),
            Column("task_if", "task IF", "pct_ci"),
        ],
        note=(
            "pass@1 and task-level IF: Wilson interval (bootstrap over problems when problems "
            "have several samples); instruction-level IF and FR_k: bootstrap over problems. "
            "FR_k = (S0 - S_k) / S0, negative = improvement. Errors and skips are "
            "infrastructure outcomes, left out of every rate; tampered = replies whose code went for "
            "its grader (counted as failures)."
        ),
    )
    groups = results_by(res, "suite", "model", "protocol", "k")
    base = {key[:2]: _evaluated(rs) for key, rs in groups.items() if key[2:] == ("baseline", 0)}
    for (suite, model, protocol, k), rs in groups.items():
        ev = _evaluated(rs)
        b = base.get((suite, model))
        fr = None if protocol == "baseline" or not b else _fr(b, ev, st)
        t.rows.append([
            suite, model, protocol, k, len(ev),
            sum(r.status == "error" for r in rs), sum(r.status == "skipped" for r in rs),
            sum(r.no_code for r in ev), sum(r.tampered for r in ev), _pass_at_1(ev, st), fr,
            _instruction_if(ev, st), _task_if(ev, st),
        ])  # fmt: skip
    return t


def fr_table(res: Sequence[Result], st: AnalysisSettings) -> Table:
    """FR_k for k = 0..K per (suite, model, protocol): the cells of the overview, pivoted."""
    groups = results_by(res, "suite", "model", "protocol", "k")
    ks = sorted({0} | {k for (_, _, p, k) in groups if p != "baseline"})
    t = Table(
        "fr_by_k",
        "Functional regression FR_k by number of instructions k",
        [
            Column("suite", "suite"),
            Column("model", "model"),
            Column("protocol", "protocol"),
            Column("s0", "S0 (k=0 pass@1)", "pct"),
        ]
        + [Column(f"k{k}", f"k={k}", "pct_ci") for k in ks],
        note=(
            "FR_k = (S0 - S_k) / S0 (paper §3.2) with a bootstrap interval over problems; "
            "FR_0 = 0 by definition (k = 0 is the baseline itself)."
        ),
    )
    base = {key[:2]: _evaluated(rs) for key, rs in groups.items() if key[2:] == ("baseline", 0)}
    rows: dict[tuple[str, str, str], dict[int, CI | None]] = defaultdict(dict)
    for (suite, model, protocol, k), rs in groups.items():
        if protocol != "baseline" and (suite, model) in base:
            cells = rows[(suite, model, protocol)]
            cells[0] = (0.0, None, None)
            cells[k] = _fr(base[(suite, model)], _evaluated(rs), st)
    for (suite, model, protocol), cells in rows.items():
        s0 = _pass_at_1(base[(suite, model)], st)
        t.rows.append([suite, model, protocol, s0[0] if s0 else None] + [cells.get(k) for k in ks])
    return t


def position_table(res: Sequence[Result], st: AnalysisSettings) -> Table:
    """IF of the instruction at each position 1..k, per protocol (paper §4.4), headline k."""
    head = _headline(res)
    kmax = max((k for (_, _, p), k in head.items() if p != "baseline"), default=0)
    t = Table(
        "if_by_position",
        "Instruction following by position",
        [
            Column("suite", "suite"),
            Column("model", "model"),
            Column("protocol", "protocol"),
            Column("k", "k", "int"),
        ]
        + [Column(f"pos{p}", f"pos {p}", "pct_ci") for p in range(1, kmax + 1)],
        note=(
            "Share of instructions at position p that are met (single-turn: order in the "
            "prompt; multi-turn: turn at which the instruction was given, judged on the final "
            "code). Wilson intervals. The paper finds primacy in single-turn and recency in "
            "multi-turn."
        ),
    )
    for (suite, model, protocol), k in head.items():
        if protocol == "baseline":
            continue
        ev = [r for r in res if r.status == "evaluated" and (r.suite, r.model, r.protocol, r.k)
              == (suite, model, protocol, k)]  # fmt: skip
        counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for r in ev:
            for pos, (_, _, ok) in enumerate(r.verdicts, start=1):
                counts[pos][0] += ok
                counts[pos][1] += 1
        cells: list[Any] = []
        for p in range(1, kmax + 1):
            s, n = counts.get(p, [0, 0])
            pr = proportion(s, n, st.confidence)
            cells.append(_ci3(pr.value, pr.ci))
        t.rows.append([suite, model, protocol, k, *cells])
    return t


def _counts(
    res: Sequence[Result], group: tuple[str, str, str, int], by: str
) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in res:
        if r.status == "evaluated" and (r.suite, r.model, r.protocol, r.k) == group:
            for iid, cat, ok in r.verdicts:
                cell = counts[cat if by == "category" else iid]
                cell[0] += ok
                cell[1] += 1
    return dict(sorted(counts.items()))


_KEYED_NOTE = (
    "Micro-average over (result, instruction) pairs at the headline k of each protocol, "
    "Wilson intervals. The baseline rows judge code written without the instructions."
)


def category_table(res: Sequence[Result], st: AnalysisSettings) -> Table:
    """IF by category (columns) per (suite, model, protocol) at the headline k."""
    head = _headline(res)
    per = {key: _counts(res, (*key, k), "category") for key, k in head.items()}
    cats = sorted({c for counts in per.values() for c in counts})
    t = Table(
        "if_by_category",
        "Instruction following by category",
        [
            Column("suite", "suite"),
            Column("model", "model"),
            Column("protocol", "protocol"),
            Column("k", "k", "int"),
        ]
        + [Column(c, c, "pct_ci") for c in cats]
        + [Column("n", "judged", "int")],
        note=_KEYED_NOTE,
    )
    for (suite, model, protocol), k in head.items():
        counts = per[(suite, model, protocol)]
        cells: list[Any] = []
        for c in cats:
            s, n = counts.get(c, [0, 0])
            pr = proportion(s, n, st.confidence)
            cells.append(_ci3(pr.value, pr.ci))
        total = sum(n for _, n in counts.values())
        t.rows.append([suite, model, protocol, k, *cells, total])
    return t


def instruction_table(res: Sequence[Result], st: AnalysisSettings) -> Table:
    """IF by instruction (one row each) per (suite, model, protocol) at the headline k."""
    head = _headline(res)
    t = Table(
        "if_by_instruction",
        "Instruction following by instruction",
        [
            Column("suite", "suite"),
            Column("model", "model"),
            Column("protocol", "protocol"),
            Column("k", "k", "int"),
            Column("instruction", "instruction"),
            Column("if", "IF", "pct_ci"),
            Column("passed", "met", "int"),
            Column("n", "judged", "int"),
        ],
        note=_KEYED_NOTE,
    )
    for (suite, model, protocol), k in head.items():
        for key, (s, n) in _counts(res, (suite, model, protocol, k), "instruction").items():
            pr = proportion(s, n, st.confidence)
            t.rows.append([suite, model, protocol, k, key, _ci3(pr.value, pr.ci), s, n])
    return t


def cofailure_table(res: Sequence[Result], st: AnalysisSettings) -> Table:
    """The most significant co-failing instruction pairs per group (headline k)."""
    head = _headline(res)
    t = Table(
        "cofailure",
        "Instructions that fail together",
        [
            Column("suite", "suite"),
            Column("model", "model"),
            Column("protocol", "protocol"),
            Column("k", "k", "int"),
            Column("a", "instruction A"),
            Column("b", "instruction B"),
            Column("n", "judged together", "int"),
            Column("both_fail", "both failed", "int"),
            Column("expected", "expected", "float"),
            Column("lift", "observed/expected", "float"),
            Column("odds_ratio", "odds ratio", "float"),
            Column("p_value", "p", "p"),
            Column("q_value", "q (BH)", "p"),
        ],
        note=(
            "For each pair judged on the same reply: observed joint failures against the "
            "independence expectation fail_A*fail_B/n, one-sided Fisher exact test (more joint "
            f"failures than expected), Benjamini-Hochberg q over all pairs of the group. Top "
            f"{st.top_pairs} pairs by p per group. Computed within one model, so a weak "
            "model failing everything does not create spurious pairs."
        ),
    )
    for (suite, model, protocol), k in head.items():
        items = [
            {iid: ok for iid, _, ok in r.verdicts}
            for r in res
            if r.status == "evaluated"
            and (r.suite, r.model, r.protocol, r.k) == (suite, model, protocol, k)
        ]
        for c in cofailure_matrix(items)[: st.top_pairs]:
            t.rows.append([
                suite, model, protocol, k, c.a, c.b, c.n, c.both_fail, c.expected,
                c.lift, c.odds_ratio, c.p_value, c.q_value,
            ])  # fmt: skip
    return t


def retention_table(res: Sequence[Result], st: AnalysisSettings) -> Table:
    """Multi-turn retention, recovery and acquisition per turn (see ``stats.Retention``)."""
    t = Table(
        "retention",
        "Multi-turn retention",
        [
            Column("suite", "suite"),
            Column("model", "model"),
            Column("turn", "turn", "int"),
            Column("retention", "retention", "pct_ci"),
            Column("recovery", "recovery", "pct_ci"),
            Column("acquisition", "acquisition", "pct_ci"),
        ],
        note=(
            "retention(t) = P(met at turn t | met at t-1) over instructions given before t; "
            "recovery(t) = P(met at t | not met at t-1); acquisition(t) = P(the instruction "
            "given at turn t is met at turn t). One conversation per problem and sample (the "
            "longest), Wilson intervals."
        ),
    )
    longest: dict[tuple[str, str, str, int], Result] = {}
    for r in res:
        if r.status != "evaluated" or r.protocol != "multi" or not r.turn_verdicts:
            continue
        key = (r.suite, r.model, r.task_id, r.sample)
        if key not in longest or r.k > longest[key].k:
            longest[key] = r
    convs: dict[tuple[str, str], list[list[dict[str, bool | None]]]] = defaultdict(list)
    for (suite, model, _, _), r in sorted(longest.items()):
        ids = [iid for iid, _, _ in r.verdicts]
        convs[(suite, model)].append(
            [{ids[i]: ok for i, ok in enumerate(turn) if i < len(ids)} for turn in r.turn_verdicts]
        )
    for (suite, model), cs in sorted(convs.items()):
        rt = retention(cs, st.confidence)
        turns = sorted({x.turn for x in (*rt.retention, *rt.recovery, *rt.acquisition)})
        ret = {x.turn: _ci3(x.rate.value, x.rate.ci) for x in rt.retention}
        rec = {x.turn: _ci3(x.rate.value, x.rate.ci) for x in rt.recovery}
        acq = {x.turn: _ci3(x.rate.value, x.rate.ci) for x in rt.acquisition}
        for turn in turns:
            t.rows.append([suite, model, turn, ret.get(turn), rec.get(turn), acq.get(turn)])
    return t


def build_tables(res: Sequence[Result], settings: AnalysisSettings | None = None) -> list[Table]:
    """Every report table, in display order; empty tables are dropped."""
    st = settings or AnalysisSettings()
    tables = [
        overview_table(res, st),
        fr_table(res, st),
        position_table(res, st),
        retention_table(res, st),
        category_table(res, st),
        instruction_table(res, st),
        cofailure_table(res, st),
    ]
    return [t for t in tables if t.rows]
