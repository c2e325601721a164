"""Thresholds (``--vibe-fail-under``, ``--vibe-max-fr``) and ``--vibe-no-fail-items``.

The pytester runs use test items that store report records (docs/report-schema.md) under
``user_properties["vibecheck"]``, the way the benchmark items do, so the exit status is decided
by the CI plugin from known aggregates:

* baseline: 5 tasks, tests pass for t0..t3 -> S0 = pass@1 = 0.8;
* single, k = 2: tests pass for t0, t1, t2 -> pass@1 = 0.6, FR_2 = (0.8 - 0.6) / 0.8 = 0.25;
  verdicts [T,T] [T,F] [T,T] [F,F] [T,T] -> instruction-level IF 0.7, task-level IF 0.6.
"""

from __future__ import annotations

import json
from typing import Protocol

import pytest
from ci_helpers import report_item

from pytest_vibecheck.config import thresholds as th
from pytest_vibecheck.errors import UnknownIdError
from pytest_vibecheck.report.aggregate import aggregate
from pytest_vibecheck.report.records import AggregateRecord, ReportItem

SINGLE_VERDICTS = [[True, True], [True, False], [True, True], [False, False], [True, True]]


def _items() -> list[ReportItem]:
    items = [report_item(f"t{n}", tests_passed=n < 4) for n in range(5)]
    items += [
        report_item(f"t{n}", protocol="single", k=2, tests_passed=n < 3, verdicts=SINGLE_VERDICTS[n])
        for n in range(5)
    ]
    return items


TEST_FILE = '''
import json, pathlib
import pytest

ITEMS = json.loads(pathlib.Path(__file__).with_name("items.json").read_text())

@pytest.mark.parametrize("item", ITEMS, ids=[i["nodeid"] for i in ITEMS])
def test_item(item, record_property):
    record = {k: v for k, v in item.items() if k not in ("nodeid", "outcome", "duration_s")}
    record_property("vibecheck", record)
    assert item["passed"], "model failure"
'''


class RunPytest(Protocol):
    """The ``run`` fixture: ``run(*args)`` runs pytest on the items in the pytester folder."""

    def __call__(self, *args: str) -> pytest.RunResult: ...


@pytest.fixture
def run(pytester: pytest.Pytester) -> RunPytest:
    pytester.path.joinpath("items.json").write_text(json.dumps(_items()), encoding="utf-8")
    pytester.makepyfile(test_items=TEST_FILE)

    def _run(*args: str) -> pytest.RunResult:
        return pytester.runpytest("-p", "no:cacheprovider", *args)

    return _run


def test_aggregates_of_the_fixture() -> None:
    rows = {(r["protocol"], r["k"]): r for r in aggregate(_items())}
    assert rows[("baseline", 0)]["pass_at_1"] == 0.8
    single = rows[("single", 2)]
    assert (single["pass_at_1"], single["instruction_if"], single["task_if"]) == (0.6, 0.7, 0.6)
    assert single["fr"] == pytest.approx(0.25, abs=1e-12)


@pytest.mark.parametrize(
    ("spec", "status"),
    [
        ("pass@1=0.6", 0),      # at the limit (the single-turn row has exactly 0.6)
        ("pass@1=0.59", 0),     # just below
        ("pass@1=0.61", 1),     # just above
        ("pass@1=60%", 0),
        ("pass@1=60.1%", 1),
        ("task_if=0.6", 0),
        ("task_if=0.6001", 1),
        ("task_if=0.5999", 0),
        ("instruction_if=0.7,task_if=0.6", 0),
        ("instruction_if=0.7001", 1),
        ("scripted:task_if=0.6", 0),
        ("scripted:task_if=0.61", 1),
        ("other-model:pass@1=0.1", 1),  # a model that is not in the run never passes
    ],
)
def test_fail_under_exit_status(run: RunPytest, spec: str, status: int) -> None:
    result = run("--vibe-fail-under", spec, "--vibe-no-fail-items")
    result.assert_outcomes(passed=6, failed=4)
    assert result.ret == status


@pytest.mark.parametrize(
    ("limit", "status"),
    [("0.25", 0), ("0.2499", 1), ("0.2501", 0), ("25%", 0), ("24.9%", 1)],
)
def test_max_fr_exit_status(run: RunPytest, limit: str, status: int) -> None:
    result = run("--vibe-max-fr", limit, "--vibe-no-fail-items")
    assert result.ret == status


