"""A run that learns it mostly sleeps (``slots.note_sleeping``) frees its CPU slot: the local
executor starts the next CPU-bound run while the sleeper is still running."""

from __future__ import annotations

import threading

import pytest
from plugin_helpers import tiny_problems

from pytest_vibecheck.execute import slots
from pytest_vibecheck.execute import tests as exec_tests
from pytest_vibecheck.execute.executor import LocalExecutor
from pytest_vibecheck.execute.spec import Task
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings


def test_a_run_that_notes_it_sleeps_frees_its_cpu_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    first_may_end = threading.Event()
    second_started = threading.Event()

    def fake_execute(code: str, problem: Task, settings: ExecSettings) -> ExecResult:
        if code == "first":
            slots.note_sleeping()
            # the second run can start only once this one's CPU slot was freed
            assert second_started.wait(10), "the CPU slot was not freed"
            first_may_end.set()
        else:
            second_started.set()
        return ExecResult(status="passed", task_id=problem.task_id)

    monkeypatch.setattr(exec_tests, "execute", fake_execute)
    add, _sign, _sq = tiny_problems()
    ex = LocalExecutor(slots=1, sleeper_slots=1)
    try:
        first = ex.submit("first", add, ExecSettings())
        second = ex.submit("second", add, ExecSettings())
        assert [first.result(20).status, second.result(20).status] == ["passed", "passed"]
        assert first_may_end.is_set()
    finally:
        ex.close()


def test_note_sleeping_outside_an_executor_thread_is_a_no_op() -> None:
    slots.note_sleeping()
    assert getattr(slots.current, "release", None) is None
