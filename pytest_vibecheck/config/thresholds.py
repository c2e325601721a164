"""Thresholds on the vibe metrics that decide a run's exit status (``--vibe-fail-under``,
``--vibe-max-fr``; see ``docs/ci.md``).

Values are **fractions in [0, 1]**; a value with a ``%`` suffix is a percentage (``40%`` = 0.4).
A threshold is met *at* the limit: ``pass@1=0.4`` fails only when pass@1 < 0.4, and
``--vibe-max-fr 0.1`` fails only when FR_k > 0.1 (comparisons allow 1e-9 of floating-point
slack, so 2/5 meets ``0.4`` and ``40%``).

Metric names (the aggregate rows of ``docs/report-schema.md``, one per suite, model, protocol, k):

==================  ========================================================  ===================
name                meaning (paper, Zhong et al. 2025)                        rows it applies to
==================  ========================================================  ===================
``pass@1``          share of problems whose unit tests pass (§3.2 "Func")     every row
``pass@K``          unbiased pass@K (Chen et al. 2021), K in 5, 10, ...       rows that report it
``instruction_if``  instruction-level IF: mean share of instructions met      single and multi
``task_if``         task-level IF: share of tasks meeting every instruction   single and multi
``fr`` (max only)   FR_k = (S0 - S_k) / S0 against the baseline (§3.2)        single and multi
==================  ========================================================  ===================

A threshold without a model applies to every model of the run (each must meet it); with a
model prefix, ``MODEL:METRIC=VALUE`` (the model spec as given to ``--vibe-model``, which may itself
contain ``:``, e.g. ``openai:gpt-5:pass@1=0.45``), only to that model's rows. Baseline rows are
left out of the IF thresholds because the model was not asked to follow instructions there.
A threshold that matches no row, or whose metric is not measured (no evaluated result), fails:
a gate must not pass on missing data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pytest_vibecheck.errors import UnknownIdError, VibecheckError

if TYPE_CHECKING:
    from pytest_vibecheck.report.records import AggregateRecord, ThresholdCheckRecord

__all__ = [
    "METRICS",
    "Check",
    "Threshold",
    "ThresholdError",
    "evaluate",
    "format_checks",
    "metric_present",
    "parse_fail_under",
    "parse_fraction",
    "parse_max_fr",
]

#: Metric names accepted by ``--vibe-fail-under`` (``pass@K`` for any K is accepted too).
METRICS: tuple[str, ...] = ("pass@1", "instruction_if", "task_if")
_INSTRUCTED = ("single", "multi")
_EPS = 1e-9


class ThresholdError(VibecheckError):
    """A malformed ``--vibe-fail-under`` or ``--vibe-max-fr`` value; the message names it."""


@dataclass(frozen=True)
class Threshold:
    """One limit: ``metric`` (``pass@1``, ``pass@5``, ``instruction_if``, ``task_if`` or ``fr``),
    ``value`` (a fraction), ``kind`` (``min`` for fail-under, ``max`` for ``fr``), and ``model``
    (``None`` = every model). ``text`` is the spelling the user gave, for messages."""

    metric: str
    value: float
    kind: Literal["min", "max"] = "min"
    model: str | None = None
    text: str = ""

    def describe(self) -> str:
        """``pass@1 >= 0.4000`` or ``openai:gpt-5 fr <= 0.1000``."""
        op = ">=" if self.kind == "min" else "<="
        who = f"{self.model} " if self.model else ""
        return f"{who}{self.metric} {op} {self.value:.4f}"


def parse_fraction(text: str, where: str, *, allow_negative: bool = False) -> float:
    """Parse ``0.4`` or ``40%`` into a fraction; ``where`` names the input in errors.

    Raises :class:`ThresholdError` for a non-number, a value outside [0, 1] (a bare ``40`` gets
    a "did you mean 40%?" hint) or a NaN.
    """
    raw = text.strip()
    pct = raw.endswith("%")
    num = raw[:-1].strip() if pct else raw
    try:
        value = float(num)
    except ValueError:
        raise ThresholdError(
            f"{where}: {text!r} is not a number; give a fraction in [0, 1] like 0.4 or a "
            "percentage like 40%"
        ) from None
    if math.isnan(value) or math.isinf(value):
        raise ThresholdError(f"{where}: {text!r} is not a finite number")
    if pct:
        value /= 100.0
    lo = -math.inf if allow_negative else 0.0
    if not lo <= value <= 1.0:
        hint = f"; did you mean {num}%?" if not pct and 1.0 < value <= 100.0 else ""
        rng = "at most 1 (100%)" if allow_negative else "in [0, 1] (0% to 100%)"
        raise ThresholdError(f"{where}: {text!r} must be a fraction {rng}{hint}")
    return value


def _check_metric(name: str, where: str) -> str:
    if name in METRICS:
        return name
    if name.startswith("pass@") and name[5:].isdigit() and int(name[5:]) >= 1:
        return name
    if name == "fr":
        raise ThresholdError(f"{where}: FR_k is an upper limit; use --vibe-max-fr VALUE")
    aliases = {"pass_at_1": "pass@1", "pass@1.0": "pass@1", "if": "instruction_if",
               "instruction-if": "instruction_if", "task-if": "task_if"}
    if name in aliases:
        raise ThresholdError(f"{where}: unknown metric {name!r}; did you mean {aliases[name]!r}?")
    raise UnknownIdError("metric", name, (*METRICS, "pass@5"))


def parse_fail_under(specs: str | Iterable[str], where: str = "--vibe-fail-under") -> list[Threshold]:
    """Parse ``pass@1=0.4,instruction_if=0.7,task_if=30%`` (and ``MODEL:METRIC=VALUE`` entries).

    ``specs`` is one string or several (a repeated option); entries are comma-separated. The
    model is everything before the last ``:`` of the key. Raises :class:`ThresholdError` or
    :class:`~pytest_vibecheck.errors.UnknownIdError` (with suggestions) naming the entry.
    """
    texts = [specs] if isinstance(specs, str) else list(specs)
    out: list[Threshold] = []
    for text in texts:
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            key, eq, value = part.rpartition("=")
            if not eq or not key.strip():
                raise ThresholdError(
                    f"{where}: {part!r} is not METRIC=VALUE or MODEL:METRIC=VALUE "
                    "(e.g. pass@1=0.4 or openai:gpt-5:task_if=30%)"
                )
            model, _, metric = key.strip().rpartition(":")
            entry = f"{where} entry {part!r}"
            out.append(
                Threshold(
                    metric=_check_metric(metric.strip(), entry),
                    value=parse_fraction(value, entry),
                    kind="min",
                    model=model.strip() or None,
                    text=part,
                )
            )
    return out


def parse_max_fr(text: str, where: str = "--vibe-max-fr") -> Threshold:
    """Parse ``--vibe-max-fr VALUE`` (``0.1`` or ``10%``; at most 1, negative allowed: a required
    improvement) into a ``fr`` threshold for every model. Raises :class:`ThresholdError`."""
    return Threshold("fr", parse_fraction(text, where, allow_negative=True), "max", None, text)


@dataclass(frozen=True)
class Check:
    """One threshold compared with one aggregate row (or with nothing: ``row`` is None).

    ``actual`` is the measured fraction (None if not measured); ``margin`` is how far the value
    is on the good side of the limit (negative = failed by that much), in fraction units.
    """

    threshold: Threshold
    row: str | None
    actual: float | None
    passed: bool
    note: str = ""

    @property
    def margin(self) -> float | None:
        if self.actual is None:
            return None
        t = self.threshold
        return self.actual - t.value if t.kind == "min" else t.value - self.actual

    def to_dict(self) -> ThresholdCheckRecord:
        """Builtins, for the JSON report's ``thresholds[]`` (docs/report-schema.md) and its
        JUnit test cases: ``threshold`` (``pass@1 >= 0.7000``), ``metric``, ``kind``,
        ``value``, ``model``, ``row``, ``actual`` (fractions in [0, 1] or None), ``passed``,
        ``message``."""
        t = self.threshold
        return {
            "threshold": t.describe(), "metric": t.metric, "kind": t.kind, "value": t.value,
            "model": t.model, "row": self.row, "actual": self.actual, "passed": self.passed,
            "message": self.message(),
        }

    def message(self) -> str:
        """A one-line explanation, e.g.
        ``FAILED task_if >= 0.3000: openai:gpt-5 single k=5 (lite) = 0.2800, short by 0.0200 (2.00 points)``."""
        head = ("passed" if self.passed else "FAILED") + f" {self.threshold.describe()}"
        if self.row is None:
            return f"{head}: {self.note}"
        if self.actual is None:
            return f"{head}: {self.row}: {self.note or 'not measured (no evaluated result)'}"
        m = self.margin or 0.0
        how = "short by" if self.threshold.kind == "min" else "over by"
        tail = (f", {how} {-m:.4f} ({-m * 100:.2f} points)" if not self.passed
                else f", margin {m:.4f}")
        return f"{head}: {self.row} = {self.actual:.4f}{tail}"


def _row_name(row: AggregateRecord, coverage: Mapping[str, tuple[int, int]] | None = None) -> str:
    suite = str(row.get("suite"))
    part = (coverage or {}).get(suite)
    where = f"{suite}, on {part[0]} of {part[1]} tasks" if part else suite
    return f"{row.get('model')} {row.get('protocol')} k={row.get('k')} ({where})"


def _metric_value(row: AggregateRecord, metric: str) -> float | None:
    v: object
    if metric == "pass@1":
        v = row.get("pass_at_1")
    elif metric.startswith("pass@"):
        v = (row.get("pass_at") or {}).get(metric[5:])
    else:
        fields: Mapping[str, object] = row  # a metric named by the user: read by name
        v = fields.get(metric)
    return float(v) if isinstance(v, (int, float)) else None


def _applies(t: Threshold, row: AggregateRecord) -> bool:
    if t.model is not None and row.get("model") != t.model:
        return False
    if t.metric in ("instruction_if", "task_if", "fr"):
        return row.get("protocol") in _INSTRUCTED
    if t.metric.startswith("pass@") and t.metric != "pass@1":
        return metric_present(row, t.metric)
    return True


def metric_present(row: AggregateRecord, metric: str) -> bool:
    """True if the aggregate ``row`` reports ``metric`` (``pass@K`` needs K samples)."""
    return _metric_value(row, metric) is not None


def evaluate(
    aggregates: Sequence[AggregateRecord],
    thresholds: Sequence[Threshold],
    coverage: Mapping[str, tuple[int, int]] | None = None,
) -> list[Check]:
    """Compare every threshold with every aggregate row it applies to.

    ``aggregates`` are the rows of :func:`pytest_vibecheck.report.aggregate.aggregate` (fractions in
    [0, 1]). A threshold that applies to no row gives one failing :class:`Check` with
    ``row=None`` saying why; an unmeasured value (``None``) fails too. ``coverage`` maps a suite
    of which only part ran to (tasks run, tasks in the suite); its rows are named
    ``... (suite, on 10 of 50 tasks)``, so a gate passed on a subset says so.
    """
    checks: list[Check] = []
    for t in thresholds:
        rows = [r for r in aggregates if _applies(t, r)]
        if not rows:
            models = sorted({str(r.get("model")) for r in aggregates})
            protos = sorted({str(r.get("protocol")) for r in aggregates})
            if t.model is not None and t.model not in models:
                note = f"model {t.model!r} is not in this run (models: {', '.join(models) or 'none'})"
            elif t.metric in ("instruction_if", "task_if", "fr"):
                note = (f"{t.metric} is judged on single- and multi-turn rows; this run has none "
                        f"(protocols: {', '.join(protos) or 'none'})")
            else:
                note = f"no aggregate row reports {t.metric}"
            checks.append(Check(t, None, None, False, note))
            continue
        for row in rows:
            actual = _metric_value(row, t.metric)
            if actual is None:
                checks.append(Check(t, _row_name(row, coverage), None, False))
                continue
            ok = actual >= t.value - _EPS if t.kind == "min" else actual <= t.value + _EPS
            checks.append(Check(t, _row_name(row, coverage), actual, ok))
    return checks


def format_checks(checks: Sequence[Check], *, verbose: bool = False) -> list[str]:
    """Lines for the terminal summary: every failed check, and the passed ones if ``verbose``."""
    return [c.message() for c in checks if verbose or not c.passed]
