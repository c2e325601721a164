"""Shipped expected durations (problems/<suite>/durations.json): read, written, checked, used
as the calibrator's prior for scheduling only, and the shipped BigVibeBench file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_helpers import tiny_problems

from pytest_vibecheck.errors import DataFileError
from pytest_vibecheck.execute.calibrate import Calibrator, ExpectedTime, task_key
from pytest_vibecheck.execute.durations import (
    load_durations,
    write_durations,
)
from pytest_vibecheck.execute.spec import Task, TestSpec
from pytest_vibecheck.suites.durations import expected_for, shipped_durations
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.store import find_suite, load_suite


def test_written_durations_read_back_as_suite_expected_times(tmp_path: Path) -> None:
    add, sign, _sq = tiny_problems()
    write_durations(tmp_path, {task_key(add): (73.214, 0.091), task_key(sign): (0.3, 0.28)}, "m")
    got = load_durations(tmp_path)
    assert got == {
        task_key(add): ExpectedTime(73.21, 0.09, "suite"),
        task_key(sign): ExpectedTime(0.3, 0.28, "suite"),
    }
    assert got[task_key(add)].sleeps and not got[task_key(sign)].sleeps
    assert load_durations(tmp_path / "none") == {}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"version": 2, "tasks": {}}, "version"),
        ({"version": 1, "tasks": []}, "tasks"),
        ({"version": 1, "tasks": {"s/t@x": [1.0]}}, "tasks.s/t@x"),
        ({"version": 1, "tasks": {"s/t@x": [-1.0, 0.0]}}, "tasks.s/t@x"),
    ],
)
def test_a_malformed_durations_file_names_the_field(tmp_path: Path, body: object, field: str) -> None:
    (tmp_path / "durations.json").write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(DataFileError, match=f"field '{field}'"):
        load_durations(tmp_path)


def test_the_prior_orders_a_first_run_and_what_this_machine_measured_wins(tmp_path: Path) -> None:
    add, sign, squares = tiny_problems()
    cal = Calibrator(tmp_path / "cal.sqlite")
    cal.prior = {task_key(add): ExpectedTime(73.0, 0.1, "suite"),
                 task_key(sign): ExpectedTime(9.0, 9.0, "suite")}
    assert cal.expected_times([add, sign, squares]) == {
        "t/add": ExpectedTime(73.0, 0.1, "suite"), "t/sign": ExpectedTime(9.0, 9.0, "suite")}
    cal.observe(sign, 0.25, 0.2)
    assert cal.expected_times([sign])["t/sign"] == ExpectedTime(0.25, 0.2, "observed")
    # scheduling only: the time limit still needs this machine's reference time
    assert cal.known(add, 10.0) is None
    cal.close()


def test_the_shipped_bigvibebench_durations_match_the_suite() -> None:
    """Every key names a task of the shipped suite as it is now (a rebuilt suite needs
    scripts/build_durations.py again), and the sleep-bound tasks of issue 17 are there."""
    suite = load_suite("bigvibebench")
    prior = load_durations(find_suite("bigvibebench"))
    keys = {task_key(p): p.task_id for p in suite.problems}
    assert len(prior) > 300 and set(prior) <= set(keys)
    by_task = {keys[k]: v for k, v in prior.items()}
    for task in ("BigCodeBench/1104", "BigCodeBench/1040", "BigCodeBench/220", "BigCodeBench/1103"):
        assert by_task[task].sleeps and by_task[task].wall_s > 15, task
    assert shipped_durations(["bigvibebench", "no-such-suite"]) == prior


def test_problems_of_a_suite_get_its_shipped_durations_without_a_calibrator() -> None:
    suite = {p.task_id: p for p in load_suite("bigvibebench").problems}
    chosen = [suite["BigCodeBench/1104"], suite["BigCodeBench/0"]]
    inline = Problem(suite="inline", task_id="inline", prompt="", test=TestSpec(kind="humaneval"))
    found = expected_for([*chosen, inline])
    assert set(found) <= {"BigCodeBench/1104", "BigCodeBench/0"}
    assert found["BigCodeBench/1104"].wall_s > 60 and found["BigCodeBench/1104"].source == "suite"


def test_run_starts_the_longest_first_and_answers_in_input_order() -> None:
    """Without a calibrator, the service reads the suite's shipped durations and submits the
    longest first (1104: 73 s, 1040: 60 s, 0: 32 s, 2: 0.3 s, as measured by
    scripts/build_durations.py in the pinned environment); results stay in input order."""
    from concurrent.futures import Future

    from pytest_vibecheck.execute.executor import TestService
    from pytest_vibecheck.execute.tests import ExecResult, ExecSettings

    suite = {p.task_id: p for p in load_suite("bigvibebench").problems}
    tasks = ["BigCodeBench/0", "BigCodeBench/1104", "BigCodeBench/2", "BigCodeBench/1040"]
    pairs = [(f"# {t}\n", suite[t]) for t in tasks]
    submitted: list[str] = []

    class Recording(TestService):
        def submit(self, code: str, problem: Task) -> Future[ExecResult]:
            submitted.append(problem.task_id)
            fut: Future[ExecResult] = Future()
            fut.set_result(ExecResult(status="failed", message=problem.task_id))
            return fut

    service = Recording(executor=None, settings=ExecSettings(), shipped=expected_for)  # type: ignore[arg-type]
    results = service.run(pairs)
    assert submitted == ["BigCodeBench/1104", "BigCodeBench/1040", "BigCodeBench/0", "BigCodeBench/2"]
    assert [r.message for r in results] == tasks