def test_summary_says_which_threshold_failed_and_by_how_much(run: RunPytest) -> None:
    result = run("--vibe-fail-under", "pass@1=0.61,task_if=0.5", "--vibe-max-fr", "0.2",
                 "--vibe-no-fail-items")
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*= vibecheck thresholds =*",
        "passed pass@1 >= 0.6100: scripted baseline k=0 (toy) = 0.8000, margin 0.1900",
        "FAILED pass@1 >= 0.6100: scripted single k=2 (toy) = 0.6000, short by 0.0100 (1.00 points)",
        "passed task_if >= 0.5000: scripted single k=2 (toy) = 0.6000, margin 0.1000",
        "FAILED fr <= 0.2000: scripted single k=2 (toy) = 0.2500, over by 0.0500 (5.00 points)",
        "vibecheck: 4 failed vibecheck item(s) ignored (--vibe-no-fail-items); "
        "thresholds: 2 of 4 check(s) failed",
    ])


def test_item_failures_fail_the_run_without_no_fail_items(run: RunPytest) -> None:
    result = run("--vibe-fail-under", "pass@1=0.5")
    result.assert_outcomes(passed=6, failed=4)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["vibecheck: thresholds: all 2 check(s) met"])


def test_no_fail_items_keeps_ordinary_failures(run: RunPytest, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert False\n")
    result = run("--vibe-no-fail-items")
    result.assert_outcomes(passed=6, failed=5)
    assert result.ret == 1


def test_no_fail_items_alone(run: RunPytest) -> None:
    result = run("--vibe-no-fail-items")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["vibecheck: 4 failed vibecheck item(s) ignored (--vibe-no-fail-items)"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--vibe-fail-under", "pass@1=40"), "*'pass@1=40'*must be a fraction in ?0, 1? (0% to 100%); did you mean 40%?"),
        (("--vibe-fail-under", "passs@1=0.4"), "*unknown metric 'passs@1'; did you mean 'pass@1'*"),
        (("--vibe-fail-under", "pass@1"), "*'pass@1' is not METRIC=VALUE or MODEL:METRIC=VALUE*"),
        (("--vibe-fail-under", "fr=0.1"), "*FR_k is an upper limit; use --vibe-max-fr VALUE"),
        (("--vibe-max-fr", "x"), "*--vibe-max-fr: 'x' is not a number*"),
        (("--vibe-shard", "0/3"), "*--vibe-shard: '0/3' needs 1 <= I <= N (shards are numbered from 1)"),
    ],
)
def test_bad_values_are_usage_errors(run: RunPytest, args: tuple[str, ...], message: str) -> None:
    result = run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: vibecheck: {message}"])


# ---------------------------------------------------------------- pure functions


def test_parse_fail_under() -> None:
    got = th.parse_fail_under(["pass@1=0.4, instruction_if=70%", "openai:gpt-5:task_if=0.3,pass@5=1"])
    assert [(t.metric, t.value, t.kind, t.model) for t in got] == [
        ("pass@1", 0.4, "min", None),
        ("instruction_if", 0.7, "min", None),
        ("task_if", 0.3, "min", "openai:gpt-5"),
        ("pass@5", 1.0, "min", None),
    ]
    fr = th.parse_max_fr("-5%")
    assert (fr.metric, fr.value, fr.kind) == ("fr", -0.05, "max")
    with pytest.raises(UnknownIdError, match="did you mean 'task_if'"):
        th.parse_fail_under("task_iff=0.3")
    with pytest.raises(th.ThresholdError, match="must be a fraction"):
        th.parse_fail_under("pass@1=-0.1")
    with pytest.raises(th.ThresholdError, match="at most 1"):
        th.parse_max_fr("1.5")


def test_evaluate_rows_and_missing_data() -> None:
    rows = aggregate(_items())
    checks = th.evaluate(rows, th.parse_fail_under("instruction_if=0.5,pass@5=0.1"))
    assert [(c.row, c.actual, c.passed) for c in checks] == [
        ("scripted single k=2 (toy)", 0.7, True),  # baseline rows are not judged on IF
        (None, None, False),  # one sample per task: no pass@5 anywhere
    ]
    assert checks[1].message() == "FAILED pass@5 >= 0.1000: no aggregate row reports pass@5"
    base_only = [r for r in rows if r["protocol"] == "baseline"]
    c = th.evaluate(base_only, th.parse_fail_under("task_if=0.1"))[0]
    assert c.message() == (
        "FAILED task_if >= 0.1000: task_if is judged on single- and multi-turn rows; this run "
        "has none (protocols: baseline)"
    )
    nulls: list[AggregateRecord] = [{**rows[1], "task_if": None}]
    c = th.evaluate(nulls, th.parse_fail_under("task_if=0.1"))[0]
    assert (c.passed, c.message()) == (
        False, "FAILED task_if >= 0.1000: scripted single k=2 (toy): not measured (no evaluated result)")
